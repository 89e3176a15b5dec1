"""One pipeline: the commit (once, or in resumable batches) and the executor (serial, processes) are
parameters, and neither changes a stored value. Every format goes through the batched path; a
format whose cross-source step needs one run's files together (RAJAPerf's CSV and Caliper files of
a directory) is cut only between directories."""

from __future__ import annotations

import re
import shutil
from concurrent import futures
from pathlib import Path

import polars as pl
import pytest
from conftest import FIXTURES
from polars.testing import assert_frame_equal

from xamm_data.store.reports import config_key
from xamm_data.store.store import Store
from xamm_data.tables.schema import APP_PROFILES, BENCHMARK_RUNS
from xamm_ingest import SampleSpec, ingest, pipeline
from xamm_ingest.format import get_format
from xamm_ingest.pipeline import commit
from xamm_ingest.pipeline.commit import chunks
from xamm_ingest.report import ArchiveReport, IngestReport
from xamm_ingest.sources import Plan, Task

UOB = Path("UoB-HPC+performance-portability") / "benchmarking" / "2019" / "babelstream"
PATTERNS = (r"^(?P<machine>[^/]+)/",)


def _stored(store: Path, kind: str) -> pl.DataFrame:
    """The table's rows in one order: configuration, then source (not trial: see ``_same``)."""
    schema = BENCHMARK_RUNS if kind == "benchmark_runs" else APP_PROFILES
    frame = Store(store).scan(kind).collect()
    key = [c for c in schema.primary_key if c in frame.columns and c != "trial"]
    return frame.sort([*key, "source_path", "source_sha256"])


def _same(a: pl.DataFrame, b: pl.DataFrame) -> None:
    """Every row and value the same. Trials of one configuration are numbered 0..n-1 by both,
    but in another order: one commit numbers them by run date then path, batches in commit order
    (an append never renumbers what the store holds), so ``trial`` is compared as a set."""
    assert a.height == b.height > 0
    # floats within a few ULPs: the two paths sum the same numbers in other groupings
    assert_frame_equal(
        a.drop("trial"), b.select(a.columns).drop("trial"), check_exact=False, rel_tol=1e-12
    )
    key = config_key(BENCHMARK_RUNS if "kernel" in a.columns else APP_PROFILES)
    for frame in (a, b):
        n = frame.group_by(key).agg(pl.col("trial").sort(), pl.len())
        assert all(t == list(range(k)) for t, k in n.select("trial", "len").iter_rows())


def _both(
    tmp_path: Path, fmt: str, paths, batch_files: int = 1, **opts
) -> tuple[IngestReport, IngestReport]:
    once = ingest(fmt, paths, store=tmp_path / "once", commit="once", workers=2, **opts)
    batches = ingest(
        fmt,
        paths,
        store=tmp_path / "batches",
        commit="batches",
        batch_files=batch_files,
        executor="serial",
        **opts,
    )
    assert isinstance(batches, ArchiveReport) and len(batches.commits) > 1
    return once, batches


def test_rajaperf_once_and_in_batches_store_the_same_rows(tmp_path):
    """The fixture's two runs (CSV and Caliper merged in run-1): one batch a directory."""
    once, batches = _both(tmp_path, "rajaperf", FIXTURES / "rajaperf_sample")
    assert isinstance(batches, ArchiveReport) and len(batches.commits) == 2
    assert batches.merged_rows == once.merged_rows > 0
    assert (len(batches.rejected), len(batches.dropped)) == (len(once.rejected), len(once.dropped))
    _same(
        _stored(tmp_path / "once", "benchmark_runs"),
        _stored(tmp_path / "batches", "benchmark_runs"),
    )
    # a rerun of the batched ingest skips every source: nothing new is committed
    again = ingest(
        "rajaperf", FIXTURES / "rajaperf_sample", store=tmp_path / "batches", commit="batches"
    )
    assert again.commits == [] and again.already_stored == batches.sources_read


