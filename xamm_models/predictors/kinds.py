"""The model zoo's kinds in one registry: what each predictor is, the file its saved folder is known
by, and how to load it.

``list_models("*")`` lists the kinds; :func:`load_model` opens a saved predictor of any kind (a
folder or a Hub repo id) by the marker file its ``save_pretrained`` writes. Classes are imported on
use (torch, xgboost). Every kind implements
:class:`~xamm_models.predictors.contract.Predictor`; the kinds:

* ``stacked`` (``stacked_predictor.json``): xamm's default, the plain roofline of each machine's
  own benchmark runs (learned residuals are candidates it was measured against), with intervals;
* ``xamm`` (``predictor.json``): the xAMM paper's pipeline, sample embeddings + AMMs;
* ``vae-dnn`` (``vae_dnn.json``): a VAE latent space + DNN predicting the relR vector;
* ``baseline`` (``baseline.json``): the benchmark's yardsticks, pair median, roofline, kNN;
* ``adapted`` (``adapted.json``): few-shot adaptation of an ``xamm`` predictor to other columns.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from xamm_data.hub.models import snapshot_dir
from xamm_data.registry import Registry


@dataclass(frozen=True)
class ModelKind:
    name: str
    marker: str  # the file a saved folder of this kind holds
    cls: str  # "module:Class", imported on use
    description: str

    def load_class(self):
        """The kind's class, imported now.

        Returns:
            The :class:`~xamm_models.predictors.contract.Predictor` subclass.
        """
        module, _, name = self.cls.partition(":")
        return getattr(importlib.import_module(module), name)


MODELS: Registry[ModelKind] = Registry("model")
for _kind in (
    ModelKind(
        "stacked",
        "stacked_predictor.json",
        "xamm_models.predictors.default.model:StackedPredictor",
        "xamm's default: the plain roofline of each machine's own benchmark runs (nothing fitted "
        "to relR labels), conformal 80% intervals",
    ),
    ModelKind(
        "xamm",
        "predictor.json",
        "xamm_models.predictors.paper.predictor:XammPredictor",
        "the xAMM paper's pipeline: attention sample embeddings + AMMs -> a regressor",
    ),
    ModelKind(
        "vae-dnn",
        "vae_dnn.json",
        "xamm_models.predictors.vae_dnn:VaeDnn",
        "VAE-DNN: a VAE latent space + 3x1024 DNN predicting the log relR vector to every target",
    ),
    ModelKind(
        "baseline",
        "baseline.json",
        "xamm_models.predictors.baseline:BaselinePredictor",
        "the benchmark's yardsticks (pair median, roofline, kNN) as xamm "
        "eval scores them; no interval",
    ),
    ModelKind(
        "adapted",
        "adapted.json",
        "xamm_models.predictors.adapted.predictor:AdaptedPredictor",
        "few-shot adaptation: a frozen xamm predictor read through an alignment learned from a "
        "few labelled profiles of a platform with other columns",
    ),
):
    MODELS.add(_kind.name, _kind)


def list_models(pattern: str = "*") -> list[str]:
    """The registered model kinds.

    Args:
        pattern: a shell-style pattern.

    Returns:
        The matching kind names, sorted.
    """
    return MODELS.list(pattern)


def kind_of(folder: Path, where: str | None = None) -> ModelKind:
    """The kind of a saved predictor's local ``folder``, from its marker file.

    Args:
        folder: the saved folder.
        where: how to name it in the error (default: the folder).

    Returns:
        The registered kind whose marker file the folder holds.
    """
    for name in MODELS:
        if (Path(folder) / MODELS.get(name).marker).is_file():
            return MODELS.get(name)
    markers = ", ".join(MODELS.get(n).marker for n in MODELS)
    raise FileNotFoundError(
        f"{where or folder}: none of {markers} found; is this an xamm predictor?"
    )


#: folders resolved and verified by the load running now: the nested ``from_pretrained`` calls of
#: one load (the kind's class, then huggingface_hub's mixin) take them as they are
_RESOLVED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "xamm_resolved_folders", default=frozenset()
)


def resolve_folder(model_id: str, *, revision: str | None = None, **hub) -> Path:
    """A saved model's folder, resolved and its files checked once per load
    (:func:`~xamm_data.hub.models.snapshot_dir`); a folder this load already resolved is
    returned at once.

    Args:
        model_id: a folder, a Hub repo id or ``xamm/<name>``.
        revision: the Hub revision.
        **hub: huggingface_hub's ``cache_dir``, ``force_download``, ``local_files_only``,
            ``token``.

    Returns:
        The folder.
    """
    if str(model_id) in _RESOLVED.get():
        return Path(model_id)
    return snapshot_dir(model_id, revision=revision, **hub)


@contextlib.contextmanager
def loading(folder: Path) -> Iterator[None]:
    """While a load reads ``folder``: the calls nested in it take it as resolved.

    Args:
        folder: the folder :func:`resolve_folder` gave.
    """
    token = _RESOLVED.set(_RESOLVED.get() | {str(folder)})
    try:
        yield
    finally:
        _RESOLVED.reset(token)


def load_model(model_id: str, *, revision: str | None = None):
    """A saved predictor of any registered kind, as its own class; its folder is resolved and
    verified once.

    Args:
        model_id: a folder, a Hub repo id or ``xamm/<name>`` (the embedded snapshot's copy).
        revision: the Hub revision.

    Returns:
        The predictor, an instance of the class its marker file names.
    """
    d = resolve_folder(model_id, revision=revision)
    with loading(d):
        return kind_of(d, model_id).load_class().from_pretrained(str(d))
