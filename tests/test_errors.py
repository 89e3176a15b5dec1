"""One error base: every exception class xamm's three packages define derives from
``xamm_data.XammError``, so a user catches one class; each keeps the built-in base its callers
catch (``ValueError``, ``KeyError``, ``RuntimeError``)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import xamm_data
import xamm_ingest
import xamm_models
from xamm_data import XammError


def _modules():
    for pkg in (xamm_data, xamm_ingest, xamm_models):
        yield pkg.__name__
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            yield info.name


def _exception_classes() -> dict[str, type]:
    found = {}
    for name in _modules():
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:  # an optional extra's module: its errors are below
            if e.name and e.name.split(".")[0] in ("xamm_data", "xamm_ingest", "xamm_models"):
                raise
            continue
        for obj in vars(mod).values():
            if inspect.isclass(obj) and issubclass(obj, BaseException):
                if obj.__module__.split(".")[0] in ("xamm_data", "xamm_ingest", "xamm_models"):
                    found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_every_error_the_packages_define_derives_from_one_base():
    classes = _exception_classes()
    assert len(classes) >= 25  # the census is real: every package's errors were found
    assert {n for n, c in classes.items() if not issubclass(c, XammError)} == set()
    assert {
        "xamm_ingest.errors.IngestError",
        "xamm_models.errors.ConfigError",
        "xamm_data.store.files.CorruptDataError",
        "xamm_data.cli.tools.UsageError",
    } <= set(classes)


@pytest.mark.parametrize(
    "raise_it",
    [
        lambda: __import__("xamm_data").load_dataset("no-such-machine-anywhere"),
        lambda: importlib.import_module("xamm_data.machines.registry").get("no-such-machine"),
        lambda: importlib.import_module("xamm_data.machines.targets").Target.parse("../x"),
        lambda: __import__("xamm_ingest.format").format.get_format("no-such-format"),
    ],
)
def test_a_user_catches_one_class(raise_it):
    with pytest.raises(XammError):
        raise_it()
