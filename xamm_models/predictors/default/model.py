"""xamm's default relR predictor: the stacked physics model with calibrated intervals and rankings.

:class:`StackedPredictor` bundles

* each known target's :class:`~xamm_models.machines.physics.PhysicsSignature` (measured from its own
  RAJAPerf runs);
* a candidate model per regime and device scenario (CPU->GPU, ...), chosen from
  :mod:`xamm_models.predictors.default.candidates` (the physics prior, the prior with half the
  source's slowdown from its roofline carried over, pair offsets, the most-similar-machine stand-in,
  learned residuals) on *inner* folds of its training pairs, never on anything it is tested on: the
  simplest candidate (the physics prior, or ``split`` where its inner score is better: neither is
  fitted) unless another beats it with the whole 90% bootstrap interval of its gain, resampling the
  inner folds themselves (the unit a new kernel group or machine varies by), above zero. A scenario
  with fewer than ``min_units`` inner folds keeps the simplest. A learned residual is applied only
  to machine pairs with ``min_pair_kernels`` distinct training kernels
  (:mod:`xamm_models.predictors.default.stacked`), in the inner folds as in use. Regimes: ``seen``
  (a target seen in training, an application of a kernel group absent from training: leave one
  kernel group of the training pairs out), ``siblings`` (a target seen in training, an application
  whose kernel group has training kernels, as when one RAJAPerf kernel is left out: the training
  kernels split at random into ``kernel_folds`` folds, each held kernel's group kept in the rest;
  the unit resampled is the kernel; the pair median comes first, as the application's family on the
  pair is the simplest answer there) and ``new`` (a target machine absent from training: leave one
  training machine and one kernel group out, its signature still measured from its benchmark runs);
* conformal interval half-widths per (regime, scenario) from the inner folds' residuals of the
  candidate each scenario uses (:mod:`xamm_models.predictors.default.conformal`). Which conformal
  rule holds its stated coverage depends on how much folds differ (RAJAPerf's Apps group holds most
  pairs; the small groups are few and wide), so with ``interval="auto"`` (the default) it too is
  chosen on the inner folds: each inner fold is left out in turn, the half-widths are sized on the
  others by each rule (``group``: a quantile over the folds' own quantiles, aimed at the fold at
  hand; ``group-upper``: its rank bound; ``fold-mean``: coverage averaged with every fold weighted
  the same; ``pooled``: plain split conformal), and the rule whose held-out coverage, pooled over
  the left-out residuals, is nearest ``coverage`` sizes the intervals. ``Calibration.interval`` and
  ``interval_coverage`` record the choice and every rule's held-out coverage; a fixed ``interval``
  skips the choice.

A target that has no signature is refused (:class:`UnknownTargetError`, with did-you-mean), unless
its benchmark runs are given (``target_benchmarks``: ``benchmark_runs`` rows, or samples built from
them): then its signature is measured on the fly. A source machine is treated the same way. A new
machine whose signature its runs cannot tell from a known machine's (within both machines' bootstrap
noise, :mod:`xamm_models.machines.twins`) is answered as that known machine (regime ``twin``, with
the wider of its answering regime's and the ``new`` half-width); any other new machine by the
``new`` regime's choice. ``twins=False`` switches the rule off.

Input frames (one row per application sample) need the sample's per-rep work and its source time:
``bytes_per_rep``, ``flops_per_rep``, ``iterations_per_rep``, ``runtime_s`` (seconds per iteration
on the source, as in ``xplat`` samples; ``runtime_source`` in pair frames), ``f_log_s_per_iter``,
``f_arith_intensity``, ``f_log_problem_size`` and optionally ``kernels_per_rep`` (launches per rep,
default 1).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator

from xamm_data._version import __version__
from xamm_data.registry import UnknownNameError
from xamm_data.targets import scenario_expr
from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.errors import (
    ADD_A_TARGET,
    UnknownSourceError,
    UnknownTargetError,
    unknown_name_message,
)
from xamm_models.machines.physics import PhysicsSignature, physics_signatures, rows_by
from xamm_models.machines.twins import noise_by_target, signature_noise, twins
from xamm_models.predictors.contract import Predictor, conform
from xamm_models.predictors.default.candidates import (
    CANDIDATES,
    REGIMES,
    default_candidates,
    label_free,
    make_candidate,
)
from xamm_models.predictors.default.conformal import RULES, choose_rule, halfwidths, rule_names
from xamm_models.predictors.default.stacked import MIN_PAIR_KERNELS
from xamm_models.profile_input import check_profiles
from xamm_models.zoo.registry import load_model

FILE = "stacked_predictor.json"
NEED = (
    "bytes_per_rep",
    "flops_per_rep",
    "iterations_per_rep",
    "f_log_s_per_iter",
    "f_arith_intensity",
    "f_log_problem_size",
)


class StackedConfig(BaseModel):
    """What the predictor was built with (saved as ``stacked_predictor.json``)."""

    model_config = ConfigDict(extra="forbid")
    # per regime, simplest first
    candidates: dict[str, list[str]] = Field(default_factory=default_candidates)
    selection: Literal["clear", "best"] = "clear"  # see _simplest_unless_clearly_beaten
    coverage: float = 0.8
    seed: int = 0
    # fewer inner residuals than this: the regime's "all" half-width is used
    min_per_scenario: int = 20
    # what the selection's bootstrap resamples (siblings: always the kernel)
    unit: Literal["fold", "kernel"] = "fold"
    # inner folds of the siblings regime (training kernels split at random, seeded)
    kernel_folds: int = 5
    min_units: int = 3  # fewer inner units in a scenario than this: its simplest candidate is used
    # auto: chosen on inner folds (xamm_models.predictors.default.conformal)
    interval: str = "auto"  # or a registered rule (RULES)
    # a learned residual applies to machine pairs with this many training kernels
    min_pair_kernels: int = MIN_PAIR_KERNELS
    # a new machine its runs cannot tell from a known one is answered as that one
    # (xamm_models.machines.twins)
    twins: bool = True

    @field_validator("candidates")
    @classmethod
    def _regimes(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        """``seen`` and ``new`` are needed; without ``siblings`` its applications are answered as
        ``seen``."""
        if not {"seen", "new"} <= set(v) <= set(REGIMES) or not all(v.values()):
            raise ValueError(
                "candidates: a non-empty list per regime, for seen and new and "
                f"optionally siblings; got {v}"
            )
        return v

    @field_validator("candidates")
    @classmethod
    def _registered(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for name in {n for names in v.values() for n in names}:
            if name not in CANDIDATES:  # the known ones and the closest, as a validation error
                raise ValueError(str(UnknownNameError("candidate", name, CANDIDATES.list())))
        return v

    @field_validator("interval")
    @classmethod
    def _rule(cls, v: str) -> str:
        if v != "auto" and v not in RULES:
            raise ValueError(str(UnknownNameError("interval rule", v, RULES.list())))
        return v


class Calibration(BaseModel):
    """Per regime: the chosen candidate (pooled and per scenario), inner-fold within-2x per
    candidate, and conformal half-widths."""

    # what the inner folds pooled over scenarios would choose (shown, not used to predict)
    variant: str
    variants: dict[str, str] = Field(default_factory=dict)  # scenario -> choice
    fallback: str = "prior"  # a scenario the inner folds never held: the simplest candidate
    inner_within_2: dict[str, float]
    inner_by_scenario: dict[str, dict[str, float]] = Field(default_factory=dict)
    # scenario (or "all") -> log10 half-width at the configured coverage
    halfwidth: dict[str, float]
    n: dict[str, int]
    # the rule that sized ``halfwidth`` (saved before the choice: "group")
    interval: str = "group"  # a registered rule (RULES), or none
    # rule -> held-out coverage, inner folds
    interval_coverage: dict[str, float | None] = Field(default_factory=dict)

    @field_validator("interval")
    @classmethod
    def _rule(cls, v: str) -> str:
        if v != "none" and v not in RULES:
            raise ValueError(str(UnknownNameError("interval rule", v, RULES.list())))
        return v

    def choice(self, scenario: str) -> str:
        """The candidate that answers ``scenario``.

        Args:
            scenario: a device scenario (``CPU->GPU``, ...).

        Returns:
            The scenario's own choice, else the pooled one.
        """
        return self.variants.get(scenario, self.fallback)

    def used(self) -> set[str]:
        """Every candidate this regime answers with (pooled or in a scenario).

        Returns:
            Candidate names.
        """
        return {self.fallback, *self.variants.values()}


def _machine(col: pl.Series) -> np.ndarray:
    return col.str.split(":").list.first().to_numpy()


def _scenarios(pairs: pl.DataFrame) -> np.ndarray:
    return pairs.select(scenario_expr()).to_series().to_numpy()


def _kernel_folds(pairs: pl.DataFrame, samples: pl.DataFrame, k: int, seed: int):
    """The ``siblings`` regime's inner folds: the training kernels split at random into ``k``; a
    held kernel counts only if its group keeps kernels in the fit part, as a left-out kernel's
    siblings are in training."""
    apps = np.array(sorted(pairs.get_column("app").unique()))
    order = np.random.default_rng(seed).permutation(len(apps))
    for i in range(min(k, len(apps))):
        hidden = pl.Series(apps[order[i::k]]).implode()
        fit = pairs.filter(~pl.col("app").is_in(hidden))
        held = pairs.filter(
            pl.col("app").is_in(hidden),
            pl.col("group").is_in(fit.get_column("group").unique().implode()),
        )
        if held.height and fit.height:
            yield physics_signatures(samples.filter(~pl.col("app").is_in(hidden))), fit, held


def _inner_folds(
    pairs: pl.DataFrame, samples: pl.DataFrame, regime: str, k: int = 5, seed: int = 0
):
    """(signatures, fit pairs, held pairs) of each inner fold of ``regime`` (see the module
    docstring). A ``new`` fold holds out one training machine *and* one kernel group, as a new
    machine is met in use."""
    if regime == "siblings":
        yield from _kernel_folds(pairs, samples, k, seed)
        return
    groups = pairs.get_column("group").to_numpy()
    src, tgt = _machine(pairs.get_column("source")), _machine(pairs.get_column("target"))
    machines = np.unique(tgt) if regime == "new" else [None]
    for g in np.unique(groups):
        in_g = groups == g
        hidden = pairs.filter(pl.Series(in_g)).get_column("app").unique()
        sigs = physics_signatures(samples.filter(~pl.col("app").is_in(hidden.implode())))
        for m in machines:
            touches = np.zeros(len(groups), bool) if m is None else (src == m) | (tgt == m)
            held = in_g & (tgt == m) & (src != m) if m is not None else in_g
            fit = ~in_g & ~touches
            if held.any() and fit.any():
                yield sigs, pairs.filter(pl.Series(fit)), pairs.filter(pl.Series(held))


def _simplest_unless_clearly_beaten(
    per_kernel: dict[str, np.ndarray],
    candidates: list[str],
    seed: int,
    draws: int = 1000,
    level: float = 0.9,
) -> str:
    """The first (simplest) candidate, unless another beats it on the inner folds with the whole
    ``level`` bootstrap interval (over kernels) of its gain above 0; then the best of those that do.
    Where the first is label-free (:func:`~xamm_models.predictors.default.candidates.label_free`),
    the label-free candidate with the best inner mean stands first: neither is fitted, so between
    them the inner folds decide as for any tie, not the list order.

    A learned correction must earn its place: on a few kernel groups, a pooled score alone picks a
    residual model that helps the groups it was scored on and hurts the next one."""
    free_of_labels = label_free()
    if candidates[0] in free_of_labels:
        free = [v for v in candidates if v in free_of_labels]
        first = _best(per_kernel, free, seed)
        candidates = [first, *(v for v in candidates if v != first)]
    base = per_kernel[candidates[0]]
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(base), (draws, len(base)))
    clear = [
        v
        for v in candidates[1:]
        if np.quantile((per_kernel[v] - base)[idx].mean(axis=1), (1 - level) / 2) > 0
    ]
    return max(clear, key=lambda v: per_kernel[v].mean()) if clear else candidates[0]


def _best(per_kernel: dict[str, np.ndarray], candidates: list[str], seed: int) -> str:
    """The candidate with the highest mean per-kernel within-2x (the simplest among ties)."""
    return max(
        candidates, key=lambda v: (round(float(per_kernel[v].mean()), 12), -candidates.index(v))
    )


def _per_unit_hits(resid: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Within-2x per unit (inner fold or kernel): each counts once, however many sizes and pairs it
    has."""
    _, k_idx = np.unique(units, return_inverse=True)
    hit = np.abs(resid) <= np.log10(2) + 1e-12
    return np.bincount(k_idx, hit) / np.bincount(k_idx)


