"""Downstream regressors (xAMM paper Section IV-F, V-D), registered by name.

``catboost`` is the default; ``xgboost`` (xgboost-cpu), ``random_forest``, ``adaboost`` and
``bagging`` are the paper's baselines. Each is seeded and single-threaded-deterministic, and each
saves to one file: CatBoost's and XGBoost's own formats; the scikit-learn ones through ``skops``
(no pickles): loading trusts scikit-learn's own types and the tree class they hold, and refuses a
file holding any other type, naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from xamm_data.registry import Registry

REGISTRY: Registry[dict] = Registry("regressor")


def register_regressor(name: str, file_suffix: str) -> Callable:
    """Decorator: register a regressor factory ``fn(seed)`` under ``name``.

    Args:
        name: the regressor's name in configs and saved models.
        file_suffix: how its saved files end.

    Returns:
        The decorator, which returns the factory unchanged.
    """

    def deco(fn: Callable) -> Callable:
        REGISTRY.add(name, {"make": fn, "suffix": file_suffix})
        return fn

    return deco


def list_regressors(pattern: str = "*") -> list[str]:
    """Registered regressor names.

    Args:
        pattern: a shell-style pattern.

    Returns:
        The matching names, sorted.
    """
    return REGISTRY.list(pattern)


def _entry(name: str) -> dict:
    return REGISTRY.get(name)


def create_regressor(name: str, seed: int = 0):
    """A fresh, seeded regressor with the scikit-learn ``fit``/``predict`` interface.

    Args:
        name: a registered regressor.
        seed: its seed.

    Returns:
        The unfitted regressor.
    """
    return _entry(name)["make"](seed)


@register_regressor("catboost", ".cbm")
def _catboost(seed):
    from catboost import CatBoostRegressor  # models extra, imported on use

    return CatBoostRegressor(
        iterations=500,
        depth=6,
        learning_rate=0.05,
        loss_function="RMSE",
        random_seed=seed,
        verbose=False,
        thread_count=1,
        allow_writing_files=False,
    )


@register_regressor("xgboost", ".ubj")
def _xgboost(seed):
    from xgboost import XGBRegressor  # models extra, imported on use

    return XGBRegressor(
        n_estimators=400,
        max_depth=6,
        learning_rate=0.05,
        subsample=0.9,
        random_state=seed,
        n_jobs=1,
        tree_method="hist",
    )


@register_regressor("random_forest", ".skops")
def _rf(seed):
    from sklearn.ensemble import RandomForestRegressor  # models extra, imported on use

    return RandomForestRegressor(n_estimators=300, random_state=seed, n_jobs=1)


@register_regressor("adaboost", ".skops")
def _ada(seed):
    from sklearn.ensemble import AdaBoostRegressor  # models extra, imported on use
    from sklearn.tree import DecisionTreeRegressor  # models extra, imported on use

    return AdaBoostRegressor(
        DecisionTreeRegressor(max_depth=6, random_state=seed), n_estimators=200, random_state=seed
    )


@register_regressor("bagging", ".skops")
def _bagging(seed):
    from sklearn.ensemble import BaggingRegressor  # models extra, imported on use

    return BaggingRegressor(n_estimators=100, random_state=seed, n_jobs=1)


# beyond scikit-learn's estimators, which skops trusts itself
SKOPS_TRUSTED = ("sklearn.tree._tree.Tree",)


def save_regressor(model, name: str, path_stem: Path) -> Path:
    """Save ``model`` (registered as ``name``) to ``path_stem`` + its format's suffix (no
    pickles)."""
    path = Path(str(path_stem) + _entry(name)["suffix"])
    if name in ("catboost", "xgboost"):
        model.save_model(str(path))
    else:
        import skops.io as sio  # models extra, imported on use

        sio.dump(model, path)
    return path


def load_regressor(name: str, path_stem: Path):
    """Load a regressor saved by :func:`save_regressor`; a skops file holding unexpected types is
    refused."""
    path = Path(str(path_stem) + _entry(name)["suffix"])
    if name == "catboost":
        from catboost import CatBoostRegressor  # models extra, imported on use

        m = CatBoostRegressor()
        m.load_model(str(path))
        return m
    if name == "xgboost":
        from xgboost import XGBRegressor  # models extra, imported on use

        m = XGBRegressor()
        m.load_model(str(path))
        return m
    import skops.io as sio  # models extra, imported on use

    unexpected = sorted(set(sio.get_untrusted_types(file=path)) - set(SKOPS_TRUSTED))
    if unexpected:
        raise PermissionError(
            f"{path.name} holds types a {name} regressor does not: "
            f"{unexpected}; refusing to load it"
        )
    return sio.load(path, trusted=list(SKOPS_TRUSTED))


def predict(model, X: np.ndarray) -> np.ndarray:
    return np.asarray(model.predict(X), dtype=np.float64)
