"""The default predictor's candidate models, one interface for all: ``fit(sigs, pairs)``,
``predict(sigs, pairs)``, ``state()`` / ``load_state()`` (JSON) and ``model`` (an XGBoost booster or
None), so one loop chooses, saves and loads them.

* the stacked variants of :mod:`xamm_models.predictors.default.stacked` (``prior``, ``residual``,
  ``physics``);
* :class:`PairOffset`: ``pair-median`` (the median log relR of the (source, target) pair in
  training) and ``pair-prior`` (the physics prior times the pair's median ratio of measured to prior
  relR); a pair never seen falls back to its device scenario (CPU->GPU, ...), then to everything;
* :class:`SplitSlowdown` (``split``): the physics prior with half the source's slowdown from its
  roofline (measured / modelled time) carried to the target; nothing is fitted;
* :class:`MostSimilar` (``similar``): a machine absent from training is answered as the known
  machine of its device kind with the nearest physics signature, by the residual model (relR 1 where
  that stand-in is the source itself). On pairs seen in training it is the residual model.

The learned residuals apply only to machine pairs with enough training kernels
(``min_pair_kernels``; see :mod:`xamm_models.predictors.default.stacked`).

Adding a candidate is one class in one file: decorate it with :func:`register_candidate`, giving its
place in the simplicity order and the regimes whose default candidate lists it joins. The class is
built as ``cls(name, seed, min_pair_kernels=..., residual=...)`` (it may ignore the options) and has
``fit(sigs, pairs)``, ``predict(sigs, pairs)`` (relR per pair), ``state()``/``load_state()`` and a
``model`` attribute (an XGBoost booster to save, or None).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from xamm_data.registry import Registry
from xamm_data.targets import scenario_expr
from xamm_models.machines.physics import most_similar
from xamm_models.predictors.default.stacked import (
    MIN_PAIR_KERNELS,
    StackedModel,
    log_prior,
    source_slowdown,
)

REGIMES = ("seen", "siblings", "new")


@dataclass(frozen=True)
class CandidateSpec:
    """A registered candidate: how to build it and where it goes by default."""

    name: str
    make: Callable[..., object]
    simplicity: float  # the order of the default lists: simplest first
    regimes: tuple[str, ...]  # the regimes whose default candidate lists hold it
    leads: tuple[str, ...]  # regimes whose default list it heads, whatever its simplicity
    label_free: bool  # nothing fitted to the labels (a physical assumption)


CANDIDATES: Registry[CandidateSpec] = Registry("candidate")


def register_candidate(
    name: str,
    *,
    simplicity: float,
    regimes: tuple[str, ...] = REGIMES,
    leads: tuple[str, ...] = (),
    label_free: bool = False,
) -> Callable:
    """Decorator: register a candidate class (or factory) under ``name``.

    Args:
        name: the candidate's name in configs, cards and saved models.
        simplicity: its place in the simplicity order (the default lists run simplest first, and
            the selection keeps the simplest unless clearly beaten).
        regimes: the regimes (``seen``, ``siblings``, ``new``) whose default lists hold it.
        leads: regimes whose default list it heads.
        label_free: nothing is fitted to the labels.

    Returns:
        The decorator, which returns the class unchanged.
    """

    def deco(make: Callable) -> Callable:
        CANDIDATES.add(name, CandidateSpec(name, make, simplicity, regimes, leads, label_free))
        return make

    return deco


def candidate_names() -> list[str]:
    """Every registered candidate, simplest first."""
    return sorted(CANDIDATES, key=lambda n: (CANDIDATES.get(n).simplicity, n))


def default_candidates() -> dict[str, list[str]]:
    """Per regime, the registered candidates that join it by default, simplest first (a
    candidate that leads the regime first).

    Returns:
        Regime -> candidate names.
    """
    out = {}
    for regime in REGIMES:
        names = [n for n in candidate_names() if regime in CANDIDATES.get(n).regimes]
        lead = [n for n in names if regime in CANDIDATES.get(n).leads]
        out[regime] = lead + [n for n in names if n not in lead]
    return out


def label_free() -> frozenset[str]:
    """The registered candidates with nothing fitted to the labels."""
    return frozenset(n for n in CANDIDATES if CANDIDATES.get(n).label_free)


def _stacked(name: str, seed: int = 0, *, min_pair_kernels: int = MIN_PAIR_KERNELS, **_):
    return StackedModel(name, seed, min_pair_kernels)


# the stacked variants (xamm_models.predictors.default.stacked); the AMM ones join no default list
register_candidate("prior", simplicity=0, label_free=True)(_stacked)
register_candidate("residual", simplicity=5)(_stacked)
register_candidate("physics", simplicity=6)(_stacked)
register_candidate("attention", simplicity=7, regimes=())(_stacked)
register_candidate("physics+attention", simplicity=8, regimes=())(_stacked)


@register_candidate("split", simplicity=1, label_free=True)
class SplitSlowdown:
    """The prior times the square root of the source's slowdown from its roofline: log relR = log
    prior - 0.5 log s, s = measured / modelled time on the source.

    The prior assumes the target runs the sample as far from its roofline as the source does (the
    slowdown is the kernel's: it carries over whole); the opposite assumption is that the target
    runs at its roofline (the slowdown is the source machine's: none carries over). Nothing in a
    source profile tells the two apart, so this candidate takes the geometric mean of the two
    answers; it has no fitted parameter. Whether it beats the prior is left to the inner folds, as
    for every candidate."""

    model = None
    # of log s carried to the target: the midpoint between the two assumptions, not a tuned value
    SHARE = 0.5

    def __init__(self, name: str = "split", seed: int = 0, **_: object):
        self.name = name

    def fit(self, sigs, pairs: pl.DataFrame) -> SplitSlowdown:
        return self

    def predict(self, sigs, pairs: pl.DataFrame) -> np.ndarray:
        """Predicted relR of each pair."""
        return np.exp(
            log_prior(sigs, pairs) - (1 - self.SHARE) * np.log(source_slowdown(sigs, pairs))
        )

    def state(self) -> dict:
        return {"share": self.SHARE}

    def load_state(self, state: dict) -> None:
        if state.get("share", self.SHARE) != self.SHARE:
            raise ValueError(
                f"a split candidate saved with share {state['share']}; this xamm "
                f"carries {self.SHARE}"
            )


@register_candidate("pair-prior", simplicity=3)
@register_candidate("pair-median", simplicity=2, regimes=("seen", "siblings"), leads=("siblings",))
class PairOffset:
    """Median offset of log relR (from 0, or from the log prior) per pair, then per scenario, then
    overall."""

    model = None

    def __init__(self, name: str = "pair-prior", seed: int = 0, **_: object):
        self.name, self.on_prior = name, name == "pair-prior"
        self.pair: dict[str, float] = {}
        self.scenario: dict[str, float] = {}
        self.overall = 0.0

    def _base(self, sigs, pairs: pl.DataFrame) -> np.ndarray:
        return log_prior(sigs, pairs) if self.on_prior else np.zeros(pairs.height)

    def fit(self, sigs, pairs: pl.DataFrame) -> PairOffset:
        off = np.log(pairs.get_column("relR").to_numpy()) - self._base(sigs, pairs)
        d = (
            pairs.select((pl.col("source") + ">" + pl.col("target")).alias("pair"), scenario_expr())
            .with_columns(pl.Series("o", off))
            .filter(pl.col("o").is_finite())
        )
        self.pair = dict(d.group_by("pair").agg(pl.col("o").median()).sort("pair").iter_rows())
        self.scenario = dict(
            d.group_by("scenario").agg(pl.col("o").median()).sort("scenario").iter_rows()
        )
        self.overall = float(d.get_column("o").median()) if d.height else 0.0
        return self

    def predict(self, sigs, pairs: pl.DataFrame) -> np.ndarray:
        """Predicted relR of each pair."""
        keys = pairs.select(
            (pl.col("source") + ">" + pl.col("target")).alias("pair"), scenario_expr()
        )
        off = (
            keys.select(
                pl.col("pair")
                .replace_strict(self.pair, default=None, return_dtype=pl.Float64)
                .fill_null(
                    pl.col("scenario").replace_strict(
                        self.scenario, default=None, return_dtype=pl.Float64
                    )
                )
                .fill_null(self.overall)
            )
            .to_series()
            .to_numpy()
        )
        return np.exp(self._base(sigs, pairs) + off)

    def state(self) -> dict:
        return {"pair": self.pair, "scenario": self.scenario, "overall": self.overall}

    def load_state(self, state: dict) -> None:
        self.pair, self.scenario, self.overall = state["pair"], state["scenario"], state["overall"]


@register_candidate("similar", simplicity=4, regimes=("new",))
class MostSimilar:
    """A machine absent from training answered as its most similar known machine (see the module
    docstring)."""

    def __init__(
        self,
        name: str = "similar",
        seed: int = 0,
        *,
        residual: StackedModel | None = None,
        min_pair_kernels: int = MIN_PAIR_KERNELS,
    ):
        self.name = name
        self.base = residual or StackedModel("residual", seed, min_pair_kernels)
        self.known: dict[str, list[str]] = {"source": [], "target": []}

    @property
    def model(self):
        return self.base.model

    @model.setter
    def model(self, booster) -> None:
        self.base.model = booster

    def fit(self, sigs, pairs: pl.DataFrame) -> MostSimilar:
        if self.base.model is None:
            self.base.fit(sigs, pairs)
        self.known = {end: sorted(set(pairs.get_column(end))) for end in ("source", "target")}
        return self

    def stand_ins(self, sigs, pairs: pl.DataFrame, end: str) -> dict[str, str]:
        """Each machine at ``end`` that training never saw there -> its most similar known one."""
        known = {t: sigs[t] for t in self.known[end] if t in sigs}
        return {
            t: most_similar(sigs[t], known)
            for t in sorted(set(pairs.get_column(end)) - set(self.known[end]))
            if t in sigs and known
        }

    def predict(self, sigs, pairs: pl.DataFrame) -> np.ndarray:
        """Predicted relR of each pair."""
        swapped = pairs.with_columns(
            *(pl.col(end).replace(self.stand_ins(sigs, pairs, end)) for end in ("source", "target"))
        )
        same = (swapped.get_column("source") == swapped.get_column("target")).to_numpy()
        out = np.ones(pairs.height)
        if (~same).any():
            out[~same] = self.base.predict(sigs, swapped.filter(pl.Series(~same)))
        return out

    def state(self) -> dict:
        return {"known": self.known, "base": self.base.state()}

    def load_state(self, state: dict) -> None:
        self.known = state["known"]
        self.base.load_state(state.get("base", {}))


def make_candidate(
    name: str,
    seed: int = 0,
    *,
    residual: StackedModel | None = None,
    min_pair_kernels: int = MIN_PAIR_KERNELS,
):
    """A fresh candidate by name.

    Args:
        name: a registered candidate (:data:`CANDIDATES`).
        seed: its seed.
        residual: an already fitted residual model, for ``similar`` to reuse.
        min_pair_kernels: the learned residuals' gate (training kernels per machine pair).

    Returns:
        The unfitted candidate.
    """
    spec = CANDIDATES.get(name)
    return spec.make(name, seed, min_pair_kernels=min_pair_kernels, residual=residual)
