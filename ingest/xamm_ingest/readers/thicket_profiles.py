"""The profiles of a Caliper-made Thicket, each given back as the :class:`CaliperProfile` its file
held.

A Thicket (``Thicket.from_caliperreader`` of RAJAPerf ``.cali`` files, or ``Thicket.from_json`` of
its ``to_json()``) keeps per (node, profile) the region's attributes and per profile the file's
globals, so the RAJAPerf reader can read each profile exactly as it reads a file. What Hatchet
changed on the way is undone here:

* metric columns carry the attributes' aliases. Caliper's SpotController
  (``src/caliper/controllers/SpotController.cpp``) names its cross-rank times ``Min time/rank``,
  ``Max time/rank``, ``Avg time/rank`` and ``Total time`` (``unit sec``); the other attributes it
  lists in the ``spot.metrics`` global go by the name after their last ``#``; Hatchet's native
  reader renames ``inclusive#sum#time.duration`` to ``time (inc)`` and ``sum#time.duration`` to
  ``time``;
* a node a profile never recorded is a row of NaN (Thicket's ``fill_perfdata``): it is no record;
* globals Hatchet parsed into lists are written back as Caliper's text, ``[a,b,c]``.

Each profile's ``source_sha256`` is the SHA-256 of its records and globals as canonical JSON: a
Thicket keeps no file bytes, and two trials of one configuration must stay two.
"""

from __future__ import annotations

import hashlib
import json
import math
from numbers import Number
from pathlib import Path

from xamm_ingest.readers.base import Source
from xamm_ingest.readers.caliper_files import CaliperProfile

SPOT_TIMES = {
    "Min time/rank": "min#inclusive#sum#time.duration",
    "Max time/rank": "max#inclusive#sum#time.duration",
    "Avg time/rank": "avg#inclusive#sum#time.duration",
    "Total time": "sum#inclusive#sum#time.duration",
}
HATCHET_RENAMES = {"time (inc)": "inclusive#sum#time.duration", "time": "sum#time.duration"}
_NOT_ATTRIBUTES = {"name", "nid", "node"}


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _caliper_text(v):
    """A global as Caliper writes it: lists as ``[a,b,c]``, everything else unchanged."""
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(map(str, v)) + "]"
    return v.item() if hasattr(v, "item") else v


def native_names(columns: list[str], globals_: dict) -> dict[str, str]:
    """Each metric column's Caliper attribute name (see the module docstring); unknown columns keep
    theirs."""
    spot = [n for n in str(globals_.get("spot.metrics") or "").split(",") if n]
    alias_of = {v: k for k, v in SPOT_TIMES.items()}
    by_alias = {alias_of.get(n, n.split("#")[-1]): n for n in spot}
    return {c: by_alias.get(c) or SPOT_TIMES.get(c) or HATCHET_RENAMES.get(c) or c for c in columns}


def _node_paths(tk) -> dict:
    return {n: [str(f.frame.get("name")) for f in n.paths()[0]] for n in tk.graph.traverse()}


def _records(rows: list[dict], paths: dict, names: dict[str, str]) -> list[dict]:
    out = []
    for row in rows:
        values = {names[c]: v for c, v in row.items() if c in names and not _missing(v)}
        if not any(isinstance(v, Number) for v in values.values()):
            continue  # a node this profile never recorded
        out.append({"path": paths[row["node"]], **values})
    return out


def content_sha256(records: list[dict], globals_: dict) -> str:
    """SHA-256 of a profile's records and globals as canonical JSON."""
    text = json.dumps(
        {"globals": globals_, "records": records}, sort_keys=True, default=str, allow_nan=True
    )
    return hashlib.sha256(text.encode()).hexdigest()


def thicket_profiles(
    tk, *, source: Source | None = None
) -> list[tuple[str, Source, CaliperProfile]]:
    """(label, source, profile) for each profile of ``tk``. The label and ``source_path`` are the
    file Thicket says the profile came from (``profile_mapping``), or ``source``'s path (a
    ``to_json()`` file) when given."""
    idx = tk.profile_idx_name
    frame = tk.dataframe.reset_index()
    metadata = tk.metadata
    paths = _node_paths(tk)
    columns = [c for c in frame.columns if c not in _NOT_ATTRIBUTES | {idx}]
    out = []
    for p in tk.profile:
        raw = metadata.loc[p].to_dict() if p in metadata.index else {}
        g = {
            k: _caliper_text(v)
            for k, v in raw.items()
            if isinstance(v, (list, tuple)) or not _missing(v)
        }
        names = native_names(columns, g)
        records = _records(frame[frame[idx] == p].to_dict("records"), paths, names)
        mapping = tk.profile_mapping or {}
        # from_json gives the mapping's keys back as strings
        label = str(mapping.get(p, mapping.get(str(p), p)))
        meta = {n: {"attribute.alias": c} for c, n in names.items() if n != c}
        for n in set(SPOT_TIMES.values()) & set(names.values()):
            meta[n]["attribute.unit"] = "sec"
        path = source.path if source else Path(label)
        src = Source(
            path=path,
            rel_path=source.rel_path if source else label,
            sha256=content_sha256(records, g),
        )
        out.append((label, src, CaliperProfile(records, g, meta, path, "thicket")))
    return out
