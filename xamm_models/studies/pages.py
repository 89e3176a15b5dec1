"""The studies' published tables, each generated from one results file.

A page holds a block between ``<!-- xamm-generated:NAME ... -->`` and ``<!-- xamm-generated:end
-->``; :data:`BLOCKS` maps NAME to the page, the results file and the function that renders it.
``python -m xamm_models.studies.pages`` rewrites every block from its results file, and a test
fails when a page holds anything else (a stale or hand-edited table).

The results files are written by the studies themselves:

* ``docs/vae-dnn/results.json``: :func:`xamm_models.studies.vae_dnn.run_all`,
  :func:`~xamm_models.studies.vae_dnn.add_loko` and
  :func:`~xamm_models.studies.vae_dnn.add_pair_median`;
* ``docs/adaptation/{controlled,public,predictor}.json``: ``python -m
  xamm_models.studies.adaptation --store STORE --out docs/adaptation/controlled.json`` (with
  ``--public TUTORIAL_QUARTZ`` or ``--predictor TUTORIAL_QUARTZ`` for the other two);
* ``docs/scheduling/results.json``: ``python -m xamm_models.studies.scheduling_jobs --store STORE
  --out docs/scheduling/results.json``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BLOCKS", "Block", "render", "stale", "update"]

REPO = Path(__file__).resolve().parents[2]
END = "<!-- xamm-generated:end -->"


@dataclass(frozen=True)
class Block:
    """A generated block: its page and results file (relative to the repository) and renderer."""

    page: str
    results: str
    render: Callable[[dict], list[str]]

    def begin(self, name: str) -> str:
        """The block's opening marker."""
        return (
            f"<!-- xamm-generated:{name} (from {self.results} by python -m "
            "xamm_models.studies.pages; do not edit) -->"
        )


def _v(x, digits: int = 2) -> str:
    if x is None:
        return "–"
    if isinstance(x, dict):
        if x.get("lo") is None:
            return _v(x.get("value"), digits)
        return f"{x['value']:.{digits}f} [{x['lo']:.{digits}f}, {x['hi']:.{digits}f}]"
    return f"{x:.{digits}f}"


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


VAE_MODELS = ("vae-dnn", "random-forest", "pair-median")


def vae_dnn_table(res: dict) -> list[str]:
    """The VAE-DNN papers' metrics on their 80/20 split and on the official folds, for the VAE-DNN,
    its RandomForest baseline and the trivial pair median, beside the seeds' claims."""
    split = res["split_80_20"]["all switches on"]
    rows = [
        ("R², 80/20 split (the papers' reading)", "0.81", lambda m: _v(split[m]["r2_seed"])),
        (
            "correct ordering of the vector, 80/20",
            "≈ 91%",
            lambda m: _pct(split[m]["ordering_accuracy"]),
        ),
        (
            "ROC AUC, most common ordering as positive, 80/20",
            "(curve only)",
            lambda m: _v(split[m]["auc"]),
        ),
        ("within 2×, 80/20 [90% CI]", "–", lambda m: _v(split[m]["within_2"])),
    ]
    for key, what in (
        ("kernel_group_pooled", "leave one kernel group out"),
        ("kernel_pooled", "leave one kernel out"),
    ):
        if key in res:
            r = res[key]
            rows += [
                (f"R² (fold mean), {what}", "–", lambda m, r=r: _v(r[m]["r2_seed_fold_mean"])),
                (
                    f"correct ordering (fold mean), {what}",
                    "–",
                    lambda m, r=r: _pct(r[m]["ordering_accuracy_fold_mean"]),
                ),
                (f"within 2×, {what} [90% CI]", "–", lambda m, r=r: _v(r[m]["within_2"])),
            ]
    lengths = res["dataset"].get("test_vector_lengths_80_20", {})
    return [
        f"Data set version `{res['dataset']['version']}`, {res['dataset']['vectors']} vectors "
        f"(sample × source) over {len(res['dataset']['targets'])} targets. The 80/20 test "
        "vectors hold "
        + ", ".join(f"{k} measured targets ({v} vectors)" for k, v in lengths.items())
        + "; the seeds' held 4.",
        "",
        "| | seeds (their data) | VAE-DNN here | RandomForest here | pair median here |",
        "|---|---|---|---|---|",
        *[
            f"| {label} | {seed} | " + " | ".join(f(m) for m in VAE_MODELS) + " |"
            for label, seed, f in rows
        ],
        "",
        vae_trivial_line(res),
    ]


