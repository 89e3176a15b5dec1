"""Few-shot adaptation of the paper's predictor: :func:`adapt` (a trained :class:`XammPredictor`) ->
:class:`AdaptedPredictor`.

A trained :class:`~xamm_models.predictors.paper.predictor.XammPredictor` reads a source profile's
features (its ``feature_columns``) through its sample embedder into a latent space, and its
regressors turn the embedding and the machines into log relR. A new *platform* whose profiles carry
other columns (another tool's counters, other names, number, order and units) cannot be fed to it.
``adapt`` learns, from a few labelled profiles of that platform (each with its measured relR to some
targets), and optionally its unlabelled profiles:

* **an input alignment**: a linear map ``a = P x + b`` of the platform's standardised columns into
  the embedder's standardised input space, read by the *frozen* embedder and its supervised head
  (which predicts the log relR to every training target). ``P`` starts where names resolve to the
  predictor's columns (exactly or through the canonical counter table), else at zero, so no name
  matching is required; it is trained on the labelled profiles' relR vectors (masked where a pair is
  missing), pulled towards its start and, on every profile given, towards the source's moments (mean
  0, unit variance). Method and code:
  :func:`xamm_models.predictors.adapted.alignment.fit_alignment`;
* **a stacked residual**: each target's median log relR over the labels (unpenalised, so the model
  starts where the per-target median baseline stands), then a ridge regression on the aligned
  embedding, the frozen regressors' prediction (stacked as a feature), the target and the platform's
  own columns, fitted to what the offsets leave, its penalty chosen by cross-validation over whole
  kernels (:func:`xamm_models.predictors.adapted.alignment.choose_alpha`).

The base predictor's weights never change (``adapt`` freezes them; they are restored after), unless
asked (``fine_tune=True``: a copy of its sample embedder trains with the alignment, and the adapted
model carries that copy). The adapted model saves to one folder: the base predictor as saved
(``base/``), the alignment and residual in ``adapter.safetensors``, its config and training summary
in ``adapted.json``, and a model card; it loads by ``from_pretrained`` or
:func:`xamm_models.predictors.kinds.load_model` (zoo kind ``adapted``) and publishes by
``push_to_hub``.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import polars as pl
import torch
from pydantic import BaseModel, ConfigDict, Field
from safetensors.numpy import load_file, save_file

from xamm_data._version import __version__
from xamm_models.embedders import masked_mse
from xamm_models.errors import (
    FeatureSchemaError,
    UnknownSourceError,
    UnknownTargetError,
    unknown_name_message,
)
from xamm_models.predictors.adapted.alignment import (
    choose_alpha,
    fit_alignment,
    name_matches,
    ridge_fit,
    ridge_predict,
    standardise,
)
from xamm_models.predictors.contract import Predictor, asked_targets, conform
from xamm_models.predictors.paper.predictor import XammPredictor
from xamm_models.profile_input import check_feature_columns

FILE = "adapted.json"
WEIGHTS = "adapter.safetensors"


class AdaptConfig(BaseModel):
    """How a predictor was adapted to a platform; saved with the adapted model."""

    model_config = ConfigDict(extra="forbid")

    platform: str = Field(
        min_length=1, description="the new platform's name: the source of its profiles"
    )
    features: list[str] = Field(min_length=1, description="the platform's feature columns")
    keys: list[str] = Field(
        default_factory=list, description="the columns naming a profile (app, parameters)"
    )
    as_source: str | None = Field(
        default=None,
        description="a training source the frozen regressors treat the "
        "platform as (its id / AMM); none: an unseen source",
    )
    use_names: bool = Field(default=True, description="seed the alignment where names resolve")
    fine_tune: bool = Field(
        default=False,
        description="also train a copy of the base's sample embedder (the base "
        "predictor given is never changed)",
    )
    epochs: int = Field(default=300, ge=1)
    pull: float = Field(default=1e-2, ge=0)
    match: float = Field(default=1.0, ge=0)
    ridge: float | None = Field(
        default=None,
        gt=0,
        description="the residual's ridge penalty; none: chosen by "
        "cross-validation over whole kernels",
    )
    seed: int = 0


class AdaptedPredictor(
    Predictor,
    library_name="xamm",
    tags=["xamm", "hpc", "performance-prediction", "few-shot"],
    repo_url="https://github.com/LLNL/generalizable_modeling",
):
    """A frozen :class:`XammPredictor` read through a learned input alignment, plus a stacked
    residual (module doc)."""

    kind = "adapted"
    marker = FILE
    # version 0: saved before the marker carried its format (read: the same fields)
    reads_versions = (0,)
    card_tags = ("few-shot",)

    def __init__(
        self, config: AdaptConfig | dict | None = None, base: XammPredictor | None = None, **kwargs
    ):
        self.config = (
            config
            if isinstance(config, AdaptConfig)
            else AdaptConfig(**{**(config or {}), **kwargs})
        )
        self.base = base
        self.weights: dict[str, np.ndarray] = {}
        self.training: dict = {}
        self.metrics: dict = {}

    @property
    def targets(self) -> list[str]:
        """The targets the adapted model answers for: the base predictor's (training targets and
        signatures)."""
        return sorted(set(self.base.targets) | set(self.base.signatures))

    # -- features --------------------------------------------------------------------------
    def _x(self, frame: pl.DataFrame) -> np.ndarray:
        """The platform's columns of ``frame``, raw; a missing or non-numeric column names the
        expected schema."""
        check_feature_columns(
            frame, self.config.features, f"this model adapted to {self.config.platform}"
        )
        return frame.select(pl.col(self.config.features).cast(pl.Float64)).to_numpy()

    def _std(self, x: np.ndarray) -> torch.Tensor:
        w = self.weights
        return torch.tensor(np.nan_to_num((x - w["mu"]) / w["sd"]), dtype=torch.float32)

    def _embed(self, x: np.ndarray) -> np.ndarray:
        emb, w = self.base.embedder, self.weights
        emb.eval()
        with torch.no_grad():
            a = self._std(x) @ torch.tensor(w["P"], dtype=torch.float32).T + torch.tensor(
                w["b"], dtype=torch.float32
            )
            return emb.encode(a.to(emb.parameter_device())).cpu().numpy().astype(np.float64)

    def _design(self, x: np.ndarray, tgt: np.ndarray) -> np.ndarray:
        """The residual model's inputs: the aligned embedding, the frozen regressors' log relR, the
        target, the platform's columns."""
        emb = self._embed(x)
        src = np.array([self.config.as_source or self.config.platform] * len(x), dtype=object)
        y, _ = self.base.log_predict(
            emb, src, tgt, self.base.signatures, use_amm=self.config.as_source is not None
        )
        y = y if self.base.config.log_target else np.log(np.clip(y, 1e-12, None))
        onehot = (tgt[:, None] == np.asarray(self.base.targets)[None, :]).astype(float)
        # one scale throughout (the ridge does not re-standardise on a few labelled rows): platform
        # columns standardised
        # over every profile given, embedding and log relR as they are
        return np.column_stack(
            [emb, y, onehot, np.nan_to_num((x - self.weights["mu"]) / self.weights["sd"])]
        )

    def _offsets(self, tgt: np.ndarray) -> np.ndarray:
        """Each row's target offset (the overall one for a target that had no labels)."""
        w = self.weights
        known = dict(zip(self.base.targets, w["offset"].tolist(), strict=True))
        return (
            pl.Series(tgt, dtype=pl.String)
            .replace_strict(known, default=float(w["offset_all"][0]), return_dtype=pl.Float64)
            .to_numpy()
        )

    # -- fitting ---------------------------------------------------------------------------------
    def _check_labels(self, samples: pl.DataFrame, unlabelled: pl.DataFrame | None) -> pl.DataFrame:
        cfg = self.config
        need = [c for c in ("target", "relR") if c not in samples.columns]
        if need:
            raise FeatureSchemaError(
                f"labelled samples need the columns {need} (one row per profile and target)"
            )
        self._x(samples.head(0))  # the platform's columns, named when missing
        if unlabelled is not None:
            self._x(unlabelled.head(0))
        if "source" in samples.columns and (
            other := sorted(set(samples.get_column("source")) - {cfg.platform})
        ):
            raise UnknownSourceError(
                f"labelled samples of {other}, but the platform adapted to is {cfg.platform!r}"
            )
        bad = samples.with_row_index("record").filter(
            ~(pl.col("relR").is_finite() & (pl.col("relR") > 0))
        )
        if bad.height:
            raise ValueError(
                "relR must be finite and > 0; records "
                f"{bad.get_column('record').head(5).to_list()} are not"
            )
        for t in sorted(set(samples.get_column("target"))):
            if t not in self.targets:
                raise UnknownTargetError(unknown_name_message("target", t, self.targets))
        emb = self.base.embedder
        if (
            not self.base.config.use_embedder
            or getattr(emb, "head", None) is None
            or emb.head.out_features != len(self.base.targets)
        ):
            raise ValueError(
                "only a predictor whose sample embedder was trained on relR "
                "(use_embedder=True) can be "
                "adapted: the alignment is learned through the embedder's head"
            )
        return samples

    def _fit_alignment(self, wide: pl.DataFrame, y: pl.DataFrame, every: pl.DataFrame):
        """Fit the alignment of the platform's columns into the embedder's input (seeded by names
        where ``use_names``); returns the name seeding."""
        cfg, base = self.config, self.base
        p0 = (
            name_matches(base.embedder.feature_names, cfg.features)
            if cfg.use_names
            else np.zeros((len(base.embedder.feature_names), len(cfg.features)))
        )
        emb = base.embedder.eval()
        P, b = fit_alignment(
            lambda a: emb.head(emb.encode(a)),
            emb,
            self._std(self._x(wide)).to(emb.parameter_device()),
            torch.tensor(
                y.to_numpy().astype(np.float64), dtype=torch.float32, device=emb.parameter_device()
            ),
            p0,
            self._std(self._x(every)).to(emb.parameter_device()),
            epochs=cfg.epochs,
            seed=cfg.seed,
            pull=cfg.pull,
            match=cfg.match,
            loss=masked_mse,
            fine_tune=cfg.fine_tune,
        )
        emb.eval()
        self.weights.update(
            P=P.cpu().numpy().astype(np.float64), b=b.cpu().numpy().astype(np.float64), p0=p0
        )
        return p0

    def _fit_residual(self, samples: pl.DataFrame) -> np.ndarray:
        """The per-target offsets and the ridge residual on the aligned design; returns each
        sample's target."""
        cfg = self.config
        x, tgt = self._x(samples), samples.get_column("target").to_numpy()
        design = self._design(x, tgt)
        r = np.log(samples.get_column("relR").to_numpy())
        # each target's offset unpenalised (its median log relR; the overall median for a target
        # without labels), so the model starts where the per-target median baseline stands; the
        # ridge weighs the aligned prediction and embedding (stacked) and the platform's columns
        # against what is left, and shrinks to that baseline
        offset = np.array(
            [
                np.median(r[tgt == t]) if (tgt == t).any() else np.median(r)
                for t in self.base.targets
            ]
        )
        self.weights.update(offset=offset, offset_all=np.array([np.median(r)]))
        r = r - self._offsets(tgt)
        groups = samples.get_column(cfg.keys[0]).to_numpy() if cfg.keys else np.arange(len(r))
        alpha = cfg.ridge if cfg.ridge is not None else choose_alpha(design, r, groups, scale=False)
        rmu, rsd, rw = ridge_fit(design, r, alpha, scale=False)
        self.weights.update(ridge_mu=rmu, ridge_sd=rsd, ridge_w=rw, ridge_alpha=np.array([alpha]))
        return tgt

    def fit(
        self, samples: pl.DataFrame, *, unlabelled: pl.DataFrame | None = None
    ) -> AdaptedPredictor:
        """Learn the alignment and the residual (see the module docstring).

        Args:
            samples: labelled profiles of the platform, one row per profile and target.
            unlabelled: more profiles of the platform; their columns (never times) enter the
                standardisation and the moment matching.

        Returns:
            The fitted model.
        """
        cfg = self.config
        samples = self._check_labels(samples, unlabelled)
        # the caller's predictor stays as it was; this model carries its own tuned copy
        if cfg.fine_tune:
            self.base = copy.deepcopy(self.base)
        base = self.base
        profile = [*cfg.keys, *cfg.features]
        prof = samples.unique(subset=profile, maintain_order=True).select(profile)
        feats = prof.select(cfg.features)
        every = (
            pl.concat([feats, unlabelled.select(cfg.features)], how="vertical_relaxed")
            if unlabelled is not None
            else feats
        )
        mu, sd = standardise(self._x(every))
        self.weights = {"mu": mu, "sd": sd}
        wide = samples.with_columns(pl.col("relR").log().alias("_y")).pivot(
            on="target", index=profile, values="_y", aggregate_function="mean"
        )
        y = wide.select(
            [
                pl.col(t) if t in wide.columns else pl.lit(None, pl.Float64).alias(t)
                for t in base.targets
            ]
        )
        p0 = self._fit_alignment(wide, y, every)
        tgt = self._fit_residual(samples)
        self.training = {
            "profiles": prof.height,
            "pairs": samples.height,
            "unlabelled": every.height - prof.height,
            "targets": sorted(set(tgt)),
            "name_seeded": int(p0.sum()),
            "base": base.training.get("dataset"),
            "xamm_version": __version__,
        }
        return self

    # -- inference ---------------------------------------------------------------------------------
    def predict_pairs(self, pairs: pl.DataFrame) -> np.ndarray:
        """relR for each profile on its target.

        Args:
            pairs: ``target`` and the platform's feature columns of a profile.

        Returns:
            relR, one value per row.
        """
        tgt = pairs.get_column("target").to_numpy()
        for t in sorted(set(tgt) - set(self.targets)):
            raise UnknownTargetError(unknown_name_message("target", t, self.targets))
        design = self._design(self._x(pairs), tgt)
        w = self.weights
        log_rel = self._offsets(tgt) + ridge_predict(
            (w["ridge_mu"], w["ridge_sd"], w["ridge_w"]), design
        )
        # relR beyond e^±30 (1e13) is no measurement: never inf
        return np.exp(np.clip(log_rel, -30.0, 30.0))

    def predict(
        self,
        profiles: pl.DataFrame,
        source: str | None,
        targets: list[str] | None = None,
        **kw: object,
    ) -> pl.DataFrame:
        """relR of each profile (measured on the platform) on each target.

        Args:
            profiles: one row per profile, with the platform's columns (``features``).
            source: the platform (None: the platform the model was adapted to).
            targets: the machines to answer for (None: every target of the base predictor).
            **kw: refused if they ask for targets beyond the base predictor's.

        Returns:
            One row per (profile, target) with the contract's columns; ``regime`` is ``adapted``.
        """
        targets = asked_targets(targets, self.targets)
        if kw.get("target_benchmarks") is not None or kw.get("target_signatures"):
            raise ValueError(
                "an adapted model answers for its base predictor's targets only: "
                f"{', '.join(self.targets)}"
            )
        if source not in (None, self.config.platform):
            raise UnknownSourceError(
                f"this model was adapted to {self.config.platform!r}, not {source!r}"
            )
        n, names = profiles.height, [c for c in ("app", "app_params") if c in profiles.columns]
        rows = pl.DataFrame(
            {
                "row": np.tile(np.arange(n), len(targets)),
                "target": np.repeat(targets, n).astype(str),
            }
        )
        frame = rows.join(
            profiles.with_row_index("row").with_columns(pl.col("row").cast(pl.Int64)),
            on="row",
            how="left",
            maintain_order="left",
        )
        rel = self.predict_pairs(frame) if frame.height else np.array([])
        out = frame.select(
            "row", *names, pl.lit(self.config.platform).alias("source"), "target"
        ).with_columns(pl.Series("relR", rel, dtype=pl.Float64))
        return conform(out, regime="adapted")

    # -- persistence ------------------------------------------------------------------------------
    def _save_state(self, folder: Path) -> dict:
        self.base.save_pretrained(folder / "base")
        save_file(
            {k: np.ascontiguousarray(v, dtype=np.float64) for k, v in sorted(self.weights.items())},
            str(folder / WEIGHTS),
        )
        return {
            "config": self.config.model_dump(),
            "training": self.training,
            "metrics": self.metrics,
        }

    @classmethod
    def _load_state(cls, folder: Path, info: dict, **_: object) -> AdaptedPredictor:
        base = XammPredictor.from_pretrained(str(folder / "base"))
        self = cls(AdaptConfig(**info["config"]), base=base)
        self.weights = dict(load_file(str(folder / WEIGHTS)))
        self.training, self.metrics = info["training"], info.get("metrics", {})
        return self

    @property
    def card_training(self) -> dict:
        """The base predictor's data set names the card's ``datasets``."""
        return {"dataset": self.training.get("base")}

    def _card_body(self) -> tuple[str, str]:
        """The model card: what was adapted to what, from how many labels, with which measured
        figures."""
        c, t = self.config, self.training
        metrics = (
            "\n".join(f"| {k} | {v} |" for k, v in sorted(self.metrics.items()))
            or "| (not evaluated) | |"
        )
        body = f"""\
Predicts **relR = runtime on target / runtime on `{c.platform}`** for profiles of `{c.platform}` \
described by its own
columns ({", ".join(f"`{f}`" for f in c.features)}), through a frozen xAMM predictor trained on
{t.get("base") or "unnamed data"} (in `base/`), for the targets \
{", ".join(f"`{x}`" for x in self.targets)}.

## Method
A linear alignment of the platform's standardised columns into the frozen sample embedder's input \
space
({t.get("name_seeded", 0)} of its entries seeded by names that resolve through the canonical \
counter table), trained
on {t.get("profiles")} labelled profiles ({t.get("pairs")} pairs to \
{", ".join(t.get("targets", []))}) and
{t.get("unlabelled", 0)} unlabelled ones, then a ridge residual (alpha \
{float(self.weights.get("ridge_alpha", [c.ridge or 0])[0]):g}) on the aligned embedding, the frozen
prediction, the target and the platform's columns. The source is treated as
{f"`{c.as_source}`" if c.as_source else "a machine the regressors never saw"}. Seed {c.seed}; xamm \
{t.get("xamm_version")}.

## Evaluation
| metric | value |
|---|---|
{metrics}

## Limitations
Few labels: a target without labelled pairs gets the median over every labelled pair plus the \
residual learned on
other targets. On xamm's public stand-in (this platform) adaptation was ahead of ridge trained \
from scratch on the
same labels but did not beat the per-target median of the labels at any fraction (see the few-shot \
adaptation study
in the documentation). Columns must match `features` exactly.
"""
        return f"xamm predictor adapted to `{c.platform}` (few-shot adaptation)", body


