"""Telling file types apart from a path and its first bytes: the one place xamm sniffs.

Each format's ``guess`` (:class:`xamm_ingest.format.Format`) is built from these; readers never
sniff on their own. Every function is cheap (a name, a directory listing, the first 4 KiB, a
table's header) and never raises for a file it cannot open: it answers no.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = [
    "BABELSTREAM_CSV_HEAD",
    "CALIPER_SUFFIXES",
    "RAJAPERF_CSV_RE",
    "TABLE_SUFFIXES",
    "is_babelstream_output",
    "is_caliper_file",
    "is_hpctoolkit_database",
    "is_rajaperf_file",
    "is_ramble_workspace",
    "json_kind",
    "table_columns",
]

CALIPER_SUFFIXES = (".cali", ".json")
TABLE_SUFFIXES = (".csv", ".parquet")
HEAD_BYTES = 4096
# the CSV files RAJAPerf writes, by name: PREFIX-ROLE.csv
RAJAPERF_CSV_RE = re.compile(
    r"^(?P<prefix>.+)-(?P<role>kernel-run-data|kernel-details|kernels|timing-Average"
    r"|timing-Minimum|timing-Maximum)\.csv$"
)
# the header of the table BabelStream prints with --csv
BABELSTREAM_CSV_HEAD = "function,num_times,n_elements,sizeof,"


def _head(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(HEAD_BYTES)
    except OSError:
        return b""


def json_kind(path: str | Path) -> str | None:
    """``"thicket"`` (a Thicket's ``to_json()``, which writes the graph first), ``"caliper"``
    (Caliper JSON: json-split or ``format json(object)``), or None, from the first 4 KiB.

    Args:
        path: a ``.json`` file.
    """
    head = _head(Path(path))
    if re.match(rb'\s*\{\s*"graph"\s*:', head):
        return "thicket"
    if any(
        k in head for k in (b'"data"', b'"columns"', b'"nodes"', b'"records"')
    ) or not head.strip().startswith(b"{"):
        return "caliper"
    return None


def is_caliper_file(path: str | Path) -> bool:
    """A Caliper profile by its name and head: ``.cali``, or ``.json`` whose first 4 KiB are
    Caliper's (:func:`json_kind`); another program's JSON beside the profiles is none.

    Args:
        path: a file.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".cali":
        return path.is_file()
    return suffix == ".json" and path.is_file() and json_kind(path) == "caliper"


def is_rajaperf_file(path: str | Path) -> bool:
    """A RAJAPerf CSV file (by its name, as RAJAPerf writes it) or a Thicket's ``to_json()``.
    A ``.cali`` file is not guessed: an application's Caliper profile looks the same.

    Args:
        path: a file.
    """
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return bool(RAJAPERF_CSV_RE.match(path.name)) and path.is_file()
    return path.suffix.lower() == ".json" and json_kind(path) == "thicket"


def is_babelstream_output(path: str | Path) -> bool:
    """A text file whose first 4 KiB hold BabelStream's banner (``BabelStream`` and ``Version``) or
    the header of its ``--csv`` table.

    Args:
        path: a file.
    """
    path = Path(path)
    if not path.is_file():
        return False
    head = _head(path)
    return (b"BabelStream" in head and b"Version" in head) or BABELSTREAM_CSV_HEAD.encode() in head


def is_ramble_workspace(path: str | Path) -> bool:
    """A Ramble workspace directory (Benchpark's): ``configs/ramble.yaml`` and ``experiments/``.

    Args:
        path: a directory.
    """
    path = Path(path)
    return (path / "configs" / "ramble.yaml").is_file() and (path / "experiments").is_dir()


def is_hpctoolkit_database(path: str | Path) -> bool:
    """An HPCToolkit database directory: new format (``meta.db``) or old (``experiment.xml``).

    Args:
        path: a directory.
    """
    path = Path(path)
    return path.is_dir() and ((path / "meta.db").is_file() or (path / "experiment.xml").is_file())


def table_columns(path: str | Path) -> list[str] | None:
    """The column names of a ``.csv`` (its header line) or ``.parquet`` file (its schema); None
    for another file or one that is not a table.

    Args:
        path: a file.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES or not path.is_file():
        return None
    if suffix == ".csv":
        head = _head(path).decode("utf-8", errors="replace").splitlines()
        return [c.strip().strip('"') for c in head[0].split(",")] if head else []
    # heavy (pyarrow): only a .parquet file's schema needs it
    import pyarrow.parquet as pq

    try:
        return list(pq.read_schema(path).names)
    except Exception:  # not Parquet at all: no columns to offer
        return None