def _vae_figures(res: dict) -> list[tuple[str, str, str]]:
    """(what, metric key, result key) of the figures the trivial baseline is held against."""
    out = [
        ("within 2×, 80/20", "within_2", "split"),
        ("ordering, 80/20", "ordering_accuracy", "split"),
    ]
    for key, what in (
        ("kernel_group_pooled", "leave one kernel group out"),
        ("kernel_pooled", "leave one kernel out"),
    ):
        if key in res:
            out += [
                (f"within 2×, {what}", "within_2", key),
                (f"ordering, {what}", "ordering_accuracy_fold_mean", key),
            ]
    return out


def vae_trivial_line(res: dict) -> str:
    """Where the trivial pair median is at least the VAE-DNN, counted from the results."""
    wins = []
    for what, metric, key in _vae_figures(res):
        r = res["split_80_20"]["all switches on"] if key == "split" else res[key]
        a, b = (r[m][metric] for m in ("pair-median", "vae-dnn"))
        a, b = (x["value"] if isinstance(x, dict) else x for x in (a, b))
        if a is not None and b is not None and a >= b:
            wins.append(what)
    return (
        "**Where the trivial baseline wins:** the pair median is at or above the VAE-DNN in "
        + (", ".join(wins) if wins else "none of within 2× and ordering, on any split")
        + "."
    )


# method -> column title, in the table's order
ADAPT_METHODS = {
    "adapted": "adapted",
    "adapted-no-names": "adapted without names",
    "target-median": "per-target median of the labels",
    "pair-median": "per-target median of the labels",
    "scratch-ridge": "from scratch (ridge)",
    "scratch-mlp": "from scratch (MLP)",
}
STUDIES = {
    "controlled": "the controlled stand-in",
    "public": "the public stand-in",
    "predictor": "the paper's predictor adapted to the top-down platform",
}


def adaptation_table(res: dict) -> list[str]:
    """Within 2x per fraction labelled: the adapted model, the trivial per-target median of the
    same labels, the models from scratch, and full supervision where the study has it; then the
    median |log10 error| of the adapted model and the median."""
    by = {(r["method"], r["fraction"]): r for r in res["rows"]}
    fractions = sorted({f for m, f in by if m == "adapted"})
    methods = [m for m in ADAPT_METHODS if any(k == m for k, _ in by)]
    median = next(m for m in ("target-median", "pair-median") if m in methods)

    def cell(m, f, k="within_2"):
        r = by.get((m, f))
        return "–" if r is None else _v({"value": r[k], "lo": r[f"{k}_lo"], "hi": r[f"{k}_hi"]})

    full = ("full", 1.0) in by
    out = [
        f"{STUDIES[res['study']].capitalize()}: data set version `{res['dataset']}`, "
        f"{res['repeats']} repeats; within 2× and median abs log10 error [90% CI over kernels]:",
        "",
        "| fraction labelled | "
        + " | ".join(ADAPT_METHODS[m] for m in methods)
        + (" | full supervision (MLP, 100%)" if full else "")
        + " | adapted, median abs log10 error | per-target median, median abs log10 error |",
        "|---|" + "---|" * (len(methods) + full + 2),
    ]
    for i, f in enumerate(fractions):
        sup = [cell("full", 1.0) if i == 0 else ""] if full else []
        out.append(
            f"| {f:.0%} | "
            + " | ".join([*(cell(m, f) for m in methods), *sup])
            + f" | {cell('adapted', f, 'median_abs_log10')} | "
            f"{cell(median, f, 'median_abs_log10')} |"
        )
    return [*out, "", trivial_line(by, fractions, median), *left_out_lines(by, fractions)]


def left_out_lines(by: dict, fractions: list[float]) -> list[str]:
    """Per fraction where a method could not answer every test row: the rows every method was
    scored on and how many were left out, from the rows (``left_out``)."""
    out = []
    for f in fractions:
        rows = [r for (m, g), r in by.items() if g == f]
        left = max((r.get("left_out", 0) for r in rows), default=0)
        if left:
            out.append(
                f"At {f:.0%} labelled, every method is scored on the {rows[0]['n']} test rows all "
                f"of them answered ({left} left out: a method could not train on a target's "
                "labels)."
            )
    return ["", *out] if out else []


