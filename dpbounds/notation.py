r"""One notation for dpbounds: every public quantity with its API name, CLI flag, symbol and LaTeX.

The papers disagree on names: Tran & Cutkosky and Yang et al. write the dataset size :math:`N`,
Kuru et al. and Kamath :math:`n`; Kuru et al.'s :math:`\alpha` is a step size, Tran & Cutkosky's
:math:`\alpha` a momentum weight. dpbounds fixes one meaning per name here and every part of the
toolkit reads it from this table:

* the command line builds its flags from it (:func:`dpbounds.cli.add_quantity`): the same flag
  means the same quantity in every sub-command, the canonical flag is the quantity's name
  (``--epsilon``, ``--dataset-size``), and the papers' symbols stay as aliases (``--eps``,
  ``--N``, ``--n``);
* the theorem objects render their symbols with its LaTeX (:data:`SYMBOL_LATEX`, used by
  :meth:`dpbounds.bounds.theorem.Bound.latex`);
* ``docs/notation.md`` is generated from it (:func:`markdown`).

Each row of :data:`QUANTITIES` is a :class:`Quantity` (the form of jax_privacy's notation
table): the API name, the symbols that stand for it in the bounds (the sympy names
:func:`dpbounds.bounds.theorem.sym` creates), the CLI flag and its aliases, the LaTeX, what it
means, and where the papers differ. Command-line options that are not quantities (``--json``,
``--quiet`` ...) are in :data:`OPTIONS`.

Example
-------
>>> from dpbounds.notation import quantity, quantity_of_flag
>>> q = quantity("dataset_size")
>>> q.flag, q.flag_aliases, q.symbols
('--dataset-size', ('--n', '--N'), ('N', 'n'))
>>> quantity_of_flag("--eps").name
'epsilon'
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, overload

__all__ = ["SYMBOL_LATEX", "markdown", "notation_keywords", "quantity"]

_F = TypeVar("_F", bound=Callable[..., Any])
_R = TypeVar("_R")


@dataclass(frozen=True)
class Quantity:
    """One row of the notation table.

    Attributes
    ----------
    name:
        Canonical name (the Python keyword where an API takes it; CLI ``dest``).
    symbol:
        How it is written in text (unicode).
    latex:
        LaTeX of the symbol.
    meaning:
        What it is, with its valid range.
    symbols:
        Names of the sympy symbols that stand for it in the bounds (``"eps"``, ``"N"`` ...).
    flag:
        Canonical command-line flag, or ``None`` (a quantity of the bounds only).
    flag_aliases:
        Other spellings of the flag that mean the same quantity (kept working).
    api_names:
        Other keyword names of the quantity in dpbounds' Python API.
    kind:
        ``"float"``, ``"int"`` (``1e5`` accepted), ``"choice"``, ``"text"`` or ``"switch"``.
    papers:
        Where the papers' notation differs from ours.
    """

    name: str
    symbol: str
    latex: str
    meaning: str
    symbols: tuple[str, ...] = ()
    flag: str | None = None
    flag_aliases: tuple[str, ...] = ()
    api_names: tuple[str, ...] = ()
    kind: str = "float"
    papers: str = ""

    @property
    def flags(self) -> tuple[str, ...]:
        """The canonical flag and its aliases (empty without a flag)."""
        return (self.flag, *self.flag_aliases) if self.flag else ()


_Q = Quantity

#: Every public quantity, grouped: privacy, problem, algorithm and bound-internal symbols.
QUANTITIES: tuple[Quantity, ...] = (
    # ------------------------------------------------------------------ privacy
    _Q("epsilon", "ε", r"\varepsilon", "privacy budget ε > 0 (total, over the whole run)",
       ("eps",), "--epsilon", ("--eps",), ("epsilon", "eps"),
       papers="every paper writes ε; the bounds' symbol is eps"),
    _Q("delta", "δ", r"\delta", "privacy parameter δ in (0, 1) of (ε, δ)-DP",
       ("delta",), "--delta", api_names=("delta",)),
    _Q("sensitivity", "S₁", r"S_1",
       "sensitivity > 0 of the per-step sum of per-example gradients under the neighbouring "
       "relation (L1 for Laplace noise, L2 for Gaussian noise)",
       ("S1",), "--sensitivity", ("--S1",), ("sensitivity",),
       papers="Kuru et al.: S_1, the L1 sensitivity of one sample's gradient (eq. (10)); the "
              "noised average moves by S_1/m"),
    _Q("neighbouring", "", "", "neighbouring relation: add_remove or replace_one "
       "(sensitivities differ by a factor 2)", (), "--neighbouring", (), ("neighbouring",),
       "choice", papers="Kuru, Tran & Cutkosky, Yang: replace-one; Lee & Kifer: add/remove"),
    _Q("sigma", "σ", r"\sigma", "standard deviation of Gaussian noise (on the sum)",
       ("sigma",), "--sigma", (), ("sigma",)),
    _Q("noise_std_1", "σ₁", r"\sigma_1",
       "noise std of the first two epochs (sensitivity-reduced NSGD)", ("sigma1",)),
    _Q("noise_std_2", "σ₂", r"\sigma_2",
       "noise std of the later epochs (sensitivity-reduced NSGD)", ("sigma2",),
       papers="Kuru et al.'s Theorem 3.5 objects (theorem_3_5, stationary_error_theorem) use the "
              "name sigma2 for the per-coordinate noise variance σ_T²"),
    _Q("scale", "b", r"b", "scale of Laplace noise (variance 2b²)", ("b",), "--scale", (),
       ("scale",), papers="Kuru et al.'s reference code used b as a standard deviation (a "
                          "privacy defect); dpbounds always means the scale"),
    _Q("sampling_rate", "q", r"q", "sampling rate m/n in (0, 1] (Poisson or without replacement)",
       ("q",), "--sampling-rate", (), ("sampling_rate",)),
    _Q("c2", "c₂", r"c_2", "Lemma 3.1's constant of Yang et al. (default: fitted with the RDP "
       "accountant)", ("c2",), "--c2"),
    # ------------------------------------------------------------------ problem
    _Q("dataset_size", "N", r"N", "number of examples N >= 1 (an integer; 1e5 is accepted)",
       ("N", "n"), "--dataset-size", ("--n", "--N"), ("n", "dataset_size"), "int",
       papers="Tran & Cutkosky, Yang et al.: N; Kuru et al., Kamath, Lee & Kifer: n"),
    _Q("dimension", "d", r"d", "dimension d >= 1 of the parameter", ("d",), "--dimension",
       ("--d",), ("d",), "int"),
    _Q("lipschitz", "G", r"G",
       "per-example gradient bound G > 0: every loss is G-Lipschitz, ‖∇f(x; z)‖ <= G",
       ("G", "zeta"), "--lipschitz", ("--G",), ("lipschitz",),
       papers="Kamath's lecture: L (the ERM bound's Lipschitz constant); Lee & Kifer's ObjPert: "
              "ζ"),
    _Q("smoothness", "L", r"L", "smoothness L > 0: ∇F is L-Lipschitz", ("L", "L0"),
       "--smoothness", ("--L",), ("smoothness", "L"),
       papers="Yang et al.: L_0 of (L_0, L_1)-smoothness; Kamath's lecture uses L for the "
              "Lipschitz constant (dpbounds' G)"),
    _Q("l1_smoothness", "L₁", r"L_1", "the L_1 >= 0 of (L_0, L_1)-smoothness (Yang et al.; "
       "default 0)", ("L1",), "--L1"),
    _Q("strong_convexity", "μ", r"\mu", "strong convexity 0 < μ <= L (F is μ-strongly convex)",
       ("mu",), "--strong-convexity", ("--mu",), ("mu", "strong_convexity")),
    _Q("initial_gap", "R", r"R", "initial gap F(x₀) − inf F <= R (> 0 for the bounds)",
       ("R", "D_f", "E0"), "--initial-gap", ("--R", "--E0"), ("initial_gap", "initial_error"),
       papers="Tran & Cutkosky: R; Yang et al.: D_f; Kuru et al.: E_0"),
    _Q("diameter", "‖𝒞‖₂", r"\lVert\mathcal C\rVert_2",
       "diameter > 0 of the constraint set (convex bounds; default R)", ("diam",),
       "--diameter", ("--diam",), ("diameter", "radius")),
    _Q("gradient_noise", "τ₀", r"\tau_0",
       "gradient-noise level τ₀ > 0: ‖∇f(x; z) − ∇f(x)‖ <= τ₀ a.s. (Yang et al.; default 2G)",
       ("tau0",), "--gradient-noise", ("--tau0",)),
    _Q("gradient_noise_growth", "τ₁", r"\tau_1", "Yang et al.'s τ₁ >= 0 of the noise model "
       "(only τ₁ = 0 is derived)", ("tau1",)),
    _Q("problem_class", "", "", "nonconvex, convex, strongly_convex or quadratic (default: "
       "strongly_convex when μ is given, else nonconvex)", (), "--problem-class", (), (),
       "choice"),
    _Q("regularisation", "λ", r"\lambda", "ridge coefficient λ > 0 of a regularised ERM",
       ("lam",), api_names=("lam",)),
    _Q("hessian_bound", "λ_H", r"\lambda_H",
       "bound on the eigenvalues of the per-example Hessians (objective perturbation)",
       ("lam_H",)),
    # ------------------------------------------------------------------ algorithm
    _Q("steps", "T", r"T", "number of iterations (releases) T >= 1", ("T",), "--steps", (),
       ("steps",), "int"),
    _Q("iteration", "t", r"t", "iteration index 0 <= t <= T", ("t",)),
    _Q("max_horizon", "T_max", r"T_{\max}", "largest horizon T searched (strongly convex "
       "bounds, tuning; default 1000, the largest T of Kuru et al.'s Section 5)",
       ("max_horizon",),
       "--max-horizon", (), ("max_horizon",), "int"),
    _Q("batch_size", "m", r"m", "batch size 1 <= m <= N, sampled without replacement "
       "(default N: no subsampling)", ("m", "B"), "--batch-size", ("--m",),
       ("batch_size", "m"), "int", papers="Kuru et al.: m; Yang et al.: B"),
    _Q("epochs", "E", r"E", "number of passes over the data", ("E",)),
    _Q("step_size", "α", r"\alpha", "step size (learning rate) > 0", ("alpha", "eta"),
       "--step-size", ("--alpha",), ("step_size", "alpha"),
       papers="Kuru et al.: α; Tran & Cutkosky, Yang et al.: η (Tran & Cutkosky's α is the "
              "momentum weight)"),
    _Q("momentum", "β", r"\beta", "momentum in [0, 1)", ("beta", "alpha"), "--momentum",
       ("--beta",), ("momentum",),
       papers="Kuru et al.: β (heavy ball / Nesterov); Tran & Cutkosky's α is the weight "
              "of the new gradient, 1 − β (momentum_weight)"),
    _Q("step_factor", "c", r"c", "step-size factor c in (0, 1]: α = c/L", (), "--step-factor",
       ("--c",), ("c",)),
    _Q("momentum_weight", "α", r"\alpha",
       "weight α in (0, 1] of the new gradient in the momentum m_t = (1 − α) m_{t−1} + α g_t "
       "(tree-momentum NSGD; α = 1 − β of momentum; default 1/steps per epoch)", ("alpha",),
       api_names=("momentum_weight",),
       papers="Tran & Cutkosky: α (their 'momentum' parameter; dpbounds' momentum is β = 1 − α, "
              "the weight of the old direction); Kuru et al.'s α is the step size"),
    _Q("mixing", "γ", r"\gamma", "mixing parameter γ in [0, 1] of the sensitivity-reduced "
       "NSGD: γ clip(∇ℓ(x_t)) + (1 − γ)(∇ℓ(x_t) − ∇ℓ(x_{t−S})) (γ = 1: plain momentum)",
       ("gamma",), api_names=("mixing",),
       papers="Tran & Cutkosky Algorithm 2: γ (default L u / G); Lee & Kifer's DP-AGD uses γ "
              "for its budget increase (dp_agd's gamma)"),
    _Q("eta_N", "u", r"u", "η N, the step size times the dataset size (tree-momentum NSGD)",
       ("u",)),
    _Q("regulariser", "r", r"r", "regulariser r > 0 of normalized SGD, g/(‖g‖ + r) (Yang "
       "et al.'s bound takes r > τ₀)", ("r",), api_names=("regulariser",),
       papers="Yang et al.: r (DP-NSGD, eq. (3)); it moves the bias floor, not the noise"),
    _Q("clip_threshold", "C", r"C", "per-example clipping threshold C > 0: each gradient is "
       "scaled to norm <= C (DP-SGD, Gaussian DP-GD, tree-momentum NSGD; Yang et al.'s bound "
       "takes C >= 3τ₀)", ("C",), "--clip-threshold", ("--clip",),
       api_names=("clip_threshold",),
       papers="Abadi et al., Yang et al.: C; Tran & Cutkosky clip to G (their Lipschitz "
              "constant); in Kuru et al.'s Theorem 3.5 objects C is the constant of C_t = C t"),
    _Q("mechanism", "", "", "noise mechanism (Kuru et al.: laplace)", (), "--mechanism",
       kind="choice"),
    _Q("sampling", "", "", "how DP-SGD draws its mini-batches: without_replacement "
       "(replace-one; m of the N samples) or poisson (add/remove; each sample with "
       "probability m/N, m the expected batch)", (), "--sampling", (), ("sampling",),
       "choice"),
    _Q("noise", "", "", "noise of the released gradients: float (float64, for simulation; "
       "its last bits leak) or grid (exact discrete Laplace / Gaussian on a grid, safe to "
       "release)", (), "--noise", kind="choice"),
    _Q("function_class", "", "", "function class of the heavy-ball tuning: quadratic "
       "(Theorem 3.5) or smooth_strongly_convex (Prop. 3.4)", (), "--function-class",
       kind="choice"),
    # ------------------------------------------------------------------ bound internals
    _Q("rate", "ρ", r"\rho", "linear convergence rate in (0, 1)", ("rho",)),
    _Q("noise_variance", "σ_T²", r"\sigma_T^2",
       "per-coordinate variance of the gradient noise at horizon T (Kuru et al.)", ("sigma2",),
       papers="the bound objects of Kuru et al.'s Theorem 3.5 call it sigma2"),
    _Q("noise_second_moment", "s²", r"s^2",
       "E‖ξ_t‖² of each step's gradient noise (total over the coordinates) for the worst-case "
       "analyses of 'rate' (quadratics and the noise-aware PEP)", ("s2",),
       "--noise-second-moment"),
    _Q("initial_state_error", "E₀", r"E_0",
       "E‖ξ₀ − ξ*‖² of the heavy-ball state (Theorem 3.5 objects)", ("E0",)),
    _Q("gradient_norm", "x", r"x", "‖∇f(x)‖, the variable of an inner-product lemma", ("x",)),
    _Q("placeholder_Q", "Q", r"Q", "placeholder: the descent bound plugged into an inversion "
       "lemma", ("Q",)),
    _Q("placeholder_a", "a", r"a", "placeholder: the (L_0, L_1) step-size term", ("a",)),
    _Q("noise_error", "ε̂", r"\overline{\lVert\hat\epsilon\rVert}",
       "placeholder: average momentum error E‖m̂_t − ∇F(x_t)‖", ("noise_err",)),
    _Q("momentum_error", "", r"\overline{\lVert m-\nabla F\rVert}",
       "placeholder: momentum and reshuffling bias", ("momentum_err",)),
    _Q("tree_error", "", r"\overline{\lVert\hat m-m\rVert}",
       "placeholder: tree-aggregation noise error", ("tree_err",)),
    # ------------------------------------------------------------------ run settings
    _Q("trials", "", "", "number of runs (audit: per data set, half to select, half to "
       "evaluate)", (), "--trials", (), ("trials",), "int"),
    _Q("seed", "", "", "seed of the random runs (trial k depends only on (seed, k))", (),
       "--seed", (), ("seed",), "int"),
    _Q("confidence", "", "", "confidence level in (0, 1) of a lower bound", (), "--confidence",
       (), ("confidence",)),
    _Q("noise_factor", "", "", "multiply every noise scale by this (mutation testing)", (),
       "--noise-factor", (), ("noise_factor",)),
    _Q("scaling_variable", "", "", "the variable a scaling study sweeps (d, N or eps)", (),
       "--vary", kind="choice"),
    _Q("start_distance", "", "", "distance ‖x₀ − x*‖ of the start from the minimiser "
       "(verification problems)", (), "--start", (), ("start",)),
    _Q("tolerance", "", "", "bisection tolerance on ρ of the LMI rate", (), "--tol", (),
       ("tol",)),
    _Q("crossover_variable", "", "", "problem key along which crossovers are searched "
       "(N, d or eps)", (), "--crossover-variable", kind="choice"),
)

#: Command-line switches and options that are not quantities (flag -> meaning).
OPTIONS: dict[str, str] = {
    "--json": "machine-readable output",
    "--quiet": "no progress bars (they appear only on a terminal anyway)",
    "--debug": "on an error, show the Python traceback",
    "--list": "list the names (bounds, audits)",
    "--no-tune": "skip the numeric tuning of hyper-parameters",
    "--smallest": "regime query: smallest value of a problem key from which a bound is <= "
                  "--target",
    "--largest": "regime query: largest value of a problem key up to which a bound is <= "
                 "--target",
    "--target": "regime query: the value a bound must reach",
    "--search-range": "regime query: the range searched (LOW HIGH)",
    "--latex": "print the bound in LaTeX",
    "--audit": "print the whole lemma chain of a bound",
    "--no-lmi": "closed-form rates only (no LMI certificate)",
    "--pep": "rate hb --steps: the noise-aware PEP worst case, CPU time and exact certificate",
    "--pep-window": "rate hb --pep: the banded PEP relaxation's window w >= 1",
    "--quick": "a short run (fewer trials)",
    "--mutant": "audit a copy with a known bug (default sigma/2; see --list-mutants)",
    "--list-mutants": "list the audit's mutants (bugs that shipped) and where they apply",
    "--low-bits": "audit the floating-point side channel (last mantissa bits)",
    "--ledger-claim": "audit against the algorithm's own accountant (not the tightest one)",
    "--replay": "audit: replay the algorithm on D and D' with one seed and no noise: each "
                "release vs its declared sensitivity, control flow, sampling",
    "--tradeoff": "audit: print the empirical trade-off curve beside the claim's",
    "--plan": "print the runs an audit needs (95% power) instead of running it",
    "--target-ratio": "audit plan: the goal eps_lower / claimed eps (default 0.9)",
    "--max-memory-gb": "refuse a run estimated above this memory (GB, 1e9 bytes)",
    "--allow-large": "run above the memory budget (verify, audit)",
    "--grid": "verify: which grid to run (auto, informative, path, small)",
    "--path": "verify: sweep along the theorem's headline scaling path (--grid path)",
    "--max-seconds": "verify: CPU budget of a planned grid; dearer points are skipped",
    "--allow-expensive": "verify: run every planned point whatever its estimated cost",
    "--values": "grid values of the swept variable (dpbounds verify)",
    "--plot": "write a figure to FILE (verify: bound, measurement and components, log-log; "
              "privacy compose: the --curve)",
    "--problem": "verification problem (huber_well, far, noise_floor, hard); tune runs: the "
                 "objective (logistic, quadratic, or a verification problem's name)",
    "--search": "tune runs: a searched hyper-parameter and its values, NAME=V1,V2,... or "
                "NAME=LOW:HIGH:K",
    "--eval-trials": "tune runs: runs of the pick on fresh seeds",
    "--mutation": "run a mutated algorithm (negative control: noise_d)",
    "--store": "keep finished sweep cells (verify, tune runs: grid points; tune runs "
               "--private: trials) in this folder "
               "and resume from it",
    "--fresh": "tune runs: recompute every grid point, overwriting the stored ones",
    "--dask": "tune runs: run the grid points on a Dask LocalCluster of --workers workers",
    "--scheduler": "tune runs: run the grid points on an existing Dask cluster "
                   "(tcp://HOST:PORT)",
    "--private": "tune runs: select privately on the data itself (Liu & Talwar's random "
                 "stopping; eps = 3 (eps + score eps) in all)",
    "--score-eps": "tune runs --private: budget of each trial's noisy score",
    "--loss-bound": "tune runs --private: clip each sample's loss to [0, B] in the score",
    "--stop-probability": "tune runs --private: stop after each trial with this probability",
    "--selection-delta": "tune runs --private: account the selection by Renyi DP at this delta",
    "--trials-shape": "tune runs --private --selection-delta: shape of the trials' law",
    "--total-epsilon": "tune runs --private: plan each run's epsilon so the whole selection "
                       "costs at most this",
    "--cost-cache": "verify: keep the planner's measured cost model in FILE ('off': none); a "
                    "study planned before on this host skips its probe runs",
    "--workers": "verify, tune runs: run the grid points on N local worker processes (1: "
                 "this process)",
    "--event": "privacy compose: one mechanism, KIND:key=value,... (repeatable)",
    "--from-dp-event": "privacy compose: a JSON/YAML file of dp_accounting events",
    "--to-dp-event": "privacy compose: write the whole composition as one dp_accounting DpEvent "
                     "(JSON)",
    "--dp-event-accountant": "privacy compose: the dp_accounting accountant (rdp or pld) the "
                             "--from-dp-event files were written for (under replace_one the "
                             "two read a Gaussian's noise multiplier 2x apart)",
    "--from-opacus": "privacy compose: a JSON file of an Opacus accountant's history",
    "--accountant": "privacy compose: comma-separated accountants (rdp, pld, zcdp, pure, basic)",
    "--curve": "privacy compose: also print delta(eps) at these epsilons, or 'tradeoff' "
               "(the attack's TPR at each FPR, and the GDP mu with its regret)",
    "--time-budget": "privacy compose: wall-clock seconds each accountant may take (one "
                     "over it is stopped and reported)",
    "--risk-target": "privacy compose: TPR@FPR, calibrate the first event's noise so that no "
                     "attack's TPR at FPR exceeds TPR",
    "--objective": "tune hb: what the tuned row minimises, the worst-case error of the run "
                   "(error; for smooth_strongly_convex its certified Lyapunov upper bound) or "
                   "the bound (bound); tune bound: the bound (default) or, for a method that "
                   "declares its linear form, the worst-case error of its run over quadratics "
                   "(error); tune NAME (a plug-in's method): error where it declares its "
                   "linear form, else bound (default), or as chosen",
    "--over": "tune bound: the hyper-parameters searched (default: those declared tunable)",
    "--range": "tune bound: search NAME in [LOW, HIGH] (repeatable)",
    "--grid-size": "tune bound: grid points per hyper-parameter (log-spaced, integers for T); "
                   "with --objective error the largest nested grid (3, 8, 16, 30, ...)",
    "--plugin": "load a user's plug-in file (its theorems, methods, studies) before the command "
                "(repeatable)",
    "--help": "show the help of a command",
    "--version": "show the version",
}

_BY_NAME = {q.name: q for q in QUANTITIES}
_BY_FLAG = {f: q for q in QUANTITIES for f in q.flags}


def quantity(name: str) -> Quantity:
    """The row of ``name`` (ValueError listing the names otherwise)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown quantity {name!r}; known: {sorted(_BY_NAME)}") from None


