"""What ``cali-query -q "select * format json(object)"`` writes for a ``.cali`` file, for test
fixtures.

There is no ``cali-query`` binary here, so this follows Caliper's ``src/reader/JsonFormatter.cpp``
(LLNL/Caliper at 74e48659) line by line, on records and metadata read by ``caliperreader`` (LLNL's
own reader, independent of xamm's ``.cali`` parser):

* records: hidden (``CALI_ATTR_HIDDEN`` = 128) and global (512) attributes are left out; the nodes
  of every nested (256) attribute go under the one key ``path``, labels joined with ``/`` from the
  root in the order of the record's node chain (caliperreader's ``path`` holds that chain); a value
  of type string or usr is quoted, any other value is written as its text unquoted (so ``nan`` stays
  bare); quoted keys first, then unquoted, each sorted by name (``std::map``);
* ``layout="object"`` wraps them as ``{"records": [...], "globals": {...}, "attributes": {...}}``;
  globals are all written as quoted strings, attributes (not nested, not hidden) as
  ``{"is_global": .., "is_nested": .., <metadata name>: "<value>", ...}``;
* ``layout="records"`` (the default ``format json``) writes the record list alone.
"""

from __future__ import annotations

import json

import caliperreader

HIDDEN, NESTED, GLOBAL = 128, 256, 512
_SKIP_META = {
    "is_global",
    "is_value",
    "is_nested",
    "is_aggregatable",
    "class.aggregatable",
    "cali.attribute.name",
    "cali.attribute.prop",
    "cali.attribute.type",
    "type",
}


def _prop(reader, name: str) -> int:
    return int(reader.attribute(name).metadata().get("cali.attribute.prop", 0))


def _esc(s: str) -> str:
    return json.dumps(s)[1:-1]


def _record(reader, rec: dict) -> str:
    quoted, bare = {}, {}
    for name, value in rec.items():
        # caliperreader's "path": the whole nested chain, root first,
        if name not in reader.attributes():
            # as JsonFormatter joins it
            quoted["path"] = "/".join(value) if isinstance(value, list) else str(value)
            continue
        attr = reader.attribute(name)
        prop = _prop(reader, name)
        if prop & (HIDDEN | GLOBAL | NESTED):
            continue
        if attr.metadata().get("type") in ("string", "usr"):
            quoted[name] = str(value)
        else:
            bare[name] = str(value)
    parts = [f'"{_esc(k)}":"{_esc(v)}"' for k, v in sorted(quoted.items())]
    parts += [f'"{_esc(k)}":{v}' for k, v in sorted(bare.items())]
    return "{" + ",".join(parts) + "}"


def _attributes(reader) -> str:
    out = []
    for name in reader.attributes():
        prop = _prop(reader, name)
        if prop & (NESTED | HIDDEN):
            continue
        meta = reader.attribute(name).metadata()
        extra = "".join(
            f',"{_esc(k)}": "{_esc(str(v))}"' for k, v in meta.items() if k not in _SKIP_META
        )
        out.append(
            f'"{name}": {{"is_global": {"true" if prop & GLOBAL else "false"},"is_nested": '
            f"{'true' if prop & NESTED else 'false'}{extra}}}"
        )
    return ",\n".join(out)


def cali_query_json(cali_path, layout: str = "object") -> str:
    """The text ``cali-query -q "select * format json(<layout>)" cali_path`` writes."""
    reader = caliperreader.CaliperReader()
    reader.read(str(cali_path))
    body = ",\n".join(_record(reader, r) for r in reader.records)
    if layout == "records":
        return "[\n" + body + "\n]\n"
    globals_ = ",\n".join(
        f'"{_esc(k)}": "{_esc(v if isinstance(v, str) else _list_text(v))}"'
        for k, v in sorted(reader.globals.items())
    )
    return (
        '{\n"records": [\n'
        + body
        + '\n],\n"globals": {\n'
        + globals_
        + '\n},\n"attributes": {\n'
        + _attributes(reader)
        + "\n}\n}\n"
    )


def _list_text(v) -> str:
    return "[" + ",".join(map(str, v)) + "]" if isinstance(v, list) else str(v)