def fit_candidates(
    names: list[str],
    sigs: dict,
    pairs: pl.DataFrame,
    seed: int,
    min_pair_kernels: int = MIN_PAIR_KERNELS,
) -> dict:
    """Each named candidate fitted on ``pairs`` (``similar`` reuses the residual model when both are
    asked for)."""
    out = {}
    for v in sorted(names, key=lambda v: v == "similar"):
        out[v] = make_candidate(
            v, seed, residual=out.get("residual"), min_pair_kernels=min_pair_kernels
        ).fit(sigs, pairs)
    return out


def _rule(cal: Calibration) -> str:
    cov = ", ".join(
        f"{r} {cal.interval_coverage[r]:.2f}"
        for r in rule_names()
        if cal.interval_coverage.get(r) is not None
    )
    return f"{cal.interval} ({cov})" if cov else cal.interval


def profile_pairs(
    profiles: pl.DataFrame, source: str, targets: list[str]
) -> tuple[pl.DataFrame, list[str]]:
    """One pair row per (profile, target), numbered by profile (``row``), and the naming columns to
    keep; the profiles are checked first (:func:`~xamm_models.profile_input.check_profiles`)."""
    # labelled pairs as profiles
    if "runtime_s" not in profiles.columns and "runtime_source" in profiles.columns:
        check_profiles(profiles.rename({"runtime_source": "runtime_s"}))
    else:
        check_profiles(profiles)
    if "kernels_per_rep" not in profiles.columns:  # optional: one launch per repetition
        profiles = profiles.with_columns(pl.lit(None, dtype=pl.Float64).alias("kernels_per_rep"))
    keep = [c for c in ("app", "app_params") if c in profiles.columns]
    base = profiles.with_row_index("row")
    if "runtime_source" not in base.columns:
        base = base.with_columns(pl.col("runtime_s").alias("runtime_source"))
    return pl.concat(
        [
            base.with_columns(pl.lit(source).alias("source"), pl.lit(t).alias("target"))
            for t in targets
        ]
    ), keep


