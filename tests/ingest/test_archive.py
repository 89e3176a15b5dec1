"""A centre's archive into one table (xamm_ingest.archive): metadata mapped onto columns, batched
commits, a resumed ingest equal to an uninterrupted one, and the whole parallel-sorting corpus
(10,563 Caliper profiles written by 18 teams) read or refused by name, its stored values checked
against caliperreader's own parse."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from cali_writer import write_cali

from xamm_data.store.store import Store
from xamm_ingest import ingest_archive
from xamm_ingest.cli import main
from xamm_ingest.metadata_map import MetadataMap
from xamm_ingest.readers.profile_common import SampleSpec

SORT = Path("LLNL+thicket-tutorial") / "data" / "parallel-sorting"
TIME = "inclusive#sum#time.duration"


def _profile(path: Path, seconds: float, **globals_) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_cali(
        path, [(["main"], {TIME: seconds})], {k: str(v) for k, v in globals_.items()},
        units={TIME: "sec"},
    )  # fmt: skip


def _table(store: Path) -> pl.DataFrame:
    return Store(store).scan("app_profiles").collect().sort("source_sha256")


def _cli(argv: list[str], capsys) -> tuple[int, dict]:
    capsys.readouterr()
    rc = main([*argv, "--json", "--no-progress"])
    return rc, json.loads(capsys.readouterr().out)


# -- the metadata map ----------------------------------------------------------------------------
def test_team_spellings_map_onto_one_column_and_the_rest_is_kept():
    m = MetadataMap()
    for spelling in ({"Algorithm": "MergeSort"}, {"algorithm": "MergeSort"}, {"ALGORITHM": "x"}):
        assert "variant" in m.apply(spelling).columns
    got = m.apply(
        {
            "InputSize": "65536", "input_type": "Random", "Programming_Model": "CUDA",
            "num_procs": "4", "mpi.world.size": "8", "group_num": "7", "cluster": "c",
            "cali.caliper.version": "2.11", "spot:output": "x.cali", "num_threads": "N/A",
        }
    )  # fmt: skip
    assert got.columns == {
        "input_size": 65536, "input_type": "Random", "programming_model": "CUDA", "ranks": 8,
    }  # fmt: skip
    # Caliper's count of ranks wins; the team's own key stays, as does every other unmapped key
    assert {e["name"]: e["value"] for e in got.extra} == {
        "num_procs": "4", "group_num": "7", "num_threads": "N/A",
    }  # fmt: skip


def test_what_a_map_took_of_a_value_is_kept_and_is_what_it_takes_anew():
    """A map keeps what a column took of each text value (and each extra entry) for the next
    profile: over 400 seeded profiles read one after the other by two maps in turn, each answer is
    the one worked out with nothing kept; a refused value's note comes every time, and a list value
    (no key to keep an entry by) is still kept in extra."""
    from xamm_ingest import metadata_map as mm

    rng = random.Random(66)
    pool = {
        "InputSize": ("65536", "2^20", "abc", "N/A", "", "-3", "1e6"),
        "num_procs": ("4", "none", "many", "0"), "mpi.world.size": ("8", "nan", "unknown"),
        "Algorithm": ("MergeSort", "-", "Bubble"), "implementation": ("A", "n/a"),
        "InputType": ("1% Perturbed", "Random", "NULL"), "group_num": ("7", "8"),
        "libraries": (["a.so", "b.so"], "[x]"), "ProgrammingModel": ("MPI", "CUDA", " "),
    }  # fmt: skip
    maps = [
        MetadataMap(),
        MetadataMap(variant=("implementation",), values={"input_type": {"1% Perturbed": "p1"}}),
    ]

    def taken(m: MetadataMap, g: dict) -> tuple:
        got = m.apply(g)
        return got.columns, [dict(e) for e in got.extra], got.notes

    profiles = [
        {k: rng.choice(vs) for k, vs in pool.items() if rng.random() < 0.8} for _ in range(400)
    ]
    kept = [taken(maps[i % 2], g) for i, g in enumerate(profiles)]
    assert mm._CELLS  # the answers were kept
    for i, g in enumerate(profiles):
        mm._CELLS.clear(), mm._ENTRIES.clear(), mm._PLANS.clear()
        assert taken(maps[i % 2], g) == kept[i], g
    refused = {"num_procs": "many"}
    assert [len(taken(maps[0], refused)[2]) for _ in range(2)] == [1, 1]
    assert taken(maps[0], {"libraries": ["a.so", "b.so"]})[1] == [
        {"name": "libraries", "value": "[a.so,b.so]"}
    ]


def test_a_user_map_goes_first_and_a_value_that_is_no_number_stays_in_extra():
    m = MetadataMap().merged(
        MetadataMap(variant=("implementation",), values={"input_type": {"1% Perturbed": "p1"}})
    )
    got = m.apply({"implementation": "A", "Algorithm": "B", "InputType": "1% Perturbed",
                   "InputSize": "2^20", "num_procs": "many"})  # fmt: skip
    assert got.columns == {"variant": "A", "input_type": "p1", "input_size": 2**20}
    assert {e["name"] for e in got.extra} == {"Algorithm", "num_procs"}
    assert any("num_procs='many'" in n for n in got.notes)


def test_xamm_toml_and_map_option_extend_the_defaults(tmp_path, capsys):
    _profile(tmp_path / "a" / "p.cali", 1.0, cluster="c", impl="bitonic", dist="sorted")
    (tmp_path / "a" / "xamm.toml").write_text('[metadata]\nvariant = ["impl"]\n')
    _profile(tmp_path / "b" / "q.cali", 2.0, cluster="c", impl="x", dist="reverse")
    store = tmp_path / "store"
    rc, out = _cli(["caliper", str(tmp_path), "--app", "sort", "--machine", "m",
                    "--map", "input_type=dist", "--store", str(store)], capsys)  # fmt: skip
    assert rc == 0 and out["rows_written"] == 2
    rows = {r["source_path"]: r for r in _table(store).iter_rows(named=True)}
    assert rows["a/p.cali"]["variant"] == "bitonic"  # its directory's xamm.toml
    assert rows["b/q.cali"]["variant"] is None  # not under that xamm.toml: impl stays extra
    assert {"name": "impl", "value": "x"} in rows["b/q.cali"]["extra_metadata"]
    assert [rows[k]["input_type"] for k in ("a/p.cali", "b/q.cali")] == ["sorted", "reverse"]


def test_a_bad_xamm_toml_rejects_the_files_it_covers_by_name(tmp_path, capsys):
    _profile(tmp_path / "bad" / "p.cali", 1.0, cluster="c")
    (tmp_path / "bad" / "xamm.toml").write_text('[metadata]\nvariant = "not a list"\n')
    _profile(tmp_path / "good" / "q.cali", 1.0, cluster="c")
    rc, out = _cli(["caliper", str(tmp_path), "--app", "a", "--machine", "m",
                    "--store", str(tmp_path / "s")], capsys)  # fmt: skip
    assert rc == 0 and out["rows_written"] == 1
    (rej,) = out["rejected_files"]
    assert rej["path"].endswith("p.cali") and "xamm.toml" in rej["reason"]


@pytest.mark.parametrize(
    ("metadata", "said"),
    [
        ('variant = [""]', "metadata.variant': Value error, an empty metadata key"),
        ('values = {variant = {"" = "x"}}', "variant: an empty spelling"),
        ('values = {varient = {"a" = "x"}}', "'varient' is no column; the columns are variant"),
    ],
)
def test_a_metadata_map_that_could_never_apply_rejects_the_files_it_covers(
    metadata, said, tmp_path, capsys
):
    """An ``xamm.toml`` ``[metadata]`` key or spelling is never empty, and spellings go to a
    column a map fills: what could never match is refused naming the file, not ignored."""
    _profile(tmp_path / "p.cali", 1.0, cluster="c", impl="x")
    (tmp_path / "xamm.toml").write_text(f"[metadata]\n{metadata}\n")
    rc, out = _cli(["caliper", str(tmp_path), "--app", "a", "--machine", "m",
                    "--store", str(tmp_path / "s")], capsys)  # fmt: skip
    (rej,) = out["rejected_files"]
    assert rc == 1 and rej["path"].endswith("p.cali") and said in rej["reason"]


def test_map_option_usage_errors_exit_2(tmp_path):
    _profile(tmp_path / "p.cali", 1.0, cluster="c")
    for bad in (["--map", "colour=x"], ["--map", "variant"], ["--scheduler", "tcp://h:1"],
                ["--strict", "--executor", "dask"]):  # fmt: skip
        with pytest.raises(SystemExit) as e:
            main(["caliper", str(tmp_path), "--app", "a", *bad])
        assert e.value.code == 2


def test_a_gpu_programming_model_makes_a_gpu_sample_unless_the_user_says(tmp_path):
    _profile(tmp_path / "p.cali", 1.0, cluster="c", ProgrammingModel="CUDA")
    for spec, device in ((SampleSpec(app="a"), "gpu"), (SampleSpec(app="a", device="cpu"), "cpu")):
        rep = ingest_archive("caliper", tmp_path, dry_run=True, spec=spec, workers=1)
        assert rep.rows == 1
        st = tmp_path / f"s-{device}"
        ingest_archive("caliper", tmp_path, store=st, spec=spec, workers=1)
        assert _table(st).get_column("device").to_list() == [device]


# -- batches, trials, resuming -------------------------------------------------------------------
def _repeats(root: Path, n: int) -> None:
    """``n`` profiles of two configurations, interleaved, with distinct launch dates."""
    for i in range(n):
        _profile(root / f"d{i % 3}" / f"p{i:03d}.cali", 1.0 + i / 100, cluster="c",
                 Algorithm="merge" if i % 2 else "bitonic", InputSize=1024,
                 launchdate=1_700_000_000 + (n - i) * 60)  # fmt: skip


def test_trials_and_rows_do_not_depend_on_the_batch_size(tmp_path):
    _repeats(tmp_path / "runs", 24)
    spec = SampleSpec(app="sort", machine="m")
    tables = []
    for batch in (5, 1000):
        st = tmp_path / f"s{batch}"
        rep = ingest_archive("caliper", tmp_path / "runs", store=st, spec=spec, batch_files=batch,
                             workers=2)  # fmt: skip
        assert rep.rows_written == 24 and len(rep.commits) == -(-24 // batch)
        assert Store(st).verify() == []
        tables.append(_table(st))
    assert tables[0].equals(tables[1])
    t = tables[0]
    assert t.group_by("variant").agg(pl.col("trial").sort()).sort("variant").get_column(
        "trial"
    ).to_list() == [list(range(12)), list(range(12))]
    assert t.get_column("run_date").min() == datetime.fromtimestamp(1_700_000_060, tz=UTC)


def test_a_second_run_skips_what_is_stored_and_new_files_continue_the_trials(tmp_path, capsys):
    _repeats(tmp_path / "runs", 10)
    st = tmp_path / "store"
    argv = [
        "caliper",
        str(tmp_path / "runs"),
        "--app",
        "sort",
        "--machine",
        "m",
        "--store",
        str(st),
    ]
    assert _cli(argv, capsys)[1]["rows_written"] == 10
    _profile(tmp_path / "runs" / "d9" / "new.cali", 5.0, cluster="c", Algorithm="merge",
             InputSize=1024)  # fmt: skip
    rc, out = _cli(argv, capsys)
    assert rc == 0 and out["already_stored"] == 10 and out["rows_written"] == 1
    new = _table(st).filter(pl.col("source_path") == "d9/new.cali")
    assert new.get_column("trial").to_list() == [5]  # after the five merge runs stored


def test_an_archive_ingest_keeps_pyarrow_out_of_the_ingest_process(tmp_path):
    """pyarrow's libraries would be a large part of the ingest process's memory: the parts are
    written by polars and the stored sources read by a Parquet scan, through five batches into one
    table."""
    _repeats(tmp_path / "runs", 24)
    code = (
        "import sys; from xamm_ingest.cli import main; "
        f"rc = main({_ingest_argv(tmp_path / 'runs', tmp_path / 's', 5)!r}); "
        "print(rc, sorted(m for m in sys.modules if m.split('.')[0] == 'pyarrow'), "
        "file=sys.stderr)"
    )
    env = {**os.environ, "XAMM_HOME": str(tmp_path / "home")}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.stderr.strip().splitlines()[-1] == "0 []", r.stderr[-2000:]
    assert json.loads(r.stdout)["rows_written"] == 24 and len(json.loads(r.stdout)["commits"]) == 5
    assert Store(tmp_path / "s").verify() == []


def test_resuming_reads_the_stored_sources_once_not_once_a_batch(tmp_path, monkeypatch):
    """A rerun over a fully stored archive learns what is held in one read of the table (the first
    128 bits of each source hash) and then searches memory: no scan per batch, so its cost is
    its walk and its hashes (benchmarks/bench_archive.py --resume-only measures it at 10^5
    files)."""
    from xamm_data.store import write as store_module

    _repeats(tmp_path / "runs", 24)
    spec = SampleSpec(app="sort", machine="m")
    rep = ingest_archive("caliper", tmp_path / "runs", store=tmp_path / "s", spec=spec,
                         batch_files=5, workers=1)  # fmt: skip
    assert rep.rows_written == 24
    reads = {"keys": 0, "present": 0}

    def counted(name: str, what: str):
        real = getattr(store_module, name)

        def call(*a):
            reads[what] += 1
            return real(*a)

        monkeypatch.setattr(store_module, name, call)

    counted("source_keys", "keys")
    counted("present_sources", "present")
    again = ingest_archive("caliper", tmp_path / "runs", store=tmp_path / "s", spec=spec,
                           batch_files=5, workers=1)  # fmt: skip
    assert again.already_stored == 24 and again.rows_written == 0 and not again.commits
    assert reads == {"keys": 1, "present": 0}
    # one more file beside them: only it is read and committed
    _profile(tmp_path / "runs" / "z" / "new.cali", 3.0, cluster="c", Algorithm="merge")
    more = ingest_archive("caliper", tmp_path / "runs", store=tmp_path / "s", spec=spec,
                          batch_files=5, workers=1)  # fmt: skip
    assert more.already_stored == 24 and more.rows_written == 1


def test_a_run_scans_the_stored_sources_only_when_it_cannot_vouch_for_a_batch(
    tmp_path, monkeypatch
):
    """Each batch's sources were checked against the table when the run began; while only the
    run commits, a commit need not scan the stored sources again. A copy of a source the run
    committed, or another writer's commit, brings the scan back."""
    from xamm_data.store import append as store_append

    scans = []
    real = store_append._held_sources
    monkeypatch.setattr(
        store_append, "_held_sources", lambda lf, shas: scans.append(len(shas)) or real(lf, shas)
    )
    _repeats(tmp_path / "runs", 24)
    spec = SampleSpec(app="sort", machine="m")
    rep = ingest_archive("caliper", tmp_path / "runs", store=tmp_path / "s", spec=spec,
                         batch_files=5, workers=1)  # fmt: skip
    assert len(rep.commits) == 5 and scans == []
    (tmp_path / "more" / "x").mkdir(parents=True)
    first = sorted((tmp_path / "runs").rglob("*.cali"))[0]
    (tmp_path / "more" / "x" / "copy.cali").write_bytes(first.read_bytes())
    _profile(tmp_path / "more" / "y" / "new.cali", 3.0, cluster="c", Algorithm="merge")
    rep = ingest_archive("caliper", tmp_path / "more", store=tmp_path / "s", spec=spec,
                         batch_files=1, workers=1)  # fmt: skip
    assert rep.already_stored == 1 and rep.rows_written == 1 and scans == []
    st = Store(tmp_path / "s")
    stale = st.version("app_profiles") - 1  # another writer committed since the caller checked
    row = _table(tmp_path / "s").head(1)
    w = st.append(row, "app_profiles", unheld_at=stale)
    assert scans == [1] and w.rows_written == 0 and w.already_held == 1
    assert _table(tmp_path / "s").height == 25


