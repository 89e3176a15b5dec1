"""``xamm run config.yml``: the config-driven pipeline of the paper's Listing 1.

Fields (Listing 1, then xamm's additions)::

    machine_data_path:   benchmark data: a store root (with benchmark_runs/) or a
                         benchmark_runs Parquet file
    app_train_data_path: application samples to train on (Parquet/CSV), or a store root:
                         its RAJAPerf kernels as apps
    app_test_data_path:  application samples to predict (same forms)
    src_model_path:      a trained predictor folder (or Hub repo id); ``test`` trains one
                         first when unset
    src_machine_amm:     the source's AMM: a signature file, a registry ref (quartz:cpu@1)
                         or benchmark data
    target_machine_amm:  the target's AMM, same forms; omitted -> AMMs are not used
    func:                amm | train | test
    # xamm additions
    features:            feature columns (default: every f_*, feat_* and s001_* column)
    targets:             targets to predict for in ``test`` (default: all training targets)
    regressor: catboost  embedder: attention  log_target: true  aggregation: l2
    epochs: 200          seed: 0
    model:               xamm (the paper's pipeline, default) | vae-dnn (one model for the
                         whole relR vector; ``train`` fits it on the training samples'
                         pairs, ``test`` ranks every target of its vector; AMM fields do
                         not apply; ``epochs`` N, when given, trains the VAE N epochs, the
                         DNN 2N and the joint phase min(20, N // 4): 150 is its default)
    output:              where ``train`` saves the model (default src_model_path) / ``test``
                         writes predictions

Errors name the field: pydantic validates the file before anything runs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Literal

import polars as pl
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from xamm_data.identifiers import first_repeated
from xamm_models.errors import ConfigError
from xamm_models.machines.attention import build_signatures
from xamm_models.machines.signatures import Signature, SignatureRegistry
from xamm_models.predictors.kinds import load_model
from xamm_models.predictors.paper.relperf import DEFAULT_KEYS, pair_relative, with_target
from xamm_models.stored import data_version, load_app_samples, load_benchmark_runs


class RunConfig(BaseModel):
    """An ``xamm run`` config (``examples/run-config.yml``): numbers and switches as YAML writes
    them (``epochs: true`` is no count, ``log_target: 1`` no switch), names never empty."""

    model_config = ConfigDict(extra="forbid")

    func: Literal["amm", "train", "test"]
    machine_data_path: Path | None = None
    app_train_data_path: Path | None = None
    app_test_data_path: Path | None = None
    src_model_path: str | None = None
    src_machine_amm: str | None = None
    target_machine_amm: str | None = None
    features: list[str] | None = None
    targets: list[str] | None = None
    regressor: str = "catboost"
    embedder: str = "attention"
    log_target: bool = Field(default=True, strict=True)
    aggregation: Literal["mean", "l2", "variance"] = "l2"
    epochs: int = Field(default=200, ge=1, strict=True)
    seed: int = Field(default=0, strict=True)
    output: Path | None = None
    model: Literal["xamm", "vae-dnn"] = "xamm"

    @field_validator(
        "machine_data_path",
        "app_train_data_path",
        "app_test_data_path",
        "output",
        "src_model_path",
        "src_machine_amm",
        "target_machine_amm",
        mode="before",
    )
    @classmethod
    def _not_empty(cls, v):
        # an empty path is the config's own folder once made relative to it: never meant
        if isinstance(v, str) and not v.strip():
            raise ValueError("empty; name a file or folder (or leave the field out)")
        return v

    @field_validator("features", "targets")
    @classmethod
    def _names(cls, v):
        # an empty list would read as "the defaults", a repeated name as two columns or targets
        if v is not None:
            if not v:
                raise ValueError("an empty list; name at least one (or leave the field out)")
            if (blank := next((n for n in v if not n.strip()), None)) is not None:
                raise ValueError(f"an empty name {blank!r} in the list")
            if (twice := first_repeated(v)) is not None:
                raise ValueError(f"{twice!r} is named twice")
        return v

    @model_validator(mode="after")
    def _needs(self):
        if self.func == "amm" and self.machine_data_path is None:
            raise ValueError("func 'amm' needs machine_data_path")
        if self.func == "train":
            if self.app_train_data_path is None:
                raise ValueError("func 'train' needs app_train_data_path")
            if self.src_model_path is None and self.output is None:
                raise ValueError(
                    "func 'train' needs src_model_path or output (where to save the model)"
                )
        if self.func == "test":
            if self.app_test_data_path is None:
                raise ValueError("func 'test' needs app_test_data_path")
            if self.src_model_path is None and self.app_train_data_path is None:
                raise ValueError(
                    "func 'test' without src_model_path trains first, "
                    "so it needs app_train_data_path"
                )
        return self


def load_config(path: str | Path) -> RunConfig:
    """Read and validate a ``xamm run`` config file.

    Args:
        path: the YAML file.

    Returns:
        The validated config (relative paths resolved against the file's folder).

    Raises:
        ConfigError: the file does not validate; the message names the file and the field.
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: cannot read YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of fields, got {type(data).__name__}")
    base = path.parent
    try:
        cfg = RunConfig(**data)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "(config)"
        raise ConfigError(f"{path}: field {field!r}: {err['msg']}") from None
    for name in ("machine_data_path", "app_train_data_path", "app_test_data_path", "output"):
        v = getattr(cfg, name)
        if v is not None and not v.is_absolute():
            object.__setattr__(cfg, name, base / v)
    _known_names(cfg, path)
    return cfg


def _known_names(cfg: RunConfig, path: Path) -> None:
    """The regressor and embedder ``cfg`` names, checked as the file is read: a misspelt one would
    otherwise be found only after the data is loaded and the AMMs trained.

    Args:
        cfg: the config read from ``path``.
        path: its file, named in the error.
    """
    # both load torch: on use, once a config is read
    from xamm_models.embedders.networks import REGISTRY as EMBEDDERS
    from xamm_models.predictors.paper.regressors import REGISTRY as REGRESSORS  # torch, as above

    for field, registry in (("regressor", REGRESSORS), ("embedder", EMBEDDERS)):
        try:
            registry.get(getattr(cfg, field))
        except KeyError as e:
            raise ConfigError(f"{path}: field {field!r}: {e}") from None


def default_features(df: pl.DataFrame) -> list[str]:
    feats = [
        c
        for c in df.columns
        if c.startswith(("f_", "feat_", "s001_")) and df.schema[c].is_numeric()
    ]
    return [c for c in feats if df.get_column(c).null_count() < df.height]


def _signature_from(spec: str, predictor=None):
    """A signature from a file, a registry ref, or benchmark data (built with the predictor's AMM
    embedder)."""
    p = Path(spec)
    if p.suffix == ".json" and p.is_file():
        return {(s := Signature.model_validate_json(p.read_text())).target: s}
    if p.exists():
        if predictor is None:
            raise ConfigError(f"{spec}: building an AMM from benchmark data needs a trained model")
        return predictor.signatures_from_benchmarks(load_benchmark_runs(p))
    # a config names signatures of the $XAMM_HOME registry
    s = SignatureRegistry.default().get(spec)
    return {s.target: s}


def _train_vae_dnn(cfg: RunConfig, samples: pl.DataFrame, feats: list[str], version: int | None):
    """the VAE-DNN papers' VAE-DNN on every (source, target) pair of the training samples."""
    # imports torch: loaded on use
    from xamm_models.predictors.vae_dnn import VaeDnn, vector_samples

    pairs = pair_relative(with_target(samples), DEFAULT_KEYS, carry=feats).with_columns(
        pl.concat_str(
            [pl.col(k).cast(pl.String).fill_null("") for k in DEFAULT_KEYS if k in samples.columns],
            separator="|",
        ).alias("sample"),
        pl.col("app").str.split("_").list.first().alias("group"),
    )
    rows = vector_samples(pairs, features=feats)
    targets = sorted(c[2:] for c in rows.columns if c.startswith("y_"))
    n = cfg.epochs
    # the xamm pipeline's default (200) is not the VAE-DNN's: only an epochs the config names
    sizes = (
        {"vae_epochs": n, "dnn_epochs": 2 * n, "joint_epochs": min(20, n // 4)}
        if "epochs" in cfg.model_fields_set
        else {}
    )
    model = VaeDnn(
        targets,
        sorted(set(rows.get_column("source"))),
        feature_names=feats,
        seed=cfg.seed,
        **sizes,
    )
    return model.fit(rows, dataset=str(cfg.app_train_data_path), data_version=version)


def _train(cfg: RunConfig, out):
    """Train the predictor the config describes; save it to ``output`` (func train) or
    ``src_model_path``."""
    # imports torch: loaded on use
    from xamm_models.predictors.paper.predictor import PredictorConfig, XammPredictor

    version = data_version(cfg.app_train_data_path)
    samples = load_app_samples(cfg.app_train_data_path, version)
    feats = cfg.features or default_features(samples)
    if cfg.model == "vae-dnn":
        return _save(cfg, _train_vae_dnn(cfg, samples, feats, version), out)
    sigs = (
        build_signatures(
            store=cfg.machine_data_path,
            registry=SignatureRegistry.default(),
            aggregation=cfg.aggregation,
            epochs=cfg.epochs,
            seed=cfg.seed,
        )
        if cfg.machine_data_path
        else []
    )
    pred = XammPredictor(
        PredictorConfig(
            feature_columns=feats,
            regressor=cfg.regressor,
            embedder=cfg.embedder,
            log_target=cfg.log_target,
            epochs=cfg.epochs,
            seed=cfg.seed,
        )
    )
    pred.fit(
        samples,
        sigs,
        dataset=str(cfg.app_train_data_path),
        embedders_dir=SignatureRegistry.default().embedders_dir,
    )
    # load_app_samples(path, version) gives the same samples back
    pred.training["data_version"] = version
    return _save(cfg, pred, out)


def _save(cfg: RunConfig, pred, out):
    dest = cfg.output if cfg.func == "train" and cfg.output else cfg.src_model_path
    if dest:
        pred.save_pretrained(dest)
        out(f"saved the predictor to {dest}")
    return pred


def _keys(pred) -> list[str]:
    """The columns that name a sample, as the predictor pairs them."""
    return (
        list(pred.config.keys)
        if hasattr(pred, "config") and hasattr(pred.config, "keys")
        else list(DEFAULT_KEYS)
    )


def _predict_test(cfg: RunConfig, pred, test: pl.DataFrame) -> pl.DataFrame:
    """Predictions for every test sample measured on a training source, keyed like the samples."""
    extra, target_sigs = {}, {}
    use_amm = cfg.src_machine_amm is not None and cfg.target_machine_amm is not None
    if use_amm:
        extra.update(_signature_from(cfg.src_machine_amm, pred))
        target_sigs = _signature_from(cfg.target_machine_amm, pred)
        extra.update(target_sigs)
    targets = cfg.targets or list(target_sigs) or pred.targets
    frames = []
    for (source,), part in test.group_by(["target"], maintain_order=True):
        tg = [t for t in targets if t != source]
        if source not in pred.sources or not tg:
            continue
        p = (
            pred.predict(part, source, tg)
            if getattr(pred, "answers_vectors", False)
            else pred.predict(part, source, tg, target_signatures=extra, use_amm=use_amm)
        )
        keys = [k for k in _keys(pred) if k in part.columns]
        frames.append(
            p.join(
                part.select(keys).with_row_index("row").with_columns(pl.col("row").cast(pl.Int64)),
                on="row",
            )
        )
    if not frames:
        raise ValueError(
            f"no test samples were measured on a training source ({', '.join(pred.sources)})"
        )
    return pl.concat(frames, how="diagonal_relaxed")


def _amms(cfg: RunConfig, out) -> dict:
    """func amm: every target's AMM from the benchmark data, into the default registry."""
    sigs = build_signatures(
        store=cfg.machine_data_path,
        registry=SignatureRegistry.default(),
        aggregation=cfg.aggregation,
        embedder_name=cfg.embedder,
        epochs=cfg.epochs,
        seed=cfg.seed,
    )
    for s in sigs:
        out(f"{s.ref}: {len(s.vector)}-d AMM from {s.n_samples} samples")
    return {"signatures": [s.ref for s in sigs]}


def run(cfg: RunConfig, *, out=print) -> dict:
    """Carry out ``cfg.func`` (``amm``, ``train`` or ``test``).

    Args:
        cfg: a validated config.
        out: where progress and the summary are printed.

    Returns:
        The summary.
    """

    if cfg.func == "amm":
        return _amms(cfg, out)
    if cfg.func == "train":
        p = _train(cfg, out)
        return {"model": str(cfg.output or cfg.src_model_path), "training": p.training}
    if cfg.src_model_path and (
        Path(cfg.src_model_path).exists() or cfg.app_train_data_path is None
    ):
        # a folder, or a Hub repo id; its kind from the zoo's marker files
        pred = load_model(cfg.src_model_path)
    else:
        pred = _train(cfg, out)
    test = with_target(load_app_samples(cfg.app_test_data_path))
    preds = _predict_test(cfg, pred, test)
    summary = {"predictions": preds.height}
    truth = pair_relative(test, tuple(k for k in _keys(pred) if k in test.columns))
    if truth.height:
        keys = [k for k in _keys(pred) if k in preds.columns]
        j = preds.join(
            truth.select(*keys, "source", "target", pl.col("relR").alias("relR_true")),
            on=[*keys, "source", "target"],
            how="inner",
            nulls_equal=True,
        )
        if j.height:
            err = (j["relR"] / j["relR_true"]).log10().abs()
            mape = float(((j["relR"] - j["relR_true"]).abs() / j["relR_true"]).mean() * 100)
            # log-scale figures first (xamm_models.benchmark.metrics); MAPE is the paper's, kept for
            # comparison
            summary.update(
                {
                    "evaluated_pairs": j.height,
                    "within_2": round(float((err <= math.log10(2) + 1e-12).mean()), 4),
                    "median_abs_log10": round(float(err.median()), 4),
                    "mape_percent": round(mape, 3),
                }
            )
            preds = preds.join(
                j.select(*keys, "source", "target", "relR_true"),
                on=[*keys, "source", "target"],
                how="left",
                nulls_equal=True,
                maintain_order="left",
            )
    dest = cfg.output or Path("predictions.parquet")
    preds.write_parquet(dest)
    summary["output"] = str(dest)
    out(json.dumps(summary, indent=2))
    return summary
