"""Pieces of the zoo's model cards in Hugging Face conventions: ``datasets`` and a ``model-index``
of metrics."""

from __future__ import annotations


def card_datasets_and_metrics(name: str, training: dict) -> str:
    """Model-card YAML lines: ``datasets`` and a ``model-index`` of the official splits' metrics
    (Hub conventions)."""
    ds = str(training.get("dataset") or "").split("@")[0]
    lines = [f"datasets: [{ds}]"] if ds else []
    metrics = training.get("metrics") or {}
    if metrics:
        lines += ["model-index:", f"- name: {name}", "  results:"]
        for scheme, vals in sorted(metrics.items()):
            lines += [
                "  - task: {type: tabular-regression}",
                f"    dataset: {{name: {ds}, type: {ds}, split: {scheme}}}",
                "    metrics:",
            ] + [f"    - {{type: {m}, value: {v:.4f}}}" for m, v in sorted(vals.items())]
    return "".join(line + "\n" for line in lines)


def metrics_table(metrics: dict) -> str:
    """The metrics of the official splits as a Markdown table (or a line saying there are none)."""
    if not metrics:
        return "Not recorded with this model; see the README's evaluation (`xamm eval`)."
    names = sorted({m for v in metrics.values() for m in v})
    rows = [
        f"| {s} | " + " | ".join(f"{v.get(m, float('nan')):.3f}" for m in names) + " |"
        for s, v in sorted(metrics.items())
    ]
    return "\n".join(
        ["| split | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|", *rows]
    )
