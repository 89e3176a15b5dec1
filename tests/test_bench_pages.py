"""The start-up page is what its benchmark prints from the figures it recorded: the table is
regenerated from ``docs/bench/startup.json`` and compared with ``docs/bench/startup.md``; the
floors are on the page beside the figures."""

from __future__ import annotations

import contextlib
import io
import json
import sys

from conftest import REPO


def test_the_startup_page_is_regenerated_from_its_json():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import bench_startup
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    recorded = json.loads((REPO / "docs" / "bench" / "startup.json").read_text())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bench_startup.report(recorded["cases"], recorded["runs"])
    page = (REPO / "docs" / "bench" / "startup.md").read_text()
    table = page.split("```text\n", 1)[1].split("```", 1)[0]
    assert out.getvalue().strip() == table.strip()
    assert "python -c pass" in table and "import polars, numpy, pydantic" in table
    # every --help case states its target against the floor
    helps = [ln for ln in table.splitlines() if "--help" in ln.split("  ")[0]]
    assert len(helps) >= 4 and all("x floor" in ln for ln in helps)


def test_the_durations_record_sums_each_tests_phases_and_marks_the_slow_ones(tmp_path, monkeypatch):
    """``bench_tests.py --record`` reads pytest's ``--durations=0`` lines (setup, call and teardown
    summed per test, ids with spaces kept whole); the suite marks slow what the record puts over
    ``SLOW_SECONDS``."""
    import conftest

    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import bench_tests
    finally:
        sys.path.pop(0)
    out = "\n".join(
        [
            "============ slowest durations ============",
            "5.00s call     tests/a.py::test_x[lassen cali]",
            "0.50s setup    tests/a.py::test_x[lassen cali]",
            "1.25s call     tests/b.py::test_y",
            "(3 durations < 0.005s hidden.)",
        ]
    )
    got = bench_tests.durations(out)
    assert got == {"tests/a.py::test_x[lassen cali]": 5.5, "tests/b.py::test_y": 1.25}
    record = tmp_path / "durations.json"
    record.write_text(json.dumps({"cpus": 2, "seconds": got}))
    monkeypatch.setattr(conftest, "DURATIONS", record)
    assert conftest._recorded_slow() == {"tests/a.py::test_x[lassen cali]"}


def test_the_per_file_page_is_regenerated_from_its_json():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import bench_per_file
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    recorded = json.loads((REPO / "docs" / "bench" / "per-file.json").read_text())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bench_per_file.report(recorded)
    page = (REPO / "docs" / "bench" / "per-file.md").read_text()
    table = page.split("```text\n", 1)[1].split("```", 1)[0]
    assert out.getvalue().strip() == table.strip()
    assert "python -c pass" in table and "per-file path / parser" in table
