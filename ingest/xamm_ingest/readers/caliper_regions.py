"""A Caliper application profile read once, for ``xamm predict`` and for the store.

:func:`read_caliper_regions` turns a ``.cali`` file (or JSON as ``cali-query`` writes it) into a
:class:`~xamm_data.tables.regions.RegionProfile`; ``xamm-ingest caliper`` stores the same reading
(:func:`xamm_ingest.readers.profile_common.whole_program`), so a profile predicted from its file and
from the store is the same profile.

* **Regions**: one per ``path``. Times are per rank, the mean over ranks: a spot profile across N
  ranks keeps totals over ranks (``sum#``), divided by N (a region entered by a few ranks still
  averages over all of them, so children nest within parents); otherwise the mean over
  ``mpi.rank``, or the per-rank mean the file holds (``avg#``). Exclusive time comes from an
  exclusive attribute, else the inclusive time less the children's. Units from
  ``attribute.unit``, a ``.ns`` suffix or ``time_unit``. A time that is not a finite number is
  refused by region. Only wall-clock ``time.duration`` counts: GPU activity time does not.
* **The whole program**: the sum of the regions' exclusive times, which is the root's inclusive
  time, the mean over ranks (docs/decisions.md, "one time per profile").
* **Work**: RAJAPerf's annotations (``Bytes/Rep``, ``Flops/Rep`` x ``Reps``) or canonical counters
  (:func:`xamm_data.tables.regions.work_from_counters`); **category** from the region's label
  (:func:`xamm_data.tables.regions.region_category`) and ``mpi.function``.
* **Totals**: every numeric attribute (time attributes read above aside) summed over regions and
  ranks, under its canonical counter name where it has one, else as written.
* **Metadata**: the globals (Adiak keys among them) through a
  :class:`~xamm_ingest.metadata_map.MetadataMap` onto ranks, threads, GPUs, nodes, variant, input
  and programming model; the rest kept as written. A spot profile that names no rank count has one
  anyway: its root's total over ranks / their mean. A RAJAPerf profile's variant gives its
  programming model (``Base_Seq``: ``Seq``, one thread). The source machine is the ``cluster``
  global where the registry knows it.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from itertools import chain
from operator import itemgetter
from pathlib import Path
from sys import intern
from typing import Any, NamedTuple

import polars as pl

from xamm_data.tables import counters
from xamm_data.tables.regions import (
    LINE_BYTES,
    SCHEMA,
    RegionProfile,
    RegionProfileError,
    check_regions,
    counter_work,
    exact_sum,
    inherited_categories,
    region_category,
)
from xamm_data.tables.units import seconds_per
from xamm_ingest.errors import IngestError
from xamm_ingest.machine_names import registry_id
from xamm_ingest.metadata_map import (
    GPU_MODELS,
    HELD_ELSEWHERE,
    MetadataMap,
    default_map,
    metadata_text,
)
from xamm_ingest.readers.caliper_files import CaliperProfile, load_profile
from xamm_ingest.readers.names import backend_device
from xamm_ingest.readers.profile_common import ProfileFields, RegionRows
from xamm_ingest.readers.rajaperf_caliper import spot_ranks

_ANNOTATIONS = ("Reps", "Bytes/Rep", "Flops/Rep", "Kernels/Rep")
_GPU_ATTRIBUTE_PREFIXES = ("cupti.", "rocm.", "roctracer.", "cuda.", "nvtx.")
# attributes that are the record's place, not a measurement
_PLACE = {"path", "region", "mpi.rank", "mpi.function", "annotation", "function", "spot.channel"}

__all__ = ["read_caliper_regions"]


def _num(v) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _raw(v) -> float | None:
    """A number as written, non-finite included; None for text."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


@functools.lru_cache(maxsize=256)
def _measures(keys: tuple[str, ...]) -> tuple[str, ...]:
    """A record's attributes beside its place (cached: a profile's records repeat one list)."""
    return tuple(k for k in keys if k not in _PLACE)


