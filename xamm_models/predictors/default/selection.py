"""How the default chooses its model and its intervals: on inner folds of the training pairs only.

Inner folds hold out each kernel group of the training pairs in turn, every machine's signature and
benchmark descriptors measured without that group's kernels. The candidates
(:data:`~xamm_models.predictors.default.neighbours.CANDIDATES`) are label-free, so a pair's answer
does not depend on which machine is counted as left out: these inner folds answer every training
pair exactly as leaving its target machine out (and the group) would. What the fit is given is all
it can see: under leave one machine out the evaluation gives it neither a pair touching the outer
machine nor that machine's runs (``benchmark.splits``; ``tests/models/benchmark/test_nested.py``).

The choice, per device scenario (CPU→CPU, ...; a scenario with fewer than
:data:`MIN_PER_SCENARIO` inner pairs takes the pooled choice):

* the plain roofline, unless a candidate's gain in within-2× over it on the inner pairs has its
  90% bootstrap interval (resampling kernels) above zero; then the candidate with the largest gain.
  A gain the inner folds cannot tell from zero is no reason to leave the simpler model;
* interval: split conformal on the inner pairs' residuals at the chosen model: one half-width per
  scenario (the default); per scenario and size regime (``by_regime``); per scenario and source
  slowdown band (``by_band``: :func:`slowdown_bands`); or normalised, each
  answer's scale the spread of its look-alike kernels' changes
  (:mod:`~xamm_models.predictors.default.neighbours`; the scenario's median scale where there are
  none) times the conformal quantile of |residual| / scale (``scaled``); or per scenario from the
  signed residuals' two tails (``signed``: the interval need not be centred on the answer); or
  each pair's band of its own kernels' changes (:func:`~.neighbours.pair_bands`) widened by one
  margin per scenario, conformalised quantile regression (``pair_bands``; a pair without a band
  takes the scenario's half-width).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import polars as pl
from pydantic import BaseModel

from xamm_data.machines.targets import scenario_expr
from xamm_models.benchmark.baselines import machine_figures
from xamm_models.machines.physics import physics_signatures
from xamm_models.predictors.default.conformal import (
    band_margin,
    signed_conformal,
    split_conformal,
)
from xamm_models.predictors.default.neighbours import (
    CANDIDATES,
    benchmark_table,
    candidate_answers,
    pair_bands,
    roofline_per_rep,
)

__all__ = [
    "BANDS",
    "Choice",
    "MIN_PER_SCENARIO",
    "REGIMES",
    "choose",
    "inner_answers",
    "regime_expr",
    "slowdown_bands",
]

MIN_PER_SCENARIO = 20
LOG10_2 = float(np.log10(2.0))


class Choice(BaseModel):
    """The model and interval factor per scenario (and ``all``), with the inner evidence."""

    model: dict[str, str]
    factor: dict[str, float]
    fill_scale: dict[str, float]
    # False: one half-width per scenario (the factor); True: the factor times each answer's scale
    scaled: bool = False
    # what a pair's half-width is keyed by beside its scenario: "regime" (size), "band" (source
    # slowdown) or "scenario" alone
    cells: Literal["scenario", "regime", "band"] = "scenario"
    # per key: where the interval's centre sits from the answer (log10; 0: centred, all but
    # ``signed`` choices)
    shift: dict[str, float] = {}
    # True: a pair with a band (:func:`~.neighbours.pair_bands`) is answered by its band widened
    # by its scenario's ``margin`` (log10; may be negative)
    pair_bands: bool = False
    margin: dict[str, float] = {}
    inner_within_2: dict[str, float]
    gain_lower: dict[str, float]
    n: dict[str, int]

    def model_of(self, scenario: str) -> str:
        """The model answering a scenario.

        Args:
            scenario: ``CPU->GPU``, ...

        Returns:
            The candidate's name (the pooled choice where the scenario has none of its own).
        """
        return self.model.get(scenario, self.model["all"])

    def cell_of(self, scenario: str, *cells: str) -> str:
        """The key of the half-width answering a pair.

        Args:
            scenario: the pair's device scenario.
            *cells: its size regime (:func:`regime_expr`), its source slowdown band
                (:func:`slowdown_bands`): a choice has half-widths of at most one kind.

        Returns:
            ``"scenario|cell"``, else the scenario, else ``"all"``: the first with a half-width.
        """
        for key in (*(f"{scenario}|{c}" for c in cells), scenario):
            if key in self.factor:
                return key
        return "all"


# bytes per launch on the source: where a working set is served from (fixed by the memory
# hierarchy of the machines measured, not fitted): below 1 MiB a core's caches or, on a GPU, a
# launch's fixed cost; up to 64 MiB a last-level cache; above it memory
REGIMES = ((2.0**20, "small"), (2.0**26, "medium"))


def regime_expr() -> pl.Expr:
    """Each pair's size regime (``small``, ``medium``, ``large``) by the source sample's bytes per
    launch."""
    ws = pl.col("bytes_per_rep").fill_null(0.0) / pl.col("kernels_per_rep").fill_null(1.0).clip(
        lower_bound=1.0
    )
    expr: Any = pl.when(ws < REGIMES[0][0]).then(pl.lit(REGIMES[0][1]))
    for bound, name in REGIMES[1:]:
        expr = expr.when(ws < bound).then(pl.lit(name))
    return expr.otherwise(pl.lit("large")).alias("regime")


# log10 of the source slowdown (measured time over the plain roofline's, on the source): below 2×
# the sample sits at its source's roof, so both machines are bound by what the ratio compares;
# above 10× something the roofline does not model binds. Set by that meaning, not fitted
# (docs/decisions.md)
BANDS = ((LOG10_2, "at-roof"), (1.0, "off-roof"))


def slowdown_bands(pairs: pl.DataFrame, figures: pl.DataFrame) -> np.ndarray:
    """Each pair's source slowdown band: ``at-roof``, ``off-roof``, ``far`` (:data:`BANDS`), or
    ``unknown`` where the source has no roofline figures.

    Args:
        pairs: pair rows (the source sample's work, ``runtime_source`` per iteration and
            ``iterations_per_rep``).
        figures: the plain roofline's figures
            (:func:`~xamm_models.benchmark.baselines.machine_figures`).

    Returns:
        One band name per pair.
    """
    measured = (
        pairs.get_column("runtime_source") * pairs.get_column("iterations_per_rep")
    ).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        slow = np.log10(measured.astype(float) / roofline_per_rep(pairs, figures, "source"))
    out = np.full(pairs.height, "far", dtype=object)
    for bound, name in reversed(BANDS):
        out[slow < bound] = name
    out[~np.isfinite(slow)] = "unknown"
    return out.astype(str)


def inner_answers(
    pairs: pl.DataFrame,
    samples: pl.DataFrame,
    *,
    neighbours: bool = True,
    bands: bool = False,
    constants: bool = True,
) -> pl.DataFrame:
    """Every candidate's log10 answer on every training pair, its group held out.

    Args:
        pairs: labelled training pairs (``group``, ``app``, ``relR`` and the source sample's work).
        samples: the benchmark samples the fit may see.
        neighbours: answer the look-alike candidates and scales too (False: they answer as the
            roofline; what a choice among the roofline and ``split`` alone needs).
        bands: measure each pair's band (:func:`~.neighbours.pair_bands`; False: NaN).
        constants: answer ``pair-constant`` (False: it answers as the roofline).

    Returns:
        One row per pair: ``scenario``, ``regime`` (:func:`regime_expr`), ``band``
        (:func:`slowdown_bands`), ``app``, ``y`` (log10 relR), ``scale``, ``pair_lo`` and
        ``pair_hi`` (its band) and one column per candidate.
    """
    parts = []
    for _, held in pairs.group_by(["group"], maintain_order=True):
        hidden = held.get_column("app").unique().implode()
        seen = samples.filter(~pl.col("app").is_in(hidden))
        figs = machine_figures(seen)
        table = benchmark_table(seen, figs) if neighbours or bands else seen.clear()
        ans = candidate_answers(
            physics_signatures(seen),
            figs,
            table,
            held,
            neighbours=neighbours,
            samples=seen if constants else None,
        )
        nan = np.full(held.height, np.nan)
        lo, hi = pair_bands(table, held) if bands else (nan, nan)
        parts.append(
            held.select(
                scenario_expr(), regime_expr(), "app", pl.col("relR").log10().alias("y")
            ).with_columns(
                pl.Series("band", slowdown_bands(held, figs)),
                pl.Series("scale", ans.scale),
                pl.Series("pair_lo", lo),
                pl.Series("pair_hi", hi),
                *[pl.Series(c, ans.logs[c]) for c in CANDIDATES],
            )
        )
    return pl.concat(parts) if parts else pl.DataFrame()


def _within(inner: pl.DataFrame, name: str) -> np.ndarray:
    return (
        np.abs(inner.get_column(name).to_numpy() - inner.get_column("y").to_numpy())
        <= LOG10_2 + 1e-12
    ).astype(float)


def _gain_lower(inner: pl.DataFrame, name: str, rng: np.random.Generator, n_boot: int) -> float:
    """The 5th percentile of the within-2× gain of ``name`` over the roofline, kernels resampled."""
    gain = _within(inner, name) - _within(inner, "roofline")
    apps = inner.get_column("app").to_numpy()
    keys, inverse = np.unique(apps, return_inverse=True)
    total = np.bincount(inverse, weights=gain, minlength=len(keys))
    count = np.bincount(inverse, minlength=len(keys)).astype(float)
    draws = rng.integers(0, len(keys), size=(n_boot, len(keys)))
    means = total[draws].sum(1) / count[draws].sum(1)
    return float(np.quantile(means, 0.05))


def _pick(
    inner: pl.DataFrame, rng: np.random.Generator, n_boot: int, candidates: tuple[str, ...]
) -> tuple[str, float]:
    best, best_gain, lower = "roofline", 0.0, 0.0
    base = _within(inner, "roofline").mean()
    for name in candidates:
        if name == "roofline":
            continue
        gain = _within(inner, name).mean() - base
        if gain <= best_gain:
            continue
        low = _gain_lower(inner, name, rng, n_boot)
        if low > 0:
            best, best_gain, lower = name, gain, low
    return best, lower


def _factor(
    inner: pl.DataFrame, name: str, coverage: float, scaled: bool, signed: bool = False
) -> tuple[float, float, float]:
    """(half-width, fill scale, centre shift) of the interval calibrated on ``inner``."""
    if signed:
        errors = inner.get_column("y").to_numpy() - inner.get_column(name).to_numpy()
        lo, hi = signed_conformal(errors, coverage)
        return (hi - lo) / 2, 1.0, (hi + lo) / 2
    scale = inner.get_column("scale").to_numpy() if scaled else np.ones(inner.height)
    fill = float(np.nanmedian(scale)) if np.isfinite(scale).any() else 1.0
    scale = np.where(np.isfinite(scale), scale, fill)
    resid = inner.get_column(name).to_numpy() - inner.get_column("y").to_numpy()
    return split_conformal(resid / scale, coverage), fill, 0.0


def _no_evidence() -> Choice:
    return Choice(
        model={"all": "roofline"},
        factor={"all": float("inf")},
        fill_scale={"all": 1.0},
        inner_within_2={},
        gain_lower={},
        n={"all": 0},
    )


def _scopes(inner: pl.DataFrame) -> list[tuple[str, pl.DataFrame]]:
    """``all`` and each scenario with :data:`MIN_PER_SCENARIO` inner pairs, sorted by name."""
    parts = [("all", inner)] + [
        (s, part)
        for (s,), part in inner.group_by(["scenario"], maintain_order=True)
        if part.height >= MIN_PER_SCENARIO
    ]
    return sorted(parts, key=lambda p: p[0])


def _cell_factors(part: pl.DataFrame, by: str, scen: str, name: str, how: tuple, out: dict) -> None:
    """The half-widths of ``scen``'s cells of column ``by`` with enough inner pairs, into ``out``
    (keys ``"scenario|cell"``)."""
    for (cell_name,), cell in part.group_by([by], maintain_order=True):
        if cell.height >= MIN_PER_SCENARIO:
            key = f"{scen}|{cell_name}"
            out["factor"][key], out["fill_scale"][key], out["shift"][key] = _factor(
                cell, name, *how
            )
            out["n"][key] = cell.height


def _one_of_each(
    by_regime: bool, by_band: bool, signed: bool, scaled: bool, pairs: bool = False
) -> None:
    """Refuse interval options that do not combine (two kinds of cell; signed and scaled; pair
    bands and any other)."""
    if by_regime and by_band:
        raise ValueError("one kind of interval cell: by_regime or by_band, not both")
    if signed and scaled:
        raise ValueError("signed intervals are not scaled: signed or scaled, not both")
    if pairs and (by_regime or by_band or signed or scaled):
        raise ValueError("pair bands are one interval rule: not with regime, band, signed, scaled")


def _margin(part: pl.DataFrame, name: str, coverage: float) -> float | None:
    """The scenario's band margin on its inner pairs with a band (None: too few of them)."""
    has = part.filter(pl.col("pair_lo").is_not_nan() & pl.col("pair_hi").is_not_nan())
    if has.height < MIN_PER_SCENARIO:
        return None
    errors = has.get_column("y").to_numpy() - has.get_column(name).to_numpy()
    lo, hi = has.get_column("pair_lo").to_numpy(), has.get_column("pair_hi").to_numpy()
    return band_margin(lo, hi, errors, coverage)


def _scope_interval(part: pl.DataFrame, scen: str, name: str, how: tuple, out: dict) -> None:
    """A scope's half-width, fill scale, shift, inner within-2x and size, into ``out``."""
    factor, fill, shift = _factor(part, name, *how)
    out["factor"][scen], out["fill_scale"][scen], out["shift"][scen] = factor, fill, shift
    out["within"][scen], out["n"][scen] = float(_within(part, name).mean()), part.height


CHOICE_KEYS = ("model", "factor", "fill_scale", "shift", "within", "low", "n", "margin")


def choose(
    inner: pl.DataFrame,
    *,
    candidates: tuple[str, ...] = ("roofline",),
    scaled: bool = False,
    by_regime: bool = False,
    by_band: bool = False,
    signed: bool = False,
    pairs: bool = False,
    coverage: float = 0.8,
    seed: int = 0,
    n_boot: int = 400,
) -> Choice:
    """The model and interval per scenario from :func:`inner_answers` (see the module docstring).

    Args:
        inner: the inner answers.
        candidates: the models it may choose among (the roofline is always one).
        scaled: intervals scaled by each answer's look-alike spread (normalised conformal).
        by_regime: a half-width per scenario and size regime (:func:`regime_expr`) where the
            inner pairs hold :data:`MIN_PER_SCENARIO` of them (keys ``"scenario|regime"``).
        by_band: a half-width per scenario and source slowdown band (:func:`slowdown_bands`),
            likewise (not with ``by_regime``).
        signed: each interval from the signed residuals' two tails (not with ``scaled``).
        pairs: each pair's band widened by a margin per scenario (``inner_answers(bands=True)``;
            not with another option).
        coverage: the intervals' aim.
        seed: the bootstrap's seed.
        n_boot: bootstrap resamples.

    Returns:
        The choice.
    """
    _one_of_each(by_regime, by_band, signed, scaled, pairs)
    out: dict[str, dict] = {k: {} for k in CHOICE_KEYS}
    if inner.is_empty():  # no training pairs: refuse to be confident
        return _no_evidence()
    rng = np.random.default_rng(seed)
    for scen, part in _scopes(inner):
        name, low = _pick(part, rng, n_boot, candidates)
        out["model"][scen], out["low"][scen] = name, low
        _scope_interval(part, scen, name, (coverage, scaled, signed), out)
        if pairs and (m := _margin(part, name, coverage)) is not None:
            out["margin"][scen] = m
        for by, wanted in (("regime", by_regime), ("band", by_band)):
            if wanted and scen != "all":
                _cell_factors(part, by, scen, name, (coverage, scaled, signed), out)
    return Choice(
        model=out["model"],
        factor=out["factor"],
        fill_scale=out["fill_scale"],
        scaled=scaled,
        cells="regime" if by_regime else "band" if by_band else "scenario",
        shift=out["shift"] if signed else {},
        pair_bands=pairs,
        margin=out["margin"],
        inner_within_2=out["within"],
        gain_lower=out["low"],
        n=out["n"],
    )
