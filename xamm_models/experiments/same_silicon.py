"""Same silicon in the evaluation: on the nested leave-one-machine-out folds, a left-out machine
that shares its processor with a measured one answered from that machine's measured ratios
(:func:`xamm_models.predictors.same_silicon.sibling_answers`), against the default and the
baselines on the same pairs.

What each answer may read: the sibling's labelled pairs (every kernel: the sibling is a measured
machine, and a centre that ran RAJAPerf on it has them), never a pair touching the left-out
machine; the configuration scale from both machines' benchmark runs without the fold's kernel
group, as the left-out machine's signature is built.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from xamm_models.predictors.same_silicon import sibling_answers

__all__ = ["COMPARED", "same_silicon_rows", "same_silicon_scores"]

# the entries the same-silicon answer is set against, on the pairs it answers
COMPARED = (
    "stacked/default",
    "baseline/roofline",
    "baseline/pair-constant",
    "baseline/most-similar-machine",
)
HEAD = [
    "| left-out end | its sibling | pairs answered (of) | same silicon, within 2× [90% CI] "
    "| stacked/default on them | same silicon − default [90% CI] "
    "| same silicon − per-pair constant [90% CI] "
    "| median abs log10 error: same silicon − default |",
    "|---|---|---|---|---|---|---|---|",
]


def _answers(ds, default: pl.DataFrame) -> pl.DataFrame:
    """The default's machine-scheme rows with the same-silicon answer (``y_same``, NaN where none)
    and the sibling used."""
    folds = {f.name: f for f in ds.get_idx_split("machine")}
    parts = []
    for (name,), part in default.group_by(["fold"], maintain_order=True):
        fold = folds[name]
        held = fold.held_out_machine + ":"
        samples = ds.samples.filter(~pl.col("app").is_in(list(fold.machine_exclude)))
        measured = ds.pairs.filter(
            ~(pl.col("source").str.starts_with(held) | pl.col("target").str.starts_with(held))
        )
        y, sib = sibling_answers(part, measured, samples)
        parts.append(part.with_columns(pl.Series("y_same", y), pl.Series("sibling", sib)))
    return pl.concat(parts)


def _scored(
    ev, rows: pl.DataFrame, preds: dict[str, pl.DataFrame], keep: np.ndarray, of: int
) -> dict:
    """The same-silicon answer's scores on the kept rows (of ``of`` pairs asked), and its
    differences from each compared entry on them."""
    mine = rows.filter(pl.Series(keep)).with_columns(pl.col("y_same").alias("y_pred"))
    out = {
        "pairs": int(of),
        "answered": int(keep.sum()),
        "sibling": sorted(set(mine.get_column("sibling"))),
        "same_silicon": ev.pooled(mine),
        "entries": {},
        "differences": {},
    }
    for name in COMPARED:
        if name not in preds:
            continue
        theirs = preds[name].filter(pl.Series(keep))
        out["entries"][name] = ev.pooled(theirs)
        out["differences"][name] = ev.compare(mine, theirs)["all"]
    return out


def same_silicon_scores(ev, ds, preds: dict[str, pl.DataFrame]) -> dict:
    """Per left-out end with a measured sibling, and over them all: the same-silicon answer
    against :data:`COMPARED` on the pairs it answers.

    Args:
        ev: the evaluator.
        ds: the data set.
        preds: the machine scheme's predictions per entry (every frame's rows in one order).

    Returns:
        ``{"by_target": {end: scores}, "all": scores}``; empty when no left-out end has a sibling.
    """
    default = preds.get("stacked/default")
    if default is None:
        return {}
    rows = _answers(ds, default)
    key = ["sample", "source", "target", "fold"]
    frames = {"the same-silicon answers": rows, **{n: preds[n] for n in COMPARED if n in preds}}
    for name, frame in frames.items():
        if not frame.select(key).equals(default.select(key)):
            raise ValueError(f"{name}: rows are not in the default's order")
    answered = np.isfinite(rows.get_column("y_same").to_numpy())
    if not answered.any():
        return {}
    targets = rows.get_column("target").to_numpy()
    by_target = {
        t: _scored(ev, rows, preds, answered & (targets == t), int((targets == t).sum()))
        for t in sorted(set(targets[answered]))
    }
    has = np.isin(targets, list(by_target))
    return {"by_target": by_target, "all": _scored(ev, rows, preds, answered, int(has.sum()))}


def _ci(m: dict) -> str:
    return f"{m['value']:.2f} [{m['lo']:.2f}, {m['hi']:.2f}]"


def _diff(d: dict) -> str:
    return f"{d['difference']:+.2f} [{d['lo']:+.2f}, {d['hi']:+.2f}]"


def _row(end: str, s: dict, sibling: str | None = None) -> str:
    d = s["differences"]
    cells = [
        end,
        sibling or ", ".join(s["sibling"]),
        f"{s['answered']} ({s['pairs']})",
        _ci(s["same_silicon"]["within_2"]),
        _ci(s["entries"]["stacked/default"]["within_2"]),
        _diff(d["stacked/default"]["within_2"]),
        _diff(d["baseline/pair-constant"]["within_2"]) if "baseline/pair-constant" in d else "–",
        _diff(d["stacked/default"]["median_abs_log10"]),
    ]
    return "| " + " | ".join(cells) + " |"


def same_silicon_rows(summary: dict) -> list[str]:
    """The evaluation page's same-silicon table (header included), from ``results.json``; empty
    when the run has none."""
    s = summary["results"].get("machine", {}).get("same_silicon") or {}
    if not s:
        return []
    rows = [_row(t, v) for t, v in s["by_target"].items()]
    return [*HEAD, *rows, _row("all", s["all"], "each end's above")]
