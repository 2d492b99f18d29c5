"""A privacy declaration that is wrong: the sensitivity of a mean of gradients of norm <= G
under replace-one is 2G/n, this method declares G/n (its noise is half what it needs).

`audit` must refute it (exit status 1), whatever the utility theorem says:

    dpbounds --plugin examples/small_sensitivity.py audit half_noise_gd --quick
"""
from dpbounds import extend as ex

method = ex.Method(
    "half_noise_gd", step=lambda x, grad, noise, p: x - p["eta"] * (grad(x) + noise),
    mechanism="gaussian", neighbouring="replace_one",
    sensitivity=lambda f, p: f.gradient_bound / f.n)  # wrong: replacing a record moves 2G/n

ex.audit_setting(method, steps=5, params={"eta": 1.0})
