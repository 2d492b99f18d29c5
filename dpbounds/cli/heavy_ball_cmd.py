"""``dpbounds tune hb|nag`` and ``dpbounds rate hb``: Kuru et al.'s heavy ball and Nesterov.

Examples::

    dpbounds rate hb --alpha 0.5 --beta 0.3 --mu 0.5 --L 1
    dpbounds tune hb --mu 0.02 --L 5.1028 --d 20 --n 100000 --eps 1 --sensitivity 40 --E0 10
    dpbounds tune nag --strong-convexity 0.02 --smoothness 5.1028 --dimension 20 \\
        --dataset-size 1e5 --epsilon 1 --sensitivity 40 --initial-gap 10

Every flag is the notation table's (``docs/notation.md``): the canonical spelling or a paper
symbol (``--mu``, ``--L``, ``--d``, ``--n``, ``--eps``, ``--E0``) mean the same.
"""

from __future__ import annotations

import argparse
import math

from dpbounds.cli import (
    _catalog,
    add_quantity,
    flag_used,
    integer,
    progress_enabled,
    strict_json,
)

#: largest horizon searched (the catalog's copy: the help imports no bound)
MAX_HORIZON: int = _catalog.constant("max_horizon")

_HB_COLUMNS = """\
output columns:
  choice    tuned: the (alpha, beta, T) minimising the worst-case error (--objective error,
            the default) or the bound (--objective bound); tuned by bound (25): the
            bound-minimising choice, shown beside the error-tuned one; Polyak: the classical
            heavy-ball (alpha, beta); paper Sec.5: alpha = 1/L with Nesterov's beta; each row
            at its own best horizon T (by the objective)
  worst case  (--objective error) the certified worst-case E[F(x_T)] - F* of that run over
            every quadratic with spectrum in [mu, L], F(x0) - F* <= E0 and data of
            sensitivity S_1 (attained within the bracket the footer prints) [DERIVED]
  lower end / upper end  (--objective error --function-class smooth_strongly_convex) the
            bracket of that run's worst-case E[F(x_T)] - F* over all of S_mu,L: upper end =
            the noise-aware Lyapunov bound (certified, what the tuned row minimises), lower
            end = the exact worst case attained on an admissible quadratic [DERIVED]
  alpha     step size
  beta      momentum
  T         horizon (number of iterations, each epsilon/T-DP)
  rho       convergence rate on the quadratics of the class (spectral radius; the LMI rate for
            --function-class smooth_strongly_convex)
  bound     the DP heavy-ball bound on E[F(x_T)] - F* at that T [DERIVED]
  computed  (--objective bound) the exact worst-case E[F(x_T)] - F* of that run over the
            admissible quadratics (attained on one of them; certified within 4e-5 of the
            supremum when the refinement completes);
            never above the bound
  b_T       Laplace noise scale of each step, S_1 / (m eps_0) with eps_0 from epsilon/T
            (Kuru et al. eqs. (12)-(13))"""

_NAG_COLUMNS = """\
output columns:
  choice      DP-NAG / DP-MASG tuned by worst case (--objective error, the default: the horizon
              and the allocation of the budget with the least certified worst-case error), with
              the optimal noise schedule of the bound at the horizon of Remark 4.1
              (-opt (Remark 4.1 T)), at fixed reference horizons (-opt at T=...), and with the
              uniform budget epsilon/T
  T           horizon (number of iterations)
  allocation  how the budget is split over the T steps: the worst case's (dual ascent, its
              bracket printed below the table), Prop. 4.2's closed form (m = n), the numeric
              optimum of (30) (m < n) or uniform (eqs. (12)-(13))
  bound       the unrolled bound (29) (NAG) / (34) (MASG) on E[F(x_T)] - F*
  worst case  the certified sup of E[F(x_T)] - F* of the same run (MASG with momentum
              restarts) over quadratics with spectrum in [mu, L] and F(x0) - F* <= E0
  computed    (--json) the attained end of the worst case, on an admissible quadratic"""


