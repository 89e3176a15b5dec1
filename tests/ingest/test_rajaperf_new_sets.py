"""The RAJAPerf sets that came after the first five machines, each read and checked against an
independent parse of its files (caliper-reader for ``.cali``, the csv module for RAJAPerf's own
CSV): ruby's Caliper baselines (Base/Lambda/RAJA x Seq/OpenMP), tuolumne's RAJA_HIP runs, the
MI300A node in CPX mode (tiers 1 and 2, 24 ranks) and the 2-core cloud VM's same-run CSV and
``.cali`` sets (``--npasses 2``)."""

from __future__ import annotations

import csv
from pathlib import Path

import caliperreader
import polars as pl
import pytest

from xamm_ingest import read_rajaperf

pytestmark = pytest.mark.data

RUBY = "LLNL+RAJAPerf/test/caliper-baselines"
TUOLUMNE = "LLNL+thicket-newer/thicket/tests/data/rajaperf-comp-static-data/tuolumne"
CPX = "llnl+RAJAPerf-Benchmark/2026-FCR/data/RPBenchmark_MI300A_tier{}-CPX"
VM = "vm-rajaperf"
GIB = 2**30


def _cali_times(f: Path) -> dict[tuple[str, str, str], float]:
    """(variant, tuning, kernel) -> seconds per rep, read by caliper-reader: the mean inclusive
    time over Reps of a kernel's tuning leaf (``root -> group -> kernel -> kernel.tuning``) where
    the file has one, else of the kernel region itself (its tuning in the globals)."""
    r = caliperreader.CaliperReader()
    r.read(str(f))
    variant, tuning = r.globals["variant"], r.globals.get("tuning", "default")
    out, leaves = {}, {}
    for rec in r.records:
        path = rec.get("path")
        if not isinstance(path, list) or "any#any#max#Reps" not in rec:
            continue
        t = float(rec["avg#inclusive#sum#time.duration"]) / float(rec["any#any#max#Reps"])
        if len(path) == 4 and path[3].startswith(path[2] + "."):
            leaves[(variant, path[3][len(path[2]) + 1 :], path[2])] = t
        elif len(path) == 3:
            out[(variant, tuning, path[2])] = t
    with_leaves = {k for _, _, k in leaves}
    return {**{k: t for k, t in out.items() if k[2] not in with_leaves}, **leaves}


def _check_cali(frame: pl.DataFrame, files: list[Path], root: Path) -> int:
    checked = 0
    for f in files:
        rows = frame.filter(pl.col("source_path") == f.relative_to(root).as_posix())
        mine = {(r["variant"], r["tuning"], r["kernel"]): r["time_per_rep_s"]
                for r in rows.iter_rows(named=True)}  # fmt: skip
        theirs = _cali_times(f)
        assert mine.keys() == theirs.keys(), f
        for k, t in theirs.items():
            assert mine[k] == pytest.approx(t, rel=1e-9), (f, k)
        checked += len(theirs)
    return checked


def test_ruby_caliper_baselines_one_file_per_variant(shared_data):
    root = shared_data / RUBY
    rep = read_rajaperf(root, workers=1)
    assert rep.rejected == [] and rep.sources_read == 6
    f = rep.frame
    assert set(f["machine"]) == {"ruby"} and set(f["device"]) == {"cpu"}
    assert set(f["variant"]) == {f"{a}_{b}" for a in ("Base", "Lambda", "RAJA")
                                 for b in ("Seq", "OpenMP")}  # fmt: skip
    assert _check_cali(f, sorted(root.glob("*.cali")), root) == f.height


def test_tuolumne_raja_hip_two_trials(shared_data):
    root = shared_data / TUOLUMNE
    rep = read_rajaperf(root, workers=1)
    assert rep.rejected == [] and rep.sources_read == 2
    f = rep.frame
    assert set(f["machine"]) == {"tuolumne"} and set(f["device"]) == {"gpu"}
    assert not [n for n in rep.notes if "not a known machine" in n]  # the registry knows it
    assert set(f["variant"]) == {"RAJA_HIP"} and set(f["block_size"]) == {256}
    assert sorted(set(f["trial"])) == [0, 1]
    assert _check_cali(f, sorted(root.rglob("*.cali")), root) == f.height


