"""The paper's verdicts over seeds: "better" or "worse" only when every seed says so."""

from __future__ import annotations

import json

import pytest

from xamm_models.experiments.report import seed_rows
from xamm_models.experiments.seeds import merge_seeds, verdict


def _summary(seed: int, diff: float, lo: float, hi: float, version: str = "v1") -> dict:
    within = {"difference": diff, "lo": lo, "hi": hi, "better": "neither"}
    mape = {"raw/xgboost": 100.0, "attention+amm/xgboost": 100.0 + 10 * seed}
    return {
        "dataset": {"version": version},
        "settings": {"seed": seed},
        "paper_claims": {
            "xgboost_mape_reduction_cpu_cpu": 49.64,
            "xgboost_mape_reduction_cpu_gpu": 99.07,
        },
        "results": {
            "kernel-group": {
                "comparisons": {
                    "experiments": [
                        {"experiment": 3, "a": "x", "b": "y", "all": {"within_2": within}}
                    ]
                },
                "entries": {
                    n: {"pooled": {"CPU->CPU": {"mape": {"value": v}}}} for n, v in mape.items()
                },
            }
        },
    }


@pytest.mark.parametrize(
    ("runs", "want"),
    [
        ([(0.1, 0.01, 0.2)] * 5, "better"),
        ([(-0.1, -0.2, -0.01)] * 5, "worse"),
        ([(0.1, 0.01, 0.2)] * 4 + [(0.1, -0.01, 0.2)], "no difference"),
        ([(0.1, 0.01, 0.2)] * 4, "too few seeds"),
    ],
)
def test_a_verdict_needs_every_seed(runs, want):
    assert verdict([{"difference": d, "lo": lo, "hi": hi} for d, lo, hi in runs]) == want


def test_seeds_are_merged_into_the_main_results_and_rendered(tmp_path):
    paths = []
    for seed in range(5):
        p = tmp_path / f"s{seed}.json"
        # seed 2's interval covers zero: the verdict over seeds is no difference
        p.write_text(json.dumps(_summary(seed, 0.1, -0.01 if seed == 2 else 0.02, 0.2)))
        paths.append(p)
    merged = merge_seeds(paths[0], paths[1:])
    assert [r["seed"] for r in merged["seeds"]] == [0, 1, 2, 3, 4]
    assert json.loads(paths[0].read_text())["seeds"] == merged["seeds"]
    rows = seed_rows(merged)
    assert rows[0].endswith("| no difference |") and "2: +0.10 [-0.01, +0.20]" in rows[0]
    assert "+0% to +40% over 5 runs" in rows[1]


def test_runs_of_another_data_set_are_refused(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_summary(0, 0.1, 0.0, 0.2)))
    b.write_text(json.dumps(_summary(1, 0.1, 0.0, 0.2, version="v2")))
    with pytest.raises(ValueError, match="data version v2"):
        merge_seeds(a, [b])


def test_a_seed_on_another_cpu_code_path_is_another_run_named_by_its_path(tmp_path):
    """Seed 0 again with torch's scalar kernels and oneMKL's SSE4.2 branch (what an older x86
    processor takes): a sixth run, listed after the main path's runs and named by its path, and
    its interval alone can turn a verdict into no difference; the same seed twice on one path is
    refused."""
    paths = []
    for seed in range(5):
        p = tmp_path / f"s{seed}.json"
        p.write_text(json.dumps({**_summary(seed, 0.1, 0.02, 0.2), "torch_cpu_kernels": "AVX2"}))
        paths.append(p)
    other = tmp_path / "scalar.json"
    other.write_text(
        json.dumps(
            {
                **_summary(0, 0.05, -0.03, 0.12),
                "torch_cpu_kernels": "DEFAULT",
                "mkl_branch": "SSE4_2",
            }
        )
    )
    # the main run records its oneMKL branch, the seeds (run before it was recorded) do not: they
    # ran the pinned branch, so they are on the main run's path
    main = json.loads(paths[0].read_text())
    paths[0].write_text(json.dumps({**main, "mkl_branch": "COMPATIBLE"}))
    merged = merge_seeds(paths[0], [other, *paths[1:]])
    assert [(r["seed"], r["torch_cpu_kernels"]) for r in merged["seeds"]] == [
        (0, "AVX2"),
        (1, "AVX2"),
        (2, "AVX2"),
        (3, "AVX2"),
        (4, "AVX2"),
        (0, "DEFAULT"),
    ]
    row = seed_rows(merged)[0]
    assert "0 (DEFAULT, MKL SSE4_2): +0.05 [-0.03, +0.12]" in row
    assert "; 4: +0.10" in row and row.endswith("| no difference |")
    assert "over 6 runs" in seed_rows(merged)[1]
    with pytest.raises(ValueError, match="second run of seed 3"):
        merge_seeds(paths[0], [paths[3], paths[3]])
