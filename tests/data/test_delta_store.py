"""The store on Delta Lake. One ingest is one commit (all or nothing, even under SIGKILL),
concurrent writers lose nothing, every read is verified (a bit-flip campaign), time travel, history,
housekeeping."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta

import polars as pl
import pytest
from conftest import FIXTURES

from xamm_data import load_dataset
from xamm_data.store.store import CorruptDataError, Store
from xamm_data.tables.schema import BENCHMARK_RUNS
from xamm_ingest import read_rajaperf

KEY = list(BENCHMARK_RUNS.primary_key)


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    return read_rajaperf(FIXTURES / "rajaperf_sample", workers=1).frame


def as_source(
    df: pl.DataFrame, tag: str, machine: str | None = None, scale: float = 1.0
) -> pl.DataFrame:
    """``df`` as if read from another source file (its own path and SHA-256), optionally on another
    machine."""
    out = df.with_columns(
        (pl.lit(f"{tag}/") + pl.col("source_path")).alias("source_path"),
        pl.col("source_sha256")
        .str.slice(0, 48)
        .add(pl.lit(f"{abs(hash(tag)) % 16**16:016x}"))
        .alias("source_sha256"),
        pl.col("time_per_rep_s") * scale,
    )
    return out.with_columns(pl.lit(machine).alias("machine")) if machine else out


def test_a_multi_machine_ingest_is_one_commit_with_its_provenance(tmp_path, frame):
    st = Store(tmp_path / "s")
    st.write(frame, "benchmark_runs")
    rep = st.write(
        pl.concat([as_source(frame, "b", "node-b"), as_source(frame, "c", "node-c")]),
        "benchmark_runs",
    )
    assert rep.version == 1 and st.machines() == ["example-node", "node-b", "node-c"]
    h = st.history("benchmark_runs")
    assert h.get_column("version").to_list() == [1, 0]
    what = json.loads(h.get_column("xamm")[0])
    assert (
        what["rows"] == {"node-b": frame.height, "node-c": frame.height} and what["n_sources"] >= 1
    )


def test_time_travel_by_version_and_by_time(tmp_path, frame, monkeypatch):
    st = Store(tmp_path / "s")
    monkeypatch.setenv("XAMM_HOME", str(tmp_path))
    st.write(frame, "benchmark_runs")
    t0 = datetime.now()
    time.sleep(0.05)
    st.write(as_source(frame, "later", scale=2.0), "benchmark_runs")
    v0 = st.read("benchmark_runs", "example-node", version=0)
    assert (
        v0.height == frame.height
        and st.read("benchmark_runs", "example-node").height == 2 * frame.height
    )
    assert load_dataset("example-node", store=st, version=0).sort(KEY).equals(v0.sort(KEY))
    assert load_dataset("example-node", store=st, as_of=t0).height == frame.height
    assert (
        load_dataset("example-node", store=st, as_of=datetime.now() + timedelta(days=1)).height
        == 2 * frame.height
    )
    with pytest.raises(FileNotFoundError, match="versions 0..1, not 7"):
        st.read("benchmark_runs", "example-node", version=7)


def flip_a_bit(path, rng) -> None:
    data = bytearray(path.read_bytes())
    i = rng.randrange(len(data))
    data[i] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))


def test_a_flipped_bit_is_an_error_naming_table_machine_and_file(tmp_path, frame):
    st = Store(tmp_path / "s")
    st.write(frame, "benchmark_runs")
    path = st.partition_path("benchmark_runs", "example-node")
    os.chmod(path, 0o644)
    flip_a_bit(path, random.Random(1))
    with pytest.raises(
        CorruptDataError, match=rf"benchmark_runs / example-node: .*{path.name}.*SHA-256"
    ):
        st.read("benchmark_runs", "example-node")
    with pytest.raises(CorruptDataError):
        load_dataset("example-node", store=st)
    assert len(st.verify()) == 1 and path.name in st.verify()[0]


CAMPAIGN = """
import json, random, shutil, sys
from pathlib import Path
import polars as pl
from xamm_data.store.store import CorruptDataError, Store
src, work, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
rng = random.Random(0)
truth = Store(src).read("benchmark_runs", "example-node")
out = {"silent": 0, "detected": 0, "identical": 0}
for i in range(n):
    dst = work / f"s{i}"
    shutil.copytree(src, dst)
    st = Store(dst)
    p = st.partition_path("benchmark_runs", "example-node")
    data = bytearray(p.read_bytes()); j = rng.randrange(len(data)); data[j] ^= 1 << rng.randrange(8)
    p.chmod(0o644); p.write_bytes(bytes(data))
    for lazy in (False, True):  # the rows read now, and a lazy frame collected later
        try:
            got = st.read("benchmark_runs", "example-node", lazy=lazy)
            got = got.collect() if lazy else got
            out["identical" if got.equals(truth) else "silent"] += 1
        except CorruptDataError:
            out["detected"] += 1
