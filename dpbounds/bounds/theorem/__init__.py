r"""The uniform theorem object of :mod:`dpbounds.bounds`.

Every utility bound in dpbounds is a :class:`Bound`: a sympy expression over named positive
symbols (``d``, ``N``, ``eps``, ``delta``, ``G``, ``L``, ``R``, hyper-parameters such as ``eta``
or ``E``) together with

* the quantity it bounds (e.g. :math:`\mathbb E\lVert\nabla F(\hat x)\rVert`);
* its stated assumptions (:class:`Assumption`: a sympy relation checked at evaluation time,
  or plain text);
* one or more :class:`~dpbounds.provenance.Source` citations with their provenance labels
  (a composed theorem cites each lemma it was built from);
* ``definitions`` (identities that always hold, e.g. :math:`T = NE`) and ``hyperparameters``
  (the closed-form *choices* of learning rate, momentum, epochs, noise, ...);
* the chain of :class:`Lemma` objects it was composed from (``steps``), so a reader can audit
  every substitution.

A :class:`Lemma` is a bound that still contains free hyper-parameters or placeholder symbols
for other lemmas' quantities; :meth:`Bound.compose` plugs bounds into those placeholders and
returns a :class:`Theorem` after checking that the outer bound is non-decreasing in every
placeholder (proven by sympy, else checked on a grid, else refused; see :mod:`.monotonicity`);
:meth:`Bound.tuned` substitutes the closed-form hyper-parameter choices, leaving a function of
the problem parameters only.

Evaluation is vectorised: :meth:`Bound.evaluate` lambdifies the expression once (cached) and
broadcasts NumPy arrays. :meth:`Bound.exponents` extracts the leading-order scaling
*symbolically*: along a joint scaling path (default: :math:`d\propto N\to\infty`, the other
symbols fixed) it takes the limit of the partial log-derivatives
:math:`\partial\log B/\partial\log v`, which are exact powers of the dominant term; log factors
of that term are reported separately. :meth:`Bound.optimize` tunes the hyper-parameters
numerically (log-parameterised, scipy) next to the closed-form choice.

One concept per module: :mod:`.symbols` (:func:`sym` and the sign conventions),
:mod:`.structure` (:class:`Bound`, :class:`Lemma`, :class:`Theorem`, :class:`Assumption`,
composition), :mod:`.monotonicity` (the composition check), :mod:`.evaluation`,
:mod:`.scaling` (:meth:`Bound.exponents`, :class:`Scaling`), :mod:`.optimization`
(:meth:`Bound.optimize`, :class:`Tuned`) and :mod:`.rendering` (LaTeX, text,
:meth:`Bound.audit`). Every method stays a method of :class:`Bound`.

Example
-------
>>> import sympy as sp
>>> from dpbounds.bounds.theorem import Lemma, sym
>>> from dpbounds.provenance import Provenance, Source
>>> d, N, eps, eta = sym("d"), sym("N"), sym("eps"), sym("eta")
>>> toy = Lemma(
...     name="toy",
...     quantity="E||grad F||",
...     expr=1 / (eta * N) + eta * sp.sqrt(d) / eps,
...     sources=(Source("a toy", "eq. (1)", Provenance.DERIVED),),
...     hyperparameters={"eta": (eps / (N * sp.sqrt(d))) ** sp.Rational(1, 2)},
... )
>>> thm = toy.tuned()
>>> print(thm.exponents(("d", "N", "eps")))
d^(1/4) N^(-1/2) eps^(-1/2)
>>> float(thm.evaluate(d=100, N=1e4, eps=1.0))  # 2 * 100**0.25 / 100
0.0632455532033676
>>> best = toy.optimize(d=100, N=1e4, eps=1.0)
>>> round(best.value / best.closed_form_value, 6)
1.0
"""

from dpbounds.bounds.theorem.monotonicity import Monotonicity, check_monotone
from dpbounds.bounds.theorem.optimization import Tuned
from dpbounds.bounds.theorem.scaling import Scaling
from dpbounds.bounds.theorem.structure import Assumption, Bound, Lemma, Theorem
from dpbounds.bounds.theorem.symbols import (
    COUNT_SYMBOLS,
    NONNEGATIVE_SYMBOLS,
    SYMBOL_LATEX,
    sym,
)

__all__ = [
    "COUNT_SYMBOLS",
    "NONNEGATIVE_SYMBOLS",
    "SYMBOL_LATEX",
    "Assumption",
    "Bound",
    "Lemma",
    "Monotonicity",
    "Scaling",
    "Theorem",
    "Tuned",
    "check_monotone",
    "sym",
]
