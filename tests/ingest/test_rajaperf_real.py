"""RAJAPerf ingest on the real public data in ../shared/data: values checked against the sources."""

from __future__ import annotations

import ast
import json
import math
from datetime import UTC, datetime
from pathlib import Path

import caliperreader
import polars as pl
import pytest

from xamm_data import load_dataset
from xamm_data.store.store import Store
from xamm_ingest import ingest_rajaperf, read_rajaperf
from xamm_ingest.readers.base import Source
from xamm_ingest.readers.rajaperf_caliper import read_caliper

GIB = float(1 << 30)


def raw_record(path: Path, kernel_path: list[str]) -> tuple[dict, dict]:
    """The record at ``kernel_path`` and the globals, read with caliperreader alone."""
    r = caliperreader.CaliperReader()
    r.read(str(path))
    for rec in r.records:
        if rec.get("path") == kernel_path:
            return rec, r.globals
    raise AssertionError(f"{kernel_path} not in {path}")


def one(df: pl.DataFrame, **eq) -> dict:
    out = df.filter(*[pl.col(k) == v for k, v in eq.items()])
    assert out.height == 1, (eq, out.height)
    return out.row(0, named=True)


@pytest.fixture(scope="module")
def thicket_frame(rajaperf_sets):
    rep = read_rajaperf(rajaperf_sets["thicket"], workers=1)
    assert rep.rejected == []
    return rep.frame


def test_quartz_daxpy_matches_source(thicket_frame, rajaperf_sets):
    f = (
        rajaperf_sets["thicket"]
        / "quartz"
        / "gcc10.3.1_2097152"
        / "O3"
        / "1"
        / "Base_Seq-default.cali"
    )
    rec, g = raw_record(f, ["RAJAPerf", "Basic", "Basic_DAXPY"])
    row = one(thicket_frame, machine="quartz", kernel="Basic_DAXPY", problem_size=2097152)
    reps = float(rec["any#any#max#Reps"])
    assert row["reps"] == reps == 500
    assert row["time_per_rep_s"] == pytest.approx(
        float(rec["avg#inclusive#sum#time.duration"]) / reps, rel=1e-12
    )
    assert row["time_per_rep_s"] == pytest.approx(0.716258 / 500)
    assert row["bytes_per_rep"] == float(rec["any#any#max#Bytes/Rep"]) == 24 * 2097152
    assert row["flops_per_rep"] == 4194304
    assert (row["variant"], row["tuning"], row["backend"], row["device"], row["threads"]) == (
        "Base_Seq",
        "default",
        "Seq",
        "cpu",
        1,
    )
    assert row["omp_max_threads"] == 72 and row["compiler"] == "g++-10.3.1"
    assert row["run_date"] == datetime.fromtimestamp(int(g["launchdate"]), tz=UTC)
    assert row["tool_versions"] == "caliper=2.10.0-dev;raja=2022.10.5;rajaperf=1.10.0"
    assert row["source_path"] == "quartz/gcc10.3.1_2097152/O3/1/Base_Seq-default.cali"
    assert row["bandwidth_bytes_per_s"] == pytest.approx(
        row["bytes_per_rep"] / row["time_per_rep_s"]
    )


def test_quartz_trials_follow_run_dates(thicket_frame):
    q = thicket_frame.filter(
        pl.col("machine") == "quartz",
        pl.col("kernel") == "Basic_DAXPY",
        pl.col("problem_size") == 1048576,
    ).sort("trial")
    assert q.get_column("trial").to_list() == [0, 1, 2, 3]
    dates = q.get_column("run_date").to_list()
    assert dates == sorted(dates)


def test_lassen_cuda_rows(thicket_frame, rajaperf_sets):
    f = (
        rajaperf_sets["thicket"]
        / "lassen"
        / "clang10.0.1_nvcc10.2.89_2097152"
        / "1"
        / "Base_CUDA-block_256.cali"
    )
    rec, _ = raw_record(f, ["RAJAPerf", "Stream", "Stream_TRIAD"])
    lassen = thicket_frame.filter(pl.col("machine") == "lassen")
    assert set(lassen.get_column("device")) == {"gpu"} and set(lassen.get_column("backend")) == {
        "CUDA"
    }
    row = one(
        lassen,
        kernel="Stream_TRIAD",
        tuning="block_256",
        problem_size=int(float(rec["any#any#max#ProblemSize"])),
    )
    assert row["block_size"] == 256
    assert row["time_per_rep_s"] == pytest.approx(
        float(rec["avg#inclusive#sum#time.duration"]) / float(rec["any#any#max#Reps"])
    )
    assert row["compiler"] == "clang++-10.0.1+nvcc-10.2.89"