def test_real_runs_once_and_in_batches_store_the_same_rows(tmp_path, shared_data, rajaperf_sets):
    runs = tmp_path / "runs"
    shutil.copytree(rajaperf_sets["tutorial_quartz"], runs / "quartz")
    shutil.copytree(shared_data / "rse-ops+vis-experiment", runs / "rse")
    (runs / "rse" / "xamm.toml").write_text('machine = "rse-node"\n')
    once, batches = _both(tmp_path, "rajaperf", runs, batch_files=16)
    assert once.merged_rows > 0 and batches.merged_rows == once.merged_rows
    _same(
        _stored(tmp_path / "once", "benchmark_runs"),
        _stored(tmp_path / "batches", "benchmark_runs"),
    )
    uob = shared_data / UOB
    stream_once, stream_batches = _both(
        tmp_path / "stream", "babelstream", uob, batch_files=16, path_patterns=PATTERNS
    )
    assert stream_once.sources_read == stream_batches.sources_read > 10
    _same(
        _stored(tmp_path / "stream" / "once", "benchmark_runs"),
        _stored(tmp_path / "stream" / "batches", "benchmark_runs"),
    )
    lulesh = shared_data / "LLNL+thicket-tutorial" / "data" / "lulesh"
    spec = SampleSpec(app="LULESH")
    app_once, app_batches = _both(tmp_path / "app", "caliper", lulesh, batch_files=16, spec=spec)
    assert app_once.sources_read == app_batches.sources_read > 100
    _same(
        _stored(tmp_path / "app" / "once", "app_profiles"),
        _stored(tmp_path / "app" / "batches", "app_profiles"),
    )


def _said(rep: IngestReport) -> tuple:
    """What an ingest said, in one order: rejections, dropped records, notes."""
    return (
        sorted((r.path, r.reason) for r in rep.rejected),
        sorted((d.path, d.record, d.field, d.rule) for d in rep.dropped),
        sorted(rep.notes),
    )


def test_rows_made_a_frame_a_batch_at_a_time_are_checked_once(tmp_path, monkeypatch):
    """An ingest makes its rows a frame a batch at a time and runs the record rules once, over
    every batch's frame: the same rows, rejections, dropped records (each credited to its file)
    and notes as with every row in one frame."""
    runs = tmp_path / "runs"
    shutil.copytree(FIXTURES / "bad", runs / "bad")
    shutil.copytree(FIXTURES / "rajaperf_sample", runs / "sample")
    calls: dict[str, list[int]] = {"frames": [], "checks": []}

    def counted(name, real):
        def call(*args):
            calls[name].append(len(args[1]) if name == "frames" else args[0].height)
            return real(*args)

        return call

    monkeypatch.setattr(commit, "rows_frame", counted("frames", commit.rows_frame))
    monkeypatch.setattr(commit, "checked", counted("checks", commit.checked))
    reports = {}
    for rows in (1, 10**9):  # a frame for every chunk's rows, or one for all of them
        monkeypatch.setattr(commit, "CHECK_ROWS", rows)
        calls = {"frames": [], "checks": []}
        reports[rows] = ingest("rajaperf", runs, machine="example-node", workers=1)
        assert len(calls["checks"]) == 1 and calls["checks"][0] > 0
        assert (len(calls["frames"]) > 2) if rows == 1 else (len(calls["frames"]) == 1)
    by_chunk, whole = reports[1], reports[10**9]
    assert _said(by_chunk) == _said(whole)
    assert len(whole.rejected) >= 3 and len(whole.dropped) >= 3
    assert "zero_time.cali" in {Path(d.path).name for d in whole.dropped}
    flat = [c for c, t in whole.frame.schema.items() if not isinstance(t, pl.List)]
    assert_frame_equal(by_chunk.frame.sort(flat), whole.frame.sort(flat))


def test_batches_are_cut_only_between_groups():
    tasks = [Task("x", Path(f"d{i // 3}/f{i}"), Path(".")) for i in range(8)]
    by_dir = [[t.path.name for t in c] for c in chunks(iter(tasks), 2, lambda t: t.path.parent)]
    assert by_dir == [["f0", "f1", "f2"], ["f3", "f4", "f5"], ["f6", "f7"]]
    plain = [[t.path.name for t in c] for c in chunks(iter(tasks), 3)]
    assert plain == [["f0", "f1", "f2"], ["f3", "f4", "f5"], ["f6", "f7"]]
    assert [len(c) for c in chunks(iter(tasks), 5, lambda t: t.path.parent)] == [6, 2]


def test_the_commit_and_executor_are_checked_before_anything_is_read(tmp_path):
    with pytest.raises(ValueError, match="unknown commit 'twice'"):
        ingest("rajaperf", FIXTURES / "rajaperf_sample", commit="twice", store=tmp_path)
    with pytest.raises(ValueError, match="unknown executor 'threads'"):
        ingest("rajaperf", FIXTURES / "rajaperf_sample", executor="threads", store=tmp_path)
    with pytest.raises(ValueError, match="strict reads everything before writing"):
        ingest("caliper", tmp_path, commit="batches", strict=True, spec=SampleSpec(app="a"))
    with pytest.raises(ValueError, match="read for prediction only"):
        ingest("region-table", tmp_path, store=tmp_path)
    assert not (tmp_path / "benchmark_runs").exists()
    assert get_format("caliper").batched and not get_format("rajaperf").batched
    assert isinstance(get_format("rajaperf").plan([FIXTURES / "rajaperf_sample"], {}), Plan)


