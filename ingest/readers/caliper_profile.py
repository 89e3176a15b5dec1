"""Caliper application profiles (``.cali`` or ``json-split`` JSON) into ``app_profiles`` rows.

* Runtime: the root regions' inclusive time (an attribute with ``inclusive`` and ``duration`` in
  its name), summed over roots and taken as the max over MPI ranks when records carry ``mpi.rank``.
  Without an inclusive attribute, the exclusive times of all regions of a rank are summed (that is
  the root's inclusive time). The unit comes from the attribute's ``attribute.unit`` metadata, a
  ``.ns`` suffix, or ``--time-unit``; a file that says none is rejected rather than guessed.
* Counters: every attribute whose name (after aggregation prefixes such as ``sum#``) resolves in
  the canonical counter table (``papi.PAPI_TOT_INS``, ``perf.instructions``, ...), summed over all
  regions and ranks (region values are exclusive). Every other numeric attribute (other timers such
  as ``cupti.activity.duration``, ``count``) is kept raw in ``extra_counters`` with the same
  aggregation, so nothing measured is dropped.
* Metadata: the globals (Adiak keys among them) go through a
  :class:`~xamm_ingest.metadata_map.MetadataMap` onto ``variant``, ``input_size``, ``input_type``,
  ``programming_model``, ``ranks`` and ``threads``; the rest stays in ``extra_metadata``.
  ``launchdate`` becomes ``run_date``.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

from xamm_ingest.errors import IngestError
from xamm_ingest.metadata_map import HELD_ELSEWHERE, MappedMetadata, MetadataMap
from xamm_ingest.readers.base import ReadResult, Source
from xamm_ingest.readers.caliper_files import load_profile
from xamm_ingest.readers.profile_common import SampleSpec, profile_row

from xamm_data import counters
from xamm_data.units import seconds_per

READER = "xamm_ingest.readers.caliper_profile"
_SKIP = {"path", "mpi.rank", "region", "annotation", "function", "spot.channel"}


def _num(v) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _raw(v) -> float | None:
    """A number as written, non-finite included (so a profile_row check can refuse it); None for
    text."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _time_attribute(prof, numeric: list[str], spec: SampleSpec, src: Source):
    """The profile's time attribute (inclusive preferred), the inclusive ones, seconds per unit."""
    inclusive = [k for k in numeric if "inclusive" in k and "duration" in k]
    exclusive = [k for k in numeric if "duration" in k and "inclusive" not in k]
    time_attr = (
        sorted(inclusive, key=lambda k: (not k.startswith(("avg#", "inclusive#")), k))
        or exclusive
        or [None]
    )[0]
    if time_attr is None:
        raise IngestError(
            src.path,
            "no time attribute (e.g. inclusive#sum#time.duration); expected a timed region profile",
        )
    unit = prof.meta.get(time_attr, {}).get("attribute.unit") or (
        "ns" if time_attr.endswith(".ns") else spec.time_unit
    )
    if unit is None:
        raise IngestError(
            src.path,
            f"time attribute {time_attr!r} has no unit metadata; pass "
            "--time-unit "
            "(sec, ms, usec or ns)",
            record=time_attr,
        )
    try:
        scale = seconds_per(unit)
    except ValueError as e:
        raise IngestError(src.path, str(e), record=time_attr) from None

    return time_attr, inclusive, scale


def _root_time_per_rank(recs: list, time_attr: str, inclusive: list, scale: float, src: Source):
    """Seconds per rank: the root's inclusive time, or the exclusive times summed."""

    def rank_of(r):
        return r.get("mpi.rank", "0")

    per_rank: dict[str, float] = {}
    for r in recs:
        path = r["path"] if isinstance(r["path"], list) else [r["path"]]
        if time_attr not in r or (time_attr in inclusive and len(path) != 1):
            continue
        v = _num(r[time_attr])
        # a root time that is no finite number: the runtime would silently leave it out
        if v is None:
            raise IngestError(
                src.path,
                f"{time_attr} of region {'/'.join(map(str, path))!r} is "
                f"{r[time_attr]!r}; "
                "expected a finite time",
                record="/".join(map(str, path)),
            )
        per_rank[rank_of(r)] = per_rank.get(rank_of(r), 0.0) + v * scale
    if not per_rank:
        raise IngestError(src.path, f"no root value for {time_attr!r}", record=time_attr)
    return per_rank


