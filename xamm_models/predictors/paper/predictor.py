"""The xAMM predictor (Sections IV-E to IV-G): embedding ⊕ AMM(source) ⊕ AMM(target) -> relR.

:class:`XammPredictor` bundles the sample embedder, two downstream regressors (with and without
AMMs, trained together as the paper does, so inference works whether or not signatures exist), the
AMM signatures it was trained with and the feature schema. It saves to one folder and, through
huggingface_hub's ``ModelHubMixin``, gets ``save_pretrained`` / ``from_pretrained`` /
``push_to_hub`` with a generated model card.

relR = runtime on target / runtime on source (eq. 1): > 1 means slower on the target. With
``log_target`` (default) the regressors learn log(relR), which keeps a 2x speed-up and a 2x
slow-down symmetric; predictions are always returned as relR.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from xamm_data._version import __version__
from xamm_models.embedders import create_embedder, load_embedder
from xamm_models.errors import (
    ADD_A_TARGET,
    UnknownSourceError,
    UnknownTargetError,
    unknown_name_message,
)
from xamm_models.machines.attention import local_embedder_path, signature_from_runs
from xamm_models.machines.signatures import Signature
from xamm_models.predictors.contract import Predictor, asked_targets, conform, no_other_options
from xamm_models.predictors.paper import regressors as R
from xamm_models.predictors.paper.relperf import (
    DEFAULT_KEYS,
    drop_invalid,
    pair_relative,
    with_target,
)
from xamm_models.profile_input import (
    check_feature_columns,
    check_profiles,
    feature_columns,
    require_frame,
)

FILE = "predictor.json"


class PredictorConfig(BaseModel):
    """What a predictor is built from; saved with it."""

    model_config = ConfigDict(extra="forbid")

    feature_columns: list[str] = Field(min_length=1)
    keys: list[str] = Field(default_factory=lambda: list(DEFAULT_KEYS))
    embedder: str = "attention"
    embed_dim: int = Field(default=8, ge=1)
    regressor: str = "catboost"
    log_target: bool = True
    use_embedder: bool = Field(
        default=True, description="False feeds the raw (standardised) features downstream"
    )
    epochs: int = Field(default=200, ge=1)
    seed: int = 0


def _training_record(pairs, per_sample, have, dataset, preprocessing) -> dict:
    """What a fit recorded about its data (saved with the model and shown in its card)."""
    return {
        "dataset": dataset,
        "samples": per_sample.height,
        "pairs": pairs.height,
        "pairs_with_amm": int(have.sum()),
        "preprocessing": preprocessing or {},
        "apps": sorted(set(pairs.get_column("app"))) if "app" in pairs.columns else [],
        "date": date.today().isoformat(),
        "xamm_version": __version__,
    }


class XammPredictor(
    Predictor,
    library_name="xamm",
    tags=["xamm", "hpc", "performance-prediction"],
    repo_url="https://github.com/LLNL/generalizable_modeling",
):
    """Predicts relative runtime across machines from a profile on a reference machine."""

    kind = "xamm"
    marker = FILE
    # version 0: saved before the marker carried its format (read: the same fields)
    reads_versions = (0,)

    def __init__(self, config: PredictorConfig | dict | None = None, **kwargs):
        cfg = (
            config
            if isinstance(config, PredictorConfig)
            else PredictorConfig(**{**(config or {}), **kwargs})
        )
        self.config = cfg
        self.embedder = None
        self.models: dict[str, object] = {}
        self.signatures: dict[str, Signature] = {}
        self.sources: list[str] = []
        self.targets: list[str] = []
        self.training: dict = {}
        self.metrics: dict = {}
        self.amm_embedder = None  # builds AMMs of unseen targets from their benchmark data

    # -- training ---------------------------------------------------------------------------
    def _embed(self, X) -> np.ndarray:
        if self.config.use_embedder:
            return self.embedder.transform(X)
        mean, std = self.embedder.mean.cpu().numpy(), self.embedder.std.cpu().numpy()
        arr = X.select(self.config.feature_columns).to_numpy().astype(float)
        return np.nan_to_num((arr - mean) / std)

    def _amm(self, target: str) -> np.ndarray | None:
        s = self.signatures.get(target)
        return None if s is None else np.asarray(s.vector, dtype=np.float64)

    def fit(
        self,
        samples: pl.DataFrame,
        signatures: dict[str, Signature] | list[Signature] | None = None,
        *,
        dataset: str | None = None,
        amm_embedder: str | Path | None = None,
        embedders_dir: str | Path | None = None,
    ) -> XammPredictor:
        """Train on application samples (one row per app, params, configuration and target).

        Args:
            samples: ``machine``, ``device`` (or ``target``), ``runtime_s``, the key columns and the
                feature columns.
            signatures: targets' AMM signatures (a mapping by target, or a list).
            dataset: the data set's name, recorded in the card.
            amm_embedder: the embedder that builds signatures of unseen targets (default: the one
                the signatures were built with, looked up in ``embedders_dir``).
            embedders_dir: a signature registry's ``embedders_dir``.

        Returns:
            The fitted predictor.
        """
        self._check_schema(samples)
        clean, report = drop_invalid(with_target(samples), self.config.feature_columns)
        pairs = pair_relative(clean, tuple(self.config.keys), carry=self.config.feature_columns)
        return self.fit_pairs(
            pairs,
            signatures,
            dataset=dataset,
            amm_embedder=amm_embedder,
            embedders_dir=embedders_dir,
            preprocessing=report,
        )

    def _check_pairs(self, pairs: pl.DataFrame) -> None:
        """Refuse pairs without the feature columns, or none at all."""
        self._check_schema(pairs)
        if pairs.is_empty():
            raise ValueError(
                "no pairs of matching samples on different targets; relR needs "
                "the same app, params and "
                f"configuration ({', '.join(self.config.keys)}) on at least two targets"
            )

    def _fit_heads(self, pairs, emb: np.ndarray, y: np.ndarray, sigs: dict, heads) -> np.ndarray:
        """Fit the embedding-only regressor and the one with AMMs (on the pairs whose ends both
        have signatures); return which pairs had them."""
        cfg = self.config
        src, tgt = pairs.get_column("source").to_numpy(), pairs.get_column("target").to_numpy()
        if "noamm" in heads:
            X0 = self._with_ids(emb, src, tgt)
            self.models["noamm"] = R.create_regressor(cfg.regressor, cfg.seed).fit(X0, y)
        have = (
            pairs.select(pl.col("source").is_in(list(sigs)) & pl.col("target").is_in(list(sigs)))
            .to_series()
            .to_numpy()
        )
        if have.any() and "amm" in heads:
            X = self._with_amm(emb[have], src[have], tgt[have], sigs)
            self.models["amm"] = R.create_regressor(cfg.regressor, cfg.seed).fit(X, y[have])
        return have

    def fit_pairs(
        self,
        pairs: pl.DataFrame,
        signatures: dict[str, Signature] | list[Signature] | None = None,
        *,
        dataset: str | None = None,
        amm_embedder: str | Path | None = None,
        embedders_dir: str | Path | None = None,
        preprocessing: dict | None = None,
        embedder=None,
        heads: tuple[str, ...] = ("noamm", "amm"),
    ) -> XammPredictor:
        """Train on labelled pairs (a data set's official labels, such as ``xplat-rajaperf``'s).

        Args:
            pairs: the key columns, ``source``, ``target``, ``relR`` and the source sample's feature
                columns.
            signatures: targets' AMM signatures (a mapping by target, or a list).
            dataset: the data set's name, recorded in the card.
            amm_embedder: the embedder that builds signatures of unseen targets.
            embedders_dir: a signature registry's ``embedders_dir``, where that embedder is
                looked up.
            preprocessing: what was done to the data, recorded in the card.
            embedder: a sample embedder already fitted on these pairs (not trained again; an
                evaluation shares one across regressors).
            heads: the regressors to fit: the embedding-only one (``noamm``) and/or the one with
                AMMs (``amm``).

        Returns:
            The fitted predictor.
        """
        cfg = self.config
        sigs = (
            {s.target: s for s in signatures}
            if isinstance(signatures, list)
            else dict(signatures or {})
        )
        self._check_pairs(pairs)
        targets = sorted(set(pairs.get_column("target")) | set(pairs.get_column("source")))
        keys = [k for k in cfg.keys if k in pairs.columns]
        per_sample = self._per_sample(pairs, keys, targets)
        self.embedder = embedder if embedder is not None else self.fit_embedder(pairs)
        emb = self._embed(pairs)
        y = (
            np.log(pairs.get_column("relR").to_numpy())
            if cfg.log_target
            else pairs.get_column("relR").to_numpy()
        )
        self.sources = sorted(set(pairs.get_column("source")))
        self.targets = targets
        have = self._fit_heads(pairs, emb, y, sigs, heads)
        self.signatures = {t: s for t, s in sigs.items() if t in targets}
        if amm_embedder is None and self.signatures and embedders_dir is not None:
            amm_embedder = local_embedder_path(next(iter(self.signatures.values())), embedders_dir)
        self.amm_embedder = load_embedder(str(amm_embedder)) if amm_embedder else None
        self.training = _training_record(pairs, per_sample, have, dataset, preprocessing)
        return self

    def fit_embedder(self, pairs: pl.DataFrame):
        """A sample embedder of this config trained on labelled pairs: each source sample's
        features -> its log relR to every target.

        Args:
            pairs: labelled pairs with the feature columns.

        Returns:
            The fitted embedder.
        """
        cfg = self.config
        targets = sorted(set(pairs.get_column("target")) | set(pairs.get_column("source")))
        per_sample = self._per_sample(pairs, [k for k in cfg.keys if k in pairs.columns], targets)
        emb = create_embedder(
            cfg.embedder,
            n_features=len(cfg.feature_columns),
            feature_names=cfg.feature_columns,
            embed_dim=cfg.embed_dim,
            seed=cfg.seed,
        )
        Y = per_sample.select(targets).to_numpy().astype(float)
        # with use_embedder=False only the normalisation statistics are used: no need to train
        emb.fit(per_sample, Y, epochs=cfg.epochs if cfg.use_embedder else 1)
        return emb

    def _per_sample(self, pairs: pl.DataFrame, keys: list[str], targets: list[str]) -> pl.DataFrame:
        """The supervised embedder's data: each source sample -> its log relR to every training
        target (NaN where unpaired), with its features."""
        wide = pairs.with_columns(pl.col("relR").log().alias("y")).pivot(
            on="target", index=[*keys, "source"], values="y", aggregate_function="mean"
        )
        for t in targets:
            if t not in wide.columns:
                wide = wide.with_columns(pl.lit(None, dtype=pl.Float64).alias(t))
        feats = pairs.group_by([*keys, "source"], maintain_order=True).agg(
            [pl.col(c).first() for c in self.config.feature_columns]
        )
        return feats.join(wide, on=[*keys, "source"], how="inner", nulls_equal=True)

    def _with_ids(self, emb, sources, targets) -> np.ndarray:
        """Without AMMs the model still needs to know the machines: one-hot source and target ids
        over the training targets (an unseen target is all zeros, and its prediction is a guess)."""
        src = (np.asarray(sources)[:, None] == np.asarray(self.targets)[None, :]).astype(float)
        tgt = (np.asarray(targets)[:, None] == np.asarray(self.targets)[None, :]).astype(float)
        return np.hstack([emb, src, tgt])

    def _with_amm(self, emb, sources, targets, sigs) -> np.ndarray:
        a_s = np.stack([np.asarray(sigs[s].vector) for s in sources])
        a_t = np.stack([np.asarray(sigs[t].vector) for t in targets])
        return np.hstack([emb, a_s, a_t])

    # -- inference ----------------------------------------------------------------------------
    def _check_schema(self, df: pl.DataFrame) -> None:
        check_feature_columns(df, self.config.feature_columns, "this model")

    def signatures_from_benchmarks(self, runs: pl.DataFrame) -> dict[str, Signature]:
        """AMMs of the targets in ``runs``, built like the training signatures.

        Args:
            runs: ``benchmark_runs`` rows.

        Returns:
            Target -> signature.
        """
        if self.amm_embedder is None or not self.signatures:
            raise ValueError(
                "this predictor has no AMM embedder, so it cannot build AMMs from benchmark data"
            )

        ref = next(iter(self.signatures.values()))
        return signature_from_runs(
            runs,
            self.amm_embedder,
            aggregation=ref.aggregation,
            normalise=ref.normalise,
            embedder_id=ref.embedder_id,
            embedder_revision=ref.embedder_revision,
        )

    def _answer(self, emb: np.ndarray, source: str, target: str, sigs: dict, use_amm: bool):
        """relR of every embedded profile on one target, and which model answered."""
        n = len(emb)
        y, amm = self.log_predict(emb, [source] * n, [target] * n, sigs, use_amm)
        return pl.DataFrame(
            {
                "row": np.arange(n),
                "source": [source] * n,
                "target": [target] * n,
                "relR": np.exp(y) if self.config.log_target else y,
                "regime": np.where(amm, "amm", "embedding"),
            }
        )

    def _check_input(self, profiles: pl.DataFrame, source: str) -> None:
        """Refuse an untrained model, an unknown source and profiles without the features."""
        if not self.models:
            raise RuntimeError("the predictor is not trained: fit() or from_pretrained() first")
        if source not in self.sources:
            raise UnknownSourceError(
                f"source {source!r} was not seen in training: "
                + unknown_name_message("source", source, self.sources)
            )
        require_frame(profiles, "this xAMM predictor")
        self._check_schema(profiles)
        check_profiles(
            profiles, feature_columns(self.config.feature_columns), what="this xAMM predictor"
        )

    def predict(
        self,
        profiles: pl.DataFrame,
        source: str,
        targets: list[str] | None = None,
        *,
        target_signatures: dict[str, Signature] | None = None,
        target_benchmarks: pl.DataFrame | None = None,
        use_amm: bool = True,
        **kw: Any,
    ) -> pl.DataFrame:
        """relR of each profile (measured on ``source``) on each target.

        A target's AMM comes from ``target_signatures`` (e.g. built on the fly from its benchmark
        data), else from the signatures the model was trained with; without AMMs for both ends, the
        embedding-only model answers (``regime`` says which: ``amm`` or ``embedding``).

        Args:
            profiles: one row per profile, with the model's feature columns.
            source: the machine (``machine:device``) the profiles were measured on.
            targets: the machines to answer for (None: every training target but ``source``).
            target_signatures: AMM signatures of targets, by name.
            target_benchmarks: ``benchmark_runs`` rows of targets to build AMMs from.
            use_amm: False answers with the embedding-only model.
            **kw: no other option: one given is refused (``TypeError``).

        Returns:
            One row per (profile, target) with the contract's columns
            (:data:`~xamm_models.predictors.contract.PREDICTION_COLUMNS`); no interval.
        """
        no_other_options(self, kw)
        targets = asked_targets(targets, [t for t in self.targets if t != source])
        self._check_input(profiles, source)
        built = (
            self.signatures_from_benchmarks(target_benchmarks)
            if target_benchmarks is not None
            else {}
        )
        sigs = {**self.signatures, **built, **(target_signatures or {})}
        known = sorted(set(self.targets) | set(sigs))
        for t in targets:
            if t not in known:
                raise UnknownTargetError(
                    f"{unknown_name_message('target', t, known)}; {ADD_A_TARGET}"
                )
        emb = self._embed(profiles)
        out = [self._answer(emb, source, t, sigs, use_amm) for t in targets]
        # what the user calls each profile
        names = [c for c in ("app", "app_params") if c in profiles.columns]
        named = (
            profiles.select(names).with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))
        )
        return conform(pl.concat(out).join(named, on="row") if names else pl.concat(out))

    def predict_pairs(
        self,
        pairs: pl.DataFrame,
        *,
        use_amm: bool = True,
        target_signatures: dict[str, Signature] | None = None,
    ) -> np.ndarray:
        """relR for each pair: the AMM model where both ends have signatures and ``use_amm``,
        else the embedding-only model.

        Args:
            pairs: ``source``, ``target`` and the source sample's features.
            use_amm: False answers every pair with the embedding-only model.
            target_signatures: AMM signatures of targets beyond the training ones.

        Returns:
            relR, one value per pair.
        """
        if not self.models:
            raise RuntimeError("the predictor is not trained: fit() or from_pretrained() first")
        self._check_schema(pairs)
        unknown = sorted(set(pairs.get_column("source")) - set(self.sources))
        if unknown:
            raise UnknownSourceError(
                f"sources {unknown} were not seen in training; known: {', '.join(self.sources)}"
            )
        src, tgt = pairs.get_column("source").to_numpy(), pairs.get_column("target").to_numpy()
        y, _ = self.log_predict(
            self._embed(pairs), src, tgt, {**self.signatures, **(target_signatures or {})}, use_amm
        )
        return np.exp(y) if self.config.log_target else y

    def log_predict(
        self, emb: np.ndarray, src, tgt, sigs: dict, use_amm: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """The regressors' output for sample embeddings and their ends.

        Args:
            emb: sample embeddings, one row per pair.
            src: each pair's source.
            tgt: each pair's target.
            sigs: AMM signatures by target.
            use_amm: False answers every pair with the embedding-only model.

        Returns:
            The output (log relR with ``log_target``) and which rows used the AMM model (both
            ends in ``sigs``, and ``use_amm``).
        """
        src, tgt = np.asarray(src), np.asarray(tgt)
        amm = np.array(
            [
                use_amm and "amm" in self.models and a in sigs and b in sigs
                for a, b in zip(src, tgt, strict=True)
            ],
            bool,
        )
        y = np.empty(len(src))
        if amm.any():
            y[amm] = R.predict(
                self.models["amm"], self._with_amm(emb[amm], src[amm], tgt[amm], sigs)
            )
        if (~amm).any():
            if "noamm" not in self.models:
                raise ValueError(
                    "this predictor was fitted with AMMs only; every pair needs "
                    "signatures at both ends"
                )
            y[~amm] = R.predict(
                self.models["noamm"], self._with_ids(emb[~amm], src[~amm], tgt[~amm])
            )
        return y, amm

    # -- persistence --------------------------------------------------------------------------
    def _save_state(self, folder: Path) -> dict:
        self.embedder.save_pretrained(folder / "embedder")
        if self.amm_embedder is not None:
            self.amm_embedder.save_pretrained(folder / "amm_embedder")
        files = {
            name: R.save_regressor(m, self.config.regressor, folder / f"regressor_{name}").name
            for name, m in self.models.items()
        }
        return {
            "config": self.config.model_dump(),
            "files": files,
            "sources": self.sources,
            "targets": self.targets,
            "signatures": {t: s.model_dump() for t, s in sorted(self.signatures.items())},
            "training": self.training,
            "metrics": self.metrics,
        }

    @classmethod
    def _load_state(cls, folder: Path, info: dict, **_: object) -> XammPredictor:
        self = cls(PredictorConfig(**info["config"]))
        self.embedder = load_embedder(str(folder / "embedder"))
        if (folder / "amm_embedder").is_dir():
            self.amm_embedder = load_embedder(str(folder / "amm_embedder"))
        for name, fname in info["files"].items():
            self.models[name] = R.load_regressor(
                self.config.regressor, folder / fname.rsplit(".", 1)[0]
            )
        self.signatures = {t: Signature(**s) for t, s in info["signatures"].items()}
        self.sources, self.targets = info["sources"], info["targets"]
        self.training, self.metrics = info["training"], info.get("metrics", {})
        return self

    def _card_body(self) -> tuple[str, str]:
        """The card: intended use, training data, AMM versions, metrics, limitations."""
        c, t = self.config, self.training
        sig_lines = (
            "\n".join(
                f"| `{s.ref}` | {s.aggregation} | "
                f"{s.embedder_id}@{s.embedder_revision} | {s.data_sha256[:12]} |"
                for s in sorted(self.signatures.values(), key=lambda s: s.ref)
            )
            or "| (none) | | | |"
        )
        metrics = (
            "\n".join(f"| {k} | {v} |" for k, v in sorted(self.metrics.items()))
            or "| (not evaluated) | |"
        )
        text = f"""\
