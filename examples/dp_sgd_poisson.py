"""DP-SGD with Poisson sampling as a plug-in: dpbounds draws the mini-batches and accounts them.

    dpbounds --plugin examples/dp_sgd_poisson.py calibrate dp_sgd_poisson --steps 200 \\
        --N 1000 --batch-size 50
    dpbounds --plugin examples/dp_sgd_poisson.py audit dp_sgd_poisson
    python examples/dp_sgd_poisson.py      # its run against the built-in dp_sgd's
"""
from dpbounds import extend as ex

# grad(x): the clipped per-sample gradients of a Poisson sample (rate B / public_n) summed and
# divided by the expected batch size B; add/remove, sensitivity clip / B; accounted (RDP) as
# the built-in dp_sgd with sampling="poisson"
method = ex.Method(
    "dp_sgd_poisson", step=lambda x, grad, noise, p: x - p["eta"] * (grad(x) + noise),
    sampling="poisson", batch_size="B", clip=1.0)

ex.audit_setting(method, steps=5, params={"eta": 1.0})

if __name__ == "__main__":
    import numpy as np

    from dpbounds.algorithms import dp_sgd
    from dpbounds.objectives import LogisticRegression

    rng = np.random.default_rng(0)
    A = rng.normal(size=(1000, 5))
    f = LogisticRegression(A, np.sign(A @ np.ones(5)), l2=1e-3)
    run = dict(epsilon=1.0, delta=1e-5, steps=200, trials=4, seed=0, public_n=1000)
    mine = method.run(f, params={"B": 50, "eta": 0.5}, **run)
    ref = dp_sgd(f, batch_size=50, step_size=0.5, clip_threshold=1.0, sampling="poisson", **run)
    for name, r in (("plug-in", mine), ("dp_sgd", ref)):
        print(f"{name:8s} noise on the sum {r.params['noise_std_sum']:.9f}, "
              f"eps (RDP) {r.privacy.ledger.epsilon(1e-5):.9f}")
    print(f"ledgers equal: {mine.privacy.ledger == ref.privacy.ledger}; max |x - x_dp_sgd| = "
          f"{float(np.max(np.abs(np.asarray(mine.x) - np.asarray(ref.x)))):.3g}")