_COUNTS = [("workers", v) for v in (0, -2, 2.5, "2", True)] + [("batch_files", v) for v in (0, 1.5)]


@pytest.mark.parametrize(
    ("name", "value", "commit_mode"),
    [(n, v, "batches") for n, v in _COUNTS]
    + [(n, v, "once") for n, v in _COUNTS if n == "workers"],
)
def test_a_count_below_one_or_not_whole_is_refused_not_read_as_the_default(
    name, value, commit_mode, tmp_path
):
    """``workers`` and ``batch_files`` as the command line takes them: whole numbers >= 1 (None:
    the default); 0 is not "the CPUs", and nothing is written."""
    with pytest.raises(ValueError, match=f"{name} must be a whole number >= 1, not {value!r}"):
        ingest(
            "rajaperf", FIXTURES / "rajaperf_sample", store=tmp_path, commit=commit_mode,
            **{name: value},
        )  # fmt: skip
    assert not (tmp_path / "benchmark_runs").exists()


def test_a_missing_extra_met_while_ingesting_is_one_line(monkeypatch, capsys, tmp_path):
    import xamm_ingest.cli as cli

    def needs_hatchet(*args, **kwargs):
        raise ModuleNotFoundError("No module named 'hatchet'", name="hatchet")

    monkeypatch.setattr(cli, "_ingest", needs_hatchet)
    argv = ["hpctoolkit", str(tmp_path), "--app", "a", "--machine", "quartz", "--no-progress"]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "pip install 'xamm[hatchet]'" in err and "Traceback" not in err
    assert err.count("\n") == 1 and str(tmp_path) in err


def test_mapped_tables_and_databases_go_through_batches_too(tmp_path, shared_data):
    """A format whose reader returns a frame (a mapped table) and one whose sources are
    directories (HPCToolkit databases) store the same rows committed once or in batches."""
    REPO = Path(__file__).resolve().parents[2]
    tables = tmp_path / "tables"
    tables.mkdir()
    for i in range(3):
        (tables / f"s{i}.csv").write_text(
            "application,system,time_ms,nthreads,size,notes,br\n"
            f"Laghos,ruby,{1520.5 + i},36,16,first,1.2e9\nLaghos,ruby,{2930.1 + i},36,32,x,2.3e9\n"
        )
    mapping = REPO / "examples" / "table-mapping.toml"
    once, batches = _both(tmp_path / "t", "table", tables, mapping=mapping)
    assert once.sources_read == batches.sources_read == 3 and len(batches.commits) == 3
    _same(
        _stored(tmp_path / "t" / "once", "app_profiles"),
        _stored(tmp_path / "t" / "batches", "app_profiles"),
    )
    metadb = shared_data / "HPCToolkit+hpcviewer.e4" / "tests" / "resources" / "metadb"
    spec = SampleSpec(app="tests", machine="quartz")
    once, batches = _both(tmp_path / "h", "hpctoolkit", metadb, spec=spec)
    assert once.sources_read == batches.sources_read >= 4
    _same(
        _stored(tmp_path / "h" / "once", "app_profiles"),
        _stored(tmp_path / "h" / "batches", "app_profiles"),
    )


@pytest.mark.parametrize("commit", ["once", "batches"])
def test_a_failing_merge_rejects_each_source_of_its_run_once(monkeypatch, tmp_path, commit):
    import xamm_ingest.formats.rajaperf as rp

    runs = tmp_path / "runs"
    shutil.copytree(FIXTURES / "rajaperf_sample", runs)
    real = rp.merge_csv_and_caliper

    def merge(frame, **kw):
        if frame.get_column("source_path").str.starts_with("run-1").any():
            raise pl.exceptions.ComputeError("merge blew up")
        return real(frame, **kw)

    monkeypatch.setattr(rp, "merge_csv_and_caliper", merge)
    rep = ingest("rajaperf", runs, commit=commit, batch_files=1, executor="serial", dry_run=True)
    assert sorted(r.path for r in rep.rejected) == [
        "run-1/Base_Seq-default.cali",
        "run-1/RAJAPerf-kernel-run-data.csv",
    ]
    assert all("ComputeError: merge blew up" in r.reason for r in rep.rejected)


