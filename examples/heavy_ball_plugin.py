"""DP heavy ball declared through the public API only, tuned by its worst case over quadratics.

The built-in `dpbounds tune hb` (Kuru et al. 2022's DP heavy ball, Laplace noise of scale
S1 T / (N eps) per step) as a user would write it: the step, its memory (x_{t-1}), its
privacy declaration and its linear form. Its tuning matches the built-in's on the same problem:

    dpbounds --plugin examples/heavy_ball_plugin.py tune heavy_ball_plugin \\
        --mu 0.1 --L 1 --d 4 --N 1000 --eps 1 --S1 1 --R 1 --max-horizon 30
    dpbounds tune hb --mu 0.1 --L 1 --d 4 --N 1000 --eps 1 --S1 1 --R 1 --max-horizon 30
"""
from dpbounds import extend as ex


def step(x, grad, noise, p, memory):  # x_{t+1} = x_t + beta (x_t - x_{t-1}) - alpha (g + w)
    prev = memory.get("prev", x)  # x_{-1} = x_0: started at rest
    memory["prev"] = x
    return x + p["beta"] * (x - prev) - p["alpha"] * (grad(x) + noise)


method = ex.Method(
    "heavy_ball_plugin", step=step, mechanism="laplace", neighbouring="replace_one",
    sensitivity=lambda f, p: f.l1_sensitivity / f.n,  # the mean gradient's L1 sensitivity
    linear=ex.LinearMomentum(alpha="alpha", beta="beta"))  # gamma = 0: checked against step

ex.audit_setting(method, params={"alpha": 0.5, "beta": 0.3})
