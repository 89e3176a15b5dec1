"""Same silicon is recognised: a machine's runs split in halves are nearest each other, on every
machine end with RAJAPerf runs in the shared data; and the comparison reads times kernel by
kernel, not a summary."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from xamm_models.machines.similarity import MIN_POINTS, kernel_distance, nearest


def _machine(target: str, speed: float, kernels=("a", "b", "c", "d"), sizes=(1e5, 1e6, 1e7)):
    """Samples of a toy machine: each kernel's time per iteration over its sizes, scaled."""
    rows = [
        {
            "target": target,
            "app": k,
            "problem_size": n,
            "iterations_per_rep": n,
            "time_per_rep_s": n * (1 + i) * 1e-9 / speed * (1 + 0.2 * np.log10(n)),
        }
        for i, k in enumerate(kernels)
        for n in sizes
    ]
    return pl.DataFrame(rows)


def test_the_distance_reads_each_size_off_the_other_machines_curve():
    a = _machine("a:cpu", 1.0, sizes=(1e6, 1e8))
    b = _machine("b:cpu", 2.0, sizes=(1e5, 1e6, 1e7, 1e8))
    d, n = kernel_distance(a, b)
    # a's two sizes on b's curve, b's three within a's range on a's line; 1e5 is never
    # extrapolated
    assert n == 4 * 2 + 4 * 3
    assert d == pytest.approx(np.log10(2.0), abs=0.02)
    # too few kernels in common: no figure, and nearest says what decided instead
    assert np.isnan(kernel_distance(a.head(2), b.head(2))[0]) and MIN_POINTS > 4


def test_the_nearest_known_machine_of_the_device_kind_is_found():
    known = pl.concat([_machine("slow:cpu", 0.5), _machine("fast:cpu", 3.0), _machine("g:gpu", 1)])
    assert nearest("new:cpu", _machine("new:cpu", 2.5), known) == ("fast:cpu", "kernels")


def test_the_nearest_machine_is_the_same_silicon_before_the_nearest_speed():
    # a GPU partition runs at a sixth of its whole GPU: by times alone lassen would be nearest
    new = _machine("mi300a-cpx:gpu", 0.5)
    known = pl.concat([_machine("mi300a-spx:gpu", 3.0), _machine("lassen:gpu", 0.6)])
    assert nearest("mi300a-cpx:gpu", new, known) == ("mi300a-spx:gpu", "silicon")
    # two on the same silicon: the nearer of them kernel by kernel
    both = pl.concat([known, _machine("mi300a-cpx:gpu", 0.45)])
    assert nearest("tuolumne:gpu", _machine("tuolumne:gpu", 0.5), both) == (
        "mi300a-cpx:gpu",
        "silicon",
    )
    # no sibling: the times decide
    assert nearest("h100-node:gpu", new, known) == ("lassen:gpu", "kernels")


@pytest.mark.data
def test_every_rajaperf_machine_end_in_the_shared_data_recognises_its_own_halves(xplat_dataset):
    from xamm_models.benchmark import dataset as xplat
    from xamm_models.studies.same_silicon import rajaperf_halves

    ds = xplat_dataset
    table = rajaperf_halves(ds.config_runs, xplat.samples_from_runs)
    assert set(table["machine"]) == set(ds.samples["target"])  # every end, CPU and GPU
    # halves by whole files need two files of the same kernels: ruby's run is one file, and the
    # VM's files, taken alternately, leave halves with too few kernels in common to be measured
    unmeasured = table.filter(pl.col("halves_distance").is_nan())
    assert set(unmeasured["machine"]) == {"ruby:cpu", "vm:cpu"}
    table = table.filter(pl.col("halves_distance").is_not_nan())
    assert table["recognised"].all(), table
    assert (table["halves_distance"] < table["nearest_other_distance"]).all()