_TUNE_NAMED = """\
a plug-in's method, by its name:
  dpbounds --plugin FILE tune NAME [--objective error|bound] [problem flags]
            NAME: a method the file registers (ex.study / ex.audit_setting) or its theorem.
            Default objective: the worst-case E[F(x_T)] - F* of the method's run over
            quadratics (needs --mu, --L, --R) where the method declares its linear form
            (linear=LinearMomentum(...), checked against its step), with a proven lower
            bound of the best choice; else its bound (a note on stderr says so), as
            'tune bound NAME'. The loaded plug-ins' names are listed above as METHODs;
            'dpbounds --plugin FILE tune NAME --help' shows the options."""


_RATE_COLUMNS = """\
output:
  quadratic rate   rho of heavy ball on quadratics with spectrum in [mu, L] (largest root
                   modulus, Kuru et al. App. B.3)
  eq. (26)         the paper's eq. (26) as printed (these are Nesterov's roots: it agrees with
                   the quadratic rate only for beta = 0)
  LMI              the smallest rho with a Prop. 3.4 certificate (all of S_mu,L, not only
                   quadratics), its bracket [rho_lower, rho], the certificate P, c0 and the
                   independent verification"""


def _problem_args(p: argparse.ArgumentParser) -> None:
    add_quantity(p, "strong_convexity", required=True, help="strong convexity mu > 0")
    add_quantity(p, "smoothness", required=True, help="smoothness L >= mu")
    add_quantity(p, "dimension", required=True, help="dimension d >= 1")
    add_quantity(p, "dataset_size", required=True, help="data-set size n >= 1 (1e5 is fine)")
    add_quantity(p, "batch_size",
                 help="batch size m in [1, n], sampled without replacement (default n: no "
                      "subsampling)")
    add_quantity(p, "epsilon", required=True,
                 help="total pure-DP budget epsilon > 0 (replace-one, basic composition)")
    add_quantity(p, "sensitivity", required=True,
                 help="L1 sensitivity S_1 > 0 of one sample's gradient (Kuru et al. eq. (10))")
    add_quantity(p, "initial_gap", default=10.0,
                 help="initial gap F(x0) - F* >= 0 (the paper's E_0 = 10)")
    add_quantity(p, "max_horizon", default=1000,
                 help=f"largest horizon T searched, in [1, {MAX_HORIZON:,}]; every T up to it "
                      "is considered")
    add_quantity(p, "mechanism", default="laplace", choices=["laplace"],
                 help="noise mechanism (the paper's Laplace)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")


def _tune_hb(args: argparse.Namespace) -> int:
    from dpbounds.tuning import tune_heavy_ball

    res = tune_heavy_ball(args.strong_convexity, args.smoothness, d=args.dimension,
                          n=args.dataset_size, m=args.batch_size, epsilon=args.epsilon,
                          sensitivity=args.sensitivity, initial_gap=args.initial_gap,
                          max_horizon=args.max_horizon, mechanism=args.mechanism,
                          function_class=args.function_class, progress=progress_enabled(args),
                          objective=args.objective)
    from dpbounds.cli._paths import print_result

    line = _underflow_line(args)
    return print_result("tune", strict_json(res.rows(), indent=2) if args.json
                        else res.table() + "\n" + line + _default_gap_line(args)
                        + PUBLIC_INPUTS)


def _underflow_line(args: argparse.Namespace) -> str:
    """The note that the noise is below float64's range, with its newline, or ``""``."""
    from dpbounds.bounds.strongly_convex.gradient_noise import noise_underflow_note

    m = args.dataset_size if args.batch_size is None else args.batch_size
    note = noise_underflow_note(args.sensitivity, args.dataset_size, m, args.epsilon,
                                args.dimension, args.max_horizon)
    if note and args.json:  # the rows are the whole of stdout: the note goes to stderr
        from dpbounds.cli import _say

        _say(f"dpbounds: {note}")
        return ""
    return note + "\n" if note else ""


def _default_gap_line(args: argparse.Namespace) -> str:
    """The line saying that E0 is the default, with its newline, where ``--E0`` was not
    given (walkthrough of stop 81: the tuned run depends on E0, and the default, Kuru et al.'s
    guess for Fig. 3's data, was used without a word)."""
    if (getattr(args, "_flags_typed", None) or {}).get("initial_gap"):
        return ""
    return (f"E0 = {args.initial_gap:g} is the default (Kuru et al.'s guess for Fig. 3's data): "
            "the tuned run depends on it; give --E0, a bound on F(x0) - F* of your problem\n")