def quantity_of_flag(flag: str) -> Quantity:
    """The row whose canonical flag or alias is ``flag`` (ValueError otherwise)."""
    try:
        return _BY_FLAG[flag]
    except KeyError:
        raise ValueError(f"{flag!r} is not a flag of the notation table") from None


def quantity_of_symbol(symbol: str) -> tuple[Quantity, ...]:
    """Every row in which the bound symbol ``symbol`` appears (a symbol may mean different
    quantities in different papers' theorems; the rows say which)."""
    return tuple(q for q in QUANTITIES if symbol in q.symbols)


def did_you_mean(given: Iterable[str], expected: Iterable[str]) -> str:
    """A hint for keyword names in ``given`` that are not in ``expected``: the notation
    table's symbol for a quantity's name (``epsilon`` -> ``eps``), its API names and flag
    spellings, else the closest spelling; ``""`` when every name is expected.

    >>> did_you_mean(["epsilon", "d"], ["eps", "d", "N"])
    "unknown parameter 'epsilon' (did you mean 'eps'?)"
    """
    import difflib

    want = list(expected)
    hints = []
    for key in given:
        if key in want:
            continue
        rows = [q for q in QUANTITIES
                if key == q.name or key in q.api_names or key in q.symbols
                or f"--{key.replace('_', '-')}" in q.flags]
        same = [n for q in rows for n in (q.name, *q.symbols, *q.api_names) if n in want]
        close = same[:1] or difflib.get_close_matches(key, want, n=1)
        hints.append(f"unknown parameter {key!r}"
                     + (f" (did you mean {close[0]!r}?)" if close else ""))
    return "; ".join(hints)


