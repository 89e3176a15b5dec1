"""How deep a Parquet file's schema nests, read from its footer before polars reads the file.

polars' Parquet reader ends the process with a segmentation fault on a schema nested some hundreds
of levels deep (reading the rows; its schema and metadata readers a few thousand levels deeper),
where an xamm table nests four (a list of structs). pyarrow refuses such a footer (its depth limit
is 100) but costs more to import than most commands spend. The footer's schema is a flat list
(parquet-format's ``FileMetaData.schema``, in Thrift's compact protocol), each element giving the
number of its children, so its depth is counted here without recursion, and a file nesting deeper
than :data:`MAX_DEPTH` is refused before polars opens it.

A file without a plain footer (no closing magic, a length past the file, an encrypted footer) is
left to polars, which reports it. A footer this reader cannot walk as parquet-format's
``FileMetaData`` (damaged bytes, no schema), or whose Thrift structures nest deeper than the
format's own (:data:`MAX_THRIFT_NESTING`), is refused too: another reader may walk such bytes
further than this one, down to a schema it would not survive.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Callable
from pathlib import Path

import polars as pl

from xamm_data.errors import XammError

__all__ = [
    "MAX_DEPTH",
    "ParquetDepthError",
    "UnreadableParquetError",
    "checked_depth",
    "checked_footer",
    "footer_of",
    "read_parquet",
    "schema_depth",
]

MAX_DEPTH = 64  # levels below the root; polars' reader was seen to fail at 400 (fine at 200)
MAX_THRIFT_NESTING = 32  # parquet-format's deepest structure nests four
_MAGIC = b"PAR1"


class ParquetDepthError(XammError, ValueError):
    """A Parquet file xamm does not hand to polars: its schema (or footer) nests too deep, or its
    footer cannot be walked (the store reports one among its files as a
    :class:`~xamm_data.store.files.CorruptDataError`)."""


class UnreadableParquetError(XammError, ValueError):
    """A file polars cannot read as Parquet (damaged, or another format), named."""


class _Unreadable(XammError):
    """The footer cannot be walked as a ``FileMetaData`` (the file is refused)."""


class _TooDeep(XammError):
    """The footer's Thrift structures nest past :data:`MAX_THRIFT_NESTING`."""