#: what the worst-case tuners read without noise (walkthrough of stop 77: E0 and L computed
#: from the private data, and nothing said so, unlike `tune runs`' privacy line)
PUBLIC_INPUTS = ("inputs read as public: mu, L, S1, E0, n and d choose the hyper-parameters "
                 "without noise; computed from the private data, they must be public bounds "
                 "(or their release paid for)")


def _run_line(rows: list[dict], epsilon: float) -> str:
    """How to run the tuned DP-NAG, as a line that runs: its budget, horizon, per-step budgets
    (in --json, "epsilons") and step factor c (review of stop 77: the line omitted epsilon and
    raised TypeError)."""
    row = next((r for r in rows if r.get("method") == "nag" and r.get("epsilons")), None)
    if row is None:
        return ""
    eps = [float(e) for e in row["epsilons"]]
    call = (f"dp_nag(f, epsilon={epsilon!r}, steps={row['horizon']}, c={float(row['c'])!r}, "
            "budgets=")
    if len(eps) <= 8:
        return f"to run {row['label']}: {call}[{', '.join(repr(e) for e in eps)}])\n"
    return (f"to run {row['label']}: {call}B) with B its {len(eps)} per-step budgets "
            "(--json: \"epsilons\")\n")


def _tune_nag(args: argparse.Namespace) -> int:
    from dpbounds.tuning import tune_nesterov

    res = tune_nesterov(args.strong_convexity, args.smoothness, d=args.dimension,
                        n=args.dataset_size, m=args.batch_size, epsilon=args.epsilon,
                        sensitivity=args.sensitivity, initial_gap=args.initial_gap,
                        c=args.step_factor,
                        max_horizon=args.max_horizon, progress=progress_enabled(args),
                        objective=args.objective or "error")
    from dpbounds.cli._paths import print_result

    line = _underflow_line(args)
    return print_result("tune", strict_json(res.rows(), indent=2) if args.json
                        else res.table() + "\n" + _run_line(res.rows(), args.epsilon)
                        + line + _default_gap_line(args) + PUBLIC_INPUTS)


def _rate(x: float) -> str:
    """A rate with nine decimals where it reads as one (a divergent rho of 5e301 printed as
    302 digits before); scientific notation outside [1e-4, 1e4)."""
    if 0.0 < 1.0 - x < 5e-10:  # it would print as 1.000000000: say how far below 1
        return f"1 - {1.0 - x:.3g}"
    if x == 0.0 or (1e-4 <= abs(x) < 1e4):
        return f"{x:.9f}"
    return f"{x:.9e}" if math.isfinite(x) else str(x)


