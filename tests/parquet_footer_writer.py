"""Parquet files made of a footer alone, written as apache/parquet-format's
``src/thrift/parquet.thrift`` defines it in Thrift's compact protocol: ``FileMetaData`` (1
``version`` i32, 2 ``schema`` list<SchemaElement>, 3 ``num_rows`` i64, 4 ``row_groups``
list<RowGroup>, 5 ``key_value_metadata`` list<KeyValue>), each ``SchemaElement`` (1 ``type``, 3
``repetition_type``, 4 ``name``, 5 ``num_children``, 10 ``logicalType``) listed depth first. No row
group: a reader takes the schema and no rows. Used to give xamm's readers schemas nested deeper than
any Parquet writer here will write in a test's time.
"""

from __future__ import annotations

import struct

I32, I64, BINARY, LIST, STRUCT = 5, 6, 8, 9, 12
OPTIONAL, INT64 = 1, 2


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        if not n:
            return bytes(out + bytes([b]))
        out.append(b | 0x80)


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


class _Struct:
    """A compact-protocol struct, its fields added in increasing id."""

    def __init__(self) -> None:
        self.out, self.last = bytearray(), 0

    def head(self, fid: int, kind: int) -> _Struct:
        delta = fid - self.last
        self.out += (
            bytes([(delta << 4) | kind]) if 0 < delta <= 15 else bytes([kind]) + _zigzag(fid)
        )
        self.last = fid
        return self

    def i32(self, fid: int, v: int) -> _Struct:
        self.head(fid, I32).out += _zigzag(v)
        return self

    def text(self, fid: int, v: str) -> _Struct:
        raw = v.encode()
        self.head(fid, BINARY).out += _varint(len(raw)) + raw
        return self

    def structs(self, fid: int, items: list[bytes]) -> _Struct:
        size = len(items)
        self.head(fid, LIST).out += (
            bytes([(size << 4) | STRUCT]) if size < 15 else bytes([0xF0 | STRUCT]) + _varint(size)
        )
        for item in items:
            self.out += item
        return self

    def raw(self, fid: int, kind: int, body: bytes) -> _Struct:
        self.head(fid, kind).out += body
        return self

    def end(self) -> bytes:
        return bytes(self.out) + b"\x00"


def _nested_struct(levels: int) -> bytes:
    """A struct value holding a struct in field 1, ``levels`` deep."""
    return b"\x1c" * levels + b"\x00" * (levels + 1)


def element(name: str, children: int | None = None, logical_nesting: int = 0) -> bytes:
    """One ``SchemaElement``: a group of ``children``, else an optional INT64 leaf (with a
    ``logicalType`` struct nesting ``logical_nesting`` levels, when asked)."""
    s = _Struct()
    if children is None:
        s.i32(1, INT64)
    s.i32(3, OPTIONAL).text(4, name)
    if children is not None:
        s.i32(5, children)
    if logical_nesting:
        s.raw(10, STRUCT, _nested_struct(logical_nesting - 1))
    return s.end()


def chain(depth: int, logical_nesting: int = 0) -> list[bytes]:
    """The schema of one leaf ``depth`` levels below the root (groups ``a`` around leaf ``x``)."""
    groups = [element("a", 1) for _ in range(depth - 1)]
    return [element("schema", 1), *groups, element("x", logical_nesting=logical_nesting)]


def footer(schema: list[bytes], metadata_first: bool = False) -> bytes:
    """``FileMetaData`` with ``schema``; ``metadata_first`` puts a ``key_value_metadata`` field
    before it (a reader must pass over fields in any order)."""
    s = _Struct()
    if metadata_first:
        kv = _Struct().text(1, "writer").text(2, "tests").end()
        s.structs(5, [kv])  # the fields after it take the long form: their ids are lower
    s.i32(1, 1).structs(2, schema)
    s.head(3, I64).out += _zigzag(0)
    return s.structs(4, []).end()


def parquet_file(schema: list[bytes], metadata_first: bool = False) -> bytes:
    """A whole file: the magic, the footer, its length, the magic."""
    body = footer(schema, metadata_first)
    return b"PAR1" + body + struct.pack("<I", len(body)) + b"PAR1"
