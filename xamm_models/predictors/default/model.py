"""xamm's default relR predictor: each machine's physics signature from its own benchmark runs, one
label-free model, and conformal intervals.

:class:`StackedPredictor` holds

* each known target's :class:`~xamm_models.machines.physics.PhysicsSignature`, measured from its own
  RAJAPerf runs (a machine whose runs hold no compute-bound kernel borrows the flop rate of its
  device kind: :func:`~xamm_models.machines.physics.borrow_flop_rates`);
* the model: the physics prior with half the source's slowdown from its roofline carried to the
  target (:func:`~xamm_models.predictors.default.stacked.split_relr`). Nothing is fitted to relR
  labels;
* split-conformal interval half-widths per device scenario, from the model's residuals on inner
  folds of the training pairs: each kernel group left out in turn, the signatures measured without
  its kernels. As nothing is fitted to labels, a machine absent from training is answered exactly as
  a known one once its signature is measured; the answer's ``regime`` says which it was (``seen``:
  both ends in the training pairs; ``new``: an end known only from its benchmark runs).

Why so little: on leave-one-machine-out folds, the candidates chosen per regime and scenario on
inner folds (learned residuals, the most-similar-machine stand-in, pair offsets, with their gate and
tie-break) did not beat this model as a whole, twins cost within 2x, the siblings regime answers no
such pair, and the choice among interval rules covered no better (90% intervals of the gains
covering zero or below it); the prior with borrowed flop rates and the half-slowdown beat the
prior without them (docs/decisions.md).

A target without a signature is refused (:class:`UnknownTargetError`, with did-you-mean), unless its
benchmark runs are given (``target_benchmarks``: ``benchmark_runs`` rows, or samples built from
them): then its signature is measured on the fly and it is answered in the ``new`` regime. A source
machine is treated the same way.

Input frames (one row per application sample) need the sample's per-rep work and its source time:
``bytes_per_rep``, ``flops_per_rep``, ``iterations_per_rep``, ``runtime_s`` (seconds per iteration
on the source, as in ``xplat`` samples; ``runtime_source`` in pair frames), ``f_log_s_per_iter``,
``f_arith_intensity``, ``f_log_problem_size`` and optionally ``kernels_per_rep`` (launches per rep,
default 1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from xamm_data._version import __version__
from xamm_data.targets import scenario_expr
from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.errors import (
    ADD_A_TARGET,
    ProfileInputError,
    UnknownSourceError,
    UnknownTargetError,
    unknown_name_message,
)
from xamm_models.machines.physics import PhysicsSignature, physics_signatures, rows_by
from xamm_models.predictors.configurations import mixed_runs
from xamm_models.predictors.contract import Predictor, conform, no_other_options
from xamm_models.predictors.default.conformal import halfwidths
from xamm_models.predictors.default.stacked import split_relr
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
    coverage: float = Field(0.8, gt=0, lt=1)
    seed: int = 0
    # fewer inner residuals than this in a scenario: the pooled ("all") half-width is used
    min_per_scenario: int = 20


class Calibration(BaseModel):
    """The model's within-2x on the inner folds and its conformal half-widths."""

    inner_within_2: float | None = None
    # scenario (or "all") -> log10 half-width at the configured coverage
    halfwidth: dict[str, float]
    n: dict[str, int]


def _scenarios(pairs: pl.DataFrame) -> np.ndarray:
    return pairs.select(scenario_expr()).to_series().to_numpy()


