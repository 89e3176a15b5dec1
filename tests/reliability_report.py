"""The markdown page each seeded fault campaign writes (docs/reliability*.md): a title, how it was
made, its table."""

from __future__ import annotations


def markdown_report(title: str, intro: str, rows: list[dict]) -> str:
    """``rows`` (one dict per class, same keys) as a markdown table under ``# title`` and
    ``intro``."""
    cols = list(rows[0])
    lines = [f"# {title}", "", intro, "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def tally_rows(tally: dict) -> list[dict]:
    """One row per class of a fuzzer's ``{class: Counter}`` (mutation kinds, and the outcomes
    ``read`` and ``refused``): a silent wrong value or a traceback fails the campaign's test, so
    those columns are 0."""
    return [
        {
            "class": cls,
            "mutations": ", ".join(sorted(k for k in t if k not in ("read", "refused"))),
            "cases": t["read"] + t["refused"],
            "silent wrong values": 0,
            "tracebacks": 0,
            "named refusals": t["refused"],
            "read as the parse gives": t["read"],
        }
        for cls, t in tally.items()
    ]


class _Captured:
    """What pytest's ``capsys`` gives a campaign, for a run outside pytest: output since the last
    call."""

    def __init__(self, out, err):
        self._out, self._err = out, err

    def readouterr(self):
        out, err = self._out.getvalue(), self._err.getvalue()
        for s in (self._out, self._err):
            s.seek(0)
            s.truncate()
        return type("Out", (), {"out": out, "err": err})()


def run_captured(campaign, *args):
    """``campaign(*args, capsys)`` outside pytest, its output captured as ``capsys`` would (for
    ``__main__``)."""
    import io
    import sys

    real = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
    try:
        return campaign(*args, _Captured(sys.stdout, sys.stderr))
    finally:
        sys.stdout, sys.stderr = real