def test_mi300a_cpx_tiers_24_ranks_and_the_bandwidth_rajaperf_printed(shared_data):
    dirs = [shared_data / CPX.format(t) for t in (1, 2)]
    rep = read_rajaperf(dirs, machine="mi300a-cpx", workers=2)
    assert rep.rejected == []
    f = rep.frame
    assert set(f["ranks"]) == {24} and set(f["device"]) == {"cpu", "gpu"}
    assert not [n for n in rep.notes if "not a known machine" in n]
    # the registry's node: 24 GPU partitions a node, each rank one of them
    from xamm_data.machines import registry as machines

    assert machines.get("mi300a-cpx").gpus_per_node == 24
    assert set(f["variant"]) == {"Base_Seq", "Base_HIP", "RAJA_HIP"}
    checked = 0
    for d in dirs:
        for csvf in sorted(d.glob("*-kernel-run-data.csv"))[::5]:
            with open(csvf, newline="") as fh:
                table = [[c.strip() for c in r] for r in csv.reader(fh)][1:]
            head, body = table[0], [r for r in table[1:] if len(r) == len(table[0])]
            for r in map(lambda row: dict(zip(head, row)), body):
                mine = f.filter(
                    (pl.col("kernel") == r["Kernel"]) & (pl.col("variant") == r["Variant"])
                    & (pl.col("tuning") == r["Tuning"])
                    & (pl.col("problem_size") == int(r["Problem size"]))
                    & (pl.col("source_path") == f"{d.name}/{csvf.name}")
                )  # fmt: skip
                assert mine.height == 1, (csvf, r["Kernel"], r["Variant"])
                bw = float(r["Mean Bandwidth (GiB per sec.)"])
                assert mine["bandwidth_bytes_per_s"][0] / GIB == pytest.approx(bw, rel=1e-4)
                checked += 1
    assert checked > 50


def _csv_timer(d: Path) -> dict[tuple[str, str, str], float]:
    """(variant, tuning, kernel) -> RAJAPerf's seconds per rep: the timing CSV's average over
    passes divided by the kernels CSV's Reps (kernels of 0 reps left out: they did not run)."""
    with open(next(d.glob("*-kernels.csv")), newline="") as fh:
        kern = [[c.strip() for c in r] for r in csv.reader(fh)]
    head = next(r for r in kern if r and r[0] == "Kernels")
    reps = {r[0]: float(r[head.index("Reps")]) for r in kern[kern.index(head) + 1 :] if len(r) > 2}
    with open(next(d.glob("*-timing-Average.csv")), newline="") as fh:
        t = [[c.strip() for c in r] for r in csv.reader(fh)]
    variants, tunings = t[1], t[2]
    out = {}
    for row in t[3:]:
        if not row or row[0] not in reps or reps[row[0]] == 0:
            continue
        for v, tu, c in zip(variants[1:], tunings[1:], row[1:]):
            if c not in ("Not run", ""):
                out[(v, tu, row[0])] = float(c) / reps[row[0]]
    return out


def test_the_vm_same_run_sets_hold_rajaperfs_timer_and_refuse_what_did_not_run(shared_data):
    from xamm_ingest.formats.rajaperf import TIMER_METRIC

    root = shared_data / VM
    rep = read_rajaperf(root, workers=2)
    assert rep.rejected == [] and set(rep.frame["machine"]) == {"vm"}
    assert not [n for n in rep.notes if "not a known machine" in n]
    reasons = {d.rule for d in rep.dropped}
    assert any("Reps is 0" in r for r in reasons)  # --repfact 0.25 left some kernels 0 reps
    checked = 0
    for run in ("omp1", "omp2", "omp2_sizefact0.5"):
        want = _csv_timer(root / run)
        rows = rep.frame.filter(pl.col("source_path").str.starts_with(f"{run}/"))
        for r in rows.iter_rows(named=True):
            timer = {m["name"]: m["value"] for m in r["extra_metrics"] or []}.get(TIMER_METRIC)
            key = (r["variant"], r["tuning"], r["kernel"])
            if timer is None or key not in want:
                continue
            assert timer == pytest.approx(want[key], rel=1e-5), (run, key)
            checked += 1
        # no kernel that ran 0 reps is stored
        zero = {k for k in _zero_reps(root / run)}
        assert not set(rows["kernel"]) & zero, run
    assert checked > 500


def _zero_reps(d: Path) -> set[str]:
    with open(next(d.glob("*-kernels.csv")), newline="") as fh:
        kern = [[c.strip() for c in r] for r in csv.reader(fh)]
    head = next(r for r in kern if r and r[0] == "Kernels")
    return {r[0] for r in kern[kern.index(head) + 1 :] if len(r) > 2 and float(r[2]) == 0}
