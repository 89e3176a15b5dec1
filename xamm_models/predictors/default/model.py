"""xamm's default relR predictor: the plain roofline of each machine, measured from its own
benchmark runs, and conformal intervals; the model and the intervals chosen on inner folds.

:class:`StackedPredictor` holds

* each known target's :class:`~xamm_models.machines.physics.PhysicsSignature` and benchmark samples
  (``benchmark_samples.parquet`` beside the JSON when saved): the plain roofline's figures
  (:func:`~xamm_models.benchmark.baselines.machine_figures`: one sustained bandwidth, a flop rate
  borrowed from the device kind where the runs show none, a launch overhead) are measured from them;
* the :class:`~xamm_models.predictors.default.selection.Choice`: per device scenario the model
  (the roofline unless ``candidates`` allows others and one gains over it on the inner folds with
  its 90% interval above zero) and the interval's half-width (split conformal on the inner folds'
  residuals: each kernel group of the training pairs held out in turn, every machine's figures
  measured without its kernels). Nothing of the answer is fitted to relR labels, so a machine absent
  from training is answered exactly as a known one once its figures are measured; the answer's
  ``regime`` says which it was (``seen``: both ends in the training pairs; ``new``: an end known
  only from its benchmark runs).

Why the roofline: on nested leave one machine out the choice among every label-free candidate
(``split`` among them) scored below it (docs/decisions.md).

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

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from xamm_data._version import __version__
from xamm_data.machines.targets import scenario_expr
from xamm_data.store.parquet_depth import read_parquet
from xamm_models.benchmark.baselines import machine_figures
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
from xamm_models.predictors.contract import Predictor, asked_targets, conform, no_other_options
from xamm_models.predictors.default.neighbours import (
    CANDIDATES,
    benchmark_table,
    candidate_answers,
    pair_bands,
)
from xamm_models.predictors.default.selection import (
    Choice,
    choose,
    inner_answers,
    regime_expr,
    slowdown_bands,
)
from xamm_models.predictors.kinds import load_model
from xamm_models.profile_input import check_profiles, require_frame

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
    # bootstrap resamples of the inner gain over the roofline (the choice's evidence)
    n_boot: int = Field(400, ge=50)
    # the models the inner folds may choose among per scenario; the default allows the roofline
    # alone: the choice among every candidate lost to it on nested leave one machine out
    # (docs/decisions.md, "stacked/nested-choice" in the evaluation)
    candidates: tuple[str, ...] = ("roofline",)
    # intervals scaled by the spread of look-alike benchmark kernels' changes; off by default:
    # on nested leave one machine out they came out wider than one half-width per scenario
    scaled_intervals: bool = False
    # a half-width per device scenario and size regime (bytes per launch), where inner folds hold
    # enough pairs of the cell
    regime_intervals: bool = False
    # a half-width per device scenario and source slowdown band (at its roof, 2-10x off, beyond);
    # off by default: on nested leave one machine out it was no narrower (docs/decisions.md)
    band_intervals: bool = False
    # an interval per device scenario from the inner residuals' two signed tails, not centred on
    # the answer; off by default (docs/decisions.md)
    signed_intervals: bool = False
    # each pair's interval from the band of its two machines' own kernels' changes, widened by a
    # margin per scenario (conformalised quantile regression); off by default (docs/decisions.md)
    pair_intervals: bool = False

    @model_validator(mode="after")
    def _one_cell_kind(self) -> StackedConfig:
        if self.regime_intervals and self.band_intervals:
            raise ValueError("regime_intervals and band_intervals: one kind of interval cell")
        if self.signed_intervals and self.scaled_intervals:
            raise ValueError("signed_intervals are not scaled: one of the two")
        others = (self.regime_intervals, self.band_intervals, self.signed_intervals)
        if self.pair_intervals and (any(others) or self.scaled_intervals):
            raise ValueError("pair_intervals is one interval rule: not with any other")
        return self

    @field_validator("candidates")
    @classmethod
    def _known(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(v) - set(CANDIDATES))
        if unknown:
            raise ValueError(f"unknown candidates {unknown}; known: {', '.join(CANDIDATES)}")
        return v


# the benchmark samples' columns a saved predictor keeps: new machines' figures borrow from them,
# and its candidates compare kernels both machines ran (named by app and parameters, else by app
# and size bucket: without either, every size of a kernel would pair with every other)
SAMPLE_KEEP = (
    "target",
    "app",
    "app_params",
    "size_bucket",
    "variant",
    "time_per_rep_s",
    "iterations_per_rep",
    "bytes_per_rep",
    "flops_per_rep",
    "kernels_per_rep",
    # the machine-pair constant's like-for-like rule (``pair-constant``)
    "problem_size",
    "runtime_s",
    "bytes_per_iter",
    "flops_per_iter",
)
SAMPLES_FILE = "benchmark_samples.parquet"


@dataclass(frozen=True)
class MeasuredTargets:
    """Targets known from their benchmark runs, measured once per prediction and handed down:
    the runs, their benchmark samples and their physics signatures (built with
    :meth:`StackedPredictor.measure`)."""

    runs: pl.DataFrame
    samples: pl.DataFrame
    signatures: dict[str, PhysicsSignature]


def _kept(samples: pl.DataFrame) -> pl.DataFrame:
    """The samples' columns a predictor keeps (:data:`SAMPLE_KEEP`; missing ones null)."""
    text = ("target", "app", "app_params", "variant")
    return samples.select(
        pl.col(c)
        if c in samples.columns
        else pl.lit(None, dtype=pl.String if c in text else pl.Float64).alias(c)
        for c in SAMPLE_KEEP
    )


