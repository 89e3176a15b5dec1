"""A seeded fault campaign over the store's Delta log: bit flips, truncations and deletions of log
files and of xamm's head record (``_xamm/head.json``), and a line nested 100,000 deep (past every
JSON parser's depth) added to each log file, each applied to a copy of a three-commit,
three-machine store.

Every case runs the store's commands in-process (``xamm datasets verify|list|show|history`` and an
ingest into the damaged store) and is one of:

* ``refused``: ``verify`` exits 1, and every other command either gives the intact store's output or
  exits 1 with one line naming the table and the file at fault, and at least one exits 1;
* ``reported by verify``: ``verify`` exits 1 and every other command gives the intact store's output
  (the damage touched no row, e.g. a commit's timestamp in an older entry);
* ``silent``: ``verify`` exits 0, or a command exits 0 with an output the intact store does not
  give;
* ``traceback``: an exception escapes, a traceback is printed, an error takes more than one line, or
  an exit code is neither 0 nor 1.

The test fails on any silent case or traceback, and checks docs/reliability-log.md against the
campaign's tally (``python tests/test_log_faults.py`` regenerates it).
"""

from __future__ import annotations

import contextlib
import io
import random
import re
import shutil
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from conftest import FIXTURES
from reliability_report import markdown_report

from xamm_data.cli.commands import main as xamm
from xamm_data.store.delta_log import (
    HEAD,
    LOG_DIR,
    CorruptLogError,
    entry_path,
    read_head,
    write_head,
)
from xamm_data.store.locations import TableLocation
from xamm_data.store.store import CorruptDataError, Store
from xamm_ingest import read_rajaperf
from xamm_ingest.cli import main as xamm_ingest

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "docs" / "reliability-log.md"
FLIPS, HEAD_FLIPS, SEED = 48, 6, 0
READS = [
    ["datasets", "list", "--json"],
    ["datasets", "show", "example-node", "--json"],
    ["datasets", "show", "node-b", "--json"],
    ["datasets", "history", "example-node", "--json"],
]
# an error names the log file, the head record or the data file at fault
NAMED = (LOG_DIR, HEAD, "part-")


def _as_source(df: pl.DataFrame, tag: str, machine: str | None = None) -> pl.DataFrame:
    out = df.with_columns(
        (pl.lit(f"{tag}/") + pl.col("source_path")).alias("source_path"),
        pl.col("source_sha256").str.slice(0, 56).add(pl.lit(f"{tag:0>8}")).alias("source_sha256"),
    )
    return out.with_columns(pl.lit(machine).alias("machine")) if machine else out


def build_store(root: Path) -> Path:
    """Three commits: one machine, two more in one commit, then a re-ingest that replaces the
    first's file."""
    frame = read_rajaperf(FIXTURES / "rajaperf_sample", workers=1).frame
    st = Store(root)
    st.write(frame, "benchmark_runs")
    st.write(
        pl.concat([_as_source(frame, "b", "node-b"), _as_source(frame, "c", "node-c")]),
        "benchmark_runs",
    )
    st.write(_as_source(frame, "d"), "benchmark_runs")
    return root


def _run(fn, args: list[str]) -> tuple[object, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = fn(args)
        except BaseException as e:  # noqa: BLE001 - an escaping exception is what the campaign counts
            code = f"{type(e).__name__}: {e}"
    return code, out.getvalue(), err.getvalue()


def faults(store: Path, rng: random.Random) -> list[tuple[str, Path, str]]:
    """(class, file, action) of every case: flips weighted by file size, then each file truncated
    and deleted."""
    table = store / "benchmark_runs"
    logs = sorted((table / LOG_DIR).glob("*.json"))
    sizes = [p.stat().st_size for p in logs]
    cases = [("flip a log bit", rng.choices(logs, weights=sizes)[0], "flip") for _ in range(FLIPS)]
    cases += [("truncate a log file", p, "truncate") for p in logs]
    cases += [("delete a log file", p, "delete") for p in logs]
    cases += [("a log line nested 100,000 deep", p, "nest") for p in logs]
    cases += [("flip a head bit", table / HEAD, "flip") for _ in range(HEAD_FLIPS)]
    cases += [("delete the head record", table / HEAD, "delete")]
    return cases


def apply(path: Path, action: str, rng: random.Random) -> None:
    if action == "delete":
        path.unlink()
        return
    data = bytearray(path.read_bytes())
    if action == "nest":  # deep enough to end delta-rs's JSON reader with a segmentation fault
        path.write_bytes(bytes(data) + b"[" * 100_000 + b"]" * 100_000 + b"\n")
        return
    if action == "truncate":
        path.write_bytes(bytes(data[: rng.randrange(1, len(data))]))
        return
    i = rng.randrange(len(data))
    data[i] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))