def test_tutorial_quartz_nanoseconds_and_topdown(rajaperf_sets):
    f = (
        rajaperf_sets["tutorial_quartz"]
        / "GCC_10.3.1_BaseSeq_08388608"
        / "O3"
        / "GCC_1031_BaseSeq_O3_8388608_01.cali"
    )
    rec, _ = raw_record(f, ["RAJAPerf", "Basic", "Basic_COPY8"])
    rows = read_caliper(Source.of(f)).full_rows()
    row = next(r for r in rows if r["kernel"] == "Basic_COPY8")
    ns = float(rec["inclusive#sum#time.duration.ns"])
    assert row["time_per_rep_s"] == pytest.approx(ns * 1e-9 / 50)
    assert 0.1 < row["time_per_rep_s"] < 1.0  # 11.97 s over 50 reps, not 1e9 times that
    assert row["topdown_retiring"] == pytest.approx(float(rec["any#topdown.retiring"]))
    assert row["topdown_l1_bound"] == pytest.approx(float(rec["any#topdown.l1_bound"]))
    assert row["compiler_flags"].endswith("-O3")


def test_older_layouts_tuning_leaves_and_adiak_kernel_info(rajaperf_sets):
    # XL lassen: Variant -> Group -> Kernel -> Kernel.tuning, per-kernel figures only in Adiak
    # globals
    f = rajaperf_sets["tutorial_lassen"] / "XL_BaseCuda_01048576_01.cali"
    rec, g = raw_record(f, ["Base_CUDA", "Apps", "Apps_PRESSURE", "Apps_PRESSURE.block_128"])
    # a Python-literal dict written by RAJAPerf's Adiak support
    info = ast.literal_eval(g["Apps_PRESSURE"])
    rows = [r for r in read_caliper(Source.of(f)).full_rows() if r["kernel"] == "Apps_PRESSURE"]
    row = next(r for r in rows if r["tuning"] == "block_128")
    assert row["reps"] == info["Reps"] and row["problem_size"] == info["Problem size"]
    assert row["time_per_rep_s"] == pytest.approx(
        float(rec["avg#inclusive#sum#time.duration"]) / info["Reps"]
    )
    assert row["bytes_per_rep"] == info["Bytes/rep"]
    assert len({r["tuning"] for r in rows}) == len(rows) >= 1
    # GCC 8.3.1 quartz: Base_Seq root, Kernel.default leaves, seconds without a unit attribute
    f = next((rajaperf_sets["tutorial_quartz"] / "GCC_831_BaseSeq_O3_08388608").glob("*.cali"))
    rec, _ = raw_record(f, ["Base_Seq", "Basic", "Basic_DAXPY", "Basic_DAXPY.default"])
    row = next(r for r in read_caliper(Source.of(f)).full_rows() if r["kernel"] == "Basic_DAXPY")
    assert row["tuning"] == "default" and row["variant"] == "Base_Seq"
    assert row["time_per_rep_s"] == pytest.approx(float(rec["inclusive#sum#time.duration"]) / 500)


def test_every_real_caliper_file_ingests(rajaperf_sets, tmp_path):
    rep = ingest_rajaperf(
        [
            rajaperf_sets["thicket"],
            rajaperf_sets["tutorial_quartz"],
            rajaperf_sets["tutorial_lassen"],
        ],
        store=Store(tmp_path / "s"),
        workers=2,
    )
    assert rep.rejected == []
    assert rep.sources_read == 18 + 73 + 48
    assert set(rep.frame.get_column("machine")) == {"quartz", "lassen"}
    assert rep.frame.get_column("kernel").n_unique() >= 64
    q = load_dataset("quartz", store=Store(tmp_path / "s"))
    assert q.height == rep.frame.filter(pl.col("machine") == "quartz").height


