"""Short human summaries of xamm tables, and the printer that draws them in a terminal."""

from __future__ import annotations

import math
import textwrap

import polars as pl

from xamm_data.cli.terminal import ESCAPES


def summarize_benchmark_runs(df: pl.DataFrame) -> pl.DataFrame:
    """One row per (machine, device): kernels, variants, tunings, problem sizes, trials, rows,
    sources."""
    if df.is_empty():
        return pl.DataFrame()
    return (
        df.group_by("machine", "device")
        .agg(
            pl.col("kernel").n_unique().alias("kernels"),
            pl.col("variant").unique().sort().str.join(",").alias("variants"),
            pl.col("tuning").n_unique().alias("tunings"),
            pl.col("problem_size").n_unique().alias("problem_sizes"),
            (pl.col("trial").max() + 1).alias("max_trials"),
            pl.len().alias("rows"),
            pl.col("source_sha256").n_unique().alias("source_files"),
            pl.col("time_per_rep_s").median().alias("median_time_per_rep_s"),
        )
        .sort("machine", "device")
    )


#: the columns a command drawn for a terminal beside an editor takes (``--wide`` or ``--json``
#: where it has more to show)
WIDTH = 100
WIDE = 200  # what ``--wide`` draws in
TABLE_WIDTH = 160  # the tables of the commands not yet drawn for 100 columns


def print_frame(
    df: pl.DataFrame,
    title: str | None = None,
    *,
    file=None,
    width: int = TABLE_WIDTH,
    show_lines: bool = False,
) -> None:
    """Print a small frame as a table (polars' own table printer: nothing more to load), at most
    ``width`` columns wide; a cell longer than its column folds onto more lines.

    Args:
        df: the table.
        title: its title, a line of its own above the table.
        file: where to print (default: stdout).
        width: the columns the table may take.
        show_lines: a rule between rows (where each row ends shows).
    """
    # every value as the text shown (a float to 4 significant digits, nothing for a null), so the
    # printer neither quotes, rounds nor truncates what it draws
    cells = {
        name: [_cell(v) for v in col]
        for name, col in zip(_shown_names(df.columns), df.iter_columns(), strict=True)
    }
    longest = max((len(v) for c, col in cells.items() for v in (c, *col)), default=0)
    text = pl.DataFrame(
        [pl.Series(c, col, dtype=pl.String) for c, col in cells.items()], height=df.height
    )
    with pl.Config(
        tbl_formatting="UTF8_FULL" if show_lines else "UTF8_FULL_CONDENSED",
        tbl_hide_column_data_types=True,
        tbl_hide_dataframe_shape=True,
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=width,
        fmt_str_lengths=max(width, longest),
        fmt_table_cell_list_len=-1,
    ):
        drawn = str(text)
    if title is not None:
        title = _visible(title)
        print(textwrap.fill(title, width) if len(title) > width else title, file=file)
    print(drawn, file=file)


#: what :mod:`~xamm_data.cli.terminal` escapes, and the tab (a cell's width would not be its own)
_CONTROLS = ESCAPES | {0x09: "\\t"}


def _visible(text: str) -> str:
    return text.translate(_CONTROLS)


def _shown_names(names: list[str]) -> list[str]:
    """Each column's name as drawn; a name that another's escape already took (``a\\x1b`` beside
    ``a`` followed by an escape character) is drawn numbered, ``#2``, ``#3``, ..., never dropped."""
    shown: list[str] = []
    taken: set[str] = set()
    for name in names:
        seen = candidate = _visible(name)
        k = 1
        while candidate in taken:
            k += 1
            candidate = f"{seen} #{k}"
        shown.append(candidate)
        taken.add(candidate)
    return shown


def _cell(v) -> str:
    return "" if v is None else f"{v:.4g}" if isinstance(v, float) else _visible(str(v))


def _g(v, digits: int = 4) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}g}"


def with_intervals(
    df: pl.DataFrame, spec: dict[str, tuple[str, str]], *, digits: int = 4
) -> pl.DataFrame:
    """``df`` with each column of ``spec`` shown as ``value [lo, hi]`` (its two bound columns
    dropped): one column where three would crowd a terminal.

    Args:
        df: the table.
        spec: column -> (its lower bound's column, its upper bound's column).
        digits: significant digits of each number.
    """
    shown = []
    for col, (lo, hi) in spec.items():
        text = [
            _g(v, digits)
            if v is None or a is None or b is None
            else f"{_g(v, digits)} [{_g(a, digits)}, {_g(b, digits)}]"
            for v, a, b in zip(df[col].to_list(), df[lo].to_list(), df[hi].to_list())
        ]
        shown.append(pl.Series(col, text, dtype=pl.String))
    return df.with_columns(shown).drop(c for pair in spec.values() for c in pair)


def say(text: str, *, indent: str = "  ", file=None) -> None:
    """Print a line of prose folded to :data:`WIDTH` columns, its continuation indented."""
    print(
        textwrap.fill(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  "),
        file=file,
    )