def judge(store: Path, truth: dict[str, tuple], ingest_dir: Path) -> str:
    """``refused``, ``silent`` or ``traceback`` for one damaged store (see the module docstring)."""
    s = ["--store", str(store)]
    results = {"verify": _run(xamm, ["datasets", "verify", *s])}
    results |= {" ".join(a): _run(xamm, [*a, *s]) for a in READS}
    results["ingest"] = _run(
        xamm_ingest,
        ["rajaperf", str(ingest_dir), "--machine", "example-node", "--no-progress", "--json", *s],
    )
    for name, (code, out, err) in results.items():
        said = out if name == "verify" else err  # verify lists its problems as its output
        one_line_error = code == 0 or (
            "benchmark_runs" in said
            and any(n in said for n in NAMED)
            and (name == "verify" or len(err.strip().splitlines()) == 1)
        )
        if code not in (0, 1) or "Traceback" in out + err or not one_line_error:
            return "traceback"
    if results["verify"][0] != 1:
        return "silent"
    for name, (code, out, _) in results.items():
        if name in truth and code == 0 and out.replace(str(store), "STORE") != truth[name]:
            return "silent"
    return "refused" if any(results[" ".join(a)][0] == 1 for a in READS) else "reported by verify"


def campaign(tmp: Path) -> list[dict]:
    rng = random.Random(SEED)
    intact = build_store(tmp / "intact")
    truth = {
        " ".join(a): _run(xamm, [*a, "--store", str(intact)])[1].replace(str(intact), "STORE")
        for a in READS
    }
    tally: dict[str, Counter] = {}
    for i, (cls, path, action) in enumerate(faults(intact, rng)):
        work = tmp / f"case-{i}"
        shutil.copytree(intact, work)
        apply(work / path.relative_to(intact), action, rng)
        tally.setdefault(cls, Counter())[judge(work, truth, FIXTURES / "rajaperf_sample")] += 1
        shutil.rmtree(work)
    return [
        {
            "fault": cls,
            "cases": sum(t.values()),
            "silent results": t["silent"],
            "tracebacks": t["traceback"],
            "reads refused, naming table and file": t["refused"],
            "reads unchanged, verify reports it": t["reported by verify"],
        }
        for cls, t in tally.items()
    ]


def render(rows: list[dict]) -> str:
    return markdown_report(
        "Reliability: faults in the store's log",
        "Generated by `python tests/test_log_faults.py` from the seeded "
        "campaign that "
        "`tests/test_log_faults.py::test_log_faults_are_refused_by_name_never_silent` "
        "runs on a three-commit, "
        "three-machine store: `xamm datasets verify`, `list`, `show`, "
        "`history` and an ingest run on each damaged "
        "copy. In every case counted `verify` exits 1 naming the file; "
        "the other commands either give the intact "
        "store's output or exit 1 with one line naming the table and the "
        "file at fault. A silent result or a traceback fails "
        "the test, so both columns are 0 whenever the suite is green. "
        "How the log is checked: "
        "[the store](store.md#the-log-verified-like-the-data).",
        rows,
    )


def _entry(store: Path, version: int) -> Path:
    return store / "benchmark_runs" / entry_path(version)