def adapt(
    base: XammPredictor,
    samples: pl.DataFrame,
    platform: str,
    *,
    features: list[str] | None = None,
    unlabelled: pl.DataFrame | None = None,
    as_source: str | None = None,
    **kw,
) -> AdaptedPredictor:
    """Few-shot adaptation: ``base``, frozen, for profiles of a new ``platform`` described by
    *other* feature columns, learned from a few labelled ``samples``.

    Args:
        base: the trained paper predictor to adapt (left unchanged).
        samples: one row per profile and target: ``base``'s key columns, ``target``, ``relR`` and
            the platform's ``features``.
        platform: the new platform's name.
        features: the platform's feature columns (default: every other numeric column of
            ``samples``).
        unlabelled: profiles of the platform without labels, used to align the two feature spaces.
        as_source: the training source the platform stands in for (default: chosen by
            :class:`AdaptConfig`).
        **kw: further :class:`AdaptConfig` fields (``fine_tune``, ``epochs``, ``use_names``,
            ``seed``, ...).

    Returns:
        The fitted :class:`AdaptedPredictor`.

    Raises:
        ValueError: ``base`` is a model of another kind (only the paper predictor adapts).
    """
    if not isinstance(base, XammPredictor):
        raise ValueError(  # noqa: TRY004  (a model of another kind given: the caller's input)
            f"{base!r} is a {type(base).__name__}; only an xamm predictor (zoo kind 'xamm') adapts"
        )
    cols = (
        features
        if features is not None
        else [
            c
            for c in samples.columns
            if c not in {*base.config.keys, "source", "target", "relR", "sample"}
            and samples.schema[c].is_numeric()
        ]
    )
    cfg = AdaptConfig(
        platform=platform,
        features=cols,
        keys=[k for k in base.config.keys if k in samples.columns],
        as_source=as_source,
        **kw,
    )
    return AdaptedPredictor(cfg, base=base).fit(samples, unlabelled=unlabelled)
