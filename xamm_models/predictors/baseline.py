"""The benchmark's simple baselines as zoo artefacts, so anyone can hold a new answer against the
yardstick the evaluation uses.

:class:`BaselinePredictor` keeps what a baseline of :mod:`xamm_models.benchmark.baselines` needs
from its training data and answers exactly as that function does in ``xamm eval`` (tested against
it):

* ``pair-median``: the labelled pairs' median relR per (source, target), then per scenario, then
  overall;
* ``roofline``: each machine's sustained bandwidth, compute rate and launch overhead from its own
  benchmark runs (:func:`~xamm_models.benchmark.baselines.machine_figures`, stored), no labels; the
  pair median where the roofline has no answer;
* ``knn``: the mean log relR of the ``k`` nearest labelled pairs of the same (source, target) in the
  standardised raw features (the pairs are stored).

Baselines carry no interval (``relR_lo``/``relR_hi`` are null) and ``rank_targets`` gives no
``p_fastest``. A machine known only from its benchmark runs gets what the eval gives a held-out
machine; a target or source with neither labelled pairs nor benchmark runs is refused, as by the
default predictor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, field_validator

from xamm_data._version import __version__
from xamm_data.registry import UnknownNameError
from xamm_data.store.parquet_depth import read_parquet
from xamm_models.benchmark import baselines as B
from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.errors import (
    ADD_A_TARGET,
    UnknownSourceError,
    UnknownTargetError,
    unknown_name_message,
)
from xamm_models.features import FEATURES
from xamm_models.predictors.contract import Predictor, asked_targets, conform, no_other_options
from xamm_models.predictors.default.model import profile_pairs

FILE = "baseline.json"
METHODS = ("pair-median", "roofline", "knn")
_PAIR_COLUMNS = ("source", "target", "relR")


class BaselineConfig(BaseModel):
    """Which baseline (saved as ``baseline.json``)."""

    model_config = ConfigDict(extra="forbid")
    method: str = "pair-median"  # a registered baseline (BASELINES)
    k: int = 5  # knn's neighbours

    @field_validator("method")
    @classmethod
    def _registered(cls, v: str) -> str:
        if v not in B.BASELINES:  # the known ones and the closest, as a validation error
            raise ValueError(str(UnknownNameError("baseline", v, B.BASELINES.list())))
        return v


class BaselinePredictor(
    Predictor,
    library_name="xamm",
    tags=["xamm", "hpc", "performance-prediction", "baseline"],
    repo_url=None,
):
    """One of the benchmark's baselines, fitted and saved (see the module docstring)."""

    kind = "baseline"
    marker = FILE
    store_profiles = "kernels"
    # version 0: saved before the marker carried its format (read: the same fields)
    reads_versions = (0,)
    card_tags = ("baseline",)

    def __init__(self, config: BaselineConfig | dict | None = None, **kwargs):
        self.config = (
            BaselineConfig(**config)
            if isinstance(config, dict)
            else (config or BaselineConfig(**kwargs))
        )
        self.pairs: pl.DataFrame | None = None
        self.figures: pl.DataFrame | None = None
        self.training: dict = {}

    def fit(
        self,
        pairs: pl.DataFrame,
        samples: pl.DataFrame,
        *,
        dataset: str | None = None,
        data_version: int | None = None,
    ) -> BaselinePredictor:
        """Keep the labelled pairs (the columns the method reads) and the machines' figures.

        Args:
            pairs: labelled pairs (``xplat`` pair frames: ``source``, ``target``, ``relR`` and the
                source sample's work and features).
            samples: the machines' benchmark samples (their figures: bandwidth, flop rate,
                overhead).
            dataset: the data set's name, recorded in the card.
            data_version: the store table version the data were read at.

        Returns:
            The fitted baseline.
        """
        info = B.BASELINES.get(self.config.method).registry_info
        cols = [*_PAIR_COLUMNS, *info["trains_on"]]
        self.pairs = pairs.select(cols)
        self.figures = B.machine_figures(samples).sort("target")
        self.training = {
            "dataset": dataset,
            "data_version": data_version,
            "pairs": pairs.height,
            "kernels": pairs.get_column("app").n_unique(),
            "samples": samples.height,
            "xamm_version": __version__,
        }
        return self

    def predict_pairs(
        self, pairs: pl.DataFrame, *, target_benchmarks: pl.DataFrame | None = None
    ) -> pl.DataFrame:
        """relR of each pair as the baseline's function gives it in ``xamm eval``.

        Args:
            pairs: pair rows with the columns the method needs (its ``needs``).
            target_benchmarks: ``benchmark_runs`` rows of new machines; their figures are added, as
                a held-out machine's.

        Returns:
            ``relR`` and null ``relR_lo``/``relR_hi``, one row per pair.
        """
        if self.pairs is None:
            raise RuntimeError("the baseline is not fitted: fit() or from_pretrained() first")
        figures = self.figures
        if target_benchmarks is not None:
            new = B.machine_figures(samples_from_runs(target_benchmarks))
            figures = pl.concat(
                [figures.filter(~pl.col("target").is_in(new.get_column("target").implode())), new]
            ).sort("target")
        known = {
            kind: sorted(set(self.pairs.get_column(kind)) | set(figures.get_column("target")))
            for kind in ("source", "target")
        }
        for kind, err in (("source", UnknownSourceError), ("target", UnknownTargetError)):
            for t in sorted(set(pairs.get_column(kind)) - set(known[kind])):
                raise err(f"{unknown_name_message(kind, t, known[kind])}; {ADD_A_TARGET}")
        m = self.config.method
        fn = B.BASELINES.get(m)
        need = fn.registry_info["needs"]
        missing = [c for c in (*need, "source", "target") if c not in pairs.columns]
        if missing:
            raise ValueError(
                f"input lacks the columns {missing}; "
                f"baseline {m} needs {['source', 'target', *need]}"
            )
        y = fn(self.pairs, pairs, figures=figures, features=list(FEATURES), k=self.config.k)
        return pl.DataFrame(
            {
                "relR": y,
                "relR_lo": pl.Series([None] * len(y), dtype=pl.Float64),
                "relR_hi": pl.Series([None] * len(y), dtype=pl.Float64),
            }
        )

    def predict(
        self,
        profiles: pl.DataFrame,
        source: str,
        targets: list[str] | None = None,
        *,
        target_benchmarks: pl.DataFrame | None = None,
        **kw: Any,
    ) -> pl.DataFrame:
        """relR of each profile on each target, as the baseline's function gives it.

        Args:
            profiles: one row per profile measured on ``source``.
            source: the machine the profiles were measured on.
            targets: the machines to answer for (None: every known target but ``source``).
            target_benchmarks: ``benchmark_runs`` rows of new machines (their figures).
            **kw: no other option: one given is refused (``TypeError``).

        Returns:
            One row per (profile, target) with the contract's columns; no interval; ``regime``
            is the method.
        """
        no_other_options(self, kw)
        known = sorted(set(self.figures.get_column("target"))) if self.figures is not None else []
        targets = asked_targets(targets, [t for t in known if t != source])
        pairs, keep = profile_pairs(profiles, source, targets)
        pred = self.predict_pairs(pairs, target_benchmarks=target_benchmarks)
        # side by side, one row each (hstack refuses other heights on every polars xamm supports)
        answer = pairs.select("row", *keep, "source", "target").hstack(pred)
        return conform(answer, regime=self.config.method)

    def _save_state(self, folder: Path) -> dict:
        self.pairs.write_parquet(folder / "pairs.parquet", statistics=False)
        self.figures.write_parquet(folder / "figures.parquet", statistics=False)
        return {"config": self.config.model_dump(), "training": self.training}

    @classmethod
    def _load_state(cls, folder: Path, info: dict, **_: object) -> BaselinePredictor:
        self = cls(BaselineConfig(**info["config"]))
        self.pairs = read_parquet(folder / "pairs.parquet")
        self.figures = read_parquet(folder / "figures.parquet")
        self.training = info["training"]
        return self

    def _card_body(self) -> tuple[str, str]:
        """The model card: which baseline, on what data, its metrics on the official splits."""
        t, m = self.training, self.config.method
        what = {
            "pair-median": "the labelled pairs' median relR per (source, target), then per "
            "scenario, then overall",
            "roofline": "modelled time on the target over modelled time on the source, "
            "from each machine's "
            "sustained bandwidth, compute rate and launch overhead measured "
            "from its own RAJAPerf runs",
            "knn": f"the mean log relR of the {self.config.k} nearest labelled pairs "
            "of the same (source, target) "
            "in standardised raw features",
        }[m]
        body = f"""\
Predicts **relR = runtime on target / runtime on source** as {what}. It is the yardstick `xamm \
eval` holds
every model against (`baseline/{m}`); no interval.

## Training data
{t.get("dataset") or "unnamed"}: {t.get("pairs")} pairs, {t.get("kernels")} kernels, \
{t.get("samples")} benchmark samples;
xamm {t.get("xamm_version")}.

"""
        return f"xamm baseline: {m}", body


def fit_baselines(
    pairs: pl.DataFrame, samples: pl.DataFrame, **training
) -> dict[str, BaselinePredictor]:
    """Every baseline of :data:`METHODS`, fitted on the same data.

    Args:
        pairs: labelled pairs (``xplat`` pair frames: ``source``, ``target``, ``relR`` and the
            source sample's work and features).
        samples: the machines' benchmark samples.
        **training: ``dataset`` and ``data_version``, recorded in each card.

    Returns:
        Method -> fitted baseline.
    """
    return {m: BaselinePredictor(method=m).fit(pairs, samples, **training) for m in METHODS}