@pytest.mark.parametrize("commit", ["once", "batches"])
def test_local_processes_read_only_enough_sources_and_store_what_one_process_does(
    monkeypatch, tmp_path, commit
):
    """Under ``POOL_MIN_FILES`` sources no process is started; from it, local processes store
    the rows one process stores."""
    started = []
    real = futures.ProcessPoolExecutor

    def counted(*args, **kwargs):
        started.append(kwargs.get("max_workers"))
        return real(*args, **kwargs)

    monkeypatch.setattr(futures, "ProcessPoolExecutor", counted)
    opts = {"commit": commit, "workers": 2}
    if commit == "batches":
        opts["batch_files"] = 1
    src = FIXTURES / "rajaperf_sample"
    ingest("rajaperf", src, store=tmp_path / "here", **opts)
    assert started == []
    monkeypatch.setattr(pipeline, "POOL_MIN_FILES", 2)
    ingest("rajaperf", src, store=tmp_path / "pool", **opts)
    assert started == [2]
    _same(
        _stored(tmp_path / "here", "benchmark_runs"), _stored(tmp_path / "pool", "benchmark_runs")
    )


def test_a_chunk_is_read_with_the_collector_paused_and_its_state_given_back(monkeypatch):
    """The cyclic collector is off while a chunk's sources are read, and afterwards as it was
    before: on, off, or on again after a reader raised."""
    import gc

    from xamm_ingest.pipeline import stages

    seen: list[bool] = []
    monkeypatch.setattr(stages, "read_one", lambda task, opts: seen.append(gc.isenabled()) or task)
    assert gc.isenabled()
    assert stages.read_chunk(["a", "b"], {}) == ["a", "b"]
    assert seen == [False, False] and gc.isenabled()
    gc.disable()
    try:
        stages.read_chunk(["a"], {})
        assert not gc.isenabled()
    finally:
        gc.enable()

    def raising(task, opts):
        raise RuntimeError("a reader's bug")

    monkeypatch.setattr(stages, "read_one", raising)
    with pytest.raises(RuntimeError):
        stages.read_chunk(["a"], {})
    assert gc.isenabled()


def test_a_chunks_profiles_share_one_object_per_repeated_label_and_metadata_value(shared_data):
    """Two profiles of one corpus read in one chunk hold each label and metadata value they
    repeat as one object (what a worker pickles once and a waiting batch holds once)."""
    from xamm_ingest.pipeline.stages import hashed, read_chunk
    from xamm_ingest.readers.profile_common import SampleSpec
    from xamm_ingest.records import Bounds
    from xamm_ingest.sources import Task

    root = shared_data / "LLNL+thicket-tutorial/data/parallel-sorting"
    files = sorted(root.rglob("*.cali"))[:2]
    opts = {"spec": SampleSpec(app="sort", machine="grace"), "bounds": Bounds()}
    (_, (a,), _), (_, (b,), _) = read_chunk([hashed(Task("caliper", f, root)) for f in files], opts)
    meta_a = {e["name"]: e["value"] for e in a["extra_metadata"]}
    meta_b = {e["name"]: e["value"] for e in b["extra_metadata"]}
    same = [k for k in meta_a if k in meta_b and meta_a[k] == meta_b[k]]
    assert "libraries" in same and len(meta_a["libraries"]) > 1000
    assert all(meta_a[k] is meta_b[k] for k in same)
    assert a["regions"][0]["region"] is b["regions"][0]["region"]


@pytest.mark.parametrize(
    ("paths", "error", "said"),
    [
        ("", ValueError, "an empty path (it would read the current folder)"),
        ([FIXTURES, ""], ValueError, "an empty path"),
        ([], ValueError, "an empty list names no file or folder"),
        (None, TypeError, "paths: a NoneType; expected a file or folder"),
        (5, TypeError, "paths: an int;"),
        ([FIXTURES, None], TypeError, "a NoneType among them"),
    ],
)
@pytest.mark.parametrize("commit_mode", ["once", "batches"])
def test_no_path_or_an_empty_one_is_refused_never_read_as_the_current_folder(
    paths, error, said, commit_mode, tmp_path, monkeypatch
):
    """``Path("")`` is the current folder: a library call whose path variable is empty must not
    ingest wherever the process runs."""
    shutil.copytree(FIXTURES / "rajaperf_sample", tmp_path / "here")
    monkeypatch.chdir(tmp_path / "here")
    with pytest.raises(error, match=re.escape(said)):
        ingest("rajaperf", paths, store=tmp_path / "store", commit=commit_mode)
    assert not (tmp_path / "store").exists()