@functools.lru_cache(maxsize=256)
def _measures_sorted(keys: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(:func:`_measures` of ``keys``, the same sorted)."""
    names = _measures(keys)
    return names, tuple(sorted(names))


def _numbers(rec: dict) -> dict[str, float]:
    """A record's attributes beside its place that are numbers, as floats."""
    names = _measures(tuple(rec))
    try:  # nearly every record: each of them is a number
        return dict(zip(names, map(float, map(rec.__getitem__, names))))
    except (TypeError, ValueError):
        return {k: x for k, v in rec.items() if k not in _PLACE and (x := _raw(v)) is not None}


def _base(attr: str) -> str:
    """An attribute's name without Caliper's aggregation prefixes (``avg#sum#`` ...)."""
    return attr.rpartition("#")[2]


def _pick(names: list[str]) -> str | None:
    """The per-rank mean where the profile has one (``avg#``), else a plain or summed attribute;
    never a min or max over ranks."""
    ok = [n for n in names if not n.startswith(("min#", "max#", "variance#"))]
    return (sorted(ok, key=lambda n: (not n.startswith("avg#"), n)) or [None])[0]


def _is_time(attr: str, clock: str = "time.duration") -> bool:
    return _base(attr).startswith(clock)


@functools.lru_cache(maxsize=256)
def _time_attributes(
    numeric: tuple[str, ...], world: int | None
) -> tuple[str | None, str | None, int]:
    """The inclusive and exclusive time attributes and what divides them. A spot profile across
    ``world`` ranks keeps totals over all ranks (``sum#``): divided by ``world`` they are means
    over every rank, which nest (a child within its parent); its ``avg#`` values average only
    the ranks that entered each region, so a child on a few ranks can outlast its parent."""
    # wall-clock time only (``time.duration``; in a cuda-activity-profile, which times no more,
    # the host's ``cupti.host.duration``): GPU activity (``cupti.activity.duration``) is not
    clock = next(
        (
            c
            for c in ("time.duration", "cupti.host.duration")
            if any(_is_time(k, c) for k in numeric)
        ),
        "time.duration",
    )
    timed = [k for k in numeric if _is_time(k, clock)]
    inc_names = [k for k in timed if "inclusive" in k or "#iscale#" in k]
    exc_names = [k for k in timed if not ("inclusive" in k or "#iscale#" in k)]
    if world:
        totals = [
            sorted(n for n in names if n.startswith("sum#")) for names in (inc_names, exc_names)
        ]
        if totals[0] or totals[1]:
            return (totals[0] or [None])[0], (totals[1] or [None])[0], world
    return _pick(inc_names), _pick(exc_names), 1


def _seconds(prof: CaliperProfile, attr: str, time_unit: str | None, path: Path) -> float:
    unit = prof.meta.get(attr, {}).get("attribute.unit") or (
        "ns" if attr.endswith(".ns") else time_unit
    )
    if unit is None:
        raise RegionProfileError(
            f"{path}: time attribute {attr!r} has no unit metadata; pass --time-unit "
            "(sec, ms, usec or ns)"
        )
    try:
        return seconds_per(unit)
    except ValueError as e:
        raise RegionProfileError(f"{path}: {attr}: {e}") from None


def _labels(rec: dict) -> list[str]:
    p = rec["path"]
    return [str(x) for x in (p if isinstance(p, list) else [p])]


def _refuse_non_finite(
    recs: list[dict], nums: list[dict[str, float]], attrs: list[str], path: Path
) -> None:
    """A time or counter the reading uses that is written but is no finite number (NaN, inf):
    refused by region, never read as absent (the program's time would leave it out)."""
    for r, got in zip(recs, nums):
        for a in attrs:
            x = got.get(a)
            if x is not None and not math.isfinite(x):
                region = "/".join(_labels(r))
                raise RegionProfileError(
                    f"{path}: region {region!r}: {a} is {r[a]!r}; expected a finite number"
                )


def _whole(rec: dict) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in rec.items()))


def _refuse_repeat(prior: dict, rec: dict, wholes: set[tuple] | None, path: Path) -> set[tuple]:
    """A region's record written twice, every attribute the same: refused by region. An
    aggregated profile holds one record per key, so a repeat is a copy (two files joined, an edit)
    and summing it would double the region, and the program's time with its root. ``prior``: the
    first record at ``rec``'s region and rank; ``wholes``: every record there so far, once a
    second one came (a profile split by another attribute). Returns ``wholes`` with ``rec``."""
    got = wholes if wholes is not None else {_whole(prior)}
    if (key := _whole(rec)) in got:
        region = "/".join(_labels(rec))
        rank = f" on rank {rec['mpi.rank']}" if "mpi.rank" in rec else ""
        raise RegionProfileError(
            f"{path}: region {region!r}: the same record appears twice{rank}; expected one "
            "record per region and key (a copied or concatenated profile?)"
        )
    got.add(key)
    return got


class _Region:
    """One region as the records build it up: its place, and per rank the sum of each attribute
    its records hold there (and that rank's first record, to tell a repeat from a split)."""

    __slots__ = ("declared", "firsts", "mpi", "name", "parent", "ranks", "wholes")

    def __init__(self, name: str, parent: str | None):
        self.name, self.parent = name, parent
        self.mpi = self.declared = False
        self.ranks: dict[str, dict[str, float]] = {}
        self.firsts: dict[str, dict] = {}
        self.wholes: dict[str, set[tuple]] = {}

    def mean(self, attr: str) -> float | None:
        """The mean over the ranks whose records hold ``attr``."""
        if len(self.ranks) == 1:  # one rank (an aggregated profile): its sum is the mean
            for sums in self.ranks.values():
                return sums.get(attr)
        xs = [v[attr] for v in self.ranks.values() if attr in v]
        return exact_sum(xs) / len(xs) if xs else None


