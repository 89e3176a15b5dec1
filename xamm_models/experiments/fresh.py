"""The machines that came after the first five, scored once as left-out folds with the code as it
stood (docs/decisions.md, "Fresh folds"), and the page of that outcome.

    python -m xamm_models.experiments.fresh --data-dir ../shared/data \\
        --out docs/eval/fresh-folds.json --page docs/eval/fresh-folds.md
    python -m xamm_models.experiments.fresh --out docs/eval/fresh-folds.json \\
        --page docs/eval/fresh-folds.md --no-run

The folds are the nested leave-one-machine-out folds of ``xplat-rajaperf`` whose left-out machine
is one of :data:`FRESH`; the entries are :data:`SCORED`. ``results`` hold, per entry, within 2x and
coverage per left-out machine and pooled (90% intervals over kernels), the default minus the
per-pair constant, each interval rule's sharpness beside the roofline's and how far the default's
answers are from the roofline's. The page sets the figures measured outside
(``docs/eval/outside-scoring.json``) beside them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import polars as pl

from xamm_data._version import __version__
from xamm_data.store.store import Store
from xamm_models.benchmark import dataset as xplat
from xamm_models.benchmark.evaluate import Evaluator
from xamm_models.benchmark.intervals import sharpness
from xamm_models.experiments.run import EvalSettings, _clean, _dataset_record, _run_all

__all__ = ["FRESH", "INTERVAL_ENTRIES", "SCORED", "page", "score"]

FRESH = ("mi300a-cpx", "ruby", "tuolumne", "vm")
DEFAULT, ROOFLINE, CONSTANT = "stacked/default", "baseline/roofline", "baseline/pair-constant"
INTERVAL_ENTRIES = (
    DEFAULT,
    "stacked/scaled-intervals",
    "stacked/regime-intervals",
    "stacked/efficiency-intervals",
    "stacked/signed-intervals",
    "stacked/pair-intervals",
)
SCORED = (
    *INTERVAL_ENTRIES,
    "stacked/nested-choice",
    ROOFLINE,
    CONSTANT,
    "baseline/most-similar-machine",
    "baseline/pair-median",
)
POOLED = "pooled"
# the entries scored again on the pairs whose source is one of the five earlier machines
CUT_ENTRIES = (DEFAULT, ROOFLINE, CONSTANT, "baseline/most-similar-machine")


class _Only:
    """A data set whose leave-one-machine-out folds are those of some left-out machines."""

    def __init__(self, ds: xplat.XplatDataset, machines: tuple[str, ...]):
        self.ds, self.machines, self.runs = ds, machines, ds.runs

    def get_idx_split(self, scheme: str):
        return [f for f in self.ds.get_idx_split(scheme) if f.held_out_machine in self.machines]


def _machine(end: str) -> pl.Expr:
    """The machine of a pair's ``source`` or ``target`` (``quartz`` of ``quartz:cpu``)."""
    return pl.col(end).str.split(":").list.first()


