"""Loading Caliper files (``.cali`` text; JSON as ``cali-query`` writes it: ``json-split`` and
``format json``'s ``object`` and ``records`` layouts) into records, globals and attribute metadata.

The ``format json`` layouts follow Caliper's ``src/reader/JsonFormatter.cpp``: every nested
attribute of a record goes under the one key ``path``, its labels joined with ``/`` from the root;
global attributes are left out of records and written (as strings) under ``globals`` only in the
``object`` layout, beside ``attributes`` (each attribute's properties and metadata such as
``attribute.unit``)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from xamm_ingest.errors import IngestError
from xamm_ingest.readers.cali_format import CaliFormatError, CaliProfile, parse_cali


class CaliperProfile:
    """A parsed Caliper file: records (path list + attributes), globals and attribute metadata.
    ``layout``: what it was read from (``cali``, ``json-split``, ``json-object``, ``json-records``,
    ``thicket``). ``meta``: each attribute's metadata (``attribute.unit``, ``type`` ...) by
    attribute name; for a ``.cali`` file, an attribute's is worked out when it is first asked for
    (:class:`AttributeMeta`)."""

    def __init__(
        self,
        records: list[dict],
        globals_: dict,
        meta: Mapping[str, dict],
        path: Path | None = None,
        layout: str = "cali",
    ):
        self.records, self.globals, self.path, self.layout = records, globals_, path, layout
        self.meta = meta
        self._names: set[str] | None = None

    def attribute_names(self) -> set[str]:
        """Every attribute the records hold (worked out once, as the ``.cali`` metadata's keys are:
        readers ask more than once). The caller does not change it."""
        if self._names is None:
            meta = self.meta
            self._names = (
                meta._keys() if isinstance(meta, AttributeMeta) else set().union(*self.records)
            )
        return self._names


def load_cali(path: Path, data: bytes | None = None) -> CaliperProfile:
    """A ``.cali`` file's records, globals and attribute metadata.

    Args:
        path: the file.
        data: its bytes, where the caller read them (else read here).
    """
    path = path if isinstance(path, Path) else Path(path)
    if data is None:
        with open(path, "rb") as f:
            data = f.read()
    if not data or data.isspace():  # strip() would copy the whole file to say so
        raise IngestError(path, "empty file; expected a Caliper .cali profile")
    if not data.endswith(b"\n"):
        raise IngestError(
            path,
            "last line is incomplete (truncated file?); expected a complete Caliper .cali profile",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise IngestError(path, f"not a text Caliper file (bad byte at offset {e.start})") from None
    if not text.startswith("__rec="):
        raise IngestError(
            path,
            "does not start with a Caliper record ('__rec='); expected a Caliper .cali profile",
        )
    try:
        prof = parse_cali(text)
    except CaliFormatError as e:
        raise IngestError(path, f"Caliper parse failed ({e}); file corrupt or truncated?") from None
    return CaliperProfile(prof.records, prof.globals, AttributeMeta(prof), path)


class AttributeMeta(Mapping[str, dict]):
    """The metadata of each attribute the records of a parsed ``.cali`` stream hold, worked out
    for an attribute when it is first asked for (a reader asks for one or two of them).

    Args:
        prof: the parsed stream.
    """

    def __init__(self, prof: CaliProfile):
        self._prof = prof
        self._names: set[str] | None = None
        self._got: dict[str, dict] = {}

    def _keys(self) -> set[str]:
        if self._names is None:
            self._names = set().union(*self._prof.records)
        return self._names

    def __getitem__(self, key: str) -> dict:
        if (got := self.get(key)) is None:
            raise KeyError(key)
        return got

    def get(self, key: str, default=None):
        """``key``'s metadata, or ``default`` where no record holds ``key`` (as ``Mapping.get``,
        without its exception on a miss)."""
        got = self._got.get(key)
        if got is None:
            if key not in self:
                return default
            got = self._got[key] = self._prof.metadata(key)
        return got

    def __contains__(self, key: object) -> bool:
        if self._names is not None:
            return key in self._names
        # the records scanned until one holds ``key`` (for the attribute a reader asks for, the
        # first does); on a miss, every record's attributes gathered, for the next question
        for r in self._prof.records:  # a loop, not any() of a generator: asked once per file
            if key in r:
                return True
        return key in self._keys()

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())


_NONFINITE = re.compile(r"(?<=[:,\[])(\s*)(-?)(nan|inf)(?=\s*[,}\]])")


def _load_json(path: Path):
    """The file's JSON. Caliper writes a non-finite double as a bare ``nan`` or ``inf``
    (``std::to_string``), which is not JSON; where the plain parse fails on one, they are read as
    NaN and infinity."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            fixed = _NONFINITE.sub(
                lambda m: m[1] + ("NaN" if m[3] == "nan" else m[2] + "Infinity"), text
            )
            if fixed == text:
                raise
            return json.loads(fixed)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise IngestError(
            path,
            f"not valid JSON ({e}); expected Caliper JSON output (cali-query "
            "-q 'format "
            "json(object)' or -O json-split) or a Thicket's to_json()",
        ) from None
    except RecursionError:  # arrays or objects nested past Python's parser (Caliper nests 3 deep)
        raise IngestError(
            path,
            "JSON nested deeper than its parser reads; expected Caliper JSON output (cali-query "
            "-q 'format json(object)' or -O json-split) or a Thicket's to_json()",
        ) from None


