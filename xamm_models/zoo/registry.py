"""The model zoo's kinds in one registry: what each predictor is, the file its saved folder is known by, and
how to load it.

``list_models("*")`` lists the kinds; :func:`load_model` opens a saved predictor of any kind (a folder or a
Hub repo id) by the marker file its ``save_pretrained`` writes. Classes are imported on use (torch, xgboost).

=============  ===========================================================================  ==========================
kind           what                                                                         marker file
=============  ===========================================================================  ==========================
``stacked``    xamm's default: physics prior + learned residuals, conformal intervals       ``stacked_predictor.json``
``xamm``       the paper's pipeline: sample embeddings + AMMs -> a regressor                ``predictor.json``
``vae-dnn``    seeds 001/002: VAE latent space + DNN predicting the relR vector             ``vae_dnn.json``
``baseline``   the benchmark's yardsticks: pair median, roofline, kNN (no interval)         ``baseline.json``
``adapted``    seed 003: a frozen ``xamm`` predictor adapted to a platform's other columns  ``adapted.json``
=============  ===========================================================================  ==========================

All answer ``predict(profiles, source, targets)`` and ``rank_targets(profiles, source, targets)``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from xamm_data.hub import snapshot_dir
from xamm_data.registry import Registry


@dataclass(frozen=True)
class ModelKind:
    name: str
    marker: str  # the file a saved folder of this kind holds
    cls: str  # "module:Class", imported on use
    description: str

    def load_class(self):
        module, _, name = self.cls.partition(":")
        return getattr(importlib.import_module(module), name)


MODELS: Registry[ModelKind] = Registry("model")
for _kind in (ModelKind("stacked", "stacked_predictor.json", "xamm_models.predictors.default.model:StackedPredictor",
                        "xamm's default: physics prior + learned residuals per scenario, conformal 80% intervals"),
              ModelKind("xamm", "predictor.json", "xamm_models.predictors.paper.predictor:XammPredictor",
                        "the xAMM paper's pipeline: attention sample embeddings + AMMs -> a regressor"),
              ModelKind("vae-dnn", "vae_dnn.json", "xamm_models.predictors.vae_dnn:VaeDnn",
                        "seeds 001/002: VAE latent space + 3x1024 DNN predicting the log relR vector to every target"),
              ModelKind("baseline", "baseline.json", "xamm_models.predictors.baseline:BaselinePredictor",
                        "the benchmark's yardsticks (pair median, roofline, kNN) as xamm eval scores them; no interval"),
              ModelKind("adapted", "adapted.json", "xamm_models.predictors.adapted.predictor:AdaptedPredictor",
                        "seed 003: a frozen xamm predictor read through an alignment learned from a few labelled "
                        "profiles of a platform with other columns")):
    MODELS.add(_kind.name, _kind)


def list_models(pattern: str = "*") -> list[str]:
    """The registered model kinds matching a shell-style ``pattern``."""
    return MODELS.list(pattern)


def kind_of(folder) -> ModelKind:
    """The kind of a saved predictor's local ``folder``, from its marker file."""
    for name in MODELS:
        if (folder / MODELS.get(name).marker).is_file():
            return MODELS.get(name)
    markers = ", ".join(MODELS.get(n).marker for n in MODELS)
    raise FileNotFoundError(f"{folder}: none of {markers} found; is this an xamm predictor?")


def load_model(model_id: str, *, revision: str | None = None):
    """A saved predictor of any registered kind, by folder or Hub repo id (at ``revision``)."""
    d = snapshot_dir(model_id, revision=revision)
    try:
        kind = kind_of(d)
    except FileNotFoundError as e:
        raise FileNotFoundError(str(e).replace(str(d), model_id, 1)) from None
    return kind.load_class().from_pretrained(str(d))


def resolve(marker: str, model_id, revision: str | None, kwargs: dict):
    """What ``cls.from_pretrained(model_id)`` should open, through xamm's resolution (a local folder, the Hub at
    ``revision``, the embedded snapshot for ``xamm/<name>``): ``(folder, None)`` when the folder holds ``marker``,
    else ``(None, model)`` with the model loaded as the zoo kind its folder is (``xamm/default`` is the stacked
    predictor, whichever class is asked)."""
    hub = {k: kwargs[k] for k in ("cache_dir", "force_download", "local_files_only", "token") if k in kwargs}
    d = snapshot_dir(str(model_id), revision=revision, **hub)
    return (d, None) if (d / marker).is_file() else (None, load_model(str(d)))