def _parts(p: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """The pooled rows, and each left-out machine's."""
    out = {POOLED: p}
    for (m,), part in p.group_by(_machine("target"), maintain_order=True):
        out[m] = part
    return dict(sorted(out.items()))


def _scores(ev: Evaluator, preds: dict[str, pl.DataFrame]) -> dict:
    """Entry -> machine (and pooled) -> within 2x and coverage with their intervals, and pairs."""
    out: dict[str, dict] = {}
    for name, p in preds.items():
        out[name] = {}
        for m, part in _parts(p).items():
            got = ev.pooled(part)
            out[name][m] = {"within_2": got["within_2"], "coverage": got["coverage"]}
            out[name][m]["n"] = part.height
    return out


def _versus(ev: Evaluator, a: pl.DataFrame, b: pl.DataFrame) -> dict:
    """Machine (and pooled) -> a minus b in within 2x, with its interval."""
    pa, pb = _parts(a), _parts(b)
    return {m: ev.compare(pa[m], pb[m])["all"]["within_2"] for m in pa}


def _by_scenario(ev: Evaluator, preds: dict[str, pl.DataFrame]) -> dict:
    """Scenario (CPU->CPU, ...) -> within 2x of the default, the roofline and the per-pair
    constant, the default minus the constant, and pairs."""
    got = {n: ev.eval(preds[n]) for n in (DEFAULT, ROOFLINE, CONSTANT)}
    diff = ev.compare(preds[DEFAULT], preds[CONSTANT])
    return {
        sc: {
            **{n: got[n]["pooled"][sc]["within_2"] for n in got},
            "default_minus_pair_constant": diff[sc]["within_2"],
            "n": got[DEFAULT]["n"][sc],
        }
        for sc in got[DEFAULT]["pooled"]
    }


def score(
    ds: xplat.XplatDataset,
    *,
    machines: tuple[str, ...] = FRESH,
    entries: tuple[str, ...] = SCORED,
    settings: EvalSettings | None = None,
    progress=print,
) -> dict:
    """Score ``entries`` on the leave-one-machine-out folds of ``machines``.

    Args:
        ds: the data set.
        machines: the left-out machines.
        entries: the entries (the roofline and the per-pair constant are always among them).
        settings: epochs, resamples, workers, kernel groups (default :class:`EvalSettings`).
        progress: where progress is printed.

    Returns:
        What the results file holds (see the module docstring).
    """
    entries = tuple(dict.fromkeys((*entries, ROOFLINE, CONSTANT)))
    settings = dataclasses.replace(settings or EvalSettings(), entries=entries, loko=False)
    t0 = time.perf_counter()
    only = _Only(ds, machines)
    preds = _run_all(only, ["machine"], (1, 2, 3, 4), settings, progress, t0)[0]["machine"]
    ev = Evaluator(xplat.NAME, n_boot=settings.n_boot, seed=settings.seed)
    roof = preds[ROOFLINE]
    held = dict(sorted(roof.group_by(_machine("target")).len().iter_rows()))
    gap = np.abs(np.log10(preds[DEFAULT]["y_pred"].to_numpy() / roof["y_pred"].to_numpy()))
    boot = min(settings.n_boot, 300)
    earlier = ~_machine("source").is_in(list(FRESH))
    from_earlier = {n: p.filter(earlier) for n, p in preds.items() if n in CUT_ENTRIES}
    return _clean(
        {
            "from_earlier_machines": {
                "scores": _scores(ev, from_earlier),
                "default_minus_pair_constant": _versus(
                    ev, from_earlier[DEFAULT], from_earlier[CONSTANT]
                ),
            },
            "by_scenario": _by_scenario(ev, preds),
            "dataset": _dataset_record(ds),
            "code": _commit(),
            "xamm_version": __version__,
            "settings": asdict(settings),
            "machines": held,
            "without_pairs": [m for m in machines if m not in held],
            "folds": sorted(set(roof.get_column("fold"))),
            "scores": _scores(ev, preds),
            "default_minus_pair_constant": _versus(ev, preds[DEFAULT], preds[CONSTANT]),
            "sharpness": {
                n: sharpness(preds[n], roof, n_boot=boot, seed=settings.seed)
                for n in INTERVAL_ENTRIES
                if n in preds
            },
            "default_vs_roofline_max_abs_log10": float(gap.max()),
            "seconds": round(time.perf_counter() - t0, 1),
        }
    )


def _commit() -> str | None:
    """The checkout's commit, marked ``+changes`` when files differ from it (None: not a
    checkout)."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+changes" if dirty else "")


def _v(x: dict | float | None, digits: int = 3) -> str:
    """A figure, with its interval when it has one."""
    if isinstance(x, dict):
        value = x.get("value", x.get("difference"))
        if value is None:
            return "–"
        if x.get("lo") is None:
            return f"{value:+.{digits}f}" if "difference" in x else f"{value:.{digits}f}"
        sign = "+" if "difference" in x else ""
        return f"{value:{sign}.{digits}f} [{x['lo']:{sign}.{digits}f}, {x['hi']:{sign}.{digits}f}]"
    return "–" if x is None else f"{x:.{digits}f}"


def _inside(ours: dict, theirs: float) -> str:
    lo, hi = ours.get("lo"), ours.get("hi")
    if lo is None or hi is None:
        return "–"
    return "inside" if lo <= theirs <= hi else "**outside**"


def _machine_rows(s: dict, diff: dict) -> list[str]:
    """Within 2x and coverage per left-out machine: the default beside the simple models.

    Args:
        s: entry -> machine -> scores.
        diff: machine -> the default minus the per-pair constant.
    """
    rows = [
        "| left out | pairs | default within 2× | coverage | roofline | per-pair constant | "
        "default − constant | most similar machine |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m in [*(k for k in s[DEFAULT] if k != POOLED), POOLED]:
        similar = s.get("baseline/most-similar-machine", {}).get(m, {})
        rows.append(
            f"| {m} | {s[DEFAULT][m]['n']} | {_v(s[DEFAULT][m]['within_2'])} | "
            f"{_v(s[DEFAULT][m]['coverage'])} | {_v(s[ROOFLINE][m]['within_2'])} | "
            f"{_v(s[CONSTANT][m]['within_2'])} | {_v(diff[m])} | "
            f"{_v(similar.get('within_2'))} |"
        )
    return rows


def _cut_lines(r: dict) -> list[str]:
    """The same figures on the pairs from the five earlier machines, and per scenario."""
    if "from_earlier_machines" not in r:
        return []
    cut = r["from_earlier_machines"]
    lines = [
        "The same, on the pairs whose source is one of the five earlier machines (outside, "
        "these were the only sources):",
        "",
        *_machine_rows(cut["scores"], cut["default_minus_pair_constant"]),
        "",
        "Per scenario, every left-out machine pooled:",
        "",
        "| scenario | pairs | default within 2× | roofline | per-pair constant | "
        "default − constant |",
        "|---|---|---|---|---|---|",
    ]
    for sc, f in r["by_scenario"].items():
        lines.append(
            f"| {sc} | {f['n']} | {_v(f[DEFAULT])} | {_v(f[ROOFLINE])} | {_v(f[CONSTANT])} | "
            f"{_v(f['default_minus_pair_constant'])} |"
        )
    return [*lines, ""]


def _narrower(per: dict) -> dict:
    """A rule's pooled "narrower than the roofline", with its interval, as a signed figure."""
    p = per["all machines"]
    return {"difference": p["narrower"], "value": p["narrower"], "lo": p["narrower_lo"],
            "hi": p["narrower_hi"]}  # fmt: skip


def _rule_rows(r: dict) -> list[str]:
    """Each interval rule: its coverage per machine, and how much narrower than the roofline's."""
    machines = list(r["machines"])
    rows = [
        "| rule | " + " | ".join(f"coverage {m}" for m in machines) + " | narrower, pooled |",
        "|---|" + "---|" * len(machines) + "---|",
    ]
    for n, per in r["sharpness"].items():
        cov = " | ".join(_v(per[m]["coverage"]) for m in machines)
        rows.append(f"| `{n}` | {cov} | {_v(_narrower(per), 2)} |")
    return rows


def _outside_rows(r: dict, outside: dict) -> list[str]:
    """The figures measured outside beside ours, each marked inside or outside our interval."""
    s, diff, sharp = r["scores"], r["default_minus_pair_constant"], r["sharpness"]
    rows = ["| figure | outside | here | |", "|---|---|---|---|"]
    for n, theirs in outside["within_2"].items():
        if n == "default_minus_pair_constant":
            ours = {**diff[POOLED], "value": diff[POOLED]["difference"]}
        elif n not in s:
            continue
        else:
            ours = s[n][POOLED]["within_2"]
        what = "default − per-pair constant" if n == "default_minus_pair_constant" else n
        rows.append(
            f"| within 2×, {what} | {theirs['value']:.3f} | {_v(ours)} | "
            f"{_inside(ours, theirs['value'])} |"
        )
    for m, theirs in outside["within_2_by_machine"][DEFAULT].items():
        if m in s[DEFAULT]:
            ours = s[DEFAULT][m]["within_2"]
            rows.append(
                f"| within 2×, default, {m} | {theirs:.3f} | {_v(ours)} | {_inside(ours, theirs)} |"
            )
    for n, theirs in outside["narrower"].items():
        if n not in sharp:
            continue
        ours = _narrower(sharp[n])
        rows.append(
            f"| narrower than the roofline, {n} | {theirs['value']:+.2f} | {_v(ours, 2)} | "
            f"{_inside(ours, theirs['value'])} |"
        )
    return rows


def page(results: dict, outside: dict) -> str:
    """The page of the outcome (``docs/eval/fresh-folds.md``), every figure from ``results`` or
    ``outside``.

    Args:
        results: what :func:`score` returned (the results file).
        outside: the figures measured outside (``docs/eval/outside-scoring.json``).

    Returns:
        The page's Markdown.
    """
    d, gap = results["dataset"], results["default_vs_roofline_max_abs_log10"]
    lines = [
        "# Fresh folds: the machines that came after the first five",
        "",
        "Generated by `python -m xamm_models.experiments.fresh` from `docs/eval/fresh-folds.json`"
        ' (the protocol, recorded before the run: [decision records](../decisions.md), "Fresh '
        'folds"). Figures: within 2× and coverage of the 80% intervals with 90% intervals over '
        "kernels.",
        "",
        f"Data set `{d['name']}@{d['version']}`: {d['pairs']} pairs, {len(d['targets'])} targets. "
        f"Code: `{results['code']}` (xamm {results['xamm_version']}). "
        f"{len(results['folds'])} folds, {results['seconds']:.0f} s.",
        "",
        "Left out without a fold (no labelled pair: no like-for-like partner in any other "
        f"target): {', '.join(results['without_pairs']) or 'none'}.",
        "",
        "## Within 2× per left-out machine",
        "",
        *_machine_rows(results["scores"], results["default_minus_pair_constant"]),
        "",
        *_cut_lines(results),
        f"The default's answers differ from the plain roofline's by at most {gap:.2g} in log10.",
        "",
        "## The interval rules",
        "",
        *_rule_rows(results),
        "",
        "## Beside the figures measured outside",
        "",
        f"Outside: {outside['source']}; {outside['pairs']} pairs. Here, each fold also trains on "
        "the other new machines' pairs.",
        "",
        *_outside_rows(results, outside),
        "",
    ]
    return "\n".join(lines)


def _built(data_dir: Path) -> xplat.XplatDataset:
    """The data set, ingested from its named sources into a temporary store."""
    with tempfile.TemporaryDirectory(prefix="xamm-fresh-") as tmp:
        store = Store(Path(tmp) / "store")
        xplat.ingest_sources(data_dir, store)
        return xplat.XplatDataset.from_store(store)


def main(argv: list[str] | None = None) -> int:
    """Run the scoring (or, with ``--no-run``, only rewrite the page from the results file)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=Path("../shared/data"))
    ap.add_argument("--out", type=Path, default=Path("docs/eval/fresh-folds.json"))
    ap.add_argument("--page", type=Path, default=Path("docs/eval/fresh-folds.md"))
    ap.add_argument("--outside", type=Path, default=Path("docs/eval/outside-scoring.json"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-run", action="store_true", help="only the page, from --out")
    args = ap.parse_args(argv)
    if not args.no_run:
        ds = _built(args.data_dir)
        results = score(ds, settings=EvalSettings(workers=args.workers))
        args.out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    results = json.loads(args.out.read_text())
    args.page.write_text(page(results, json.loads(args.outside.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