def test_h100_csv_values(rajaperf_sets):
    rep = read_rajaperf(
        [rajaperf_sets["h100_tier1"], rajaperf_sets["h100_tier2"]], machine="h100-node", workers=2
    )
    assert rep.rejected == [] and rep.sources_read == 220
    df = rep.frame
    row = one(df, kernel="Apps_DIFFUSION3DPA", problem_size=405, variant="Base_Seq")
    assert row["time_per_rep_s"] == 5.93228e-06
    assert (row["reps"], row["bytes_per_rep"], row["flops_per_rep"], row["ranks"]) == (
        50,
        55992,
        77985,
        4,
    )
    assert (row["device"], row["checksum_status"], row["operational_complexity"]) == (
        "cpu",
        "PASSED",
        "O(N)",
    )
    gpu = one(df, kernel="Apps_DIFFUSION3DPA", problem_size=405, variant="RAJA_CUDA")
    assert (gpu["device"], gpu["block_size"], gpu["time_per_rep_s"]) == ("gpu", 64, 4.04854e-06)
    assert set(df.get_column("device")) == {"cpu", "gpu"}
    assert (df.get_column("time_per_rep_min_s") <= df.get_column("time_per_rep_max_s")).all()


def test_mi300a_csv_bandwidth_matches_reported(rajaperf_sets):
    d = rajaperf_sets["mi300a_tier1"]
    rep = read_rajaperf([d, rajaperf_sets["mi300a_tier2"]], machine="mi300a-spx", workers=1)
    assert rep.rejected == [] and rep.sources_read == 256
    row = one(rep.frame, kernel="Apps_EDGE3D", problem_size=2985984, variant="Base_Seq")
    assert row["time_per_rep_s"] == 5.04570 and row["reps"] == 10
    assert row["time_per_rep_min_s"] == pytest.approx(50.456997 / 10)
    # the bandwidth RAJAPerf printed, read independently, equals bytes/rep / time/rep / 2^30
    for f in sorted(d.glob("*-kernel-run-data.csv"))[:20]:
        src = pl.read_csv(f, skip_rows=1, separator=",", truncate_ragged_lines=True)
        src = src.rename({c: c.strip() for c in src.columns}).with_columns(
            pl.col(pl.String).str.strip_chars()
        )
        for r in src.iter_rows(named=True):
            mine = one(
                rep.frame,
                kernel=r["Kernel"],
                variant=r["Variant"],
                tuning=r["Tuning"],
                problem_size=int(r["Problem size"]),
                source_path=f"{d.name}/{f.name}",
            )
            assert mine["bandwidth_bytes_per_s"] / GIB == pytest.approx(
                float(r["Mean Bandwidth (GiB per sec.)"]), rel=1e-4
            )


def test_workers_do_not_change_the_result(rajaperf_sets):
    a = read_rajaperf(rajaperf_sets["thicket"], workers=1).frame
    b = read_rajaperf(rajaperf_sets["thicket"], workers=2).frame
    assert a.equals(b)


def test_cli_ingest_real_then_reingest_is_idempotent(rajaperf_sets, tmp_path, capsys):
    from xamm_ingest.cli import main

    store = tmp_path / "store"
    args = [
        "rajaperf",
        str(rajaperf_sets["h100_tier1"]),
        "--machine",
        "h100-node",
        "--store",
        str(store),
        "--no-progress",
        "--json",
    ]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    path = Store(store).partition_path("benchmark_runs", "h100-node")
    before = path.read_bytes()
    assert main(args) == 0
    second = json.loads(capsys.readouterr().out)
    assert first["rows"] == second["rows"] == second["partitions"][0]["rows_after"]
    assert second["partitions"][0]["rows_replaced"] == first["rows"]
    assert path.read_bytes() == before
    assert not math.isnan(
        load_dataset("h100-node", store=Store(store)).get_column("time_per_rep_s").sum()
    )