def trivial_line(by: dict, fractions: list[float], median: str) -> str:
    """Where the trivial baseline wins, counted from the rows: fractions at which the per-target
    median's within 2x is above the adapted model's, and at how many the intervals are apart."""
    above = [f for f in fractions if by[(median, f)]["within_2"] > by[("adapted", f)]["within_2"]]
    apart = [f for f in above if by[(median, f)]["within_2_lo"] > by[("adapted", f)]["within_2_hi"]]
    if len(above) == len(fractions):
        where = f"at every fraction labelled ({len(fractions)} of {len(fractions)})"
    elif above:
        listed = ", ".join(f"{f:.0%}" for f in above)
        where = f"at {len(above)} of {len(fractions)} fractions ({listed})"
    else:
        where = "at no fraction"
    return (
        f"**Where the trivial baseline wins:** the per-target median of the labels is above the "
        f"adapted model in within 2× {where}; its interval lies wholly above the adapted model's "
        f"at {len(apart)} of them."
    )


SCHED_POLICIES = (
    "oracle",
    "predicted",
    "roofline",
    "device-kind",
    "adapted",
    "least-loaded",
    "random",
)


def scheduling_table(res: dict) -> list[str]:
    """Mean turnaround per cluster and policy, and the default predictor's cut against random
    placement and against knowing the device kind only."""
    out = [
        f"Data set version `{res['dataset']}`; {res['jobs']} jobs profiled on `{res['source']}`, "
        f"load {res['load']}, seed {res['seed']}. Mean turnaround:",
        "",
        "| cluster (nodes) | distinct samples (kernels) | "
        + " | ".join(SCHED_POLICIES)
        + " | predicted vs random (turnaround change; below 0 is better) "
        "| predicted vs device kind only |",
        "|---|---|" + "---|" * (len(SCHED_POLICIES) + 2),
    ]
    for name, c in res["clusters"].items():
        t = {p["policy"]: p["mean_turnaround_s"] for p in c["policies"]}
        nodes = ", ".join(f"{m} {n}" for m, n in c["nodes"].items())
        cut = [
            f"{100 * (t['predicted'] / t[b] - 1):+.0f}%".replace("-", "−")
            for b in ("random", "device-kind")
        ]
        out.append(
            f"| {name} ({nodes}) | {c['distinct_samples']} ({c['distinct_kernels']}) | "
            + " | ".join(f"{t[p]:,.1f} s" if p in t else "–" for p in SCHED_POLICIES)
            + f" | {cut[0]} | {cut[1]} |"
        )
    return out


BLOCKS = {
    "vae-dnn": Block("docs/reproductions/vae-dnn.md", "docs/vae-dnn/results.json", vae_dnn_table),
    **{
        f"adaptation-{k}": Block(
            "docs/reproductions/adaptation.md", f"docs/adaptation/{k}.json", adaptation_table
        )
        for k in STUDIES
    },
    "scheduling": Block(
        "docs/reproductions/adaptation.md", "docs/scheduling/results.json", scheduling_table
    ),
}


def render(name: str, root: Path = REPO) -> str:
    """A block as it belongs on its page, markers included.

    Args:
        name: the block's name in :data:`BLOCKS`.
        root: the repository.

    Returns:
        The block's text.
    """
    b = BLOCKS[name]
    res = json.loads((root / b.results).read_text())
    return "\n".join([b.begin(name), "", *b.render(res), "", END])


def _span(text: str, begin: str, page: str) -> tuple[int, int]:
    if begin not in text:
        raise ValueError(f"{page} lacks the marker {begin!r}")
    i = text.index(begin)
    j = text.index(END, i) + len(END)
    return i, j


def stale(root: Path = REPO) -> list[str]:
    """The blocks whose page does not hold exactly what their results file renders.

    Args:
        root: the repository.

    Returns:
        Their names.
    """
    out = []
    for name, b in BLOCKS.items():
        text = (root / b.page).read_text()
        i, j = _span(text, b.begin(name), b.page)
        if text[i:j] != render(name, root):
            out.append(name)
    return out


def update(root: Path = REPO) -> list[str]:
    """Rewrite every block from its results file.

    Args:
        root: the repository.

    Returns:
        The names of the blocks that changed.
    """
    changed = stale(root)
    for name in changed:
        b = BLOCKS[name]
        text = (root / b.page).read_text()
        i, j = _span(text, b.begin(name), b.page)
        (root / b.page).write_text(text[:i] + render(name, root) + text[j:])
    return changed


if __name__ == "__main__":
    print("\n".join(update()) or "every generated block is up to date")
    sys.exit(0)