def _inner_folds(pairs: pl.DataFrame, samples: pl.DataFrame):
    """(signatures, held pairs) of each inner fold: one kernel group of the training pairs held out,
    the signatures measured without its kernels."""
    for _, held in pairs.group_by(["group"], maintain_order=True):
        hidden = held.get_column("app").unique().implode()
        yield physics_signatures(samples.filter(~pl.col("app").is_in(hidden))), held


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
    """Physics signatures, the half-slowdown model and conformal intervals (see the module
    docstring)."""

    kind = "stacked"
    marker = FILE
    store_profiles = "kernels"
    # version 2: one label-free model; the saved layouts of the candidate choice are not read
    format_version = 2

    def __init__(self, config: StackedConfig | dict | None = None, **kwargs):
        self.config = (
            StackedConfig(**config)
            if isinstance(config, dict)
            else (config or StackedConfig(**kwargs))
        )
        self.signatures: dict[str, PhysicsSignature] = {}
        self.calibration: Calibration | None = None
        self.sources: list[str] = []
        self.targets: list[str] = []
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
        """Measure the signatures and calibrate the intervals on inner folds.

        Args:
            pairs: labelled pairs (``xplat`` pair frames: ``source``, ``target``, ``relR``,
                ``group``, ``app`` and the source sample's work and features).
            samples: the targets' benchmark samples, one row per kernel and size per target (the
                test kernels of an evaluation must not be among them).
            dataset: the data set's name, recorded in the card.
            data_version: the store table version the data were read at
                (``XplatDataset.from_store(version=...)`` reads it again).

        Returns:
            The fitted predictor.
        """
        self.signatures = physics_signatures(samples)
        self.sources = sorted(set(pairs.get_column("source")))
        self.targets = sorted(set(pairs.get_column("target")))
        self.calibration = self._calibrate(pairs, samples)
        self.training = {
            "dataset": dataset,
            "data_version": data_version,
            "pairs": pairs.height,
            "samples": samples.height,
            "kernels": pairs.get_column("app").n_unique(),
            "xamm_version": __version__,
        }
        return self

    def _calibrate(self, pairs: pl.DataFrame, samples: pl.DataFrame) -> Calibration:
        resid, scen = [], []
        for sigs, held in _inner_folds(pairs, samples):
            resid.append(np.log10(split_relr(sigs, held) / held.get_column("relR").to_numpy()))
            scen.append(_scenarios(held))
        # no training pairs: refuse to be confident
        if not resid:
            return Calibration(halfwidth={"all": float("inf")}, n={"all": 0})
        r, sc = (np.concatenate(x) for x in (resid, scen))
        hw = halfwidths(r, sc, self.config.coverage, self.config.min_per_scenario)
        return Calibration(
            inner_within_2=float(np.mean(np.abs(r) <= np.log10(2) + 1e-12)),
            halfwidth=hw,
            n={**{s: int((sc == s).sum()) for s in hw if s != "all"}, "all": len(r)},
        )

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

    def signatures_for(
        self, pairs: pl.DataFrame, *, target_benchmarks: pl.DataFrame | None = None
    ) -> dict[str, PhysicsSignature]:
        """The signatures ``pairs`` are answered with: the known ones and those measured from
        ``target_benchmarks``. Unknown ends without benchmark runs are refused here.

        Args:
            pairs: pair rows (``source``, ``target`` and the source sample's work and features).
            target_benchmarks: ``benchmark_runs`` rows of machines the model has no signature of.

        Returns:
            Signatures by target.
        """
        if target_benchmarks is not None and (mixed := mixed_runs(target_benchmarks)):
            raise ProfileInputError(
                f"{'; '.join(mixed)}: a signature measured from a mix of programming models or "
                "configurations describes none of them; pass one, e.g. target_benchmarks="
                "one_family(runs, 'sequential') (xamm_models.predictors.configurations; "
                "xamm predict --family)"
            )
        bench = None if target_benchmarks is None else samples_from_runs(target_benchmarks)
        sigs = self._signatures_with(bench)
        self._check(pairs, sigs)
        return sigs

    def predict_pairs(
        self, pairs: pl.DataFrame, *, target_benchmarks: pl.DataFrame | None = None
    ) -> pl.DataFrame:
        """relR of each pair with its calibrated interval and the regime that answered (``seen``:
        both ends seen in training; ``new``: an end known only from its benchmark runs).

        Args:
            pairs: pair rows (``source``, ``target`` and the source sample's work and features).
            target_benchmarks: ``benchmark_runs`` rows of machines the model has no signature of.

        Returns:
            ``relR``, ``relR_lo``, ``relR_hi`` and ``regime``, one row per pair.
        """
        if self.calibration is None:
            raise RuntimeError("the predictor is not trained: fit() or from_pretrained() first")
        sigs = self.signatures_for(pairs, target_benchmarks=target_benchmarks)
        out = split_relr(sigs, pairs)
        seen = (
            pairs.get_column("target").is_in(self.targets)
            & pairs.get_column("source").is_in(self.sources)
        ).to_numpy()
        regime = np.where(seen, "seen", "new")
        hw = self.calibration.halfwidth
        half = np.empty(pairs.height)
        for (s,), rows in rows_by(pairs.select(scenario_expr()).to_series()):
            half[rows] = hw.get(s, hw["all"])
        w = 10.0**half
        return pl.DataFrame({"relR": out, "relR_lo": out / w, "relR_hi": out * w, "regime": regime})

    def predict(
        self,
        profiles: pl.DataFrame,
        source: str,
        targets: list[str] | None = None,
        *,
        target_benchmarks: pl.DataFrame | None = None,
        **kw: Any,
    ) -> pl.DataFrame:
        """relR of each profile on each target, with its interval and the regime that answered.

        Args:
            profiles: one row per profile measured on ``source`` (see
                :func:`~xamm_models.profile_input.check_profiles`).
            source: the machine the profiles were measured on.
            targets: the machines to answer for (None: every known target but ``source``).
            target_benchmarks: ``benchmark_runs`` rows of machines to answer for that the model
                has no signature of.
            **kw: no other option: one given is refused (``TypeError``).

        Returns:
            One row per (profile, target): the contract's columns
            (:data:`~xamm_models.predictors.contract.PREDICTION_COLUMNS`).
        """
        no_other_options(self, kw)
        targets = list(targets or [t for t in self.targets if t != source])
        pairs, keep = profile_pairs(profiles, source, targets)
        pred = self.predict_pairs(pairs, target_benchmarks=target_benchmarks)
        return conform(
            pl.concat([pairs.select("row", *keep, "source", "target"), pred], how="horizontal")
        )

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
        return {
            "config": self.config.model_dump(),
            "sources": self.sources,
            "targets": self.targets,
            "signatures": {t: s.model_dump() for t, s in sorted(self.signatures.items())},
            "calibration": self.calibration.model_dump(),
            "training": self.training,
        }

    @classmethod
    def _load_state(cls, folder: Path, info: dict, **_: object) -> StackedPredictor:
        self = cls(StackedConfig(**info["config"]))
        self.signatures = {t: PhysicsSignature(**s) for t, s in info["signatures"].items()}
        self.calibration = Calibration(**info["calibration"])
        self.sources, self.targets = info["sources"], info["targets"]
        self.training = info["training"]
        return self

    def _card_tables(self) -> tuple[str, str]:
        """The card's calibration row and signature rows (per target)."""
        c = self.calibration
        cal = (
            f"| {'-' if c.inner_within_2 is None else f'{c.inner_within_2:.2f}'} | "
            f"{', '.join(f'{k} ×{10**v:.2f}' for k, v in sorted(c.halfwidth.items()))} |"
        )
        sigs = "\n".join(
            f"| `{t}` | {s.n_samples} | {max(s.bw):.3g} | {s.flop_rate:.3g} "
            f"({s.flop_rate_from}) | {s.overhead_s:.3g} |"
            for t, s in sorted(self.signatures.items())
        )
        return cal, sigs

    def _card_body(self) -> tuple[str, str]:
        """The card: what it predicts, how it was calibrated, its limits."""
        cal, sigs = self._card_tables()
        t = self.training
        body = f"""\
Predicts **relR = runtime on target / runtime on source** of an application sample measured on a \
source
machine, for other machines, with an interval meant to hold the truth {self.config.coverage:.0%} \
of the time.

## Model
Each machine's signature is measured from its own RAJAPerf runs; modelled time = max(bytes / \
bandwidth(working
set), flops / flop rate) + launch overhead. relR = the modelled ratio times the square root of the \
source's
slowdown from its roofline (half of it carried to the target). Nothing is fitted to relR labels. \
Intervals:
split conformal on |log10 residual| over inner folds of the training pairs (each kernel group \
left out in
turn), per device scenario.

| inner within-2× | interval half-width (×) |
|---|---|
{cal}

## Machine signatures

| target | samples | peak sustained bandwidth (B/s) | flop rate (flop/s) | launch overhead (s) |
|---|---|---|---|---|
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
        return "xamm default relR predictor (physics signatures)", body


def load_predictor(model_id: str, *, revision: str | None = None):
    """A saved predictor of any kind of the zoo (:mod:`xamm_models.zoo.registry`), by folder or Hub
    repo id: the default (:class:`StackedPredictor`), the paper's
    :class:`~xamm_models.predictors.paper.predictor.XammPredictor` or the VAE-DNN."""
    return load_model(model_id, revision=revision)
