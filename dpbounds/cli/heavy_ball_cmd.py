"""``dpbounds tune hb|nag`` and ``dpbounds rate hb``: Kuru et al.'s heavy ball and Nesterov.

Examples::

    dpbounds rate hb --alpha 0.5 --beta 0.3 --mu 0.5 --L 1
    dpbounds tune hb --mu 0.02 --L 5.1033 --d 20 --n 100000 --eps 1 --sensitivity 40 --E0 10
    dpbounds tune nag --mu 0.02 --L 5.1033 --d 20 --n 100000 --eps 1 --sensitivity 40 --E0 10
"""

from __future__ import annotations

import argparse
import json


def _problem_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mu", type=float, required=True, help="strong convexity mu > 0")
    p.add_argument("--L", type=float, required=True, help="smoothness L >= mu")
    p.add_argument("--d", type=int, required=True, help="dimension")
    p.add_argument("--n", type=int, required=True, help="data-set size")
    p.add_argument("--m", type=int, default=None, help="batch size (default n: no subsampling)")
    p.add_argument("--eps", type=float, required=True, help="total pure-DP budget epsilon")
    p.add_argument("--sensitivity", type=float, required=True, help="L1 sensitivity S_1")
    p.add_argument("--E0", type=float, default=10.0, help="initial gap F(x0)-F* (paper: 10)")
    p.add_argument("--max-horizon", type=int, default=1000, help="largest T considered")
    p.add_argument("--mechanism", default="laplace", choices=["laplace"])
    p.add_argument("--json", action="store_true", help="print the rows as JSON")


def _tune_hb(args: argparse.Namespace) -> int:
    from dpbounds.tuning import tune_heavy_ball

    res = tune_heavy_ball(args.mu, args.L, d=args.d, n=args.n, m=args.m, epsilon=args.eps,
                          sensitivity=args.sensitivity, initial_gap=args.E0,
                          max_horizon=args.max_horizon, mechanism=args.mechanism,
                          function_class=args.function_class)
    print(json.dumps(res.rows(), indent=2) if args.json else res.table())
    return 0


def _tune_nag(args: argparse.Namespace) -> int:
    from dpbounds.tuning import tune_nesterov

    res = tune_nesterov(args.mu, args.L, d=args.d, n=args.n, m=args.m, epsilon=args.eps,
                        sensitivity=args.sensitivity, initial_gap=args.E0, c=args.c,
                        max_horizon=args.max_horizon)
    print(json.dumps(res.rows(), indent=2) if args.json else res.table())
    return 0


def _rate_hb(args: argparse.Namespace) -> int:
    from dpbounds.bounds.heavy_ball import heavy_ball_rate, heavy_ball_rate_eq26_as_printed

    rho = heavy_ball_rate(args.alpha, args.beta, args.mu, args.L)
    printed = heavy_ball_rate_eq26_as_printed(args.alpha, args.beta, args.mu, args.L)
    rows = {"alpha": args.alpha, "beta": args.beta, "mu": args.mu, "L": args.L,
            "rho_quadratic": rho, "rho_eq26_as_printed": printed}
    lines = [f"heavy ball, alpha = {args.alpha:g}, beta = {args.beta:g}, mu = {args.mu:g}, "
             f"L = {args.L:g}",
             f"  quadratic rate (App. B.3 roots)          rho = {rho:.6f}",
             f"  eq. (26) as printed (Nesterov's roots)   rho = {printed:.6f}"]
    if not args.no_lmi:
        from dpbounds.lmi.heavy_ball_lmi import heavy_ball_lmi_rate

        cert = heavy_ball_lmi_rate(args.mu, args.L, args.alpha, args.beta, tol=args.tol)
        if cert.certified:
            rows.update(rho_lmi=cert.rho, rho_lmi_lower=cert.rho_lower, verified=cert.verified,
                        P=cert.P.tolist(), c0=cert.c0, c=cert.c)
            lines.append(f"  LMI, Prop. 3.4 (all of S_mu,L)          rho = {cert.rho:.6f} "
                         f"(bracket [{cert.rho_lower:.6f}, {cert.rho:.6f}])")
            lines.append(f"    P = {cert.P.tolist()}, c0 = {cert.c0:.6g}, c = 1")
            lines.append(f"    {cert.verification}")
        else:
            rows.update(rho_lmi=None, certified=False)
            lines.append(f"  LMI, Prop. 3.4: {cert}")
    print(json.dumps(rows, indent=2) if args.json else "\n".join(lines))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``tune`` (with ``hb`` / ``nag``) and ``rate`` (with ``hb``)."""
    tune = sub.add_parser("tune", help="tune DP heavy ball / DP-NAG from Kuru et al.'s bounds")
    tsub = tune.add_subparsers(dest="tune_what", metavar="METHOD")
    hb = tsub.add_parser("hb", help="(alpha, beta, T) minimising the DP heavy-ball bound")
    _problem_args(hb)
    hb.add_argument("--function-class", default="quadratic",
                    choices=["quadratic", "smooth_strongly_convex"],
                    help="quadratic: Theorem 3.5; smooth_strongly_convex: Prop. 3.4 certificates")
    hb.set_defaults(func=_tune_hb)
    nag = tsub.add_parser("nag", help="DP-NAG / DP-MASG horizon and optimal noise schedule")
    _problem_args(nag)
    nag.add_argument("--c", type=float, default=1.0, help="step factor, alpha = c / L")
    nag.set_defaults(func=_tune_nag)
    tune.set_defaults(func=lambda a: (tune.print_help(), 0)[1])

    rate = sub.add_parser("rate", help="convergence rates (closed form and LMI certificate)")
    rsub = rate.add_subparsers(dest="rate_what", metavar="METHOD")
    rhb = rsub.add_parser("hb", help="heavy-ball rate: quadratic closed form and Prop. 3.4 LMI")
    rhb.add_argument("--alpha", type=float, required=True)
    rhb.add_argument("--beta", type=float, required=True)
    rhb.add_argument("--mu", type=float, required=True)
    rhb.add_argument("--L", type=float, required=True)
    rhb.add_argument("--tol", type=float, default=1e-6, help="LMI bisection tolerance")
    rhb.add_argument("--no-lmi", action="store_true", help="closed forms only")
    rhb.add_argument("--json", action="store_true")
    rhb.set_defaults(func=_rate_hb)
    rate.set_defaults(func=lambda a: (rate.print_help(), 0)[1])