def _gather(
    recs: list[dict], nums: list[dict[str, float]], declared_attr: str | None, path: Path
) -> dict[str, _Region]:
    """Regions in the order the profile lists them, each finite number summed within a rank
    (records that differ in other attributes); a record repeated whole is refused."""
    out: dict[str, _Region] = {}
    finite = math.isfinite
    for r, got in zip(recs, nums):
        p = r["path"]
        try:  # nearly every record: its path a list of labels (a .cali file's always)
            key = "/".join(p) if type(p) is list else None
            labels = p
        except TypeError:  # a JSON file's label that is not text
            key = None
        if key is None:
            labels = [str(x) for x in p] if isinstance(p, list) else [str(p)]
            key = "/".join(labels)
        reg = out.get(key)
        if reg is None:
            reg = out[key] = _Region(labels[-1], "/".join(labels[:-1]) or None)
        if not reg.mpi:
            reg.mpi = r.get("mpi.function") is not None
        if declared_attr is not None and finite(got.get(declared_attr, math.nan)):
            reg.declared = True
        rank = str(r.get("mpi.rank", "0"))
        sums = reg.ranks.get(rank)
        if sums is None:  # nearly every record: the first at its region and rank
            vals = got.values()
            reg.ranks[rank] = (
                dict(got) if all(map(finite, vals)) else {a: v for a, v in got.items() if finite(v)}
            )
            reg.firsts[rank] = r
            continue
        reg.wholes[rank] = _refuse_repeat(reg.firsts[rank], r, reg.wholes.get(rank), path)
        for a, v in got.items():
            if finite(v):
                sums[a] = sums.get(a, 0.0) + v
    return out


class _Regions(NamedTuple):
    """A profile's regions, in the order its records list them, as the reading uses them."""

    # labels interned (as the metadata map's values): every profile of a corpus repeats them
    keys: list[str]  # each region's path, its labels joined with "/"
    names: list[str]  # its own label
    parents: list[str | None]  # its parent's path
    mpi: list[bool]  # whether a record of it names an mpi.function
    declared: list[bool]  # whether a record of it writes its work (Bytes/Rep) as a finite number
    column: Callable[[str], Sequence[float | None]]  # an attribute's per-rank mean, by region
    ranks: int  # the ranks the records name (as text; a record naming none counts once)


def _gathered(
    recs: list[dict], nums: list[dict[str, float]], declared_attr: str | None, path: Path
) -> _Regions:
    """:class:`_Regions` of any profile, from its records summed by region and rank."""
    regions = _gather(recs, nums, declared_attr, path)
    regs = list(regions.values())
    return _Regions(
        list(map(intern, regions)),
        [intern(r.name) for r in regs],
        [None if r.parent is None else intern(r.parent) for r in regs],
        [r.mpi for r in regs],
        [r.declared for r in regs],
        lambda attr: [r.mean(attr) for r in regs],
        len({str(r.get("mpi.rank")) for r in recs}),
    )


class _Uniform(NamedTuple):
    """A profile whose records each hold the same attributes, name no rank, and write a region of
    their own, its path a list of text, every attribute beside its place a finite number."""

    numeric: tuple[str, ...]  # the attributes beside the place, sorted
    values: dict[str, list[float]]  # each one's values, record by record
    tree: _Tree  # each region's path, label and parent
    mpi: list[bool]


def _uniform(recs: list[dict]) -> _Uniform | None:
    """The records read at once, attribute by attribute, where they make a :class:`_Uniform`
    profile (nearly every aggregated profile does); None for any other, which
    :func:`_gathered` reads record by record, to the same regions."""
    first = tuple(recs[0])
    if len(first) < 2 or "mpi.rank" in recs[0] or len(set(map(len, recs))) != 1:
        return None
    try:  # every record holds the first one's attributes (and, of its length, no other)
        by_attr = dict(zip(first, zip(*map(itemgetter(*first), recs))))
        names, numeric = _measures_sorted(first)
        # every value converted at once, then cut attribute by attribute
        flat = list(map(float, chain.from_iterable(map(by_attr.__getitem__, names))))
    except (KeyError, TypeError, ValueError):
        return None
    # a NaN or an infinity anywhere makes the sum one (and so does a sum past the range)
    if set(map(type, by_attr["path"])) != {list} or not math.isfinite(sum(flat)):
        return None
    if (tree := _tree(tuple(map(tuple, by_attr["path"])))) is None:
        return None
    n = len(recs)
    values = {k: flat[i * n : i * n + n] for i, k in enumerate(names)}
    mpi = by_attr.get("mpi.function")
    return _Uniform(
        numeric,
        values,
        tree,
        [v is not None for v in mpi] if mpi is not None else [False] * len(recs),
    )


class _Tree(NamedTuple):
    """Regions given by their labels: each one's path (its labels joined with ``/``), own label and
    parent's path, interned; one object per tree while :func:`_tree` keeps it, compared by
    identity (what depends on the tree alone is kept by it: :func:`_layout`). Read only: its
    lists are shared by every profile of the tree."""

    keys: list[str]
    names: list[str]
    parents: list[str | None]

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:
        return self is other


@functools.lru_cache(maxsize=1024)
def _tree(paths: tuple[tuple[str, ...], ...]) -> _Tree | None:
    """The :class:`_Tree` of regions given by their labels; None where two are one region or a
    label is not text. Cached: the profiles of a corpus repeat one tree."""
    try:
        keys = list(map(intern, map("/".join, paths)))
    except TypeError:  # a label that is not text
        return None
    if len(set(keys)) != len(keys):  # a region split over records, or a repeat
        return None
    parents = [intern("/".join(p[:-1])) if len(p) > 1 else None for p in paths]
    return _Tree(keys, [intern(p[-1]) for p in paths], [q or None for q in parents])