def test_a_lost_newest_entry_is_named_by_every_command_and_debug_shows_the_traceback(
    tmp_path, capsys
):
    store = build_store(tmp_path / "s")
    _entry(store, 2).unlink()
    with pytest.raises(
        CorruptLogError,
        match=r"benchmark_runs: xamm committed version 2 but the log ends at 1: "
        r".*00000000000000000002\.json and later are missing",
    ):
        Store(store).read("benchmark_runs", "example-node")
    assert len(Store(store).verify()) == 1
    s = ["--store", str(store)]
    assert xamm(["datasets", "show", "node-b", *s]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "00000000000000000002.json" in err
    with pytest.raises(CorruptLogError):
        xamm(["--debug", "datasets", "show", "node-b", *s])


def test_an_altered_remove_keeps_a_replaced_file_live_and_is_refused_not_read_twice(tmp_path):
    """The issue's silent case: a remove action whose path no longer names the file it removed.
    Without the head record (as if lost too) the duplicated source still stops the read, and verify
    names the entry."""
    store = build_store(tmp_path / "s")
    (store / "benchmark_runs" / HEAD).unlink()
    p = _entry(store, 2)
    p.write_text(
        p.read_text().replace(
            '"remove":{"path":"machine=example-node/part-',
            '"remove":{"path":"machine=example-node/rart-',
        )
    )
    with pytest.raises(
        CorruptLogError, match="held in more than one of the partition's 2 live files"
    ):
        Store(store).read("benchmark_runs", "example-node")
    problems = Store(store).verify()
    assert any(
        "00000000000000000002.json: removes machine=example-node/rart-" in q for q in problems
    )
    assert Store(store).read("benchmark_runs", "node-b").height > 0  # the other machines still read


def test_a_head_behind_the_log_is_no_problem_a_head_ahead_is(tmp_path):
    """A writer killed between its commit and its head leaves the head one version behind: not an
    error. Heads never move back, and a store with one xamm commit and no head (killed before its
    first head) is fine."""
    store = build_store(tmp_path / "s")
    head = store / "benchmark_runs" / HEAD
    old = tmp_path / "head-v2.json"
    shutil.copy(head, old)
    st = Store(store)
    st.write(_as_source(st.read("benchmark_runs", "node-c"), "e"), "benchmark_runs")  # version 3
    shutil.copy(old, head)  # the head as a writer killed before recording version 3 leaves it
    assert st.verify() == [] and st.version("benchmark_runs") == 3
    write_head(
        "benchmark_runs",
        TableLocation.of(store, "benchmark_runs"),
        1,
        st.live_files("benchmark_runs", version=1),
    )
    # never back
    assert read_head("benchmark_runs", TableLocation.of(store, "benchmark_runs"))[0]["version"] == 2
    one = Store(tmp_path / "one")
    one.write(st.read("benchmark_runs", "node-b"), "benchmark_runs")
    (tmp_path / "one" / "benchmark_runs" / HEAD).unlink()
    assert one.verify() == []


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("duplicate add", "adds machine=node-b/part-.* again while it is live"),
        ("numRecords", "says .* holds 11 rows; it holds 10"),
        ("machine", "under machine 'node-c', its path says otherwise"),
    ],
)
def test_a_log_entry_that_parses_but_lies_about_a_file_is_named(tmp_path, fault, said):
    store = build_store(tmp_path / "s")
    # only the entry itself (and the next one's chain) can tell
    (store / "benchmark_runs" / HEAD).unlink()
    intact = Store(store).scan("benchmark_runs").collect()
    p = _entry(store, 1)
    lines = p.read_text().splitlines()
    add = next(i for i, line in enumerate(lines) if '"add"' in line and "node-b" in line)
    if fault == "duplicate add":
        lines.append(lines[add])
    elif fault == "numRecords":
        lines[add] = lines[add].replace('numRecords\\": 10', 'numRecords\\": 11')
    else:
        lines[add] = lines[add].replace(
            '"partitionValues":{"machine":"node-b"}', '"partitionValues":{"machine":"node-c"}'
        )
    p.write_text("\n".join(lines) + "\n")
    problems = Store(store).verify()
    assert any(re.search(said, q) for q in problems), problems
    # the chain sees it too
    assert any("changed after version 2 was committed on it" in q for q in problems)
    try:
        got = Store(store).scan("benchmark_runs").collect()
    except CorruptDataError as e:
        assert "benchmark_runs" in str(e)
    else:
        # delta-rs counts a path once: read as it was, and verify still says it
        assert got.equals(intact)


def test_log_faults_are_refused_by_name_never_silent(tmp_path):
    rows = campaign(tmp_path)
    bad = [r for r in rows if r["silent results"] or r["tracebacks"]]
    assert not bad, bad
    assert REPORT.read_text() == render(rows), (
        "docs/reliability-log.md is stale: run python tests/test_log_faults.py"
    )


if __name__ == "__main__":  # regenerate docs/reliability-log.md
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        REPORT.write_text(render(campaign(Path(d))))
    print(REPORT.read_text())
