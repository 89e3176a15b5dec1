"""The markdown page each seeded fault campaign writes (docs/reliability*.md): a title, how it was made, its table."""

from __future__ import annotations


def markdown_report(title: str, intro: str, rows: list[dict]) -> str:
    """``rows`` (one dict per class, same keys) as a markdown table under ``# title`` and ``intro``."""
    cols = list(rows[0])
    lines = [f"# {title}", "", intro, "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"