def profile_pairs(
    profiles: pl.DataFrame, source: str, targets: list[str]
) -> tuple[pl.DataFrame, list[str]]:
    """One pair row per (profile, target), numbered by profile (``row``), and the naming columns to
    keep; the profiles are checked first (:func:`~xamm_models.profile_input.check_profiles`)."""
    require_frame(profiles)
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
    """The plain roofline from each machine's own runs, with conformal intervals; model and
    intervals chosen on inner folds (see the module docstring)."""

    kind = "stacked"
    marker = FILE
    store_profiles = "kernels"
    # version 3: the model chosen per scenario and the benchmark samples beside the JSON; a
    # version 2 file (one model, no samples) cannot answer as this one does: refused by name
    format_version = 3

    def __init__(self, config: StackedConfig | dict | None = None, **kwargs):
        self.config = (
            StackedConfig(**config)
            if isinstance(config, dict)
            else (config or StackedConfig(**kwargs))
        )
        self.signatures: dict[str, PhysicsSignature] = {}
        self.choice: Choice | None = None
        self.samples: pl.DataFrame | None = None
        self._known: tuple[pl.DataFrame, pl.DataFrame] | None = None  # (figures, table)
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
        self.samples = _kept(samples)
        self._known = None
        self.sources = sorted(set(pairs.get_column("source")))
        self.targets = sorted(set(pairs.get_column("target")))
        looks = self.config.scaled_intervals or bool(
            set(self.config.candidates) - {"roofline", "pair-constant", "split"}
        )
        inner = inner_answers(
            pairs,
            samples,
            neighbours=looks,
            bands=self.config.pair_intervals,
            constants="pair-constant" in self.config.candidates,
        )
        self.choice = choose(
            inner,
            candidates=self.config.candidates,
            scaled=self.config.scaled_intervals,
            by_regime=self.config.regime_intervals,
            by_band=self.config.band_intervals,
            signed=self.config.signed_intervals,
            pairs=self.config.pair_intervals,
            coverage=self.config.coverage,
            seed=self.config.seed,
            n_boot=self.config.n_boot,
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

    # -- inference --------------------------------------------------------------------------------
    def measure(self, runs: pl.DataFrame) -> MeasuredTargets:
        """Targets' benchmark runs measured once: their samples and physics signatures (against
        this predictor's own), to hand to :meth:`predict_pairs` as ``target_benchmarks``.

        Args:
            runs: ``benchmark_runs`` rows of one programming model and configuration per target.

        Returns:
            The runs, samples and signatures.
        """
        if mixed := mixed_runs(runs):
            raise ProfileInputError(
                f"{'; '.join(mixed)}: a signature measured from a mix of programming models or "
                "configurations describes none of them; pass one, e.g. target_benchmarks="
                "one_family(runs, 'sequential') (xamm_models.predictors.configurations; "
                "xamm predict --family)"
            )
        samples = samples_from_runs(runs)
        return MeasuredTargets(
            runs, samples, physics_signatures(samples, reference=self.signatures)
        )

    def _measured(
        self, target_benchmarks: pl.DataFrame | MeasuredTargets | None
    ) -> MeasuredTargets | None:
        if target_benchmarks is None or isinstance(target_benchmarks, MeasuredTargets):
            return target_benchmarks
        return self.measure(target_benchmarks)

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
            for t in sorted(set(pairs.get_column(kind).unique().to_list()) - set(sigs)):
                raise err(f"{unknown_name_message(kind, t, sorted(sigs))}; {ADD_A_TARGET}")

    def signatures_for(
        self,
        pairs: pl.DataFrame,
        *,
        target_benchmarks: pl.DataFrame | MeasuredTargets | None = None,
    ) -> dict[str, PhysicsSignature]:
        """The signatures ``pairs`` are answered with: the known ones and those measured from
        ``target_benchmarks``. Unknown ends without benchmark runs are refused here.

        Args:
            pairs: pair rows (``source``, ``target`` and the source sample's work and features).
            target_benchmarks: ``benchmark_runs`` rows of machines the model has no signature of,
                or those runs already measured (:meth:`measure`).

        Returns:
            Signatures by target.
        """
        measured = self._measured(target_benchmarks)
        sigs = self.signatures if measured is None else {**self.signatures, **measured.signatures}
        self._check(pairs, sigs)
        return sigs

    def predict_pairs(
        self,
        pairs: pl.DataFrame,
        *,
        target_benchmarks: pl.DataFrame | MeasuredTargets | None = None,
    ) -> pl.DataFrame:
        """relR of each pair with its calibrated interval and the regime that answered (``seen``:
        both ends seen in training; ``new``: an end known only from its benchmark runs).

        Args:
            pairs: pair rows (``source``, ``target`` and the source sample's work and features).
            target_benchmarks: ``benchmark_runs`` rows of machines the model has no signature of,
                or those runs already measured (:meth:`measure`).

        Returns:
            ``relR``, ``relR_lo``, ``relR_hi`` and ``regime``, one row per pair.
        """
        c, _ = self._fitted()
        measured = self._measured(target_benchmarks)  # once: signatures and figures share it
        figures, table = self._figures_and_table(measured)
        answers = self._answers(pairs, measured, figures, table)
        out, half, shift = np.empty(pairs.height), np.empty(pairs.height), np.empty(pairs.height)
        model = np.zeros(pairs.height, dtype=np.int64)  # the answering candidate, by its index
        names: list[str] = []
        cells = pairs.select(scenario_expr(), regime_expr().alias("cell"))
        if c.cells == "band":
            cells = cells.with_columns(pl.Series("cell", slowdown_bands(pairs, figures)))
        for (s, cell), rows in rows_by(cells.get_column("scenario"), cells.get_column("cell")):
            name = c.model_of(s)
            key = c.cell_of(s, cell)
            out[rows] = answers.logs[name][rows]
            scale = answers.scale[rows] if c.scaled else np.ones(len(rows))
            half[rows] = c.factor[key] * np.where(np.isfinite(scale), scale, c.fill_scale[key])
            shift[rows] = c.shift.get(key, 0.0)
            if name not in names:
                names.append(name)
            model[rows] = names.index(name)
        lo, hi = out + shift - half, out + shift + half
        if c.pair_bands:
            _band_bounds(c, pairs, table, cells.get_column("scenario"), out, lo, hi)
        seen = (
            pairs.get_column("target").is_in(self.targets)
            & pairs.get_column("source").is_in(self.sources)
        ).to_numpy()
        return pl.DataFrame(
            {"relR": 10.0**out, "relR_lo": 10.0**lo, "relR_hi": 10.0**hi}
        ).with_columns(
            pl.Series("regime", seen).replace_strict(
                {True: "seen", False: "new"}, return_dtype=pl.String
            ),
            pl.Series("model", model).replace_strict(
                dict(enumerate(names)), return_dtype=pl.String
            ),
        )

    def _answers(self, pairs, measured, figures, table):
        """The candidates' answers the choice reads for ``pairs`` (look-alike kernels looked for
        only when a chosen candidate or the intervals read them)."""
        c, _ = self._fitted()
        used = set(c.model.values())
        return candidate_answers(
            self.signatures_for(pairs, target_benchmarks=measured),
            figures,
            table,
            pairs,
            neighbours=c.scaled or bool(used - {"roofline", "pair-constant", "split"}),
            used=used,
            samples=self._every_samples(measured) if "pair-constant" in used else None,
        )

    def _fitted(self) -> tuple[Choice, pl.DataFrame]:
        """The choice and the benchmark samples; refused before ``fit`` or ``from_pretrained``."""
        if self.choice is None or self.samples is None:
            raise RuntimeError("the predictor is not trained: fit() or from_pretrained() first")
        return self.choice, self.samples

    def _every_samples(self, measured: MeasuredTargets | None) -> pl.DataFrame:
        """The known machines' benchmark samples, a measured target's own in place of any known
        ones of the same name."""
        _, samples = self._fitted()
        if measured is None:
            return samples
        new = _kept(measured.samples)
        known = samples.filter(~pl.col("target").is_in(new.get_column("target").implode()))
        return pl.concat([known, new], how="diagonal_relaxed")

    def _figures_and_table(
        self, measured: MeasuredTargets | None
    ) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The plain roofline's figures and the benchmark descriptors of the known machines and
        of ``target_benchmarks``' (the known ones computed once)."""
        _, samples = self._fitted()
        if measured is None:
            if self._known is None:
                figs = machine_figures(samples)
                self._known = (figs, benchmark_table(samples, figs))
            return self._known
        every = self._every_samples(measured)
        figs = machine_figures(every)
        return figs, benchmark_table(every, figs)

    def figures(
        self, target_benchmarks: pl.DataFrame | MeasuredTargets | None = None
    ) -> pl.DataFrame:
        """The plain roofline's figures of every target the predictor answers from runs.

        Args:
            target_benchmarks: as :meth:`predict_pairs` takes them.

        Returns:
            ``target``, ``bw``, ``flops``, ``overhead``.
        """
        return self._figures_and_table(self._measured(target_benchmarks))[0]

    def predict(
        self,
        profiles: pl.DataFrame,
        source: str,
        targets: list[str] | None = None,
        *,
        target_benchmarks: pl.DataFrame | MeasuredTargets | None = None,
        **kw: Any,
    ) -> pl.DataFrame:
        """relR of each profile on each target, with its interval and the regime that answered.

        Args:
            profiles: one row per profile measured on ``source`` (see
                :func:`~xamm_models.profile_input.check_profiles`).
            source: the machine the profiles were measured on.
            targets: the machines to answer for (None: every known target but ``source``).
            target_benchmarks: ``benchmark_runs`` rows of machines to answer for that the model
                has no signature of, or those runs already measured (:meth:`measure`).
            **kw: no other option: one given is refused (``TypeError``).

        Returns:
            One row per (profile, target): the contract's columns
            (:data:`~xamm_models.predictors.contract.PREDICTION_COLUMNS`).
        """
        no_other_options(self, kw)
        targets = asked_targets(targets, [t for t in self.targets if t != source])
        pairs, keep = profile_pairs(profiles, source, targets)
        pred = self.predict_pairs(pairs, target_benchmarks=target_benchmarks)
        # side by side, one row each (hstack refuses other heights on every polars xamm supports)
        return conform(pairs.select("row", *keep, "source", "target").hstack(pred))

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
        choice, samples = self._fitted()
        samples.write_parquet(folder / SAMPLES_FILE)
        return {
            "config": self.config.model_dump(),
            "sources": self.sources,
            "targets": self.targets,
            "signatures": {t: s.model_dump() for t, s in sorted(self.signatures.items())},
            "choice": choice.model_dump(),
            "training": self.training,
        }

    @classmethod
    def _load_state(cls, folder: Path, info: dict, **_: object) -> StackedPredictor:
        self = cls(StackedConfig(**info["config"]))
        self.signatures = {t: PhysicsSignature(**s) for t, s in info["signatures"].items()}
        self.choice = Choice(**info["choice"])
        self.samples = read_parquet(folder / SAMPLES_FILE)
        self.sources, self.targets = info["sources"], info["targets"]
        self.training = info["training"]
        return self

    def _card_tables(self) -> tuple[str, str]:
        """The card's choice rows (per scenario) and signature rows (per target)."""
        c, _ = self._fitted()
        cal = "\n".join(
            f"| {k} | {c.n[k]} | `{c.model[k]}` | {c.inner_within_2.get(k, float('nan')):.2f} | "
            f"{c.gain_lower.get(k, 0.0):+.3f} | ×{10 ** (c.factor[k] * c.fill_scale[k]):.2f} |"
            for k in sorted(c.model)
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
Each machine's figures are measured from its own RAJAPerf runs. Per device scenario the model is \
chosen on
inner folds of the training pairs (each kernel group left out in turn): the plain roofline, unless \
a label-free
candidate (the bandwidth curve with half the source's slowdown carried over, or the roofline \
corrected by how
look-alike benchmark kernels changed between the two machines) gains over it with the 90% \
bootstrap interval of
the gain above zero. Intervals: {_interval_words(self.config)}.

| scenario | inner pairs | model | inner within-2× | gain over the roofline, 5th percentile | \
typical interval (×) |
|---|---|---|---|---|---|
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


def _interval_words(config: StackedConfig) -> str:
    """What the card says the intervals are, from the configuration that made them."""
    if config.pair_intervals:
        return (
            "each pair's band of the roofline's errors on the kernels both machines ran (10% to "
            "90%), widened by one split-conformal margin per scenario"
        )
    if config.scaled_intervals:
        return "normalised split conformal, each answer's scale its look-alike kernels' spread"
    cell = (
        " and size regime"
        if config.regime_intervals
        else " and source slowdown band"
        if config.band_intervals
        else ""
    )
    if config.signed_intervals:
        return f"a pair of signed split-conformal tails per device scenario{cell}"
    return f"one split-conformal half-width per device scenario{cell}"


def _band_bounds(
    c: Choice,
    pairs: pl.DataFrame,
    table: pl.DataFrame,
    scenario: pl.Series,
    out: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
) -> None:
    """Put each pair with a band (:func:`~.neighbours.pair_bands`) and a margin for its scenario
    (else the pooled one) at the answer plus its band widened by the margin, into ``lo`` and
    ``hi`` (log10); a band the margin inverts is a point at its middle."""
    b_lo, b_hi = pair_bands(table, pairs)
    for (s,), rows in rows_by(scenario):
        m = c.margin.get(s, c.margin.get("all"))
        if m is None:
            continue
        rows = rows[np.isfinite(b_lo[rows])]
        a, b = out[rows] + b_lo[rows] - m, out[rows] + b_hi[rows] + m
        mid = (a + b) / 2
        lo[rows], hi[rows] = np.minimum(a, mid), np.maximum(b, mid)


def load_predictor(model_id: str, *, revision: str | None = None):
    """A saved predictor of any kind of the zoo (:mod:`xamm_models.predictors.kinds`), by folder
    or Hub repo id: the default (:class:`StackedPredictor`), the paper's
    :class:`~xamm_models.predictors.paper.predictor.XammPredictor` or the VAE-DNN."""
    return load_model(model_id, revision=revision)
