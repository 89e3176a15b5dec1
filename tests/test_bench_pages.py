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
