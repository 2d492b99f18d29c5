"""Where a formula comes from.

Every theorem, bound, constant and hyper-parameter rule in dpbounds carries a
:class:`Source`: the paper, the result number and a :class:`Provenance` label, with
the same meaning as in the project's theory sheets.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Provenance(enum.Enum):
    """How much of a formula is the paper's own."""

    #: copied from the paper, constants and equation number included
    VERBATIM = "VERBATIM"
    #: the paper's formula is lost; its prose names the standard form we wrote down
    RECONSTRUCTED = "RECONSTRUCTED"
    #: our own derivation: constants, log factors and choices are ours, not the paper's
    DERIVED = "DERIVED"
    #: not recoverable from the sources; a hole on purpose
    MISSING = "MISSING"

    def __str__(self) -> str:
        return self.value


#: Short names of the five source papers, used in every citation.
KURU = "Kuru, Birbil, Gürbüzbalaban, Yıldırım, SIAM J. Optim. 32(2), 2022 (arXiv 2008.01989)"
TRAN_CUTKOSKY = "Tran & Cutkosky, Momentum Aggregation for Private Non-convex ERM, NeurIPS 2022"
YANG = "Yang, Zhang, Chen, Liu, Normalized/Clipped SGD with Perturbation for DP (arXiv 2206.13033)"
LEE_KIFER = "Lee & Kifer, Concentrated DP Gradient Descent, Adaptive per-Iteration Budget, KDD 2018"
KAMATH = "Kamath, CS 860 Lecture 13: Differentially Private ERM, Fall 2020"


@dataclass(frozen=True)
class Paper:
    """A source paper: the one place a new paper is declared.

    The docs build one page per entry of :data:`PAPERS` (``docs/build_docs.py``), listing every
    :class:`Source` of the package that cites it; adding a paper means adding its citation
    constant and one entry here.

    Parameters
    ----------
    slug:
        Page name, ``docs/papers/<slug>.md``.
    citation:
        The citation string its :class:`Source` objects carry (one of the constants above).
    title:
        Page title.
    keywords:
        Words that mark a figure script, study or test as being about the paper; a citation that
        starts with one of them also counts as the paper's (e.g. Lee & Kifer's baseline code).
    """

    slug: str
    citation: str
    title: str
    keywords: tuple[str, ...]

    def cites(self, source: Source) -> bool:
        """Whether ``source`` is a result of this paper."""
        return source.paper == self.citation or any(source.paper.startswith(k)
                                                    for k in self.keywords)


@dataclass(frozen=True)
class Source:
    """A citation: paper, result number and provenance label.

    Parameters
    ----------
    paper:
        Short reference to the paper (use the module constants, e.g. :data:`KURU`).
    result:
        The paper's result or equation number, e.g. ``"Theorem 3.5, eq. (24)"``.
    provenance:
        How much of the formula is the paper's own.
    note:
        Anything a reader must know: a printed typo that was corrected, a constant
        that is ours, the derivation it follows.
    """

    paper: str
    result: str
    provenance: Provenance
    note: str = ""

    def __post_init__(self) -> None:
        # checked here, not where a table first reads it: Source("a", "b", "MAYBE") was
        # accepted and a plug-in's bound page ended in "'MAYBE' is not in list"
        prov = self.provenance
        if isinstance(prov, str) and not isinstance(prov, Provenance):
            try:
                prov = Provenance(prov.strip().upper())
            except ValueError:
                prov = None
        if not isinstance(prov, Provenance):
            raise ValueError(f"provenance must be one of "
                             f"{', '.join(p.value for p in Provenance)}, got {self.provenance!r}")
        object.__setattr__(self, "provenance", prov)
        for name in ("paper", "result"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} must be a non-empty string, got {value!r}")
        if not isinstance(self.note, str):
            raise ValueError(f"note must be a string, got {self.note!r}")

    def __str__(self) -> str:
        text = f"{self.paper}, {self.result} [{self.provenance}]"
        return f"{text} — {self.note}" if self.note else text


#: labels from the weakest to the strongest claim
_STRENGTH = (Provenance.MISSING, Provenance.DERIVED, Provenance.RECONSTRUCTED, Provenance.VERBATIM)


def weakest(sources: tuple[Source, ...] | list[Source]) -> Provenance:
    """The weakest label among ``sources`` (DERIVED beats RECONSTRUCTED beats VERBATIM): a result
    is only as much the paper's as its least verbatim ingredient."""
    return min((s.provenance for s in sources), key=_STRENGTH.index)


def strongest(sources: tuple[Source, ...] | list[Source]) -> Provenance:
    """The strongest label among ``sources``: what the best-attested part of a result (e.g.
    its headline exponent, often quoted VERBATIM while the constants are DERIVED) can claim."""
    return max((s.provenance for s in sources), key=_STRENGTH.index)


def exponent_label(sources: tuple[Source, ...] | list[Source]) -> str:
    """How a result's headline exponent is labelled in reports: ``"paper, VERBATIM"`` when a
    source quotes it, else the strongest label (``"DERIVED"`` for a user's own theorem)."""
    label = strongest(sources)
    return "paper, VERBATIM" if label is Provenance.VERBATIM else str(label)


#: The source papers, in the order of the docs' paper pages.
PAPERS: tuple[Paper, ...] = (
    Paper("kuru", KURU, "Kuru et al.: DP accelerated optimization (heavy ball, NAG, MASG)",
          ("Kuru", "DP-SHB", "DP-NAG", "DP-MASG")),
    Paper("tran_cutkosky", TRAN_CUTKOSKY, "Tran & Cutkosky: momentum aggregation",
          ("Tran & Cutkosky", "Tran and Cutkosky")),
    Paper("yang", YANG, "Yang et al.: normalized / clipped SGD with perturbation",
          ("Yang et al", "Yang, Zhang", "DP-NSGD")),
    Paper("lee_kifer", LEE_KIFER, "Lee & Kifer: DP-AGD (adaptive per-iteration budget)",
          ("Lee & Kifer", "Lee and Kifer", "DP-AGD")),
    Paper("kamath", KAMATH, "Kamath's lecture: differentially private ERM",
          ("Kamath", "DP-ERM")),
)