class _Layout(NamedTuple):
    """What a :class:`_Uniform` profile's region columns take from its tree, attributes and time
    plan alone (:func:`_layout`)."""

    leaf: list[bool]  # whether a region is no other's parent
    category: list[str]
    how: str  # how the times were read, every region timed
    work: _WorkPlan
    kids: tuple[tuple[int, tuple[int, ...]], ...]  # each parent region's place, its children's


@functools.lru_cache(maxsize=1024)
def _layout(
    tree: _Tree,
    mpi: tuple[bool, ...],
    numeric: tuple[str, ...],
    time_attrs: tuple[str | None, str | None, int],
    line_bytes: int,
) -> _Layout:
    """The :class:`_Layout` of a uniform profile. Cached: the profiles of a corpus repeat one
    tree and one attribute list.

    Args:
        tree: its regions.
        mpi: whether each region's record names an ``mpi.function``.
        numeric: its attributes beside the place, sorted.
        time_attrs: the inclusive and exclusive time attributes and what divides them.
        line_bytes: bytes per last-level-cache miss.
    """
    inner = set(tree.parents)
    leaf = [k not in inner for k in tree.keys]
    declared = _declared_attr(numeric) is not None
    own = ["communication" if m else region_category(name) for name, m in zip(tree.names, mpi)]
    category = inherited_categories(
        list(tree.keys), list(tree.parents), own, [declared and x for x in leaf]
    )
    inc, exc, per = time_attrs
    at = {k: i for i, k in enumerate(tree.keys)}
    kids: dict[int, list[int]] = {}
    for j, parent in enumerate(tree.parents):
        if (i := at.get(parent)) is not None:  # type: ignore[arg-type]
            kids.setdefault(i, []).append(j)
    return _Layout(
        leaf,
        category,
        _how(inc, exc, per, False, 0),
        _work_plan(numeric, line_bytes),
        tuple((i, tuple(kids[i])) for i in sorted(kids)),
    )


def _uniform_columns(u: _Uniform, plan: tuple, line_bytes: int) -> tuple[dict[str, list], str]:
    """:func:`_region_columns` of a :class:`_Uniform` profile (``plan``: :func:`_time_plan`'s):
    each region its one record's values; what depends on its tree and attributes alone is taken
    from :func:`_layout`."""
    inc, exc, scale, per = plan
    tree, column = u.tree, u.values.__getitem__
    lay = _layout(tree, tuple(u.mpi), u.numeric, (inc, exc, per), line_bytes)
    incl, excl = _uniform_times(column, plan, lay.kids)
    work = _work_columns(lay.work, column, lay.leaf, line_bytes)
    # the tree's lists are shared by every profile of the tree: each profile its own copies
    columns = _columns(
        [list(tree.keys), list(tree.names), list(tree.parents)], incl, excl, work, lay.category
    )
    return columns, lay.how


def _uniform_times(
    column: Callable[[str], list[float]],
    plan: tuple,
    kids: tuple[tuple[int, tuple[int, ...]], ...],
) -> tuple[list, list]:
    """:func:`_times` of a :class:`_Uniform` profile, whose every region a record times with a
    finite value: the same products and the same sums, in the same order.

    Args:
        column: an attribute's values, region by region.
        plan: :func:`_time_plan`'s.
        kids: each parent region's place and its children's (:class:`_Layout`).
    """
    inc, exc, scale, _ = plan
    incl = None
    if inc is not None:
        s = scale[inc]
        incl = [m * s for m in column(inc)]
    if exc is not None:
        s = scale[exc]
        excl = [m * s for m in column(exc)]
        return incl if incl is not None else [None] * len(excl), excl
    assert incl is not None  # _time_plan refuses a profile with neither attribute
    excl = incl.copy()  # a leaf: its own time (less no child's)
    for i, children in kids:
        took = 0.0  # the children's times added in region order, as _times adds them
        for j in children:
            took += incl[j]
        excl[i] = incl[i] - took
    if min(excl) < 0.0:  # never below 0 (children timed past their parent)
        excl = [0.0 if d < 0.0 else d for d in excl]
    return incl, excl


def _columns(
    place: list[list], incl: list, excl: list, work: dict[str, list], category: list[str]
) -> dict[str, list]:
    """The region contract's columns, in :data:`SCHEMA`'s order.

    Args:
        place: each region's path, own label and parent's path.
        incl: inclusive seconds per region.
        excl: exclusive seconds per region (None: no record timed it, counted 0 s).
        work: ``bytes``, ``flops``, ``calls`` and ``work_from`` (:func:`_work_columns`).
        category: each region's category (copied: a cached one is shared).

    Returns:
        One list per column.
    """
    region, name, parent = place
    return {
        "region": region,
        "name": name,
        "parent": parent,
        "inclusive_s": incl,
        "exclusive_s": [0.0 if t is None else t for t in excl] if None in excl else excl,
        "calls": work["calls"],
        "bytes": work["bytes"],
        "flops": work["flops"],
        "work_from": work["work_from"],
        "category": list(category),
    }