def _rate_hb(args: argparse.Namespace) -> int:
    _check_pep_args(args)  # before the imports: an input error answers at once
    from dpbounds.bounds.strongly_convex.heavy_ball import (
        heavy_ball_rate,
        heavy_ball_rate_eq26_as_printed,
    )

    alpha, beta, mu, L = args.step_size, args.momentum, args.strong_convexity, args.smoothness
    rho = heavy_ball_rate(alpha, beta, mu, L)
    printed = heavy_ball_rate_eq26_as_printed(alpha, beta, mu, L)
    rows = {"alpha": alpha, "beta": beta, "mu": mu, "L": L,
            "rho_quadratic": rho, "rho_eq26_as_printed": printed}
    # 12 digits: beta = 0.999999999 echoed as "beta = 1", a value the command refuses
    from dpbounds._numfmt import shown

    # shown(): beta = 1 - 2^-53 printed as 'beta = 1', a value the flag refuses (fuzz 13)
    lines = [f"heavy ball, alpha = {shown(alpha, 12)}, beta = {shown(beta, 12)}, "
             f"mu = {shown(mu, 12)}, L = {shown(L, 12)}",
             f"  quadratic rate (App. B.3 roots)          rho = {_rate(rho)}",
             f"  eq. (26) as printed (Nesterov's roots)   rho = {_rate(printed)}"]
    if not args.no_lmi:
        from dpbounds.lmi.heavy_ball_lmi import LMICertificate, heavy_ball_lmi_rate

        cert = heavy_ball_lmi_rate(mu, L, alpha, beta, tol=args.tolerance)
        if isinstance(cert, LMICertificate):  # what .certified says (NoCertificate otherwise)
            rows.update(rho_lmi=cert.rho, rho_lmi_lower=cert.rho_lower,
                        rho_lmi_lower_proof=cert.lower_bound, verified=cert.verified,
                        P=cert.P.tolist(), c0=cert.c0, c=cert.c)
            lines.append(f"  LMI, Prop. 3.4 (all of S_mu,L)          rho = {_rate(cert.rho)} "
                         f"(bracket [{_rate(cert.rho_lower)}, {_rate(cert.rho)}])")
            # nine digits: the bracket is often narrower than 1e-6 (six printed two equal ends)
            lines.append(f"    lower end proven by: {cert.lower_bound}")
            lines.append(f"    P = {cert.P.tolist()}, c0 = {cert.c0:.6g}, c = 1")
            lines.append(f"    {cert.verification}")
        else:
            rows.update(rho_lmi=None, certified=False)
            lines.append(f"  LMI, Prop. 3.4: {cert}")
    if args.steps is not None:
        rows["worst_case"] = _worst_case_lines(args, lines)
    from dpbounds.cli._paths import print_result

    return print_result("rate", strict_json(rows, indent=2) if args.json
                        else "\n".join(lines))


#: without --pep the exact noise-aware PEP (all pairs) runs up to this horizon (6.6 CPU-s at
#: T = 20 with its certificate solve; its cost grows like T^4)
_PEP_EXACT_STEPS = 20


def _check_pep_args(args: argparse.Namespace) -> None:
    """--pep / --pep-window need --steps, a window >= 1 and T <= the cap; --tol the LMI
    (before any work)."""
    if "tolerance" in (getattr(args, "_flags_typed", None) or {}) and args.no_lmi:
        raise ValueError(f"{flag_used(args, 'tolerance')} sets the LMI bisection, which "
                         "--no-lmi skips")  # it was ignored
    if not args.no_lmi and not (math.isfinite(args.tolerance) and args.tolerance > 0):
        # heavy_ball_lmi_rate's check_positive, before its imports (0.5 CPU-s)
        raise ValueError(f"tol must be finite, got {args.tolerance}"
                         if not math.isfinite(args.tolerance) else
                         f"tol must be > 0 (valid range (0, inf)), got {args.tolerance}")
    wanted = args.pep or args.pep_window is not None
    if wanted and args.steps is None:  # named as typed: '--pep-window 3' was told '--pep'
        raise ValueError(f"{'--pep' if args.pep else '--pep-window'} needs --steps T (the "
                         "horizon of the worst case)")
    if args.steps is None:  # these were ignored without --steps (the rate alone printed)
        # typed, not compared with the default: `--R 1` was accepted and ignored
        typed = getattr(args, "_flags_typed", None) or {}
        given = [flag_used(args, dest) for dest in ("initial_gap", "noise_second_moment")
                 if dest in typed]
        if given:
            one = len(given) == 1
            raise ValueError(f"{' and '.join(given)} need{'s' if one else ''} --steps T "
                             f"({'it sets' if one else 'they set'} the worst case after T "
                             "steps)")
    if args.pep_window is not None and args.pep_window < 1:
        raise ValueError(f"--pep-window must be an integer >= 1, got {args.pep_window}")
    if args.pep_window is not None and args.steps is not None and args.pep_window > args.steps:
        # a window wider than the horizon reached the solver ("Clarabel status NumericalError")
        raise ValueError(f"--pep-window must be an integer in [1, T={args.steps}], got "
                         f"{args.pep_window}")
    from dpbounds.pep.banded import MAX_BANDED_STEPS

    if wanted and args.steps > MAX_BANDED_STEPS:
        raise ValueError(f"--steps must be <= {MAX_BANDED_STEPS} with --pep (the cap of the "
                         f"noise-aware PEP; its cost grows with T), got {args.steps}")