def test_a_byte_identical_copy_is_stored_once(tmp_path):
    _profile(tmp_path / "runs" / "a.cali", 1.0, cluster="c")
    (tmp_path / "runs" / "zz").mkdir()
    (tmp_path / "runs" / "zz" / "copy.cali").write_bytes(
        (tmp_path / "runs" / "a.cali").read_bytes()
    )
    spec = SampleSpec(app="a", machine="m")
    rep = ingest_archive("caliper", tmp_path / "runs", store=tmp_path / "s", spec=spec,
                         batch_files=1, workers=1)  # fmt: skip
    assert rep.rows_written == 1 and rep.copies == 1
    assert _table(tmp_path / "s").get_column("source_path").to_list() == ["a.cali"]


def _ingest_argv(src: Path, store: Path, batch: int) -> list[str]:
    return ["caliper", str(src), "--app", "sort", "--machine", "grace", "--store", str(store),
            "--batch-files", str(batch), "--workers", "1", "--no-progress", "--json"]  # fmt: skip


def test_an_ingest_killed_midway_and_run_again_ends_with_the_uninterrupted_table(
    shared_data, tmp_path, capsys
):
    src = shared_data / SORT / "team10"
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert main(_ingest_argv(src, whole, 1000)) == 0
    capsys.readouterr()
    env = {**os.environ, "XAMM_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "xamm_ingest.cli", *_ingest_argv(src, killed, 40)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    third = killed / "app_profiles" / "_delta_log" / f"{3:020d}.json"
    deadline = time.monotonic() + 120
    while not third.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the ingest finished before it could be killed"
    before = _table(killed)
    assert Store(killed).verify() == [] and 0 < before.height < 1096
    rc, out = _cli(_ingest_argv(src, killed, 40)[:-2], capsys)
    assert rc == 0 and out["already_stored"] == before.height
    assert _table(killed).equals(_table(whole))


# -- the whole corpus ----------------------------------------------------------------------------
def _globals(path: Path) -> tuple[dict, list]:
    import caliperreader

    r = caliperreader.CaliperReader()
    r.read(str(path))
    return r.globals, r.records


def _expected(path: Path) -> dict:
    """What the row of ``path`` must hold, from caliperreader's parse and the documented keys."""
    g, recs = _globals(path)
    norm = {k.lower().replace("_", ""): v for k, v in g.items()}
    root = [r for r in recs if isinstance(r.get("path"), str) or len(r.get("path") or []) == 1]
    # one time per profile: the roots' totals over ranks / the ranks (docs/decisions.md)
    attr = "sum#inclusive#sum#time.duration"
    return {
        "variant": norm.get("algorithm"),
        "input_size": int(norm["inputsize"]) if str(norm.get("inputsize", "")).isdigit() else None,
        "input_type": norm.get("inputtype") or None,
        "programming_model": norm.get("programmingmodel"),
        "ranks": int(g["mpi.world.size"]),
        "run_date": datetime.fromtimestamp(int(g["launchdate"]), tz=UTC),
        "runtime_s": sum(float(r[attr]) for r in root if attr in r) / int(g["mpi.world.size"]),
    }


def test_the_sorting_corpus_goes_in_whole_with_its_metadata(shared_data, tmp_path, capsys):
    corpus = shared_data / SORT
    files = sorted(corpus.rglob("*.cali"))
    assert len(files) == 10563
    st = tmp_path / "store"
    rc, out = _cli(["caliper", str(corpus), "--app", "sort", "--machine", "grace",
                    "--store", str(st), "--workers", "2"], capsys)  # fmt: skip
    assert rc == 0
    assert out["sources_read"] + len(out["rejected_files"]) == len(files)
    assert all(r["path"] in r["reason"] for r in out["rejected_files"])
    t = Store(st).scan("app_profiles").collect()
    assert t.height == out["rows_written"] == out["sources_read"]
    assert t.get_column("source_path").n_unique() == t.height
    by_path = {r["source_path"]: r for r in t.iter_rows(named=True)}
    for f in random.Random(37).sample(files, 80):
        row, want = by_path[f.relative_to(corpus).as_posix()], _expected(f)
        for col in ("variant", "input_size", "input_type", "programming_model", "ranks"):
            if want[col] is not None:
                assert row[col] == (want[col].strip() if isinstance(want[col], str) else want[col])
        assert row["run_date"] == want["run_date"]
        assert row["runtime_s"] == pytest.approx(want["runtime_s"], rel=1e-9)
        assert sum(r["exclusive_s"] for r in row["regions"]) == pytest.approx(row["runtime_s"])
        g, _ = _globals(f)
        kept = {e["name"] for e in row["extra_metadata"]}
        own = {k for k in g if not k.startswith(("cali.", "spot"))} - {"cluster", "launchdate"}
        mapped = own - kept
        assert len(mapped) <= 6, (f, mapped)  # what the map took; everything else kept
    # the teams' metadata did reach the columns
    assert t.get_column("variant").null_count() == 0
    assert t.get_column("input_size").null_count() / t.height < 0.01


def _bad_sources(d: Path) -> None:
    """One source for each reason the archive page lists."""
    write_cali(d / "no-regions.cali", [], {"cluster": "c"})
    write_cali(d / "no-time.cali", [(["main"], {"count": 3.0})], {"cluster": "c"})
    write_cali(d / "no-unit.cali", [(["main"], {TIME: 1.0})], {"cluster": "c"})
    _profile(d / "nan-time.cali", float("nan"), cluster="c")
    _profile(d / "huge-time.cali", 1e302, cluster="c")
    write_cali(d / "neg.cali", [(["main"], {TIME: 1.0, "papi.PAPI_TOT_INS": -5.0})],
               {"cluster": "c"}, units={TIME: "sec"})  # fmt: skip
    write_cali(d / "inf.cali", [(["main"], {TIME: 1.0, "papi.PAPI_TOT_INS": float("inf")})],
               {"cluster": "c"}, units={TIME: "sec"})  # fmt: skip
    _profile(d / "nomachine" / "p.cali", 1.0)
    _profile(d / "badtoml" / "p.cali", 1.0, cluster="c")
    (d / "badtoml" / "xamm.toml").write_text("[metadata\n")
    (d / "gone.cali").symlink_to(d / "nowhere.cali")
    (d / "trace.otf2").write_bytes(b"OTF2")
    (d / "junk.cali").write_bytes(bytes(range(256)) * 4)


def test_every_reason_the_archive_page_lists_is_one_xamm_gives(tmp_path, capsys):
    from conftest import REPO

    _bad_sources(tmp_path / "runs")
    rc, out = _cli(["caliper", str(tmp_path / "runs"), "--app", "a", "--dry-run"], capsys)
    reasons = [r["reason"] for r in out["rejected_files"]]
    assert rc == 1 and out["rows"] == 0 and len(reasons) == 12
    page = (REPO / "docs" / "ingest-archive.md").read_text()
    table = page.split("## Why a source is rejected")[1].split("##")[0]
    rows = re.findall(r"^\| (`.+?) \| ", table, flags=re.M)
    # the last row is the catch-all for input no check foresaw: no file can be made to reach it
    assert "did not expect" in rows[-1]
    for row in rows[:-1]:
        for phrase in re.findall(r"`([^`]+)`", row):
            phrase = phrase.replace("bad xamm.toml", "xamm.toml")
            assert any(phrase in r for r in reasons), (phrase, reasons)


def test_the_progress_bar_shows_files_rate_and_time_left(tmp_path, monkeypatch):
    import io

    _repeats(tmp_path / "runs", 12)
    screen = io.StringIO()
    # the bar draws on standard error, as a terminal 120 columns wide
    monkeypatch.setattr(sys, "stderr", screen)
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "120")
    spec = SampleSpec(app="a", machine="m")
    rep = ingest_archive("caliper", tmp_path / "runs", store=tmp_path / "s", spec=spec,
                         workers=1, progress=True)  # fmt: skip
    assert rep.rows_written == 12
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())
    assert "reading sources" in shown and "12/12" in shown
    assert re.search(r"[\d,]+ files/s", shown) and re.search(r"\d:\d\d:\d\d", shown)