def _times(regions: _Regions, inc, exc, scale: dict) -> tuple[list, list]:
    """Per region: inclusive and exclusive seconds per rank (exclusive from an exclusive attribute,
    else the inclusive less the children's, never below 0; None where no record timed it)."""
    if inc is None:
        incl = [None] * len(regions.keys)
    else:
        s = scale[inc]
        incl = [None if m is None else m * s for m in regions.column(inc)]
    if exc is not None:
        s = scale[exc]
        return incl, [None if m is None else m * s for m in regions.column(exc)]
    children: dict[str, float] = {}
    for parent, t in zip(regions.parents, incl):
        if parent is not None and t is not None:
            children[parent] = children.get(parent, 0.0) + t
    excl = [
        None if t is None else (0.0 if (d := t - children.get(key, 0.0)) < 0.0 else d)
        for key, t in zip(regions.keys, incl)
    ]
    return incl, excl


class _WorkPlan(NamedTuple):
    """Where a profile's work comes from (:func:`_work_plan`)."""

    annotations: dict[str, str] | None  # RAJAPerf's annotation -> its attribute, where declared
    flops: tuple[str, ...]  # else: the counter attributes summed into flops
    bytes: str | None  # the counter attribute of last-level-cache misses
    calls: str | None
    note: str


@functools.lru_cache(maxsize=256)
def _work_plan(numeric: tuple[str, ...], line_bytes: int) -> _WorkPlan:
    """RAJAPerf's annotations where the profile has ``Reps`` and ``Bytes/Rep``, else the canonical
    counters (:func:`~xamm_data.tables.regions.counter_work`). Cached per attribute list."""
    by_base = _annotations(numeric)
    if {"Reps", "Bytes/Rep"} <= set(by_base):
        note = "annotations: bytes = Bytes/Rep x Reps; flops = Flops/Rep x Reps"
        return _WorkPlan(by_base, (), None, None, note)
    ctr = _counter_columns(numeric)
    flop_names, byte_name, note = _counter_work(frozenset(ctr), line_bytes)
    flops = tuple(ctr[c] for c in flop_names)
    byte_attr = ctr[byte_name] if byte_name else None
    return _WorkPlan(None, flops, byte_attr, _calls_attribute(numeric), note)


def _work(regions: _Regions, numeric: tuple[str, ...], line_bytes: int) -> dict[str, list]:
    """``bytes``, ``flops``, ``calls`` and ``work_from`` per region (:func:`_work_columns`)."""
    inner = set(regions.parents)
    leaf = [k not in inner for k in regions.keys]
    return _work_columns(_work_plan(numeric, line_bytes), regions.column, leaf, line_bytes)


def _work_columns(
    plan: _WorkPlan,
    column: Callable[[str], Sequence[float | None]],
    leaf: list[bool],
    line_bytes: int,
) -> dict[str, list]:
    """``bytes``, ``flops``, ``calls`` and ``work_from`` per region: RAJAPerf's annotations on
    kernels (leaf regions: a group or the root carries some child's value, ``any#``), else the
    canonical counters.

    Args:
        plan: where the work comes from.
        column: an attribute's per-rank mean, by region.
        leaf: whether each region is no other's parent.
        line_bytes: bytes per last-level-cache miss.

    Returns:
        The four columns.
    """
    n = len(leaf)
    if (by_base := plan.annotations) is not None:
        reps = [x if lf else None for lf, x in zip(leaf, column(by_base["Reps"]))]
        per = {a: column(by_base[a]) if a in by_base else [None] * n for a in _ANNOTATIONS}
        kernels = per["Kernels/Rep"] if "Kernels/Rep" in by_base else [1.0] * n
        return {
            "bytes": list(map(_times_or_none, per["Bytes/Rep"], reps)),
            "flops": list(map(_times_or_none, per["Flops/Rep"], reps)),
            "calls": list(map(_times_or_none, kernels, reps)),
            "work_from": [plan.note] * n,
        }
    # no flop counter measured: none (a zip of no columns would give no rows)
    flops: list[float | None] = [None] * n
    if plan.flops:
        flops = [
            exact_sum(fl) if (fl := [v for v in vs if v is not None]) else None
            for vs in zip(*[column(a) for a in plan.flops])
        ]
    by = column(plan.bytes) if plan.bytes else [None] * n
    return {
        "bytes": [None if b is None else b * line_bytes for b in by],
        "flops": flops,
        "calls": list(column(plan.calls)) if plan.calls else [None] * n,
        "work_from": [plan.note] * n,
    }


@functools.lru_cache(maxsize=256)
def _annotations(numeric: tuple[str, ...]) -> dict[str, str]:
    """RAJAPerf's annotation -> the attribute holding it (cached per attribute list: callers
    only read)."""
    return {_base(k): k for k in numeric if _base(k) in _ANNOTATIONS}