def is_thicket_json(doc) -> bool:
    """Whether a parsed JSON document is a Thicket's ``to_json()`` (many profiles, read by Thicket
    itself)."""
    return isinstance(doc, dict) and {"graph", "dataframe", "profile_mapping"} <= set(doc)


def load_caliper_json(path: Path) -> CaliperProfile:
    """A Caliper JSON file in any of the layouts ``cali-query`` writes: ``json-split`` (``-O
    json-split``), and ``format json``'s ``object`` and default ``records`` layouts (``-q "...
    format json(object)"``)."""
    doc = _load_json(path)
    if isinstance(doc, list) or (isinstance(doc, dict) and isinstance(doc.get("records"), list)):
        return _json_records(doc, path)
    if is_thicket_json(doc):
        raise IngestError(
            path,
            "a Thicket to_json() file holds many profiles; read it with "
            "xamm-ingest rajaperf "
            "or xamm_ingest.from_thicket(Thicket.from_json(text))",
        )
    if not isinstance(doc, dict) or not {"data", "columns", "nodes"} <= set(doc):
        raise IngestError(
            path,
            "JSON lacks 'data', 'columns' and 'nodes' (json-split) or "
            "'records' (format "
            "json(object)); expected Caliper JSON output (cali-query -O "
            "json-split, or -q "
            '"select * format json(object)")',
        )
    return _json_split(doc, path)


def _json_records(doc, path: Path) -> CaliperProfile:
    """``format json`` output (Caliper's JsonFormatter): one flat object per record, every nested
    attribute (the region path) joined with ``/`` under ``path``; globals and attribute metadata
    only in the ``object`` layout (``{"records": [...], "globals": {...}, "attributes": {name:
    {"attribute.unit": ...}}}``)."""
    records = doc if isinstance(doc, list) else doc["records"]
    globals_ = {} if isinstance(doc, list) else doc.get("globals") or {}
    attributes = {} if isinstance(doc, list) else doc.get("attributes") or {}
    if not isinstance(globals_, dict) or not isinstance(attributes, dict):
        raise IngestError(
            path,
            "'globals' or 'attributes' is not an object; expected cali-query "
            "format json(object) output",
        )
    out = []
    for j, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise IngestError(
                path,
                f"record {j} is {type(rec).__name__}; expected an object of "
                "attribute values "
                "(cali-query format json)",
                record=f"records[{j}]",
            )
        rec = dict(rec)
        if isinstance(rec.get("path"), str):
            rec["path"] = rec["path"].split("/")
        out.append(rec)
    meta = {
        k: {m: v for m, v in a.items() if m not in ("is_global", "is_nested")}
        for k, a in attributes.items()
        if isinstance(a, dict)
    }
    return CaliperProfile(
        out, globals_, meta, Path(path), "json-records" if isinstance(doc, list) else "json-object"
    )