print(json.dumps(out))
"""


def test_bit_flip_campaign_gives_no_silent_difference_and_no_crash(tmp_path, frame):
    """30 random single-bit flips in a stored file, each read eagerly and lazily: every one is
    detected (never different numbers), and the process that reads them survives (it runs in a
    child: a crash would show as its exit code)."""
    Store(tmp_path / "src").write(frame, "benchmark_runs")
    (tmp_path / "work").mkdir()
    r = subprocess.run(
        [sys.executable, "-c", CAMPAIGN, str(tmp_path / "src"), str(tmp_path / "work"), "30"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout)
    assert out == {"silent": 0, "detected": 60, "identical": 0}


# argv: store, input Parquet, start time, and "write" (merge, the default) or "append"
WRITER = """
import sys, time
import polars as pl
from xamm_data.store.store import Store
st, frames = Store(sys.argv[1]), pl.read_parquet(sys.argv[2])
start = float(sys.argv[3])
commit = st.append if sys.argv[4:] == ["append"] else st.write
while time.time() < start:
    time.sleep(0.001)
for (k,), part in frames.group_by(["batch"], maintain_order=True):
    commit(part.drop("batch"), "benchmark_runs")
"""


def test_four_concurrent_writers_lose_nothing(tmp_path, frame):
    """Four processes ingest disjoint sources at once, two into the same machine and two into
    others."""
    inputs = [
        as_source(frame, "w0", "example-node"),
        as_source(frame, "w1", "example-node"),
        as_source(frame, "w2", "node-b"),
        as_source(frame, "w3", "node-c"),
    ]
    start = time.time() + 2.0
    procs = []
    for i, df in enumerate(inputs):
        f = tmp_path / f"in{i}.parquet"
        df.with_columns(pl.lit(0).alias("batch")).write_parquet(f)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(tmp_path / "s"), str(f), str(start)],
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read()[-2000:]
    st = Store(tmp_path / "s")
    got = st.scan("benchmark_runs").collect()
    want = pl.concat(inputs)
    assert got.height == want.height
    assert set(got.get_column("source_sha256")) == set(want.get_column("source_sha256"))
    assert st.version("benchmark_runs") == 3 and st.verify() == []  # four commits, versions 0..3


def test_four_writers_appending_twenty_times_each_raise_no_false_alarm(tmp_path, frame):
    """80 appends from 4 processes at once (a centre's archive ingests racing): the head check
    tells another writer's commit from a lost log entry, so every writer ends cleanly (0 false
    alarms) and every row is there (0 lost)."""
    start, procs, want = time.time() + 2.0, [], []
    for w in range(4):
        parts = [
            as_source(frame.head(3), f"w{w}-{b}", "example-node").with_columns(batch=pl.lit(b))
            for b in range(20)
        ]
        want += [p.drop("batch") for p in parts]
        f = tmp_path / f"in{w}.parquet"
        pl.concat(parts).write_parquet(f)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(tmp_path / "s"), str(f), str(start), "append"],
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    errors = [p.stderr.read()[-1500:] for p in procs if p.wait(timeout=600) != 0]
    assert errors == [], errors
    st = Store(tmp_path / "s")
    got = st.scan("benchmark_runs").collect()
    assert got.height == pl.concat(want).height
    assert set(got["source_sha256"]) == set(pl.concat(want)["source_sha256"])
    assert st.version("benchmark_runs") == 79 and st.verify() == []


KILLED = """
import sys
import polars as pl
from xamm_data.store.store import Store
st, frames = Store(sys.argv[1]), pl.read_parquet(sys.argv[2])
print("ready", flush=True)
for k in range(1, 10 ** 6):
    st.write(frames.with_columns(pl.col("time_per_rep_s") * k), "benchmark_runs")