def _times_or_none(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a * b


def _categories(regions: _Regions, parents: list[str | None], declared: list[bool]) -> list[str]:
    """Each region's category: its label, an ``mpi.function``, and the tree (``parents``: each
    region's, ``declared``: whether its work is declared)."""
    own = [
        "communication" if mpi else region_category(name)
        for name, mpi in zip(regions.names, regions.mpi)
    ]
    return list(_inherited(tuple(regions.keys), tuple(parents), tuple(own), tuple(declared)))


@functools.lru_cache(maxsize=1024)
def _inherited(
    regions: tuple[str, ...],
    parents: tuple[str | None, ...],
    own: tuple[str, ...],
    declared: tuple[bool, ...],
) -> tuple[str, ...]:
    # cached: the profiles of a corpus repeat one tree, its labels and what they declare
    return tuple(inherited_categories(list(regions), list(parents), list(own), list(declared)))


@functools.lru_cache(maxsize=256)
def _counter_columns(numeric: tuple[str, ...]) -> dict[str, str]:
    """Canonical counter -> the attribute measuring it (the per-rank mean where there is one;
    cached per attribute list, as the plans below: a corpus repeats it, and callers only read)."""
    found: dict[str, list[str]] = {}
    for k in numeric:
        if (c := counters.resolve(_base(k))) is not None:
            found.setdefault(c, []).append(k)
    return {c: a for c, names in found.items() if (a := _pick(names)) is not None}


@functools.lru_cache(maxsize=256)
def _counter_work(have: frozenset[str], line_bytes: int) -> tuple[tuple[str, ...], str | None, str]:
    return counter_work(set(have), line_bytes)


@functools.lru_cache(maxsize=256)
def _calls_attribute(numeric: tuple[str, ...]) -> str | None:
    return _pick([k for k in numeric if _base(k) in ("count", "visits", "calls")])


def _totals(columns: Iterable[list[float]], numeric: tuple[str, ...]) -> dict[str, float]:
    """Each metric summed over regions and ranks (``columns``: each one's values), under its
    canonical name where it has one (NaN and inf stay, for the store's checks to refuse by
    name)."""
    names, columns = _total_names(numeric), list(columns)
    try:  # nearly every profile: finite values, no None (math.fsum is exact_sum's sum)
        return dict(zip(names, map(math.fsum, columns)))
    except (TypeError, ValueError, OverflowError):  # inf + -inf, past a double's range, a None
        return {name: exact_sum(column) for name, column in zip(names, columns)}


@functools.lru_cache(maxsize=256)
def _total_names(numeric: tuple[str, ...]) -> tuple[str, ...]:
    """The name each metric's total goes under: its canonical counter's, else as written."""
    return tuple(base if counters.resolve(base := _base(k)) else k for k in numeric)


def _first_int(g: dict, keys: tuple[str, ...]) -> int | None:
    for k in keys:
        if (v := _num(g.get(k))) is not None and v >= 1:
            return int(v)
    return None


def _caliper_source(g: dict, attrs: list[str], config: dict) -> tuple[str | None, str]:
    """``machine:device`` from the ``cluster`` global, and whether GPU attributes were measured,
    GPUs counted or a GPU programming model named."""
    cluster = g.get("cluster")
    if not cluster:
        return None, "the profile names no cluster"
    machine = registry_id(str(cluster))
    if machine is None:
        return None, f"its cluster {cluster!r} is not in the machine registry"
    gpu = (
        _gpu_attributes(tuple(attrs))
        or bool(config["gpus"])
        or _gpu_model(str(config["programming_model"] or ""))
    )
    device = "gpu" if gpu else "cpu"
    why = (
        "GPU activity attributes, a GPU count or a GPU programming model"
        if gpu
        else "no GPU attributes, GPU count or GPU programming model"
    )
    return f"{machine}:{device}", f"Caliper global cluster={cluster}; {device}: {why}"


@functools.lru_cache(maxsize=256)
def _gpu_attributes(attrs: tuple[str, ...]) -> bool:
    """Whether a GPU tool measured any of these attributes (cached: a corpus repeats its list)."""
    return any(a.startswith(_GPU_ATTRIBUTE_PREFIXES) for a in attrs)


@functools.lru_cache(maxsize=256)
def _gpu_model(programming_model: str) -> bool:
    """Whether a programming model's name holds a GPU model's (``CUDA``, ``RAJA_HIP`` ...)."""
    return bool(set(re.split(r"[^a-z0-9]+", programming_model.lower())) & GPU_MODELS)


def _run_date(g: dict) -> datetime | None:
    """Caliper's ``launchdate`` (seconds since the epoch) as a UTC time; None when absent or not a
    time."""
    x = _num(g.get("launchdate"))
    # the time datetime.fromtimestamp(int(x), tz=UTC) gives (POSIX time counts no leap seconds),
    # by arithmetic rather than a conversion through the time zone
    return _EPOCH + timedelta(0, int(x)) if x is not None and 0 < x < 1e11 else None  # (days, s)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _configuration(cols: dict, prof: CaliperProfile, ranks_named: set[str]) -> dict:
    """ranks, threads, gpus, hosts and the programming model, from the mapped metadata and what
    the records say where the metadata does not (``ranks_named``: the ranks they name)."""
    ranks = cols.get("ranks")
    if ranks is None:
        ranks = len(ranks_named) or (int(n) if (n := spot_ranks(prof)) else None)
    model = cols.get("programming_model")
    threads = cols.get("threads")
    variant = cols.get("variant")
    # a RAJAPerf profile: its variant names the back-end (Base_Seq -> Seq, one thread)
    rajaperf = backend_device(str(variant)) if variant else None
    if rajaperf is not None:
        model = model or rajaperf[0]
        threads = threads if rajaperf[0] == "OpenMP" else 1
    return {
        "ranks": ranks,
        "threads": threads,
        "gpus": cols.get("gpus"),
        "hosts": cols.get("hosts"),
        "programming_model": model,
    }


# the metadata the reader puts in other columns: the cluster, and a launch date read as one
_HELD = frozenset(HELD_ELSEWHERE)
_HELD_DATED = frozenset(HELD_ELSEWHERE | {"launchdate"})


def _caliper_meta(
    prof: CaliperProfile,
    path: Path,
    ranks_named: set[str],
    attrs: list[str],
    time_from: str,
    metadata_map: MetadataMap | None,
) -> tuple[ProfileFields, tuple[str, ...]]:
    """(the profile's metadata, the metadata map's notes): every value of the type
    :class:`~xamm_data.tables.regions.ProfileMeta` gives it, as :class:`ProfileFields` holds
    it."""
    g = prof.globals
    exe = g.get("executablepath") or g.get("executable")
    stem, suffix = _stem_suffix(path.name)
    app = g.get("app") or g.get("application") or (Path(str(exe)).name if exe else stem)
    run_date = _run_date(g)
    mapped = (metadata_map or default_map()).apply(g, _HELD if run_date is None else _HELD_DATED)
    cols: dict[str, Any] = mapped.columns  # each column of its type (MetadataMap._value)
    config = _configuration(cols, prof, ranks_named)
    source, source_from = _caliper_source(g, attrs, config)
    version = g.get("cali.caliper.version")
    # by position, in the fields' order (a call by keyword matches 18 names, once per profile)
    meta = ProfileFields(
        str(path),
        "caliper-json" if suffix.lower() == ".json" else "caliper-cali",
        str(app),
        source,
        source_from,
        str(g["cluster"]) if g.get("cluster") else None,
        config["ranks"],
        config["threads"],
        config["gpus"],
        config["hosts"],
        config["programming_model"],
        cols.get("variant"),
        cols.get("input_size"),
        cols.get("input_type"),
        time_from,
        run_date,
        # as text: a JSON profile may write the version as a number, a .cali one a repeated global
        {"caliper": None if version is None else metadata_text(version)},
        tuple(mapped.extra),
    )
    return meta, tuple(mapped.notes)


def _stem_suffix(name: str) -> tuple[str, str]:
    """A file name's ``stem`` and ``suffix`` as :class:`~pathlib.PurePath` splits it (one name
    split once: each of the two properties is a call that takes the name again)."""
    i = name.rfind(".")
    return (name[:i], name[i:]) if 0 < i < len(name) - 1 else (name, "")


def _time_plan(prof: CaliperProfile, numeric: tuple[str, ...], time_unit, path: Path):
    """(inclusive attribute, exclusive attribute, seconds per unit of each, ranks they divide
    by)."""
    spot = prof.globals.get("cali.channel") == "spot" or "spot.format.version" in prof.globals
    world = _first_int(prof.globals, ("mpi.world.size",)) if spot else None
    if spot and world is None and (n := spot_ranks(prof)):
        world = int(n)
    inc, exc, per = _time_attributes(numeric, world)
    if inc is None and exc is None:
        raise RegionProfileError(
            f"{path}: no time attribute (e.g. avg#inclusive#sum#time.duration); expected a timed "
            "Caliper region profile (the spot or runtime-report channel)"
        )
    scale = {}
    if inc:
        scale[inc] = _seconds(prof, inc, time_unit, path) / per
    if exc:
        scale[exc] = _seconds(prof, exc, time_unit, path) / per
    return inc, exc, scale, per


def _region_columns(
    regions: _Regions, plan: tuple, numeric: tuple[str, ...], line_bytes: int
) -> tuple[dict[str, list], str]:
    """The region contract's columns (one value per region, Python floats and strings: the values
    :data:`SCHEMA` holds), and how the times were read. ``plan``: :func:`_time_plan`'s."""
    inc, exc, scale, per = plan
    incl, excl = _times(regions, inc, exc, scale)
    parents = regions.parents
    inner = set(parents)
    declared = [d and k not in inner for k, d in zip(regions.keys, regions.declared)]
    # a region no record timed (Caliper wrote it for its children only) holds no time of its own
    columns = _columns(
        [regions.keys, regions.names, parents],
        incl,
        excl,
        _work(regions, numeric, line_bytes),
        _categories(regions, parents, declared),
    )
    return columns, _how(inc, exc, per, regions.ranks > 1, excl.count(None))


@functools.lru_cache(maxsize=256)
def _how(inc: str | None, exc: str | None, per: int, ranks: bool, untimed: int) -> str:
    """How the times were read: the attributes, what divides them (``ranks``: whether the records
    name more than one), the regions left untimed (cached: a corpus reads its profiles alike)."""
    how = (
        f"exclusive {exc}" + (f", inclusive {inc}" if inc else "")
        if exc
        else (f"inclusive {inc}; exclusive = inclusive less the children's")
    )
    how += (
        f" / {per} ranks (mean over all ranks)"
        if per > 1
        else (" (mean over ranks)" if ranks or (inc or exc or "").startswith("avg#") else "")
    )
    if untimed:
        how += f"; {untimed} untimed region(s) count 0 s"
    return intern(how)


def _measured(recs: list[dict]) -> tuple[list[str], tuple[str, ...], list[dict[str, float]]]:
    """(the attributes beside the place, sorted; the numeric ones; each record's numbers) of any
    profile's records. An attribute is numeric when the first 200 records write it as a number."""
    keys = sorted(set().union(*recs) - _PLACE)
    # each record's numbers as written (non-finite included), converted once for every use
    nums = [_numbers(r) for r in recs]
    seen = set().union(*nums[:200])
    numeric = tuple(k for k in keys if k in seen and not isinstance(recs[0].get(k), list))
    kept = set(numeric)
    if not kept.issuperset(set().union(*nums)):
        nums = [{k: x for k, x in got.items() if k in kept} for got in nums]
    return keys, numeric, nums


@functools.lru_cache(maxsize=256)
def _declared_attr(numeric: tuple[str, ...]) -> str | None:
    """The attribute of a region's declared work (RAJAPerf's ``Bytes/Rep``), if any."""
    return next((k for k in numeric if _base(k) == "Bytes/Rep"), None)


def _read(path: Path, time_unit, line_bytes: int, metadata_map, data: bytes | None = None):
    """(region columns, metadata, totals, notes) of one profile, read once (``data``: its bytes,
    where the caller read them)."""
    try:
        prof = load_profile(path, data)
    except IngestError as e:
        raise RegionProfileError(str(e)) from None
    recs = [r for r in prof.records if r.get("path")]
    if not recs:
        raise RegionProfileError(f"{path}: no region records (no 'path'); expected regions")
    if (u := _uniform(recs)) is not None:
        keys, numeric = list(u.numeric), u.numeric
        plan = _time_plan(prof, numeric, time_unit, path)
        columns, time_from = _uniform_columns(u, plan, line_bytes)
        column_of = u.values.__getitem__
    else:
        keys, numeric, nums = _measured(recs)
        plan = _time_plan(prof, numeric, time_unit, path)
        used = [a for a in plan[:2] if a]
        _refuse_non_finite(recs, nums, [*used, *_counter_columns(numeric).values()], path)
        regions = _gathered(recs, nums, _declared_attr(numeric), path)

        def column_of(k: str) -> list[float]:
            return [got[k] for got in nums if k in got]

        columns, time_from = _region_columns(regions, plan, numeric, line_bytes)
    # as text: a rank a JSON file writes as 0 or "0" is one rank, and a list is no key
    named = (
        set() if u is not None else {str(v) for r in recs if (v := r.get("mpi.rank")) is not None}
    )
    meta, notes = _caliper_meta(prof, path, named, keys, time_from, metadata_map)
    summed = _summed(numeric, *plan[:2])
    return columns, meta, _totals(map(column_of, summed), summed), notes


@functools.lru_cache(maxsize=256)
def _summed(numeric: tuple[str, ...], inc: str | None, exc: str | None) -> tuple[str, ...]:
    """The attributes a profile's totals sum: all but the two time attributes its regions read
    (cached: a corpus repeats its attribute list)."""
    return tuple(k for k in numeric if k != inc and k != exc)


def read_caliper_rows(
    path: str | Path,
    *,
    time_unit: str | None = None,
    line_bytes: int = LINE_BYTES,
    metadata_map: MetadataMap | None = None,
    data: bytes | None = None,
) -> RegionRows:
    """A Caliper profile as :func:`read_caliper_regions` reads it, its regions as plain rows (no
    table is built: an ingest stores one row per profile and checks a batch's regions at once).

    Args:
        path: a ``.cali`` or Caliper JSON file.
        time_unit: the time attributes' unit where the file records none.
        line_bytes: bytes per last-level-cache miss.
        metadata_map: which metadata keys fill which fields (default: :class:`MetadataMap`).
        data: the file's bytes, where the caller read them (its hash's read: the bytes parsed
            are the bytes hashed, read once).

    Returns:
        The profile's metadata, region rows, time and totals.
    """
    path = path if isinstance(path, Path) else Path(path)
    columns, meta, totals, notes = _read(path, time_unit, line_bytes, metadata_map, data)
    return RegionRows.of_columns(meta, columns, totals, notes)


def read_caliper_regions(
    path: str | Path,
    *,
    time_unit: str | None = None,
    line_bytes: int = LINE_BYTES,
    metadata_map: MetadataMap | None = None,
    check: bool = True,
) -> RegionProfile:
    """A Caliper profile: regions, totals and metadata (see the module docstring).

    Args:
        path: a ``.cali`` or Caliper JSON file.
        time_unit: the time attributes' unit where the file records none.
        line_bytes: bytes per last-level-cache miss.
        metadata_map: which metadata keys fill which fields (default: :class:`MetadataMap`).
        check: check the regions (:func:`~xamm_data.tables.regions.check_regions`); an ingest
            checks a whole batch of profiles at once instead
            (:func:`~xamm_data.tables.regions.region_problems`).

    Returns:
        The profile.
    """
    path = Path(path)
    columns, meta, totals, notes = _read(path, time_unit, line_bytes, metadata_map)
    regions = pl.DataFrame(columns, schema=SCHEMA)
    if check:
        check_regions(regions, str(path))
    return RegionProfile(meta.validated(), regions, totals, notes)