def _node_labels(nodes: list, path: Path) -> list[list[str]]:
    """Each json-split node's label path from its root, every parent checked."""
    labels: list[list[str]] = []
    for i, n in enumerate(nodes):
        if not isinstance(n, dict):
            raise IngestError(
                path,
                f"node {i} is {n!r}; expected an object with 'label' and 'parent' "
                "(Caliper json-split)",
                record=f"nodes[{i}]",
            )
        if not isinstance(n.get("column", ""), str):
            raise IngestError(
                path,
                f"node {i} has column {n['column']!r}; expected a column name (Caliper json-split)",
                record=f"nodes[{i}]",
            )
        parent = n.get("parent")
        if parent is not None and not (isinstance(parent, int) and 0 <= parent < i):
            raise IngestError(
                path,
                f"node {i} has parent {parent!r}; expected an earlier node index",
                record=f"nodes[{i}]",
            )
        labels.append((labels[parent] if parent is not None else []) + [str(n.get("label"))])
    return labels


def _split_parts(doc: dict, path: Path) -> tuple[list, list[str], list]:
    """json-split's nodes, column names and rows, each checked to be what Caliper writes."""
    nodes, cols, data = doc["nodes"], doc["columns"], doc["data"]
    for what, value in (("nodes", nodes), ("columns", cols), ("data", data)):
        if not isinstance(value, list):
            raise IngestError(
                path, f"'{what}' is a {type(value).__name__}; expected a list (Caliper json-split)"
            )
    if bad := next(
        (f"column {i} is {c!r}" for i, c in enumerate(cols) if not isinstance(c, str)), None
    ):
        raise IngestError(path, f"{bad}; expected a column name (Caliper json-split)")
    return nodes, cols, data


def _json_split(doc: dict, path: Path) -> CaliperProfile:
    """``json-split`` output: records as rows of column values, tree columns holding node
    indices."""
    nodes, cols, data = _split_parts(doc, path)
    labels = _node_labels(nodes, path)
    cmeta = doc.get("column_metadata") or [{} for _ in cols]
    if not isinstance(cmeta, list) or not all(isinstance(m, dict) for m in cmeta):
        raise IngestError(
            path, "'column_metadata' is not a list of objects; expected Caliper json-split output"
        )
    meta = {c: dict(m) for c, m in zip(cols, cmeta)}
    # Tree columns hold node indices. The call path is the "path" column, else (sampling profiles)
    # the tree column whose nodes are nested deepest, e.g. source.function#callpath.address.
    tree_cols = [c for c in cols if not meta.get(c, {}).get("is_value", c != "path")]
    node_cols = {n.get("column") for n in nodes}
    path_col = (
        "path"
        if "path" in cols
        else max(
            (c for c in tree_cols if c in node_cols),
            key=lambda c: max(
                (len(labels[i]) for i, n in enumerate(nodes) if n.get("column") == c), default=0
            ),
            default=None,
        )
    )
    records = []
    for j, row in enumerate(data):
        if not isinstance(row, list) or len(row) != len(cols):
            raise IngestError(
                path,
                f"{len(row) if isinstance(row, list) else row!r} values for "
                f"{len(cols)} columns; "
                "expected one value per column",
                record=f"data[{j}]",
            )
        rec = {}
        for c, v in zip(cols, row):
            if v is None:
                continue
            if c in tree_cols and c in node_cols:
                if not isinstance(v, int) or not 0 <= v < len(labels):
                    raise IngestError(path, f"{c} {v!r} is not a node index", record=f"data[{j}]")
                if c == path_col:
                    rec["path"] = labels[v]
                else:
                    rec[c] = labels[v][-1]
            else:
                rec[c] = v
        records.append(rec)
    globals_ = {
        k: v for k, v in doc.items() if k not in ("data", "columns", "column_metadata", "nodes")
    }
    return CaliperProfile(records, globals_, meta, Path(path), "json-split")


def load_profile(path: Path, data: bytes | None = None) -> CaliperProfile:
    """Load a ``.cali`` or Caliper ``.json`` file, by its suffix.

    Args:
        path: the file.
        data: a ``.cali`` file's bytes, where the caller read them (a JSON file is read here).
    """
    path = path if isinstance(path, Path) else Path(path)
    return load_caliper_json(path) if path.suffix.lower() == ".json" else load_cali(path, data)
