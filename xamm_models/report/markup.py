"""The report's HTML: a page shell with the site's navigation, tables from polars frames, and
figures. Every text that comes from a file (a machine's name, a criterion's description, a
certificate pulled from a Hub) is escaped here, once, on its way into a page."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterable

import polars as pl

__all__ = ["CSS", "escape", "figure", "link", "page", "paragraph", "status", "table"]

escape = html.escape

#: written once as ``style.css``: readable on a laptop and a phone, tables scroll inside their
#: own box rather than push the page wider
CSS = """\
body { font-family: system-ui, sans-serif; margin: 0; color: #1b1f24; background: #fff; }
header { background: #1f3b57; color: #fff; padding: 0.6rem 1.2rem; }
header a { color: #fff; margin-right: 1rem; text-decoration: none; }
header a:hover { text-decoration: underline; }
main { max-width: 72rem; margin: 0 auto; padding: 0.5rem 1.2rem 3rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
h3 { font-size: 1.05rem; }
.scroll { overflow-x: auto; max-width: 100%; margin: 0.6rem 0; }
table { border-collapse: collapse; font-size: 0.85rem; }
th, td { border: 1px solid #d0d7de; padding: 0.25rem 0.5rem; text-align: left;
         vertical-align: top; }
th { background: #f3f5f7; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.pass, .same { color: #1a7f37; font-weight: 600; }
.fail, .slower { color: #cf222e; font-weight: 600; }
.faster { color: #0969da; font-weight: 600; }
.note { color: #57606a; font-size: 0.9rem; }
figure { margin: 1rem 0; } figure img { max-width: 100%; height: auto; }
figcaption { color: #57606a; font-size: 0.85rem; }
"""
#: a value with its interval (``value [lo, hi]``): kept on one line like a number
INTERVAL = re.compile(r"^-?[0-9.]+(e[-+]?[0-9]+)? \[")
#: words drawn in colour wherever a cell holds exactly them
STATUS = {"pass", "fail", "slower", "faster", "same"}


def _cell(v) -> tuple[str, bool]:
    """A value as the text of a cell, and whether it is a number (right-aligned)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "", False
    if isinstance(v, bool):
        return ("yes" if v else "no"), False
    if isinstance(v, float):
        return f"{v:.4g}", True
    if isinstance(v, int):
        return str(v), True
    if isinstance(v, (list, tuple)):
        return ", ".join(map(str, v)), False
    return str(v), bool(INTERVAL.match(str(v)))


def status(text: str) -> str:
    """``text`` escaped, in the colour of its status when it is one (pass, fail, slower, ...)."""
    t = html.escape(text)
    return f'<span class="{t}">{t}</span>' if text in STATUS else t


def table(df: pl.DataFrame, *, links: dict[str, dict[str, str]] | None = None) -> str:
    """A frame as an HTML table in a box that scrolls sideways when it is wider than the page.

    Args:
        df: the table; floats to four significant digits, nulls empty.
        links: column -> {cell text -> href}: those cells become links.

    Returns:
        HTML.
    """
    links = links or {}
    head = "".join(f"<th>{html.escape(c)}</th>" for c in df.columns)
    rows = []
    for r in df.iter_rows():
        cells = []
        for col, v in zip(df.columns, r):
            text, num = _cell(v)
            href = links.get(col, {}).get(text)
            body = link(href, text) if href else status(text)
            cells.append(f'<td class="num">{body}</td>' if num else f"<td>{body}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def link(href: str, text: str) -> str:
    """An ``<a>``: both escaped (hrefs are relative paths the site wrote)."""
    return f'<a href="{html.escape(href, quote=True)}">{html.escape(text)}</a>'


def paragraph(text: str, *, note: bool = False) -> str:
    """A paragraph of escaped text (``note``: in the muted style of a remark)."""
    cls = ' class="note"' if note else ""
    return f"<p{cls}>{html.escape(text)}</p>"


def figure(src: str | None, caption: str, *, missing: str = "") -> str:
    """An image with its caption, or the reason it was not drawn."""
    if src is None:
        return paragraph(missing or f"not drawn: {caption}", note=True)
    alt = html.escape(caption, quote=True)
    return (
        f'<figure><img src="{html.escape(src, quote=True)}" alt="{alt}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


def page(title: str, body: Iterable[str], *, nav: list[tuple[str, str]], css: str) -> str:
    """A whole page.

    Args:
        title: the page's title and heading.
        body: its HTML parts, in order.
        nav: (href, text) of the site's header links, relative to this page.
        css: the stylesheet's href relative to this page.

    Returns:
        HTML.
    """
    links = "".join(link(h, t) for h, t in nav)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{html.escape(title)}</title><link rel="stylesheet" '
        f'href="{html.escape(css, quote=True)}"></head>\n<body><header>{links}</header><main>'
        f"<h1>{html.escape(title)}</h1>\n" + "\n".join(body) + "\n</main></body></html>\n"
    )
