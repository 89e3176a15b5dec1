"""The paper's experiments over several seeds: a verdict holds only if every seed gives it.

One run's bootstrap interval says how its figure would move with other kernels; it says nothing of
how the figure moves with the seed of the embedders and regressors (or with the processor, whose
last bits training amplifies: docs/decisions.md). ``xamm eval --seed N --no-lomo --no-loko`` runs
the kernel-group folds at another seed, and the same run under other CPU code paths
(``ATEN_CPU_CAPABILITY``, ``MKL_CBWR``: what another processor would take) is another run of that
seed; :func:`merge_seeds` records each run's experiment comparisons and the paper's MAPE change in
the main ``results.json`` (``seeds``), and the report's verdict over runs (:func:`verdict`) is
"better" or "worse" only when the 90% interval excludes zero, on the same side, in every run.
"""

from __future__ import annotations

import json
from pathlib import Path

from xamm_models.runtime import MKL_BRANCH

__all__ = ["MIN_SEEDS", "code_path", "merge_seeds", "run_label", "seed_record", "verdict"]

MIN_SEEDS = 5
SCENARIOS = ("CPU->CPU", "CPU->GPU")


def _mape_change(summary: dict, scenario: str) -> float | None:
    entries = summary["results"].get("kernel-group", {}).get("entries", {})
    raw, att = (
        entries.get(n, {}).get("pooled", {}).get(scenario, {}).get("mape", {}).get("value")
        for n in ("raw/xgboost", "attention+amm/xgboost")
    )
    return None if raw in (None, 0) or att is None else 100 * (att - raw) / raw


def seed_record(summary: dict) -> dict:
    """What one run says of the paper's experiments: each comparison's within-2x difference and
    90% interval, and the XGBoost MAPE change per scenario.

    Args:
        summary: an ``xamm eval`` summary (``results.json``) with the kernel-group folds.

    Returns:
        ``{"seed", "torch_cpu_kernels", "mkl_branch", "experiments": [...],
        "mape_change": {scenario: %}}``.
    """
    group = summary["results"].get("kernel-group", {})
    rows = [
        {
            "experiment": x["experiment"],
            "a": x["a"],
            "b": x["b"],
            **{k: x["all"]["within_2"][k] for k in ("difference", "lo", "hi")},
        }
        for x in group.get("comparisons", {}).get("experiments", [])
    ]
    return {
        "seed": summary["settings"]["seed"],
        "torch_cpu_kernels": summary.get("torch_cpu_kernels"),
        "mkl_branch": summary.get("mkl_branch"),
        "experiments": rows,
        "mape_change": {s: _mape_change(summary, s) for s in SCENARIOS},
    }


def code_path(record: dict) -> tuple[str, str]:
    """The CPU code path a run took: torch's kernels and oneMKL's branch (a run that recorded no
    branch ran the one :func:`xamm_models.runtime.pin` sets)."""
    return (record.get("torch_cpu_kernels") or "", record.get("mkl_branch") or MKL_BRANCH)


def run_label(record: dict, main: dict) -> str:
    """A run's name in the report: its seed, and its code path where it is not the main run's.

    Args:
        record: one :func:`seed_record`.
        main: the main run's record.

    Returns:
        ``"3"``, or ``"0 (DEFAULT, MKL SSE4_2)"``.
    """
    if code_path(record) == code_path(main):
        return str(record["seed"])
    kernels, branch = code_path(record)
    return f"{record['seed']} ({kernels or '?'}, MKL {branch})"


def merge_seeds(main: str | Path, others: list[str | Path]) -> dict:
    """Record the main run's and every other run's :func:`seed_record` in the main
    ``results.json`` (key ``seeds``: the main run first, as the report names code paths against
    it; then the runs on its code path by seed, then the others); runs of another data version are
    refused, and so is a second run of one seed and code path.

    Args:
        main: the main run's ``results.json`` (rewritten).
        others: other runs' ``results.json``.

    Returns:
        The main summary as written.
    """
    summary = json.loads(Path(main).read_text())
    first = seed_record(summary)
    records: dict[tuple, dict] = {}
    for path in others:
        other = json.loads(Path(path).read_text())
        if other["dataset"]["version"] != summary["dataset"]["version"]:
            raise ValueError(
                f"{path}: data version {other['dataset']['version']}, not the main run's "
                f"{summary['dataset']['version']}: seeds compare only runs of one data set"
            )
        rec = seed_record(other)
        key = (code_path(rec) != code_path(first), rec["seed"], code_path(rec))
        if key in records or key == (False, first["seed"], code_path(first)):
            raise ValueError(f"{path}: a second run of seed {rec['seed']} on one code path")
        records[key] = rec
    summary["seeds"] = [first, *(records[k] for k in sorted(records))]
    Path(main).write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return summary


def verdict(runs: list[dict]) -> str:
    """ "better" / "worse" when every run's interval excludes zero on that side, else "no
    difference"; "too few seeds" below :data:`MIN_SEEDS` runs.

    Args:
        runs: one comparison's ``{"difference", "lo", "hi"}`` per run (seed and code path).

    Returns:
        The verdict.
    """
    if len(runs) < MIN_SEEDS:
        return "too few seeds"
    if all(r["lo"] > 0 for r in runs):
        return "better"
    if all(r["hi"] < 0 for r in runs):
        return "worse"
    return "no difference"
