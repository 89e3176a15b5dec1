"""The profiles a predictor is asked about, from what a user hands ``xamm predict``: a table file
of profiles, or a store (its application samples, or the RAJAPerf kernels measured on the source,
as the predictor's kind takes them: :attr:`Predictor.store_profiles
<xamm_models.predictors.contract.Predictor.store_profiles>`)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.predictors.contract import Predictor
from xamm_models.profile_input import ProfileInputError, read_profiles_file
from xamm_models.stored import load_app_samples, load_benchmark_runs

__all__ = ["kernel_profiles", "load_profiles"]


def load_profiles(model: Predictor, path: Path, source: str) -> pl.DataFrame:
    """The profiles at ``path`` as ``model`` takes them.

    Args:
        model: the predictor.
        path: a Parquet/CSV file of profiles, or a store.
        source: the machine the profiles were measured on (``machine:device``).

    Returns:
        One row per profile.
    """
    path = Path(path)
    if not path.is_dir():
        return read_profiles_file(path)
    if model.store_profiles == "kernels":
        return kernel_profiles(path, source)
    return load_app_samples(path)


def kernel_profiles(root: Path, source: str) -> pl.DataFrame:
    """RAJAPerf kernels measured on ``source`` in the store at ``root``, as profiles.

    Args:
        root: the store.
        source: the machine (``machine:device``).

    Returns:
        One row per kernel sample of ``source``; refused (:class:`ProfileInputError`) when there
        are none.
    """
    try:
        runs = load_benchmark_runs(root)
    except FileNotFoundError:
        runs = None
    if runs is None or runs.is_empty():
        raise ProfileInputError(
            f"{root}: the store holds no benchmark_runs (RAJAPerf kernels) to use as profiles; "
            "application profiles are not yet predicted from a store: pass a Parquet/CSV file "
            "of profiles with the columns the model needs"
        )
    samples = samples_from_runs(runs)
    profiles = samples.filter(samples.get_column("target") == source)
    if profiles.is_empty():
        raise ProfileInputError(
            f"{root}: no benchmark_runs of {source} in the store (it holds "
            f"{', '.join(sorted(set(samples.get_column('target'))))}); pick "
            "--source among them"
        )
    return profiles
