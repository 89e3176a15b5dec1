"""docs/eval/processors.json is of the documentation's data, and its documented run is
docs/eval/results.json's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "benchmarks"))

from processors import torch_entries  # noqa: E402


def test_processors_json_is_of_the_results_data_and_holds_the_documented_run():
    results = json.loads((REPO / "docs" / "eval" / "results.json").read_text())
    procs = json.loads((REPO / "docs" / "eval" / "processors.json").read_text())
    assert procs["data_version"] == results["dataset"]["version"]
    docs_runs = [r for r in procs["runs"].values() if "docs/eval/results.json" in r["about"]]
    assert len(docs_runs) == 1 and len(procs["runs"]) >= 2
    want = torch_entries(results)
    assert docs_runs[0]["within_2"] == pytest.approx(want, abs=1e-6)
