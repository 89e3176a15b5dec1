"""The benchmark's simple baselines as zoo artefacts, so anyone can hold a new answer against the yardstick the
evaluation uses.

:class:`BaselinePredictor` keeps what a baseline of :mod:`xamm_models.benchmark.baselines` needs from its training data
and answers exactly as that function does in ``xamm eval`` (tested against it):

* ``pair-median``: the labelled pairs' median relR per (source, target), then per scenario, then overall;
* ``roofline``: each machine's sustained bandwidth, compute rate and launch overhead from its own benchmark
  runs (:func:`~xamm_models.benchmark.baselines.machine_figures`, stored), no labels; the pair median where the
  roofline has no answer;
* ``knn``: the mean log relR of the ``k`` nearest labelled pairs of the same (source, target) in the
  standardised raw features (the pairs are stored).

Baselines carry no interval (``relR_lo``/``relR_hi`` are null) and ``rank_targets`` gives no ``p_fastest``. A
machine known only from its benchmark runs gets what the eval gives a held-out machine; a target or source with
neither labelled pairs nor benchmark runs is refused, as by the default predictor.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import polars as pl
from huggingface_hub import ModelCard
from pydantic import BaseModel, ConfigDict

from xamm_data._version import __version__
from xamm_data.hub import snapshot_dir
from xamm_data.hub_files import VerifiedHubMixin
from xamm_models.benchmark import baselines as B
from xamm_models.zoo.cards import card_datasets_and_metrics, metrics_table
from xamm_models.predictors.default.model import profile_pairs
from xamm_models.features import FEATURES
from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.errors import ADD_A_TARGET, UnknownSourceError, UnknownTargetError, unknown_name_message
from xamm_models.zoo.registry import resolve

FILE = "baseline.json"
METHODS = ("pair-median", "roofline", "knn")
_PAIR_COLUMNS = ("source", "target", "relR")


class BaselineConfig(BaseModel):
    """Which baseline (saved as ``baseline.json``)."""

    model_config = ConfigDict(extra="forbid")
    method: Literal["pair-median", "roofline", "knn"] = "pair-median"
    k: int = 5  # knn's neighbours


class BaselinePredictor(VerifiedHubMixin, library_name="xamm", tags=["xamm", "hpc", "performance-prediction", "baseline"],
                        repo_url=None):
    """One of the benchmark's baselines, fitted and saved (see the module docstring)."""

    def __init__(self, config: BaselineConfig | dict | None = None, **kwargs):
        self.config = BaselineConfig(**config) if isinstance(config, dict) else (config or BaselineConfig(**kwargs))
        self.pairs: pl.DataFrame | None = None
        self.figures: pl.DataFrame | None = None
        self.training: dict = {}

    def fit(self, pairs: pl.DataFrame, samples: pl.DataFrame, *, dataset: str | None = None,
            data_version: int | None = None) -> "BaselinePredictor":
        """Keep the labelled ``pairs`` (the columns the method reads) and the machines' figures from ``samples``."""
        cols = [*_PAIR_COLUMNS, *(FEATURES if self.config.method == "knn" else ())]
        self.pairs = pairs.select(cols)
        self.figures = B.machine_figures(samples).sort("target")
        self.training = {"dataset": dataset, "data_version": data_version, "pairs": pairs.height,
                         "kernels": pairs.get_column("app").n_unique(), "samples": samples.height, "xamm_version": __version__}
        return self

    def predict_pairs(self, pairs: pl.DataFrame, *, target_benchmarks: pl.DataFrame | None = None) -> pl.DataFrame:
        """``relR`` of each row of ``pairs`` as the baseline's function gives it in ``xamm eval``; null intervals.
        ``target_benchmarks`` (``benchmark_runs`` rows of new machines) adds their figures, as a held-out machine's."""
        if self.pairs is None:
            raise RuntimeError("the baseline is not fitted: fit() or from_pretrained() first")
        figures = self.figures
        if target_benchmarks is not None:
            new = B.machine_figures(samples_from_runs(target_benchmarks))
            figures = pl.concat([figures.filter(~pl.col("target").is_in(new.get_column("target").implode())), new]).sort("target")
        known = {kind: sorted(set(self.pairs.get_column(kind)) | set(figures.get_column("target"))) for kind in ("source", "target")}
        for kind, err in (("source", UnknownSourceError), ("target", UnknownTargetError)):
            for t in sorted(set(pairs.get_column(kind)) - set(known[kind])):
                raise err(f"{unknown_name_message(kind, t, known[kind])}; {ADD_A_TARGET}")
        m = self.config.method
        need = {"knn": FEATURES, "roofline": ("bytes_per_rep", "flops_per_rep", "iterations_per_rep")}.get(m, ())
        missing = [c for c in (*need, "source", "target") if c not in pairs.columns]
        if missing:
            raise ValueError(f"input lacks the columns {missing}; baseline {m} needs {['source', 'target', *need]}")
        y = (B.pair_median(self.pairs, pairs) if m == "pair-median"
             else B.roofline(self.pairs, pairs, figures=figures) if m == "roofline"
             else B.knn(self.pairs, pairs, features=list(FEATURES), k=self.config.k))
        return pl.DataFrame({"relR": y, "relR_lo": pl.Series([None] * len(y), dtype=pl.Float64),
                             "relR_hi": pl.Series([None] * len(y), dtype=pl.Float64)})

    def predict(self, profiles: pl.DataFrame, source: str, targets: list[str], *,
                target_benchmarks: pl.DataFrame | None = None) -> pl.DataFrame:
        """relR of each profile (measured on ``source``) on each target: one row per (profile, target)."""
        pairs, keep = profile_pairs(profiles, source, targets)
        pred = self.predict_pairs(pairs, target_benchmarks=target_benchmarks)
        return pl.concat([pairs.select("row", *keep, "source", "target"), pred], how="horizontal").sort("row", "target")

    def rank_targets(self, profiles: pl.DataFrame, source: str, targets: list[str], *,
                     target_benchmarks: pl.DataFrame | None = None, **_) -> pl.DataFrame:
        """Targets per profile, fastest first, with ``rank``; ``p_fastest`` is null (a baseline has no interval)."""
        p = self.predict(profiles, source, targets, target_benchmarks=target_benchmarks).with_columns(pl.lit(None, pl.Float64).alias("p_fastest"))
        return p.sort("row", "relR").with_columns(pl.int_range(1, pl.len() + 1).over("row").alias("rank"))

    def _save_pretrained(self, save_directory: Path) -> None:
        d = Path(save_directory)
        d.mkdir(parents=True, exist_ok=True)
        self.pairs.write_parquet(d / "pairs.parquet", statistics=False)
        self.figures.write_parquet(d / "figures.parquet", statistics=False)
        info = {"config": self.config.model_dump(), "training": self.training, "xamm_version": __version__}
        (d / FILE).write_text(json.dumps(info, indent=1, sort_keys=True, default=str) + "\n")
        self.card().save(d / "README.md")

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *, revision: str | None = None, **kwargs):
        """A saved baseline by folder or Hub repo id (a folder of another zoo kind loads as that kind)."""
        folder, other = resolve(FILE, pretrained_model_name_or_path, revision, kwargs)
        return other if other is not None else super().from_pretrained(str(folder), **kwargs)

    @classmethod
    def _from_pretrained(cls, *, model_id: str, revision: str | None = None, cache_dir=None, force_download=False,
                         local_files_only=False, token=None, **kwargs) -> "BaselinePredictor":
        d = snapshot_dir(model_id, revision=revision, cache_dir=cache_dir, force_download=force_download,
                         local_files_only=local_files_only, token=token)
        info = json.loads((d / FILE).read_text())
        self = cls(BaselineConfig(**info["config"]))
        self.pairs, self.figures = pl.read_parquet(d / "pairs.parquet"), pl.read_parquet(d / "figures.parquet")
        self.training = info["training"]
        return self

    def card(self) -> ModelCard:
        """The model card: which baseline, on what data, its metrics on the official splits."""
        t, m = self.training, self.config.method
        what = {"pair-median": "the labelled pairs' median relR per (source, target), then per scenario, then overall",
                "roofline": "modelled time on the target over modelled time on the source, from each machine's "
                            "sustained bandwidth, compute rate and launch overhead measured from its own RAJAPerf runs",
                "knn": f"the mean log relR of the {self.config.k} nearest labelled pairs of the same (source, target) "
                       "in standardised raw features"}[m]
        return ModelCard(f"""---
library_name: xamm
tags: [xamm, hpc, performance-prediction, baseline]
pipeline_tag: tabular-regression
license: bsd-3-clause
{card_datasets_and_metrics(f"xamm-baseline-{m}", t)}---

# xamm baseline: {m}

Predicts **relR = runtime on target / runtime on source** as {what}. It is the yardstick `xamm eval` holds
every model against (`baseline/{m}`); no interval.

## Training data
{t.get('dataset') or 'unnamed'}: {t.get('pairs')} pairs, {t.get('kernels')} kernels, {t.get('samples')} benchmark samples;
xamm {t.get('xamm_version')}.

## Metrics on the official splits
{metrics_table(t.get('metrics') or {})}
""")


def fit_baselines(pairs: pl.DataFrame, samples: pl.DataFrame, **training) -> dict[str, BaselinePredictor]:
    """Every baseline of :data:`METHODS`, fitted on the same data."""
    return {m: BaselinePredictor(method=m).fit(pairs, samples, **training) for m in METHODS}