Predicts **relR = runtime on target / runtime on source** (xAMM paper eq. 1; > 1 means slower on \
the target)
of an application profiled on a reference (source) machine, for other machines.

## Intended use
Scheduling and procurement questions: which of the training targets runs this application fastest, \
and by
how much. Sources must be among: {", ".join(f"`{s}`" for s in self.sources)}. Targets seen in \
training:
{", ".join(f"`{s}`" for s in self.targets)}; other targets need an AMM signature and get no \
accuracy guarantee.

## Model
Embedder `{c.embedder}` (dim \
{c.embed_dim}{"" if c.use_embedder else ", bypassed: raw standardised features"}), downstream
`{c.regressor}` on {"log relR" if c.log_target else "relR"}; one regressor with AMMs (embedding ⊕ \
AMM(source) ⊕ AMM(target))
and one without (embedding ⊕ one-hot source and target ids over the training targets). Features: \
{", ".join(f"`{f}`" for f in c.feature_columns)}. Pair keys: {", ".join(c.keys)}. Seed {c.seed}.

## Training data
Dataset: {t.get("dataset") or "unnamed"}; {t.get("samples")} samples, {t.get("pairs")} pairs \
({t.get("pairs_with_amm")} with AMMs);
preprocessing: {t.get("preprocessing")}; xamm {t.get("xamm_version")}, {t.get("date")}.

## AMM signatures used
| signature | aggregation | embedder | data sha256 |
|---|---|---|---|
{sig_lines}

## Evaluation
| metric | value |
|---|---|
{metrics}

## Limitations
Trained on few machines and applications; relR outside the training range is extrapolated by trees \
(i.e. clipped).
A source machine absent from training is refused. Input columns must match the feature schema \
exactly.
"""
        return "xAMM relative-performance predictor", text