@overload
def notation_keywords() -> Callable[[_F], _F]: ...
@overload
def notation_keywords(**renamed: str) -> Callable[[Callable[..., _R]], Callable[..., _R]]: ...


def notation_keywords(**renamed: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator for a public function whose keywords are notation names: unknown keywords
    raise ``TypeError`` with a did-you-mean hint (:func:`did_you_mean`; Python 3.11's own
    message has none), and each ``old="new"`` pair keeps a renamed keyword working for one
    release: passing ``old`` warns (``DeprecationWarning`` naming ``new``) and passes its
    value as ``new``; passing both is a ``ValueError``.

    >>> @notation_keywords(alpha="momentum")
    ... def run(*, momentum=0.9):
    ...     return momentum
    >>> run(momentun=0.5)
    Traceback (most recent call last):
    ...
    TypeError: run(): unknown parameter 'momentun' (did you mean 'momentum'?)
    """

    # With renamed keywords the type checker sees ``(...) -> R``: the deprecated aliases are
    # not in the signature, and typed callers that still use them must keep type-checking.
    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        params = inspect.signature(func).parameters
        # keyword-only and positional-or-keyword names (a positional-only name is no keyword)
        names = [k for k, p in params.items()
                 if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
        open_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
        for old, new in renamed.items():
            if new not in names or old in params:  # a typo here would silently drop a value
                raise ValueError(f"{func.__name__}: cannot alias {old!r} to {new!r}")

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for old, new in renamed.items():
                if old in kwargs:
                    if new in kwargs:
                        raise ValueError(
                            f"{func.__name__}(): got both {new!r} and its deprecated alias "
                            f"{old!r}; pass {new!r} only")
                    warnings.warn(f"{func.__name__}(): keyword {old!r} is deprecated, use "
                                  f"{new!r} (the notation's name; see docs/notation.md)",
                                  DeprecationWarning, stacklevel=2)
                    kwargs[new] = kwargs.pop(old)
            if not open_kwargs:
                unknown = [k for k in kwargs if k not in names]
                if unknown:
                    raise TypeError(f"{func.__name__}(): {did_you_mean(unknown, names)}")
            return func(*args, **kwargs)

        wrapper.deprecated_keywords = dict(renamed)  # type: ignore[attr-defined]
        return wrapper

    return decorate


def all_flags() -> frozenset[str]:
    """Every flag the table knows: quantities' flags and aliases, and :data:`OPTIONS`."""
    return frozenset(_BY_FLAG) | frozenset(OPTIONS)


#: LaTeX of a bound symbol that is not the first symbol of its row (another paper's name)
_OTHER_LATEX = {"n": "n", "L0": "L_0", "D_f": "D_f", "E0": "E_0", "eta": r"\eta",
                "zeta": r"\zeta", "B": "B"}


def _symbol_latex() -> dict[str, str]:
    out: dict[str, str] = {}
    for q in QUANTITIES:
        for i, s in enumerate(q.symbols):
            if s not in out and q.latex:  # the first row naming a symbol fixes its LaTeX
                out[s] = q.latex if i == 0 else _OTHER_LATEX.get(s, s)
    return out


#: LaTeX of each bound symbol (the Python names are the ``evaluate`` keywords), read by
#: :meth:`dpbounds.bounds.theorem.Bound.latex`.
SYMBOL_LATEX: dict[str, str] = _symbol_latex()


def _cell(text: str) -> str:
    return text.replace("|", r"\|").replace("\n", " ")


def _table(rows: Iterable[Quantity]) -> list[str]:
    out = ["| name | symbol | LaTeX | bound symbols | CLI flag (aliases) | meaning | papers |",
           "|---|---|---|---|---|---|---|"]
    for q in rows:
        flag = f"`{q.flag}`" if q.flag else ""
        if q.flag_aliases:
            flag += " (" + ", ".join(f"`{a}`" for a in q.flag_aliases) + ")"
        syms = ", ".join(f"`{s}`" for s in q.symbols)
        latex = f"`{q.latex}`" if q.latex else ""
        out.append(f"| `{q.name}` | {q.symbol} | {_cell(latex)} | {syms} | {flag} | "
                   f"{_cell(q.meaning)} | {_cell(q.papers)} |")
    return out


def markdown() -> str:
    """``docs/notation.md``: the table as Markdown (generated; do not edit the file by hand)."""
    lines = [
        "# Notation",
        "",
        "<!-- generated from dpbounds/notation.py by docs/build_docs.py; do not edit -->",
        "",
        "One name per quantity across the library, the command line and the docs. The "
        "canonical CLI flag is the quantity's name; the papers' symbols are aliases, so "
        "`--eps`, `--N` and `--n` keep working. *Bound symbols* are the names of the sympy "
        "symbols in the theorem objects (the keywords of `Bound.evaluate`); the column "
        "*papers* says where a paper writes it differently.",
        "",
    ]
    lines += _table(q for q in QUANTITIES if q.flag)
    lines += ["", "## Symbols of the bounds only", ""]
    lines += _table(q for q in QUANTITIES if not q.flag and q.symbols)
    lines += ["", "## Command-line options that are not quantities", "",
              "| flag | meaning |", "|---|---|"]
    lines += [f"| `{k}` | {_cell(v)} |" for k, v in OPTIONS.items()]
    return "\n".join(lines) + "\n"
