"""The fresh folds (docs/decisions.md, "Fresh folds"): the page is what its results file says, and
the scoring asks only the machines named, from the sources it says."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from xamm_models.experiments import fresh
from xamm_models.experiments.run import EvalSettings

REPO = Path(__file__).resolve().parents[3]
EVAL = REPO / "docs" / "eval"


def test_the_page_is_generated_from_its_results_file():
    results = json.loads((EVAL / "fresh-folds.json").read_text())
    outside = json.loads((EVAL / "outside-scoring.json").read_text())
    assert (EVAL / "fresh-folds.md").read_text() == fresh.page(results, outside)
    # the recorded run: the four machines asked, every entry of the protocol scored
    assert results["without_pairs"] == ["tuolumne"]
    assert set(results["machines"]) == {"mi300a-cpx", "ruby", "vm"}
    assert set(results["scores"]) == set(fresh.SCORED)


@pytest.mark.data
def test_only_the_named_machines_are_left_out(xplat_dataset):
    group = sorted(set(xplat_dataset.pairs.get_column("group")))[0]
    settings = EvalSettings(groups=(group,), n_boot=20, workers=1)
    entries = (fresh.DEFAULT, "baseline/most-similar-machine")
    r = fresh.score(
        xplat_dataset, machines=("vm", "tuolumne"), entries=entries, settings=settings,
        progress=lambda _: None,
    )  # fmt: skip
    assert r["folds"] == [f"{group} to vm"] and r["without_pairs"] == ["tuolumne"]
    test = next(f for f in xplat_dataset.get_idx_split("machine") if f.name == r["folds"][0])
    pairs = xplat_dataset.pairs[test.test]
    assert r["machines"] == {"vm": pairs.height}
    assert set(r["scores"]) == {*entries, fresh.ROOFLINE, fresh.CONSTANT}
    earlier = pairs.filter(~pl.col("source").str.split(":").list.first().is_in(list(fresh.FRESH)))
    cut = r["from_earlier_machines"]["scores"][fresh.DEFAULT]
    assert cut["pooled"]["n"] == earlier.height < pairs.height