def _pep_lines(args: argparse.Namespace, lines: list[str]) -> dict | None:
    """The noise-aware PEP section of ``rate hb --steps T`` (see ``_worst_case_lines``)."""
    from dpbounds.pep import FixedStepMethod, pep_worst_case
    from dpbounds.pep.banded import MAX_BANDED_STEPS

    alpha, beta, mu, L = args.step_size, args.momentum, args.strong_convexity, args.smoothness
    T, E0, s2 = args.steps, args.initial_gap, args.noise_second_moment
    window = args.pep_window
    if window is None and T <= _PEP_EXACT_STEPS:
        pairs, label = "all", "exact PEP"
    else:
        if not args.pep and window is None:
            lines.append(f"    all of S_mu,L (noise-aware PEP)         not run (T > "
                         f"{_PEP_EXACT_STEPS}; --pep runs its banded relaxation up to T = "
                         f"{MAX_BANDED_STEPS})")
            return None
        window = 2 if window is None else window
        pairs, label = "banded", f"banded relaxation, window {window}"
    from dpbounds._progress import progress_bar
    from dpbounds.pep.stochastic import MARGINS

    # a solve takes from a second to a minute at T = 20 (longest where the worst case is near
    # the solver's tolerance: 193 CPU-s once, with nothing shown)
    # lines=True: in a pipe too, a line after each solve (232 CPU-s were silent there at
    # T = 20, alpha 0.5, beta 0.3, mu 0.5: fuzz round 9)
    with progress_bar(progress_enabled(args), total=1 + len(MARGINS),
                      desc=f"noise-aware PEP ({label}, T = {T})", unit="SDP",
                      lines=True) as bar:

        def tick(what: str) -> None:
            bar.set_postfix_str(what, refresh=False)
            bar.update()

        res = pep_worst_case(FixedStepMethod.heavy_ball(alpha, beta), mu, L, T,
                             initial_gap=E0, noise_variances=[s2] * T, pairs=pairs,
                             window=window or 2, progress=tick)
    cpu = sum(res.cpu_seconds.values())
    cert = res.certificate
    if cert is None:
        # the solver's number alone is no worst case: at T = 16 (alpha 0.5, beta 0.3, mu 0.5,
        # L 1, E0 1) it read 8.3e-6, above the certified Lyapunov upper bound 1.4e-6, and it
        # was printed as the exact PEP (values that small are the solver's tolerance)
        lines.append(f"    all of S_mu,L (noise-aware PEP)         n/a: no exact certificate "
                     f"({label}; the solver's unverified value {res.value:.3g}, "
                     f"{cpu:.2f} CPU-s)")
        return {"value": None, "certified": None, "solver_value": res.value,
                "formulation": label, "cpu_seconds": cpu}
    out: dict = {"value": res.value, "certified": res.certified_value,
                 "formulation": label, "cpu_seconds": cpu}
    lines.append(f"    all of S_mu,L (noise-aware PEP)         {res.value:.6g} ({label}, "
                 f"{cpu:.2f} CPU-s)")
    lam = cert.lambdas
    out.update(lambda_initial=float(lam[0]), lambda_noise=[float(v) for v in lam[1:]])
    shown = ", ".join(f"{v:.4g}" for v in lam[1:6]) + (", ..." if T > 5 else "")
    lines.append(f"      exact certificate: worst <= lambda_0 E0 + sum_t lambda_t s_t^2 = "
                 f"{res.certified_value:.6g}, for every E0 and s_t")
    lines.append(f"      lambda_0 = {lam[0]:.6g}, lambda_t = [{shown}] "
                 f"(sum {float(lam[1:].sum()):.6g})")
    return out