def test_the_real_same_run_pair_stores_every_row_with_both_timers(shared_data):
    """The 2024-era run of rse-ops/vis-experiment: the CSV and the three .cali files of one run
    differ by about 1e-3 relative (two timers); every row is stored, Caliper's time equal to
    caliperreader's, RAJAPerf's beside it equal to the CSV's, and the CSV rows are counted as
    merged."""
    import csv

    from xamm_ingest.formats.rajaperf import AGREE_RTOL, TIMER_METRIC

    d = shared_data / "rse-ops+vis-experiment"
    rep = read_rajaperf(d, machine="rse-node", workers=1)
    assert (
        rep.rejected == [] and rep.dropped == [] and rep.frame.height == 5 and rep.merged_rows == 5
    )
    with open(d / "RAJAPerf-kernels.csv", newline="") as f:
        kern = [[c.strip() for c in r] for r in csv.reader(f)]
    reps = float(kern[2][kern[1].index("Reps")])
    with open(d / "RAJAPerf-timing-Average.csv", newline="") as f:
        t = [[c.strip() for c in r] for r in csv.reader(f)]
    csv_t = {(v, tu): float(c) / reps for v, tu, c in zip(t[1][1:], t[2][1:], t[3][1:])}
    skews = []
    for r in rep.frame.iter_rows(named=True):
        f = d / f"{r['variant']}.cali"
        ref = caliperreader.CaliperReader()
        ref.read(str(f))
        # Variant -> ... -> tuning
        leaf = [r["variant"], "Algorithm", "Algorithm_MEMSET", f"Algorithm_MEMSET.{r['tuning']}"]
        rec = next(x for x in ref.records if x.get("path") == leaf)
        assert r["time_per_rep_s"] == pytest.approx(
            float(rec["avg#inclusive#sum#time.duration"]) / reps, rel=1e-9
        )
        timer = {m["name"]: m["value"] for m in r["extra_metrics"]}[TIMER_METRIC]
        assert timer == pytest.approx(csv_t[(r["variant"], r["tuning"])], rel=1e-12)
        skews.append(abs(r["time_per_rep_s"] / timer - 1))
    assert 1e-4 < max(skews) < AGREE_RTOL  # beyond the old tolerance, well inside the derived one


def test_without_a_machine_the_csv_says_why_the_caliper_files_beside_it_cannot_name_one(
    shared_data,
):
    rep = read_rajaperf(shared_data / "rse-ops+vis-experiment", workers=1)
    csv_reason = next(r.reason for r in rep.rejected if r.path.endswith(".csv"))
    assert (
        "none of the 3 Caliper file(s) beside them names a cluster" in csv_reason
        and "--machine" in csv_reason
    )


def test_a_figure_written_as_text_reads_as_the_file_says_and_the_plans_hash_is_kept(
    rajaperf_sets, tmp_path
):
    """The reader converts a record's figures, times and counters at once where each is a number;
    a value that is no number still reads as it did one by one (a figure or counter as missing, a
    time as NaN), checked against the file parsed with caliperreader. A source is stored under the
    hash the plan took: the reader does not read the file again for it."""
    import shutil

    from xamm_ingest.pipeline.stages import read_one
    from xamm_ingest.records import Bounds
    from xamm_ingest.sources import Task

    src = (
        rajaperf_sets["tutorial_quartz"]
        / "GCC_10.3.1_BaseSeq_08388608"
        / "O3"
        / "GCC_1031_BaseSeq_O3_8388608_01.cali"
    )
    f = tmp_path / src.name
    shutil.copy(src, f)
    want, _ = raw_record(f, ["RAJAPerf", "Basic", "Basic_COPY8"])
    row = next(r for r in read_caliper(Source.of(f)).full_rows() if r["kernel"] == "Basic_COPY8")
    assert row["topdown_retiring"] == float(want["any#topdown.retiring"])
    assert row["problem_size"] == float(want["any#ProblemSize"])
    # each value of these attributes is written as text in the file itself
    text = f.read_text()
    for attr in ("any#topdown.retiring", "any#Flops/Rep"):
        node = next(ln for ln in text.splitlines() if f",data={attr}," in ln)
        nid = node.split(",")[1].removeprefix("id=")
        lines = []
        for ln in text.splitlines():
            fields = dict(p.split("=", 1) for p in ln.split(",")) if "\\" not in ln else {}
            if fields.get("__rec") == "ctx" and nid in fields.get("attr", "").split("="):
                ids, vals = fields["attr"].split("="), fields["data"].split("=")
                vals = ["n/a" if i == nid else v for i, v in zip(ids, vals)]
                ln = ln.replace(f"data={fields['data']}", "data=" + "=".join(vals))
            lines.append(ln)
        text = "\n".join(lines) + "\n"
    f.write_text(text)
    got, _ = raw_record(f, ["RAJAPerf", "Basic", "Basic_COPY8"])
    assert got["any#topdown.retiring"] == "n/a" and got["any#Flops/Rep"] == "n/a"
    task = Task("rajaperf", f, tmp_path, sha256="ab" * 32)
    out, rows, _ = read_one(task, {"bounds": Bounds(), "machine": None})
    assert out.error is None, out.error
    row = next(r for r in rows if r["kernel"] == "Basic_COPY8")
    assert row["topdown_retiring"] is None and row.get("flops_per_rep") is None
    assert row["topdown_l1_bound"] == float(got["any#topdown.l1_bound"])
    assert row["problem_size"] == float(got["any#ProblemSize"])
    assert out.shared["source_sha256"] == "ab" * 32  # every row's, given once