"""


def test_sigkill_at_any_moment_leaves_one_version_never_a_mix(tmp_path, frame):
    """A two-machine ingest rewritten in a loop, killed at random moments: each machine's rows
    always carry the same multiplier k (one commit), and a later write leaves no temporary file
    behind."""
    st = Store(tmp_path / "s")
    both = pl.concat([frame, frame.with_columns(pl.lit("node-b").alias("machine"))])
    st.write(both, "benchmark_runs")
    base = st.read("benchmark_runs", "example-node").sort(KEY).get_column("time_per_rep_s")
    both.write_parquet(tmp_path / "in.parquet")
    rng = random.Random(0)
    for _ in range(6):
        p = subprocess.Popen(
            [sys.executable, "-c", KILLED, str(tmp_path / "s"), str(tmp_path / "in.parquet")],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert p.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.05, 1.5))
        p.send_signal(signal.SIGKILL)
        p.wait()
        ks = set()
        for m in ("example-node", "node-b"):
            t = (
                Store(tmp_path / "s")
                .read("benchmark_runs", m)
                .sort(KEY)
                .get_column("time_per_rep_s")
            )
            ratio = (t / base).round(6).unique().to_list()
            assert len(ratio) == 1, f"{m} holds rows of two different commits: {ratio}"
            ks.add(ratio[0])
        assert len(ks) == 1, f"the machines come from different commits: {ks}"
    Store(tmp_path / "s").write(both, "benchmark_runs")  # a later run
    assert not list((tmp_path / "s").rglob(".xamm-tmp-*"))


def test_optimize_rewrites_foreign_files_and_vacuum_removes_what_no_version_needs(tmp_path, frame):
    st = Store(tmp_path / "s")
    st.write(frame, "benchmark_runs")
    extra = as_source(frame, "foreign", "example-node")
    # another tool appends a file
    extra.write_delta(str(tmp_path / "s" / "benchmark_runs"), mode="append")
    with pytest.raises(CorruptDataError, match="no checksum in its name"):
        st.read("benchmark_runs", "example-node")
    assert st.optimize("benchmark_runs") == {"example-node": 2}
    assert len(st.partition_files("benchmark_runs", "example-node")) == 1
    assert st.read("benchmark_runs", "example-node").height == 2 * frame.height
    assert st.read("benchmark_runs", "example-node", version=0).height == frame.height
    # the first file and the foreign one
    assert st.vacuum("benchmark_runs", retention_hours=0, dry_run=True)
    gone = st.vacuum("benchmark_runs", retention_hours=0)
    assert len(gone) == 2
    with pytest.raises(CorruptDataError, match="missing from storage"):
        st.read("benchmark_runs", "example-node", version=0)  # vacuumed: that version is gone
    assert (
        st.read("benchmark_runs", "example-node").height == 2 * frame.height and st.verify() == []
    )


def test_cli_history_verify_optimize_vacuum(tmp_path, frame, capsys):
    from xamm_data.cli.commands import main as xamm

    st = Store(tmp_path / "s")
    st.write(frame, "benchmark_runs")
    st.write(as_source(frame, "b", "node-b"), "benchmark_runs")
    s = ["--store", str(tmp_path / "s")]
    assert xamm(["datasets", "history", "node-b", "--json", *s]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["version"] for r in rows] == [1]  # the commit that touched node-b
    assert xamm(["datasets", "verify", *s]) == 0
    assert xamm(["datasets", "show", "example-node", "--version", "0", "--json", *s]) == 0
    capsys.readouterr()
    p = st.partition_path("benchmark_runs", "node-b")
    p.chmod(0o644)
    flip_a_bit(p, random.Random(3))
    assert xamm(["datasets", "verify", *s]) == 1
    assert "node-b" in capsys.readouterr().out
    assert xamm(["store", "optimize", *s]) == 0 and "nothing to compact" in capsys.readouterr().out
    assert xamm(["store", "vacuum", "--dry-run", *s]) == 0


def _checkpoints(st: Store, kind: str = "benchmark_runs") -> list[int]:
    log = st.location(kind).local / "_delta_log"
    return sorted(int(p.name[:20]) for p in log.glob("*.checkpoint.parquet"))


def _every_third_version_checkpointed(st: Store, kind: str = "benchmark_runs") -> None:
    """The table asks for a checkpoint every 3 versions (a commit xamm records as its own)."""
    from deltalake import DeltaTable

    DeltaTable(st.location(kind).uri).alter.set_table_properties({"delta.checkpointInterval": "3"})
    st._record_head(kind)


def test_an_append_writes_the_checkpoint_delta_rs_would_once_its_batch_is_let_go(
    tmp_path, frame, monkeypatch
):
    """Appended batches get their checkpoints at the versions delta-rs's own commits get them
    (``Store.write``, through delta-rs's post-commit hook), each written after the commit
    returned, not during it; every row reads back."""
    from xamm_data.store.log import StoreLog

    made_in_commit: list[list[int]] = []
    commit = StoreLog.commit_actions

    def watched(self, *args, **kwargs):
        version = commit(self, *args, **kwargs)
        made_in_commit.append([v for v in _checkpoints(self) if v == version])
        return version

    monkeypatch.setattr(StoreLog, "commit_actions", watched)
    appended, written = Store(tmp_path / "a"), Store(tmp_path / "w")
    for st, put in ((appended, appended.append), (written, written.write)):
        put(as_source(frame, "s0"), "benchmark_runs")
        _every_third_version_checkpointed(st)
        for i in range(1, 8):
            put(as_source(frame, f"s{i}"), "benchmark_runs")
    assert _checkpoints(written) == [2, 5, 8]  # delta-rs: after version v when (v + 1) % 3 == 0
    assert _checkpoints(appended) == _checkpoints(written)
    assert made_in_commit[:8] == [[]] * 8  # the appends: none while committing
    assert made_in_commit[8:] == [[], [2], [], [], [5], [], [], [8]]  # delta-rs: in the commit
    assert Store(tmp_path / "a").scan("benchmark_runs").collect().height == 8 * frame.height


def test_a_checkpoint_that_cannot_be_written_is_logged_and_the_append_stands(
    tmp_path, frame, monkeypatch, caplog
):
    """A checkpoint only spares readers the log's replay: when writing it fails, the append's
    commit stands, the failure is a warning naming the table and version, and the next due
    checkpoint is written."""
    import logging

    from deltalake import DeltaTable

    st = Store(tmp_path / "s")
    st.append(as_source(frame, "s0"), "benchmark_runs")
    _every_third_version_checkpointed(st)
    real = DeltaTable.create_checkpoint

    def failing(self):
        raise OSError("no space left on device")

    monkeypatch.setattr(DeltaTable, "create_checkpoint", failing)
    with caplog.at_level(logging.WARNING, logger="xamm_data.store.log"):
        reports = [st.append(as_source(frame, f"s{i}"), "benchmark_runs") for i in (1, 2, 3)]
    assert [r.version for r in reports] == [2, 3, 4] and _checkpoints(st) == []
    assert "benchmark_runs" in caplog.text and "no checkpoint at version 2" in caplog.text
    monkeypatch.setattr(DeltaTable, "create_checkpoint", real)
    st.append(as_source(frame, "s4"), "benchmark_runs")
    assert _checkpoints(st) == [5]
    assert st.scan("benchmark_runs").collect().height == 5 * frame.height


def test_the_head_of_a_new_table_read_from_its_log_entry_is_what_the_opened_table_holds(
    tmp_path, frame
):
    """A table's first commit records its head from its own log entry, without opening the table
    in delta-rs: the state it records is the one the opened table lists, for machine names whose
    partition paths the log escapes too (``verify`` re-derives it from the opened table)."""
    from deltalake import DeltaTable

    from xamm_data.store.delta_log import created_files, read_head, state_digest
    from xamm_data.store.log import _file_frame

    st = Store(tmp_path / "s")
    st.write(
        pl.concat([as_source(frame, "g", "node-a:gpu"), as_source(frame, "c", "node-a:cpu")]),
        "benchmark_runs",
    )
    loc = st.location("benchmark_runs")
    _, files = created_files("benchmark_runs", loc)
    opened = _file_frame(DeltaTable(loc.uri))
    assert files.equals(opened) and files.height == 2
    head, problems = read_head("benchmark_runs", loc)
    assert problems == [] and head["version"] == 0
    assert head["state_sha256"] == state_digest(opened)
    assert st.verify() == []


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda text: text.replace('"add":{', '"add":[', 1), "line"),
        (
            lambda text: text.replace('\\"numRecords\\": ', '\\"numRecords\\": -1, \\"x\\": ', 1),
            "numRecords",
        ),
        (lambda text: text.replace('{"machine":"node-a:gpu"}', '{"machine":7}', 1), "machine=7"),
        (lambda text: text.replace('{"machine":"node-a:gpu"}', "{}", 1), "machine=None"),
    ],
)
def test_a_first_log_entry_altered_before_its_head_is_recorded_is_named(
    tmp_path, frame, edit, said
):
    """The head of a new table is read from its first log entry: an entry that is not what a
    commit writes raises CorruptLogError naming the file, never a bare TypeError or KeyError."""
    from xamm_data.store.delta_log import CorruptLogError, created_files

    st = Store(tmp_path / "s")
    st.write(as_source(frame, "g", "node-a:gpu"), "benchmark_runs")
    loc = st.location("benchmark_runs")
    entry = loc.local / "_delta_log" / f"{0:020d}.json"
    text = entry.read_text()
    entry.write_text(edit(text))
    assert entry.read_text() != text
    with pytest.raises(CorruptLogError, match=said) as e:
        created_files("benchmark_runs", loc)
    assert "00000000000000000000.json" in str(e.value)


def test_flipped_bits_in_a_first_log_entry_give_its_files_or_corrupt_log_error(tmp_path, frame):
    """A seeded campaign of bit flips over a new table's first log entry as its head is recorded:
    each either leaves the files it lists unchanged, lists what the flipped entry says (a path or
    a size changed), or raises CorruptLogError, never another exception."""
    from xamm_data.store.delta_log import CorruptLogError, created_files

    st = Store(tmp_path / "s")
    st.write(as_source(frame, "g", "node-a:gpu"), "benchmark_runs")
    loc = st.location("benchmark_runs")
    entry = loc.local / "_delta_log" / f"{0:020d}.json"
    good = entry.read_bytes()
    _, files = created_files("benchmark_runs", loc)
    rng = random.Random(0)
    tally = {"same": 0, "changed": 0, "refused": 0}
    for _ in range(60):
        data = bytearray(good)
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
        entry.write_bytes(bytes(data))
        try:
            _, got = created_files("benchmark_runs", loc)
        except CorruptLogError as e:
            assert "00000000000000000000.json" in str(e)
            tally["refused"] += 1
            continue
        assert got.columns == files.columns and got.height == files.height
        tally["same" if got.equals(files) else "changed"] += 1
    assert tally["refused"] > 0 and tally["same"] > 0


def test_the_log_lines_delta_rs_would_read_are_screened_for_nesting_before_it_opens(tmp_path):
    """Before delta-rs opens a table, the log files it replays (those after the newest checkpoint,
    at or before a version asked for; every one for a time travel by date) are screened: a line
    nested deeper than a Delta action could be is named by table, file and line, also behind a
    well-formed action on the same line (where Python's parser stops at the first value). A line
    of many brackets that nests shallowly is no problem, nor a deep line in a file delta-rs does
    not read."""
    from xamm_data.store.delta_log import SCREEN_BRACKETS, entry_path, nesting_problems
    from xamm_data.store.locations import TableLocation

    loc = TableLocation.of(tmp_path, "benchmark_runs")
    log = tmp_path / "benchmark_runs" / "_delta_log"
    log.mkdir(parents=True)
    deep = "[" * 100_000 + "]" * 100_000
    wide = json.dumps([[i] for i in range(2 * SCREEN_BRACKETS)])  # many brackets, two levels
    lines = {0: ['{"commitInfo":{}}', wide], 1: ['{"commitInfo":{}}', deep], 2: [wide]}
    lines[3] = ['{"commitInfo":{"a":"[[[["}}' + deep]
    for v, text in lines.items():
        (tmp_path / "benchmark_runs" / entry_path(v)).write_text("\n".join(text) + "\n")
    (log / f"{2:020d}.checkpoint.parquet").write_bytes(b"")

    def named(**kw) -> list[str]:
        return [p.split("_delta_log/")[1] for p in nesting_problems("benchmark_runs", loc, **kw)]

    said = "JSON nested 100,000 levels deep (a Delta log action nests a few)"
    assert named() == [f"{3:020d}.json line 1: {said}"]
    # the latest is opened first: what it replays is screened whatever version is asked for
    assert named(version=3) == named(version=2) == named()
    both = [f"{1:020d}.json line 2", f"{3:020d}.json line 1"]
    for kw in ({"version": 1}, {"every": True}):
        assert [p.split(":")[0] for p in named(**kw)] == both