def _worst_case_lines(args: argparse.Namespace, lines: list[str]) -> dict:
    """The worst case of E[F(x_T)] - F* after ``--steps`` T: on quadratics (exact) and on all
    of S_mu,L (the noise-aware PEP with its exact certificate: exact for T <= 20, the banded
    relaxation with ``--pep`` up to T = 200)."""
    from dpbounds.bounds.strongly_convex.quadratic_worst_case import quadratic_worst_case

    alpha, beta, mu, L = args.step_size, args.momentum, args.strong_convexity, args.smoothness
    T, E0, s2 = args.steps, args.initial_gap, args.noise_second_moment
    wc = quadratic_worst_case(mu, L, 1, alpha=alpha, beta=beta, steps=T, laplace_var=s2,
                              initial_gap=E0, progress=progress_enabled(args))
    out: dict = {"steps": T, "initial_gap": E0, "noise_second_moment": s2,
                 "quadratic": {"value": wc.value, "upper": wc.upper,
                               "curvature": wc.start_eigenvalue}}
    lines.append(f"  worst E[F(x_T)] - F* after T = {T} steps from F(x0) - F* <= {E0:g}, "
                 f"E||xi_t||^2 = {s2:g}:")
    top = (f"{wc.upper:.6g}" if math.isfinite(wc.upper)
           else "no upper end: the grid is too coarse for this T")
    lines.append(f"    1-d quadratics (exact, DERIVED)        [{wc.value:.6g}, {top}] "
                 f"(attained at curvature {wc.start_eigenvalue:.6g})")
    try:
        pep = _pep_lines(args, lines)
    except (ValueError, RuntimeError) as exc:  # beyond the SDP's resolution, or not solved
        lines.append(f"    all of S_mu,L (noise-aware PEP)         not run: {exc}")
        pep = None
    if pep is not None:
        out["pep"] = pep
    from dpbounds.pep import FixedStepMethod
    from dpbounds.pep.lyapunov import lyapunov_bound

    try:
        ly = lyapunov_bound(FixedStepMethod.heavy_ball(alpha, beta), mu, L, T, initial_gap=E0,
                            noise_variance=s2)
    except ValueError as exc:
        lines.append(f"    all of S_mu,L (noise-aware Lyapunov)    not run: {exc}")
        return out
    out["lyapunov"] = {"value": ly.value, "rho": ly.rho, "cpu_seconds": ly.cpu_seconds}
    gap = ""
    if pep is not None and pep["value"] is not None and math.isfinite(ly.value):
        out["lyapunov"]["pep_ratio"] = ly.value / pep["value"]
        gap = f", {ly.value / pep['value']:.3g} x the PEP value"
    if not math.isfinite(ly.value):  # a divergent method: no contraction factor verifies
        lines.append("    all of S_mu,L (noise-aware Lyapunov)    no certificate (no contraction "
                     f"factor rho <= 1 verified; {ly.cpu_seconds:.2f} CPU-s)")
        return out
    lines.append(f"    all of S_mu,L (noise-aware Lyapunov)    {ly.value:.6g} (any T; rho = "
                 f"{ly.rho:.6g}, exact check, {ly.cpu_seconds:.2f} CPU-s{gap})")
    return out


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``tune`` (with ``hb`` / ``nag``) and ``rate`` (with ``hb``)."""
    tune = sub.add_parser("tune", help=("tune by worst-case error, by a bound, or by real runs "
                                "(tune runs: DP-SGD, heavy ball, a plug-in)"),
                          description="Tune DP heavy ball (hb) or DP-NAG / DP-MASG (nag) from "
                                      "Kuru et al.'s bounds, any registered bound over its "
                                      "hyper-parameters (bound NAME), or a plug-in's method "
                                      "by its name (NAME).",
                          epilog=_TUNE_NAMED)
    tsub = tune.add_subparsers(dest="tune_what", metavar="METHOD")
    hb = tsub.add_parser("hb", help="(alpha, beta, T) of DP heavy ball with the least worst-case "
                                    "error (or bound)",
                         description="The (alpha, beta, T) of DP heavy ball with the least "
                                     "worst-case error E[F(x_T)] - F* over the class (default; "
                                     "--objective bound: the least bound), beside the "
                                     "bound-minimising, Polyak's and the paper's choices.",
                         epilog=_HB_COLUMNS)
    _problem_args(hb)
    hb.add_argument("--objective", choices=["error", "bound"], default=None,
                    help="what the tuned row minimises: error = the worst-case E[F(x_T)] - F* of "
                         "the run as calibrated (quadratic class: exact, the default there; "
                         "smooth_strongly_convex: its certified upper bound, the noise-aware "
                         "Lyapunov bound, each row bracketed below by the quadratic worst case); "
                         "bound = the paper's bound (reproduces the paper; the default for "
                         "smooth_strongly_convex)")
    add_quantity(hb, "function_class", default="quadratic",
                 choices=["quadratic", "smooth_strongly_convex"],
                 help="quadratic: Theorem 3.5; smooth_strongly_convex: Prop. 3.4 certificates "
                      "(--objective bound) or the noise-aware Lyapunov bound (--objective error)")
    hb.set_defaults(func=_tune_hb)
    nag = tsub.add_parser("nag", help="DP-NAG / DP-MASG horizon and optimal noise schedule",
                          description="Remark 4.1's horizon and the optimal noise schedule "
                                      "(Prop. 4.2 / eq. (30)) for DP-NAG and DP-MASG.",
                          epilog=_NAG_COLUMNS)
    _problem_args(nag)
    add_quantity(nag, "step_factor", default=1.0, help="step factor c in (0, 1]: alpha = c / L")
    nag.add_argument("--objective", choices=["error", "bound"], default=None,
                     help="error (default): also a row per method whose horizon and allocation "
                          "minimise the certified worst-case E[F(x_T)] - F* over quadratics, "
                          "with a proven bracket on the allocation; bound: the paper's rows "
                          "only")
    nag.set_defaults(func=_tune_nag)
    from dpbounds.cli.plugin_cmd import register_tune_bound, register_tune_named

    register_tune_bound(tsub)  # `tune bound NAME`: any registered bound, a plug-in's too
    from dpbounds.cli.tune_runs_cmd import register_tune_runs

    register_tune_runs(tsub)  # `tune runs ALGORITHM`: by the mean error of real runs
    register_tune_named(tsub)  # `tune NAME`: a loaded plug-in's method or theorem
    tune.set_defaults(func=lambda a: (tune.print_help(), 0)[1])

    rate = sub.add_parser("rate", help="convergence rates (closed form and LMI certificate)",
                          description="Convergence rates: closed forms and LMI certificates.")
    rsub = rate.add_subparsers(dest="rate_what", metavar="METHOD")
    rhb = rsub.add_parser("hb", help="heavy-ball rate: quadratic closed form and Prop. 3.4 LMI",
                          description="Heavy-ball rate: the closed form on quadratics, the "
                                      "paper's eq. (26) as printed, and the Prop. 3.4 LMI "
                                      "certificate for all smooth strongly convex functions.",
                          epilog=_RATE_COLUMNS)
    add_quantity(rhb, "step_size", required=True, help="step size alpha > 0")
    add_quantity(rhb, "momentum", required=True, help="momentum beta in [0, 1)")
    add_quantity(rhb, "strong_convexity", required=True, help="strong convexity mu > 0")
    add_quantity(rhb, "smoothness", required=True, help="smoothness L >= mu")
    add_quantity(rhb, "tolerance", default=1e-6, help="LMI bisection tolerance on rho")
    add_quantity(rhb, "steps",
                 help="also the worst case of E[F(x_T)] - F* after T steps: on quadratics "
                      "(exact) and on all of S_mu,L: the noise-aware PEP for T <= 20 (with "
                      "--pep: T <= 200) and a noise-aware Lyapunov bound at any T")
    add_quantity(rhb, "initial_gap", default=1.0,
                 help="with --steps: F(x0) - F* <= E0")
    add_quantity(rhb, "noise_second_moment", default=0.0,
                 help="with --steps: E||xi_t||^2 of each step's gradient noise")
    rhb.add_argument("--pep", action="store_true",
                     help="with --steps: the noise-aware PEP worst case with its CPU time and "
                          "exact certificate lambda_0 E0 + sum_t lambda_t s_t^2 (exact PEP for "
                          "T <= 20, its banded relaxation, an upper bound, up to T = 200)")
    rhb.add_argument("--pep-window", type=integer, default=None,
                     help="with --pep: use the banded relaxation with this window w >= 1 "
                          "(default: the exact PEP for T <= 20, window 2 above)")
    rhb.add_argument("--no-lmi", action="store_true", help="closed forms only")
    rhb.add_argument("--json", action="store_true", help="print the numbers as JSON")
    rhb.set_defaults(func=_rate_hb)
    rate.set_defaults(func=lambda a: (rate.print_help(), 0)[1])