def _run_date(g: dict) -> datetime | None:
    """Caliper's ``launchdate`` (seconds since the epoch) as a UTC time; None when absent or not a
    time."""
    x = _num(g.get("launchdate"))
    return datetime.fromtimestamp(int(x), tz=UTC) if x is not None and 0 < x < 1e11 else None


def _described(g: dict, metadata_map: MetadataMap | None, run_date) -> MappedMetadata:
    held = HELD_ELSEWHERE | ({"launchdate"} if run_date is not None else set())
    return (metadata_map or MetadataMap()).apply(g, frozenset(held))


def _numeric_keys(recs: list, keys: list[str]) -> list[str]:
    """The attributes holding numbers as written, NaN and infinities included: a metric of only
    non-finite values is refused by name, not taken for text and left out."""
    return [
        k
        for k in keys
        if any(_raw(r.get(k)) is not None for r in recs[:50])
        and not isinstance(recs[0].get(k), list)
    ]


def _metrics(recs: list, numeric: list[str]) -> dict[str, float]:
    """Each metric summed over regions and ranks, under its canonical name where it has one (NaN
    and inf stay, to be refused)."""
    metrics: dict[str, float] = {}
    for k in numeric:
        base = k.split("#")[-1]
        total = sum(x for r in recs if k in r and (x := _raw(r[k])) is not None)
        metrics[base if counters.resolve(base) else k] = total
    return metrics


def read_caliper_profile(
    src: Source, spec: SampleSpec, metadata_map: MetadataMap | None = None
) -> ReadResult:
    """Read one Caliper application profile into one ``app_profiles`` row.

    Args:
        src: the file.
        spec: what the user states of the run (wins over the profile's own metadata).
        metadata_map: which metadata keys fill which columns (default: :class:`MetadataMap`).

    Returns:
        The row, and a note for each metadata value a column could not take.
    """
    prof = load_profile(src.path)
    recs = [r for r in prof.records if r.get("path")]
    if not recs:
        raise IngestError(
            src.path, "no region records (no 'path'); expected a Caliper region profile"
        )
    keys = sorted({k for r in recs for k in r} - _SKIP)
    numeric = _numeric_keys(recs, keys)
    time_attr, inclusive, scale = _time_attribute(prof, numeric, spec, src)
    per_rank = _root_time_per_rank(recs, time_attr, inclusive, scale, src)
    nranks = len(per_rank)
    runtime = max(per_rank.values())
    how = "root inclusive" if time_attr in inclusive else "summed exclusive"
    aggregation = (
        f"max over {nranks} rank(s) of {how} {time_attr}" if nranks > 1 else f"{how} {time_attr}"
    )
    metrics = _metrics(recs, [k for k in numeric if k != time_attr])
    g = prof.globals
    run_date = _run_date(g)
    meta = _described(g, metadata_map, run_date)
    ranks = meta.columns.pop("ranks", None) or (
        nranks if "mpi.rank" in keys or nranks > 1 else None
    )
    threads = meta.columns.pop("threads", None)
    fmt = "caliper-json" if Path(src.path).suffix.lower() == ".json" else "caliper-cali"
    row = profile_row(
        spec,
        src,
        fmt,
        READER,
        runtime_s=runtime,
        aggregation=aggregation,
        metrics=metrics,
        machine=g.get("cluster"),
        ranks=ranks,
        threads=threads,
        tool_versions={"caliper": g.get("cali.caliper.version")},
        run_date=run_date,
        described=meta.columns,
        extra_metadata=meta.extra,
    )
    return ReadResult(rows=[row], notes=[f"{src.rel_path}: {n}" for n in meta.notes])