class StackedPredictor(
    Predictor,
    library_name="xamm",
    tags=["xamm", "hpc", "performance-prediction"],
    repo_url=None,
):
    """Physics prior + learned residual, with conformal intervals (see the module docstring)."""

    kind = "stacked"
    marker = FILE
    # version 0: saved before the marker carried its format (read: the same fields)
    reads_versions = (0,)

    def __init__(self, config: StackedConfig | dict | None = None, **kwargs):
        self.config = (
            StackedConfig(**config)
            if isinstance(config, dict)
            else (config or StackedConfig(**kwargs))
        )
        self.signatures: dict[str, PhysicsSignature] = {}
        # known target -> its signature's bootstrap noise (xamm_models.machines.twins)
        self.noise: dict[str, float] = {}
        # candidate name -> fitted model (xamm_models.predictors.default.candidates)
        self.models: dict = {}
        self.calibration: dict[str, Calibration] = {}
        self.sources: list[str] = []
        self.targets: list[str] = []
        # kernel groups of the training pairs: an application of one has siblings
        self.groups: list[str] = []
        self.training: dict = {}

    # -- training ---------------------------------------------------------------------------------
    def fit(
        self,
        pairs: pl.DataFrame,
        samples: pl.DataFrame,
        *,
        dataset: str | None = None,
        data_version: int | None = None,
    ) -> StackedPredictor:
        """Fit the candidates, choose among them per regime and scenario on inner folds, and
        calibrate the intervals.

        Args:
            pairs: labelled pairs (``xplat`` pair frames: ``source``, ``target``, ``relR`` and the
                source sample's work and features).
            samples: the targets' benchmark samples, one row per kernel and size per target (the
                test kernels of an evaluation must not be among them).
            dataset: the data set's name, recorded in the card.
            data_version: the store table version the data were read at
                (``XplatDataset.from_store(version=...)`` reads it again).

        Returns:
            The fitted predictor.
        """
        self.signatures = physics_signatures(samples)
        self.noise = (
            noise_by_target(samples, self.signatures, seed=self.config.seed)
            if self.config.twins
            else {}
        )
        self.sources = sorted(set(pairs.get_column("source")))
        self.targets = sorted(set(pairs.get_column("target")))
        self.groups = sorted(set(pairs.get_column("group")))
        self.calibration = {
            r: self._calibrate(pairs, samples, r) for r in REGIMES if r in self.config.candidates
        }
        if "siblings" in self.calibration and self.calibration["siblings"].interval == "none":
            # no group keeps a sibling: its applications are answered as seen
            del self.calibration["siblings"]
        used = sorted(set().union(*(c.used() for c in self.calibration.values())))
        self.models = fit_candidates(
            used, self.signatures, pairs, self.config.seed, self.config.min_pair_kernels
        )
        self.training = {
            "dataset": dataset,
            "data_version": data_version,
            "pairs": pairs.height,
            "samples": samples.height,
            "kernels": pairs.get_column("app").n_unique(),
            "xamm_version": __version__,
        }
        return self

    def _calibrate(self, pairs: pl.DataFrame, samples: pl.DataFrame, regime: str) -> Calibration:
        folds = list(
            _inner_folds(pairs, samples, regime, self.config.kernel_folds, self.config.seed)
        )
        # e.g. one training machine: no "new" fold; borrow nothing, refuse to be confident
        if not folds:
            return Calibration(
                variant="prior",
                inner_within_2={},
                halfwidth={"all": float("inf")},
                n={"all": 0},
                interval="none",
            )
        cands = self.config.candidates[regime]
        resid = {v: [] for v in cands}
        for sigs, fit, held in folds:
            y = held.get_column("relR").to_numpy()
            for v, m in fit_candidates(
                cands, sigs, fit, self.config.seed, self.config.min_pair_kernels
            ).items():
                resid[v].append(np.log10(m.predict(sigs, held) / y))
        resid = {v: np.concatenate(r) for v, r in resid.items()}
        folds_of = np.concatenate([np.full(b.height, i) for i, (_, _, b) in enumerate(folds)])
        # random kernel folds are no unit of variation
        by_fold = self.config.unit == "fold" and regime != "siblings"
        units = (
            folds_of
            if by_fold
            else np.concatenate([b.get_column("app").to_numpy() for _, _, b in folds])
        )
        scen = np.concatenate([_scenarios(b) for _, _, b in folds])
        choose = _simplest_unless_clearly_beaten if self.config.selection == "clear" else _best
        hits = {v: _per_unit_hits(r, units) for v, r in resid.items()}
        pooled = choose(hits, cands, self.config.seed)
        cal = Calibration(
            variant=pooled,
            fallback=cands[0],
            inner_within_2={v: float(h.mean()) for v, h in hits.items()},
            halfwidth={},
            n={"all": len(scen)},
        )
        for s in (str(s) for s in np.unique(scen)):
            m = scen == s
            hits = {v: _per_unit_hits(r[m], units[m]) for v, r in resid.items()}
            cal.inner_by_scenario[s] = {v: float(h.mean()) for v, h in hits.items()}
            # a scenario with too little evidence of its own keeps the simplest candidate, not the
            # pooled choice
            enough = len(np.unique(units[m])) >= self.config.min_units
            cal.variants[s] = choose(hits, cands, self.config.seed) if enough else cands[0]
        # each residual of the candidate its scenario uses, as predictions are made
        deployed = np.empty(len(scen))
        for s in np.unique(scen):
            deployed[scen == s] = resid[cal.choice(str(s))][scen == s]
        self._size_intervals(cal, deployed, scen, folds_of)
        return cal

    def _size_intervals(
        self, cal: Calibration, deployed: np.ndarray, scen: np.ndarray, folds: np.ndarray
    ) -> None:
        """Half-widths per scenario by the configured rule, or (``auto``) by the rule whose
        leave-one-inner-fold-out coverage is nearest the nominal one
        (:mod:`xamm_models.predictors.default.conformal`)."""
        c, k = self.config.coverage, self.config.min_per_scenario
        if self.config.interval == "auto":
            cal.interval, cov = choose_rule(deployed, scen, folds, c, k)
            cal.interval_coverage = {r: (v if np.isfinite(v) else None) for r, v in cov.items()}
        else:
            cal.interval = self.config.interval
        cal.halfwidth = halfwidths(cal.interval, deployed, scen, folds, c, k)
        cal.n = {
            **{s: int((scen == s).sum()) for s in cal.halfwidth if s != "all"},
            "all": len(scen),
        }

    # -- inference --------------------------------------------------------------------------------
    def _signatures_with(self, bench: pl.DataFrame | None) -> dict[str, PhysicsSignature]:
        if bench is None:
            return self.signatures
        return {**self.signatures, **physics_signatures(bench, reference=self.signatures)}

    def _check(self, pairs: pl.DataFrame, sigs: dict) -> None:
        missing = [
            c for c in (*NEED, "runtime_source", "source", "target") if c not in pairs.columns
        ]
        if missing:
            raise ValueError(
                f"input lacks the columns {missing}; the default predictor needs "
                f"{list(NEED)}, "
                "a source time per iteration and source/target"
            )
        for kind, err in (("source", UnknownSourceError), ("target", UnknownTargetError)):
            for t in sorted(set(pairs.get_column(kind)) - set(sigs)):
                raise err(f"{unknown_name_message(kind, t, sorted(sigs))}; {ADD_A_TARGET}")

    def _twin_ends(
        self, pairs: pl.DataFrame, sigs: dict, bench: pl.DataFrame | None
    ) -> pl.DataFrame:
        """``pairs`` with each end unseen in training replaced by its twin, where it has one
        (:mod:`xamm_models.machines.twins`; ``bench``: the new machines' benchmark samples, whose
        own noise the rule needs)."""
        if not (self.config.twins and self.noise) or bench is None:
            return pairs
        # a bootstrap each
        own_noise = cache(
            lambda t: signature_noise(bench, t, self.signatures, seed=self.config.seed)
        )
        swap = {}
        for end, known in (("source", self.sources), ("target", self.targets)):
            new = {t: sigs[t] for t in set(pairs.get_column(end)) - set(known) if t in sigs}
            swap[end] = (
                twins(
                    new,
                    {k: self.signatures[k] for k in known if k in self.signatures},
                    self.noise,
                    own_noise,
                )
                if new
                else {}
            )
        return pairs.with_columns(*(pl.col(end).replace(m) for end, m in swap.items()))

    def _seen(self, pairs: pl.DataFrame) -> np.ndarray:
        return (
            pairs.get_column("target").is_in(self.targets)
            & pairs.get_column("source").is_in(self.sources)
        ).to_numpy()

    def _siblings(self, pairs: pl.DataFrame) -> np.ndarray:
        """Rows whose application belongs to a kernel group of the training pairs (``group`` column;
        a profile without one has none). Predictors saved before the ``siblings`` regime recognise
        none."""
        if "group" not in pairs.columns or "siblings" not in self.calibration:
            return np.zeros(pairs.height, bool)
        return pairs.get_column("group").is_in(self.groups).to_numpy()

    def _halfwidth(self, regime: str, scenario: str) -> float:
        cal = self.calibration[regime]
        return cal.halfwidth.get(scenario, cal.halfwidth["all"])

    def asked(
        self, pairs: pl.DataFrame, *, target_benchmarks: pl.DataFrame | None = None
    ) -> tuple[dict, pl.DataFrame]:
        """What the candidates are asked for ``pairs``.

        The signatures are the known ones and those measured from ``target_benchmarks``; each end
        unseen in training is replaced by its twin, where it has one. Unknown ends without benchmark
        runs are refused here.

        Args:
            pairs: pair rows (``source``, ``target`` and the source sample's work and features).
            target_benchmarks: ``benchmark_runs`` rows of machines the model has no signature of.

        Returns:
            The signatures by target, and the pairs as the candidates see them.
        """
        bench = None if target_benchmarks is None else samples_from_runs(target_benchmarks)
        sigs = self._signatures_with(bench)
        self._check(pairs, sigs)
        return sigs, self._twin_ends(pairs, sigs, bench)

    def predict_pairs(
        self, pairs: pl.DataFrame, *, target_benchmarks: pl.DataFrame | None = None
    ) -> pl.DataFrame:
        """relR of each pair with its calibrated interval and the regime that answered.

        Regimes: ``seen``; ``siblings`` (an application whose kernel group was in training);
        ``twin`` (an end answered as its known twin, with the wider of its answering regime's and
        the ``new`` half-width, as no inner fold can calibrate a twin); ``new``.

        Args:
            pairs: pair rows (``source``, ``target`` and the source sample's work and features).
            target_benchmarks: ``benchmark_runs`` rows of machines the model has no signature of.

        Returns:
            ``relR``, ``relR_lo``, ``relR_hi`` and ``regime``, one row per pair.
        """
        if not self.models:
            raise RuntimeError("the predictor is not trained: fit() or from_pretrained() first")
        sigs, asked = self.asked(pairs, target_benchmarks=target_benchmarks)
        seen, as_seen = self._seen(pairs), self._seen(asked)
        # twin of its own source: relR 1
        same = (asked.get_column("source") == asked.get_column("target")).to_numpy()
        # regime that answers
        answer = np.where(as_seen, np.where(self._siblings(pairs), "siblings", "seen"), "new")
        twin = as_seen & ~seen
        out, half = np.ones(pairs.height), np.empty(pairs.height)
        for (a, s, tw, one), rows in rows_by(
            pl.Series("a", answer),
            pairs.select(scenario_expr()).to_series(),
            pl.Series("tw", twin),
            pl.Series("one", same & (answer != "new")),
        ):
            # a twin: the wider of its answering regime's and the new half-width (no inner fold
            # calibrates a twin)
            half[rows] = (
                max(self._halfwidth(a, s), self._halfwidth("new", s))
                if tw
                else self._halfwidth(a, s)
            )
            if not one:
                out[rows] = self.models[self.calibration[a].choice(s)].predict(sigs, asked[rows])
        regime = np.where(twin, "twin", answer)
        w = 10.0**half
        return pl.DataFrame({"relR": out, "relR_lo": out / w, "relR_hi": out * w, "regime": regime})

    def predict(
        self,
        profiles: pl.DataFrame,
        source: str,
        targets: list[str] | None = None,
        *,
        target_benchmarks: pl.DataFrame | None = None,
    ) -> pl.DataFrame:
        """relR of each profile on each target, with its interval and the regime that answered.

        Args:
            profiles: one row per profile measured on ``source`` (see
                :func:`~xamm_models.profile_input.check_profiles`).
            source: the machine the profiles were measured on.
            targets: the machines to answer for (None: every known target but ``source``).
            target_benchmarks: ``benchmark_runs`` rows of machines to answer for that the model
                has no signature of.

        Returns:
            One row per (profile, target): the contract's columns
            (:data:`~xamm_models.predictors.contract.PREDICTION_COLUMNS`).
        """
        targets = list(targets or [t for t in self.targets if t != source])
        pairs, keep = profile_pairs(profiles, source, targets)
        pred = self.predict_pairs(pairs, target_benchmarks=target_benchmarks)
        return conform(
            pl.concat([pairs.select("row", *keep, "source", "target"), pred], how="horizontal")
        )

    @classmethod
    def _upgrade(cls, info: dict, version: int) -> dict:
        # version 0 folders may lack the siblings' groups and the twins' noise: neither regime
        return {"groups": [], "noise": {}, **info}

    @property
    def interval_coverage(self) -> float:
        """The coverage the intervals are calibrated to."""
        return self.config.coverage

    @property
    def rank_seed(self) -> int:
        """The configured seed."""
        return self.config.seed

    # -- persistence ----------------------------------------------------------------------------
    def _save_state(self, folder: Path) -> dict:
        files = {}
        for v, m in sorted(self.models.items()):
            if m.model is not None:  # xgboost's own format: portable, no pickle
                files[v] = f"residual_{v.replace('+', '_')}.ubj"
                m.model.save_model(folder / files[v])
        return {
            "config": self.config.model_dump(),
            "files": files,
            "sources": self.sources,
            "targets": self.targets,
            "groups": self.groups,
            "noise": {t: (v if np.isfinite(v) else None) for t, v in self.noise.items()},
            "states": {v: m.state() for v, m in sorted(self.models.items())},
            "signatures": {t: s.model_dump() for t, s in sorted(self.signatures.items())},
            "calibration": {r: c.model_dump() for r, c in self.calibration.items()},
            "training": self.training,
        }

    @classmethod
    def _load_state(cls, folder: Path, info: dict, **_: object) -> StackedPredictor:
        self = cls(StackedConfig(**info["config"]))
        self.signatures = {t: PhysicsSignature(**s) for t, s in info["signatures"].items()}
        self.calibration = {r: Calibration(**c) for r, c in info["calibration"].items()}
        self.sources, self.targets = info["sources"], info["targets"]
        self.training, self.groups = info["training"], info["groups"]
        self.noise = {t: float("nan") if v is None else v for t, v in info["noise"].items()}
        for v in sorted(set().union(*(c.used() for c in self.calibration.values()))):
            m = make_candidate(v, self.config.seed, min_pair_kernels=self.config.min_pair_kernels)
            if v in info["files"]:
                from xgboost import XGBRegressor  # models extra, imported on use

                m.model = XGBRegressor()
                m.model.load_model(folder / info["files"][v])
            m.load_state(info["states"][v])
            self.models[v] = m
        return self

    def _card_tables(self) -> tuple[str, str]:
        """The card's calibration rows (per regime) and signature rows (per target)."""
        cal = "\n".join(
            f"| {r} | {c.variant} | "
            f"{', '.join(f'{s} {v}' for s, v in sorted(c.variants.items())) or '-'} "
            "| "
            f"{', '.join(f'{k} {v:.2f}' for k, v in sorted(c.inner_within_2.items()))} "
            "| "
            f"{', '.join(f'{k} ×{10**v:.2f}' for k, v in sorted(c.halfwidth.items()))} "
            f"| {_rule(c)} |"
            for r, c in sorted(self.calibration.items())
        )
        sigs = "\n".join(
            f"| `{t}` | {s.n_samples} | {max(s.bw):.3g} | {s.flop_rate:.3g} | "
            f"{s.overhead_s:.3g} | "
            f"{self.noise.get(t, float('nan')):.2f} |"
            for t, s in sorted(self.signatures.items())
        )
        return cal, sigs

    def _card_body(self) -> tuple[str, str]:
        """The card: what it predicts, how it was chosen and calibrated, its limits."""
        cal, sigs = self._card_tables()
        t = self.training
        body = f"""\
Predicts **relR = runtime on target / runtime on source** of an application sample measured on a \
source
machine, for other machines, with an interval meant to hold the truth {self.config.coverage:.0%} \
of the time.

## Model
A physics prior (modelled time = max(bytes / bandwidth(working set), flops / flop rate) + launch \
overhead, on
each machine's signature measured from its own RAJAPerf runs), the prior with half the source's \
slowdown from its
roofline carried to the target (`split`), pair offsets and gradient-boosted residuals, chosen per \
regime
(`seen`: target seen in training, an application of a kernel group absent from training; \
`siblings`: the
same with the application's kernel group in training, its inner folds leaving each of \
{self.config.kernel_folds} random
parts of the training kernels out; `new`: a machine known only from its benchmark runs). The \
residual applies
only to machine pairs with at least {self.config.min_pair_kernels} distinct training kernels; \
other pairs get
the prior alone. Variant chosen and intervals calibrated on inner folds of the training pairs \
(conformal on
|log10 residual|, by the rule whose coverage on left-out inner folds was nearest the stated one).

| regime | pooled choice | choice per scenario | inner within-2× per candidate | interval \
half-width (×) | interval rule (held-out inner coverage) |
|---|---|---|---|---|---|
{cal}

## Machine signatures
A new machine whose signature lies within both its own and its most similar known machine's noise \
(how far a
machine's own signature moves when its benchmark kernels are resampled, 90% quantile) is that \
machine's twin and
answered as it (regime `twin`, the wider of its answering regime's and the new \
interval){"" if self.config.twins else "; switched off in this predictor"}.

| target | samples | peak sustained bandwidth (B/s) | flop rate (flop/s) | launch overhead (s) | \
signature noise |
|---|---|---|---|---|---|
{sigs}

## Training data
{t.get("dataset") or "unnamed"}: {t.get("pairs")} pairs, {t.get("kernels")} kernels, \
{t.get("samples")} benchmark samples;
xamm {t.get("xamm_version")}. Seed {self.config.seed}.

## Limitations
Targets without a signature are refused; give their RAJAPerf runs (`target_benchmarks`). The \
intervals are
calibrated on kernels of other groups and machines of the training set; a machine unlike all of \
them may be
covered less often than stated (see the evaluation in the documentation).
"""
        return "xamm default relR predictor (stacked physics model)", body


def load_predictor(model_id: str, *, revision: str | None = None):
    """A saved predictor of any kind of the zoo (:mod:`xamm_models.zoo.registry`), by folder or Hub
    repo id: the default (:class:`StackedPredictor`), the paper's
    :class:`~xamm_models.predictors.paper.predictor.XammPredictor` or the VAE-DNN."""
    return load_model(model_id, revision=revision)
