"""No physically impossible figure: a signature or a compare table never shows a bandwidth or flop
rate above the best any of the machine's rows achieved, nor a node figure above a peak the machine
registry records (xamm_models.machines.physics, xamm_models.compare.runs.figures)."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from xamm_data.hub import snapshot
from xamm_data.machines.registry import get as get_machine
from xamm_data.machines.targets import Target
from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.compare.runs.comparison import compare_runs
from xamm_models.compare.runs.figures import WORKING_SETS, node_figures, physics_table
from xamm_models.machines.physics import best_achieved, physics_signature, sample_arrays
from xamm_models.predictors.configurations import select_runs


def _targets() -> dict[str, pl.DataFrame]:
    """Every shipped target's runs, one family and configuration each (as a prediction selects
    them), and its full runs."""
    out = {}
    for m in snapshot.machines():
        runs = snapshot.read("benchmark_runs", m)
        for family in ("sequential", "gpu"):
            for t, tr in select_runs(runs, "given", family).items():
                out[t] = tr.rows
    return out


TARGETS = _targets()


def _best(rows: pl.DataFrame) -> tuple[float, float]:
    """The best bandwidth and flop rate any row achieved, its whole time counted: computed here
    from the rows, not through the signature code."""
    t = rows["time_per_rep_s"].to_numpy()
    b = rows["bytes_per_rep"].fill_null(0).to_numpy()
    f = rows["flops_per_rep"].fill_null(0).to_numpy()
    return float((b / t).max()), float((f / t).max())


def test_every_shipped_targets_signature_is_within_what_its_runs_achieved():
    assert len(TARGETS) == 11
    for t, rows in TARGETS.items():
        sig = physics_signature(t, samples_from_runs(rows))
        bw, fr = _best(rows)
        assert best_achieved(sample_arrays(samples_from_runs(rows))) <= (bw, fr)
        assert 0 < min(sig.bw) and max(sig.bw) <= bw * (1 + 1e-12), t
        ws = 2.0 ** np.arange(0, 40)
        assert (sig.bandwidth(ws) <= bw * (1 + 1e-12)).all() and (sig.bandwidth(ws) > 0).all()
        if sig.flop_rate_from == "measured":
            assert sig.flop_rate <= fr * (1 + 1e-12), t
        assert sig.overhead_s >= 0
        # a sequential run launches no kernel; GPU runs pay a launch, and so do the OpenMP runs of
        # ruby and the VM (a sample is a kernel's fastest variant): their fork and join
        threaded = t in ("ruby:cpu", "vm:cpu")
        assert (sig.overhead_from == "none") == (t.endswith(":cpu") and not threaded), t


def test_lassen_never_shows_more_than_its_v100s_bandwidth():
    """The issue's case: 5,655 GB/s for a V100 (~900 GB/s peak) at 32 MiB, and a point at
    0.0008 GB/s on bandwidth.png. No lassen row exceeds 858 GB/s."""
    rows = TARGETS["lassen:gpu"]
    bw, _ = _best(rows)
    assert 8.5e11 < bw < 8.6e11
    sig = physics_signature("lassen:gpu", samples_from_runs(rows))
    table = physics_table({"lassen:gpu": sig})
    shown = table.filter(pl.col("figure").str.starts_with("bandwidth"))["lassen:gpu"].drop_nulls()
    at_32 = table.filter(pl.col("figure") == "bandwidth at 32 MiB (GB/s)")["lassen:gpu"][0]
    assert at_32 is not None and at_32 <= 858.3
    assert shown.len() >= 2 and (shown <= 858.3).all() and (shown > 1).all()
    # bandwidth.png draws sig.bw against its working sets: every point a streaming rate
    assert min(sig.bw) > 1e9 and max(sig.bw) <= bw
    peak = get_machine("lassen").memory_bandwidth("gpu")
    assert max(sig.bw) <= peak


@pytest.mark.parametrize("pair", list(itertools.permutations(sorted(TARGETS), 2)))
def test_no_compare_table_shows_an_impossible_figure(pair):
    """Every ordered pair of shipped targets compared: each bandwidth and flop figure of the
    physics table is within what that target's runs achieved; a node's figures within the
    registry's peaks."""
    new, ref = pair
    c = compare_runs({new: TARGETS[new], ref: TARGETS[ref]}, new, [ref], size_ratio=16.0)
    table = c.physics()
    for t in (new, ref):
        bw, fr = _best(TARGETS[t])
        col = dict(zip(table["figure"], table[t]))
        for name in WORKING_SETS:
            v = col[f"bandwidth at {name} (GB/s)"]
            assert v is None or v * 1e9 <= bw * (1 + 1e-9), (t, name)
        assert col["bandwidth at the largest working set (GB/s)"] * 1e9 <= bw * (1 + 1e-9)
        rate = col["flop rate (GFLOP/s)"]
        assert rate is None or rate * 1e9 <= fr * (1 + 1e-9)
        node_bw, node_fr = node_figures(c.signatures[t], c.scales[t])
        m = get_machine(Target.parse(t).machine)
        device = Target.parse(t).device
        per = m.gpus_per_node if device == "gpu" else 1
        if node_bw is not None and m.memory_bandwidth(device) is not None:
            assert node_bw <= m.memory_bandwidth(device) * per * (1 + 1e-9), t
        if node_fr is not None and m.peak_flop_rate(device) is not None:
            assert node_fr <= m.peak_flop_rate(device) * per * (1 + 1e-9), t
