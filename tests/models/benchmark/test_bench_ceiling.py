"""The candidate-choice ceiling of ``benchmarks/bench_ceiling.py``: its arithmetic on a frame
worked by hand."""

from __future__ import annotations

import importlib.util
import re

import polars as pl
from conftest import REPO


def _bench():
    spec = importlib.util.spec_from_file_location(
        "bench_ceiling", REPO / "benchmarks" / "bench_ceiling.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_ceiling_takes_the_best_candidate_per_fold_and_scenario_on_the_test_pairs():
    hits = pl.DataFrame(
        {
            "scenario": ["CPU->GPU"] * 6,
            "fold": ["A"] * 4 + ["B"] * 2,
            "default": [True, False, False, False, True, False],
            "c1": [True, True, False, False, True, False],
            "c2": [False, True, True, True, False, False],
        }
    )
    row = _bench().ceiling_row("kernel-group", hits)
    # a tie goes to the first (simplest) candidate
    assert row["best"] == "c1" and row["best_score"] == 3 / 6
    assert row["ceiling"] == (3 + 1) / 6  # fold A takes c2 (3 of 4), fold B c1 (1 of 2)
    assert row["any"] == 5 / 6 and row["default"] == 2 / 6 and row["candidates"] == 2
    assert "| kernel-group | 6 | 0.333 | c1 0.500 (of 2) | 0.667 | 0.833 |" in _bench().table([row])


def _committed() -> dict[str, list[str]]:
    text = (REPO / "docs" / "eval" / "ceiling.md").read_text()
    return {
        m.group(1): m.group(2).split(" | ")
        for m in re.finditer(r"^\| ([a-z][^|]*?) \| (\d.*) \|$", text, re.M)
    }
