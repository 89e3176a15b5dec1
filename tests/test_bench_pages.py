"""A benchmark page is what its benchmark prints from the figures it recorded: the table is
regenerated from ``docs/bench/<page>.json`` and compared with ``docs/bench/<page>.md``, the
machine's floors beside the figures (start-up, the per-file path); the test lanes' record of
durations marks the slow tests."""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import sys
from pathlib import Path

import pytest
from conftest import REPO


def benchmark(script: str):
    """The module ``benchmarks/<script>.py`` (the benchmarks are scripts, not a package)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        return importlib.import_module(script)
    finally:
        sys.path.remove(str(REPO / "benchmarks"))


def regenerated(script: str, page: str, call) -> tuple[str, str]:
    """(what ``call(module, recorded figures)`` prints, the table ``docs/bench/<page>.md`` holds)
    for the benchmark ``benchmarks/<script>.py`` and its ``docs/bench/<page>.json``."""
    module = benchmark(script)
    recorded = json.loads((REPO / "docs" / "bench" / f"{page}.json").read_text())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        call(module, recorded)
    text = (REPO / "docs" / "bench" / f"{page}.md").read_text()
    return out.getvalue().strip(), text.split("```text\n", 1)[1].split("```", 1)[0].strip()


def test_the_startup_page_is_regenerated_from_its_json():
    printed, table = regenerated(
        "bench_startup", "startup", lambda m, r: m.report(r["cases"], r["runs"])
    )
    assert printed == table
    assert "python -c pass" in table and "import polars, numpy, pydantic" in table
    # every --help case states its target against the floor
    helps = [ln for ln in table.splitlines() if "--help" in ln.split("  ")[0]]
    assert len(helps) >= 4 and all("x floor" in ln for ln in helps)


def test_the_durations_record_sums_each_tests_phases_and_marks_the_slow_ones(tmp_path, monkeypatch):
    """``bench_tests.py --record`` reads pytest's ``--durations=0`` lines (setup, call and teardown
    summed per test, ids with spaces kept whole); the suite marks slow what the record puts over
    ``SLOW_SECONDS``."""
    import conftest

    bench_tests = benchmark("bench_tests")
    out = "\n".join(
        [
            "============ slowest durations ============",
            "5.00s call     tests/a.py::test_x[lassen cali]",
            "0.50s setup    tests/a.py::test_x[lassen cali]",
            "0.25s call     tests/b.py::test_y",
            "(3 durations < 0.005s hidden.)",
        ]
    )
    got = bench_tests.durations(out)
    assert got == {"tests/a.py::test_x[lassen cali]": 5.5, "tests/b.py::test_y": 0.25}
    assert 0.25 < conftest.SLOW_SECONDS < 5.5
    record = tmp_path / "durations.json"
    record.write_text(json.dumps({"cpus": 2, "seconds": got}))
    monkeypatch.setattr(conftest, "DURATIONS", record)
    assert conftest._recorded_slow() == {"tests/a.py::test_x[lassen cali]"}


def test_a_test_sharing_a_fixture_the_record_found_slow_is_slow(tmp_path, monkeypatch):
    """The record keeps each shared fixture's longest setup over the workers; a test using one
    over ``SLOW_SECONDS`` (module, class or package scope: what its module's tests share) is slow,
    whichever test the setup was charged to. A session fixture is paid once per worker: not."""
    from types import SimpleNamespace

    import conftest

    bench_tests = benchmark("bench_tests")
    (tmp_path / "gw0.json").write_text(json.dumps({"tests/a.py::guide": 13.5, "::hub": 0.2}))
    (tmp_path / "gw1.json").write_text(json.dumps({"tests/a.py::guide": 12.0, "::s3": 4.0}))
    fixtures = bench_tests.fixture_seconds(tmp_path)
    assert fixtures == {"::hub": 0.2, "::s3": 4.0, "tests/a.py::guide": 13.5}
    record = tmp_path / "durations.json"
    monkeypatch.setattr(bench_tests, "DURATIONS", record)
    bench_tests.write_record({"tests/a.py::test_x": 0.1}, fixtures)
    monkeypatch.setattr(conftest, "DURATIONS", record)
    heavy = conftest._heavy_fixtures()
    assert heavy == {"::s3", "tests/a.py::guide"}

    def item(**defs):
        return SimpleNamespace(
            _fixtureinfo=SimpleNamespace(
                name2fixturedefs={
                    name: [SimpleNamespace(baseid=base, argname=name, scope=scope)]
                    for name, (base, scope) in defs.items()
                }
            )
        )

    assert conftest._uses_heavy_fixture(item(guide=("tests/a.py", "module")), heavy)
    assert not conftest._uses_heavy_fixture(item(guide=("tests/b.py", "module")), heavy)
    assert not conftest._uses_heavy_fixture(item(s3=("", "session")), heavy)
    assert not conftest._uses_heavy_fixture(item(hub=("", "module")), heavy)


@pytest.mark.parametrize(
    "script,page,says",
    [
        ("bench_per_file", "per-file", "per-file path / parser"),
        ("bench_per_file_instructions", "per-file-instructions", "parser in instructions"),
        ("bench_compare_memory", "compare-memory", "1000"),
        ("bench_compare", "compare", "xamm compare"),
        ("bench_default", "default", "baseline/roofline on the same rows"),
        ("bench_whole", "whole", "Thicket / xamm"),
        ("bench_thicket", "thicket", "from_thicket / Thicket read"),
        ("bench_store", "store", "warm load_dataset"),
        ("bench_ingest", "ingest", "thicket/xamm"),
        ("bench_archive", "archive", "tree's peak"),
        ("bench_archive", "archive-resume", "rerun / first ingest"),
        ("bench_archive", "archive-memory", "tree's peak"),
        ("bench_tests", "tests", "s budget"),
    ],
)
def test_the_page_is_regenerated_from_its_json_with_the_floor(script, page, says):
    printed, table = regenerated(script, page, lambda m, r: m.report(r))
    assert printed == table
    assert "python -c pass" in table and says in table


def test_the_test_lanes_page_says_over_when_a_lane_passes_but_takes_longer_than_its_budget(capsys):
    """A lane whose tests pass over its budget is OVER and fails the benchmark; a lane within its
    budget whose tests fail fails it too; the floors before and after are printed."""
    bench_tests = benchmark("bench_tests")

    def lane(name, seconds, passed=True):
        budget = bench_tests.LANES[name][1]
        return {
            "lane": name,
            "seconds": seconds,
            "cpu_seconds": 2 * seconds,
            "budget_s": budget,
            "within_budget": seconds <= budget,
            "tests_passed": passed,
            "pytest": "9 passed in 1s",
            "failed": [] if passed else ["FAILED tests/a.py::t"],
            "cpus": 2,
        }

    def figures(*lanes):
        return {"floor_before_cpu_s": 0.021, "floor_after_cpu_s": 0.034, "lanes": list(lanes)}

    assert bench_tests.report(figures(lane("fast", 80.0), lane("full", 590.0)))
    out = capsys.readouterr().out
    assert "0.021 cpu-s before, 0.034 cpu-s after" in out and "OVER" not in out
    assert not bench_tests.report(figures(lane("fast", 80.0), lane("full", 610.0)))
    assert "full:   610.0 s, 1220 cpu-s (OVER the 600 s budget" in capsys.readouterr().out
    assert not bench_tests.report(figures(lane("fast", 80.0, passed=False)))
    assert "FAILED tests/a.py::t" in capsys.readouterr().out


def test_a_failed_lane_keeps_pytests_whole_output_and_says_where(capsys):
    """The figures hold the failed tests' names; their tracebacks are kept in a file the report
    names, so a failure seen once can be read."""
    bench_tests = benchmark("bench_tests")
    printed = "F.\n___ test_t ___\nE   AssertionError: 614.4 > 614.3\nFAILED tests/a.py::t - Ass\n"
    path = Path(bench_tests.kept_output("full", printed))
    try:
        assert path.read_text() == printed and "full" in path.name
        lane = {"lane": "full", "seconds": 1.0, "cpu_seconds": 2.0, "budget_s": 600.0,
                "within_budget": True, "tests_passed": False, "pytest": "1 failed in 1s",
                "failed": ["FAILED tests/a.py::t"], "output": str(path), "cpus": 2}  # fmt: skip
        figures = {"floor_before_cpu_s": 0.03, "floor_after_cpu_s": 0.03, "lanes": [lane]}
        assert not bench_tests.report(figures)
        assert f"pytest's output: {path}" in capsys.readouterr().out
    finally:
        path.unlink()


def test_the_archive_benchmark_samples_a_command_that_prints_more_than_a_pipe_holds():
    """``run_sampled`` gives the command files to write to: a pipe read only at the end would stop
    a command printing more than it holds (64 KiB), as ``--json`` does at 10^4 sources."""
    pytest.importorskip("psutil", reason="the archive benchmark samples memory with psutil")
    bench_archive = benchmark("bench_archive")
    code = "import sys; sys.stdout.write('x' * 1_000_000); sys.stderr.write('y' * 1_000_000)"
    got = bench_archive.run_sampled([sys.executable, "-c", code], {})
    assert got["stdout"] == "x" * 1_000_000 and got["peak_mb"] > 1 and got["tree_mb"] > 1


def test_the_whole_process_page_gives_each_rounds_ratio_and_what_a_process_paged_in(tmp_path):
    """``bench_whole.py``: round by round, Thicket's CPU over the median of xamm's runs of that
    round (seeded run lists, against the ratios worked out here); a command's figures carry its
    system time and major faults, and the file pages read back while it ran where Linux says."""
    import random
    import statistics

    bench_whole = benchmark("bench_whole")
    rng = random.Random(7)
    for _ in range(50):
        rounds, k = rng.randint(1, 6), rng.randint(1, 4)
        xamm = [rng.uniform(0.5, 1.0) for _ in range(rounds * k)]
        thicket = [rng.uniform(10, 20) for _ in range(rounds)]
        f = {"repeats": k, "cpu_s": {"s/xamm": xamm, "s/thicket": thicket}}
        want = [thicket[r] / statistics.median(xamm[r * k : r * k + k]) for r in range(rounds)]
        assert bench_whole.round_ratios(f, "s") == pytest.approx(want)
    assert bench_whole.round_ratios({"repeats": 3}, "s") == []
    got = bench_whole.process([sys.executable, "-c", "pass"], tmp_path)
    assert 0 <= got["sys_s"] <= got["cpu_s"] and got["major_faults"] >= 0
    vmstat = Path("/proc/vmstat")
    if vmstat.exists() and "workingset_refault_file " in vmstat.read_text():
        assert isinstance(got["refaults"], int) and got["refaults"] >= 0
    else:
        assert got["refaults"] is None


def test_the_report_browser_page_is_regenerated_from_its_json():
    """benchmarks/report_in_browser.py's page: every page of the guide's report opened both ways
    and nothing found."""
    printed, table = regenerated("report_in_browser", "report-browser", lambda m, r: m.report(r))
    assert printed == table
    recorded = json.loads((REPO / "docs" / "bench" / "report-browser.json").read_text())
    assert len(recorded["pages"]) >= 6 and recorded["site"] == []
    assert all(not row["file"] and not row["http"] for row in recorded["pages"].values())


def test_the_per_file_benchmark_reads_in_the_state_the_command_reads_in():
    """``xamm-ingest`` freezes what its modules made before its first source (``loaded``; local
    workers are forked from there); the per-file benchmark reads its files in that state, so a
    full collection walks what the reading made, not every module's objects, and it thaws after."""
    import gc

    bench_per_file = benchmark("bench_per_file")
    before = gc.get_freeze_count()
    loaded_first = [[]]  # what the command's modules made
    with bench_per_file.command_state():
        assert gc.get_freeze_count() > before + 1000
        made = [[]]  # what reading a source makes: walked by the collector
        walked = {id(o) for o in gc.get_objects()}
        assert id(made) in walked and id(loaded_first) not in walked
    assert gc.get_freeze_count() == before
    assert id(loaded_first) in {id(o) for o in gc.get_objects()}


def test_the_per_file_page_takes_the_timing_out_of_its_steps_and_the_rest_closes_the_sum(capsys):
    """Each step's figure is less the timing inside it (the timed passes less the plain ones,
    split as a step that does nothing splits it), the rest is the plain path less the steps: the
    rows add up to the plain path, and the timing's own cost is shown apart."""
    bench_per_file = benchmark("bench_per_file")
    files = 1000
    figures = {
        "files": files,
        "runs": 3,
        "floor_cpu_s": 0.02,
        "parser_cpu_s": 0.40,
        "per_file_cpu_s": 0.62,
        "ratios": [1.5, 1.55, 1.6],
        "steps_cpu_s": {"a": 0.40 + 4000 * 1e-6, "b": 0.05 + 1000 * 1e-6},
        "step_calls": {"a": 4000, "b": 1000},
        # 5000 timed calls cost 10 us each in the path: 0.05 s, 40% of it inside the steps
        "timed_pass_cpu_s": 0.67,
        "timer_inside_s": 0.8e-6,
        "timer_call_s": 2e-6,
    }
    bench_per_file.report(figures)
    rows = {
        line[:36].strip(): float(line[36:].split()[0])
        for line in capsys.readouterr().out.splitlines()
        if line[:36].strip() in ("a", "b", "the rest")
    }
    # inside each call: 0.05 s / 5000 x 0.4 = 4 us; a: 4000 calls, b: 1000
    assert rows["a"] == pytest.approx((0.40 + 0.004 - 0.016) / files * 1e6, abs=0.5)
    assert rows["b"] == pytest.approx((0.051 - 0.004) / files * 1e6, abs=0.5)
    assert sum(rows.values()) == pytest.approx(figures["per_file_cpu_s"] / files * 1e6, abs=1.5)


def test_the_per_file_page_says_when_the_timed_passes_cost_less_than_the_plain_ones(capsys):
    """A machine whose speed moved by more than the timing costs shows the timing's cost below
    zero: the page says so, and takes nothing out of the steps for it; where the timing costs
    something, no such line."""
    bench_per_file = benchmark("bench_per_file")
    figures = {
        "files": 100,
        "runs": 1,
        "floor_cpu_s": 0.02,
        "parser_cpu_s": 0.40,
        "per_file_cpu_s": 0.62,
        "ratios": [1.55],
        "steps_cpu_s": {"a": 0.45},
        "step_calls": {"a": 100},
        "timed_pass_cpu_s": 0.60,  # less than the plain passes' 0.62
        "timer_inside_s": 1e-6,
        "timer_call_s": 2e-6,
    }
    bench_per_file.report(figures)
    out = capsys.readouterr().out
    assert "the timed passes took less CPU than the plain ones" in out
    step = next(ln for ln in out.splitlines() if ln.startswith("a "))
    assert float(step[36:].split()[0]) == pytest.approx(4500)  # 0.45 s over 100 files, as timed
    bench_per_file.report({**figures, "timed_pass_cpu_s": 0.63})
    assert "the timed passes took less CPU" not in capsys.readouterr().out


def test_the_per_file_page_shows_the_median_process_and_every_processs_ratio(capsys):
    """Of fresh processes' figures, the page's are the median process's (the lower middle of an
    even count), every process's ratio listed in the order they ran, with how many met the
    target."""
    bench_per_file = benchmark("bench_per_file")

    def one(parser: float, path: float) -> dict:
        steps = {"a": path / 2}
        return {"files": 100, "runs": 1, "parser_cpu_s": parser, "per_file_cpu_s": path,
                "ratios": [path / parser], "steps_cpu_s": steps, "step_calls": {"a": 100},
                "timed_pass_cpu_s": path, "timer_inside_s": 1e-6, "timer_call_s": 2e-6}  # fmt: skip

    got = [one(1.0, 1.6), one(1.0, 1.4), one(2.0, 2.9), one(1.0, 1.7)]
    chosen = bench_per_file.median_process(got[:3])
    assert chosen["per_file_cpu_s"] == 2.9 and chosen["process_ratios"] == [1.6, 1.4, 1.45]
    assert bench_per_file.median_process(got)["per_file_cpu_s"] == 2.9  # 1.4 1.45 | 1.6 1.7
    assert bench_per_file.median_process(got[:1])["process_ratios"] == [1.6]
    bench_per_file.report({**chosen, "floor_cpu_s": 0.02})
    out = capsys.readouterr().out
    assert "per-file path / parser: 1.45x (target <= 1.5x: met)" in out
    assert (
        "(3 fresh processes, the median one shown): 1.60x, 1.40x, 1.45x; at most 1.5x in 2 of 3"
        in out
    )


def test_the_timer_cost_is_measured_on_a_step_that_does_nothing():
    """A timed call costs more in all than inside its step (two clock reads around the step, the
    call and the tally around them), and both are positive."""
    inside, whole = benchmark("bench_per_file").timer_cost(2000)
    assert 0.0 < inside < whole