class _Compact:
    """Just enough of Thrift's compact protocol to walk a footer: varints, field headers, and
    skipping any value."""

    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise _Unreadable
        self.pos += 1
        return self.data[self.pos - 1]

    def varint(self) -> int:
        out = shift = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 70:
                raise _Unreadable

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def field(self, last: int) -> tuple[int, int]:
        """(field id, type) of the next field of a struct; type 0 at its end."""
        head = self.byte()
        kind, delta = head & 0x0F, head >> 4
        if kind == 0:
            return 0, 0
        return (last + delta if delta else self.zigzag()), kind

    def list_header(self) -> tuple[int, int]:
        head = self.byte()
        size = head >> 4
        return (self.varint() if size == 15 else size), head & 0x0F

    def skip(self, kind: int, nesting: int = 0) -> None:
        """Pass over one value of compact type ``kind``."""
        if nesting > MAX_THRIFT_NESTING:
            raise _TooDeep
        if kind in (1, 2):  # a field's boolean is in its header
            return
        if kind == 3:
            self.byte()
        elif kind in (4, 5, 6):
            self.varint()
        elif kind in (7, 13):  # double, UUID
            self._advance(8 if kind == 7 else 16)
        elif kind == 8:
            self._advance(self.varint())
        elif kind in (9, 10):
            size, inner = self.list_header()
            for _ in range(size):
                self._element(inner, nesting + 1)
        elif kind == 11:
            self._skip_map(nesting)
        elif kind == 12:
            last = 0
            while (got := self.field(last))[1]:
                last = got[0]
                self.skip(got[1], nesting + 1)
        else:
            raise _Unreadable

    def _skip_map(self, nesting: int) -> None:
        size = self.varint()
        if size:
            kinds = self.byte()
            for _ in range(size):
                self._element(kinds >> 4, nesting + 1)
                self._element(kinds & 0x0F, nesting + 1)

    def _element(self, kind: int, nesting: int) -> None:
        if kind in (1, 2):  # a container's boolean takes a byte
            self.byte()
        else:
            self.skip(kind, nesting)

    def _advance(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise _Unreadable
        self.pos += n


def _children(r: _Compact) -> int:
    """One ``SchemaElement``: its ``num_children`` (field 5; 0 for a leaf)."""
    children, last = 0, 0
    while (got := r.field(last))[1]:
        last, kind = got
        if last == 5 and kind == 5:
            children = r.zigzag()
        else:
            r.skip(kind, 1)
    return children


def schema_depth(footer: bytes) -> int:
    """The levels a footer's schema nests below its root, counted until :data:`MAX_DEPTH` is
    passed.

    Args:
        footer: the ``FileMetaData`` bytes (between the data and the footer's length).

    Raises:
        ParquetDepthError: the footer is no ``FileMetaData`` with a schema, or its Thrift
            structures nest past parquet-format's.
    """
    r = _Compact(footer)
    try:
        last = 0
        while (got := r.field(last))[1]:
            last, kind = got
            if last == 2 and kind == 9:
                return _list_depth(r)
            r.skip(kind)
    except _Unreadable:
        pass
    except _TooDeep:
        raise ParquetDepthError(
            f"its footer nests Thrift structures past {MAX_THRIFT_NESTING} levels"
        ) from None
    raise ParquetDepthError(
        "its footer is not the FileMetaData parquet-format defines (a damaged file, or not Parquet)"
    )


def _list_depth(r: _Compact) -> int:
    size, kind = r.list_header()
    if kind != 12:
        raise _Unreadable
    open_: list[int] = []  # children still to come of each group above the next element
    deepest = 0
    for _ in range(size):
        if open_:
            open_[-1] -= 1
        deepest = max(deepest, len(open_))
        if deepest > MAX_DEPTH:
            break
        if children := _children(r):
            open_.append(children)
        while open_ and open_[-1] <= 0:
            open_.pop()
    return deepest


def footer_of(read_tail: Callable[[int], bytes]) -> bytes | None:
    """A Parquet file's footer, from what reads the file's last ``n`` bytes (a seek on a local
    file, a ranged read on an object store); None when it has none.

    Args:
        read_tail: ``n`` -> the file's last ``n`` bytes (fewer when the file is shorter).
    """
    tail = read_tail(8)
    if len(tail) < 8 or tail[4:] != _MAGIC:
        return None
    (n,) = struct.unpack("<I", tail[:4])
    # the footer as a reader finds it: the n bytes before its length (over the leading magic, in
    # a file that lies about it), where the file holds them
    got = read_tail(n + 8) if n > 0 else b""
    return got[:n] if len(got) == n + 8 else None


def _footer(source: str | Path | bytes) -> bytes | None:
    """A Parquet file's footer (a local path or the file's bytes); None when it has none."""
    if isinstance(source, bytes | bytearray | memoryview):
        data = memoryview(source)
        return footer_of(lambda n: bytes(data[-n:]) if n <= len(data) else b"")
    with open(source, "rb") as f:
        size = f.seek(0, os.SEEK_END)

        def read_tail(n: int) -> bytes:
            if n > size:
                return b""
            f.seek(size - n)
            return f.read(n)

        return footer_of(read_tail)


def checked_footer(footer: bytes | None, label: str | None) -> None:
    """Refuse a footer whose schema (or Thrift structure) nests too deep.

    Args:
        footer: a Parquet file's footer (None: none, nothing to check).
        label: how the error names the file (None: no name).

    Raises:
        ParquetDepthError: it nests too deep.
    """
    try:
        depth = None if footer is None else schema_depth(footer)
    except ParquetDepthError as e:
        raise ParquetDepthError(f"{label}: {e}" if label else str(e)) from None
    if depth is not None and depth > MAX_DEPTH:
        what = f"its schema nests more than {MAX_DEPTH} levels deep (an xamm table nests four)"
        raise ParquetDepthError(f"{label}: {what}" if label else what)


def checked_depth(source: str | Path | bytes, name: str | None = None) -> None:
    """Refuse a Parquet file whose schema nests deeper than :data:`MAX_DEPTH`, before polars
    reads it (a remote path, and a file without a Parquet footer, are left to polars).

    Args:
        source: a local path or the file's bytes.
        name: how the error names the file (None: the path, or no name for bytes).

    Raises:
        ParquetDepthError: the schema (or the footer) nests too deep.
    """
    if isinstance(source, str) and "://" in source:
        return
    label = name if name is not None else (None if isinstance(source, bytes) else str(source))
    try:
        footer = _footer(source)
    except OSError:  # a file that cannot be opened: polars says so, naming it
        return
    checked_footer(footer, label)


def read_parquet(source: str | Path | bytes, name: str | None = None, **kwargs) -> pl.DataFrame:
    """``pl.read_parquet`` of a file whose depth was checked first (:func:`checked_depth`).

    Args:
        source: a path or the file's bytes.
        name: how an error names the file (None: by its path; ``""``: the caller names it, and
            polars' own error is raised for a file it cannot read).
        **kwargs: what ``pl.read_parquet`` takes.

    Raises:
        ParquetDepthError: nested too deep.
        UnreadableParquetError: polars cannot read it (with ``name`` not ``""``).
    """
    checked_depth(source, name)
    try:
        return pl.read_parquet(
            io.BytesIO(source) if isinstance(source, bytes) else source, **kwargs
        )
    except (pl.exceptions.PolarsError, OSError) as e:
        if name == "":
            raise
        label = name or ("the given bytes" if isinstance(source, bytes) else str(source))
        first = str(e).strip().splitlines()[0][:160] if str(e).strip() else ""
        raise UnreadableParquetError(
            f"{label}: cannot read it as Parquet ({type(e).__name__}: {first})"
        ) from None