def test_the_walk_lists_what_os_walk_lists_in_the_same_order(tmp_path):
    """The scandir walk (no stat per file) against os.walk on a tree with nested folders, a link to
    a file (read), a link to a folder (not followed, as os.walk does not) and a dangling link
    (refused by name)."""
    import os

    from xamm_ingest.sources import Plan, walk_files

    root = tmp_path / "runs"
    for rel in ("b/2.cali", "b/1.cali", "a/z/3.cali", "a/0.cali", "top.cali", "c/d/e/4.cali"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / "a" / "link.cali").symlink_to(root / "top.cali")
    (root / "b" / "folder-link").symlink_to(root / "c")
    (root / "b" / "gone.cali").symlink_to(root / "nowhere.cali")
    want = []
    for here, dirs, names in os.walk(root):
        dirs.sort()
        want += [Path(here) / n for n in sorted(names) if (Path(here) / n).is_file()]
    plan = Plan(root=root)
    assert list(walk_files([root], plan)) == want
    assert [r.path for r in plan.rejected] == [str(root / "b" / "gone.cali")]


@pytest.mark.parametrize("what", ["a named pipe", "a device", "nothing"])
@pytest.mark.parametrize("commit", ["once", "batches"])
def test_a_source_that_is_neither_file_nor_folder_is_named_for_what_it_is(
    what, commit, tmp_path, capsys
):
    """A named pipe (whose read would wait for a writer) or a device named as a source is refused
    at once, saying what it is, never read and never called missing; a path that is not there is
    missing."""
    path = {"a named pipe": tmp_path / "runs.cali", "a device": Path(os.devnull)}.get(
        what, tmp_path / "gone"
    )
    if what == "a named pipe":
        os.mkfifo(path)
    args = ["rajaperf", str(path), "--store", str(tmp_path / "store")]
    code = main([*args, *(["--batch-files", "10"] if commit == "batches" else [])])
    err = capsys.readouterr().err.strip().splitlines()
    said = (
        "no such file or directory"
        if what == "nothing"
        else f"{what}; expected a file or a folder of files"
    )
    assert code == 1 and err[-1] == f"xamm-ingest: error: {path}: {said}"
    assert not (tmp_path / "store").exists()


def test_local_workers_fork_from_a_frozen_heap_and_it_thaws_after():
    """The parent's objects are frozen while local workers run, so no collection in a worker
    writes to the pages it shares with the parent (benchmarks/bench_archive.py measures the
    memory); the parent's collector sees them again once the pool is gone, even after an error."""
    import gc

    from xamm_ingest.pipeline.executors import submitter

    assert gc.get_freeze_count() == 0
    with submitter("processes", 2, None, True, "caliper") as (submit, window):
        assert gc.get_freeze_count() > 0 and window == 5
        assert submit([], {}).result() == []
    assert gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), submitter("processes", 2, None, True, "caliper"):
        raise RuntimeError("a batch failed")
    assert gc.get_freeze_count() == 0
    with submitter("serial", 2, None, True, "caliper"):
        assert gc.get_freeze_count() == 0
