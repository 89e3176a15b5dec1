"""RAJAPerf runs recorded by Caliper + Adiak: ``.cali`` files and Caliper JSON (``json-split``).

Parsing does not build a Hatchet graph per file nor a union of trees across files, as Thicket's
``from_caliperreader`` does: one RAJAPerf file is one small flat profile. ``.cali`` text is parsed
by :mod:`~xamm_ingest.readers.cali_format`, which gives exactly what ``caliperreader`` (the parser
beneath Thicket and Hatchet) gives.

What is read (layouts derived from RAJAPerf's ``KernelBase`` at each release; see docs/formats.md):

* the call tree ``RAJAPerf -> Group -> Group_KERNEL`` (v2023.06.0 and later, one variant-tuning per
  file) or ``Variant -> Group -> Group_KERNEL -> Group_KERNEL.tuning`` (the pre-release Caliper
  branch, several tunings per file, per-kernel figures in Adiak globals);
* **the per-pass rule.** RAJAPerf opens the kernel's region once per pass and sets its attributes
  (``ProblemSize``, ``Reps``, ...) only in the first pass; they stay on Caliper's blackboard, so a
  later pass runs under the *last* kernel's values. Where the aggregation key holds such a value
  (``group by Complexity`` in develop after v2024.07.0, ``group by ProblemSize`` in the pre-release
  branch), one kernel gets one record per distinct key: the records of one region (and rank) are
  parts of one total and are **summed**, never averaged. The kernel's own attributes are the ones
  no other kernel's records carry. Time per rep = summed inclusive time / (Reps x npasses), which
  is the CSV's "Mean time per rep";
* spot-channel statistics over ranks (``avg/min/max#inclusive#sum#time.duration``) or per-rank
  records (``mpi.rank``): mean, min and max over ranks. Min and max over ranks cannot be recovered
  from per-pass parts, so they are null there;
* per-kernel figures from region attributes (any aggregation prefix) or Adiak globals named after
  each kernel; top-down fractions (``topdown.*``); every other numeric attribute is kept in
  ``extra_metrics`` rather than dropped;
* Adiak metadata: ``cluster`` (machine), ``variant``, ``tuning``, ``compiler``,
  ``rajaperf_compiler_options``, ``omp_max_threads``, ``ProblemSizeRunParam``, ``launchdate``,
  ``cmdline`` (``--npasses``) and tool versions. ``nan``/``inf``/empty optional values become null.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from xamm_data._version import __version__
from xamm_data.tables.schema import BENCHMARK_RUNS
from xamm_data.tables.sums import exact_sum
from xamm_data.tables.units import seconds_per
from xamm_data.thicket import is_xamm_thicket, thicket_records
from xamm_ingest.errors import IngestError, RecordError
from xamm_ingest.machine_names import source_machine
from xamm_ingest.readers.base import ReadResult, Source, provenance
from xamm_ingest.readers.caliper_files import CaliperProfile, load_profile
from xamm_ingest.readers.names import VARIANT_RE, split_kernel
from xamm_ingest.readers.rajaperf_common import (
    check_variant,
    finish_kernel,
    kernel_group,
    run_columns,
)
from xamm_ingest.readers.thicket_profiles import thicket_profiles

READER = "xamm_ingest.readers.rajaperf_caliper"
_TIME_RE = {
    "avg": re.compile(r"^avg#inclusive#sum#time\.duration(\.ns)?$"),
    # not sum#inclusive#sum#...: in spot files that is the total over ranks, not a per-rank time
    "plain": re.compile(
        r"^(inclusive#sum#time\.duration|inclusive#time\.duration|time\.inclusive\.duration)(\.ns)?$"
    ),
    "min": re.compile(r"^min#inclusive#sum#time\.duration(\.ns)?$"),
    "max": re.compile(r"^max#inclusive#sum#time\.duration(\.ns)?$"),
}
KERNEL_METRICS = {
    "ProblemSize": "problem_size",
    "Reps": "reps",
    "Iterations/Rep": "iterations_per_rep",
    "Kernels/Rep": "kernels_per_rep",
    "Bytes/Rep": "bytes_per_rep",
    "BytesMoved/Rep": "bytes_per_rep",
    "BytesRead/Rep": "bytes_read_per_rep",
    "BytesWritten/Rep": "bytes_written_per_rep",
    "BytesModifyWritten/Rep": "bytes_modify_written_per_rep",
    "BytesAtomicModifyWritten/Rep": "bytes_atomic_modify_written_per_rep",
    "BytesTouched/Rep": "bytes_touched_per_rep",
    "BytesAllocated/Rep": "bytes_allocated_per_rep",
    "Flops/Rep": "flops_per_rep",
    "FLOPS/Rep": "flops_per_rep",
    "BlockSize": "block_size",
}
_GLOBAL_KERNEL_KEYS = {
    "Problem size": "problem_size",
    "Reps": "reps",
    "Iterations/rep": "iterations_per_rep",
    "Kernels/rep": "kernels_per_rep",
    "Bytes/rep": "bytes_per_rep",
    "FLOPS/rep": "flops_per_rep",
}
_NOT_METRICS = {
    "path",
    "region",
    "annotation",
    "spot.channel",
    "mpi.rank",
    "function",
    "loop",
    "Complexity",
}
_SCHEMA_COLUMNS = set(BENCHMARK_RUNS.names)


def _num(value) -> float | None:
    """A number, or None for what is not one (strings, lists)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


@functools.lru_cache(maxsize=64)
def _time_roles(keys: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """(role, attribute) of each time attribute among ``keys`` (sorted): the first that matches
    each role's patterns, in the order tried (cached: a set of files repeats one attribute
    list)."""
    found: dict[str, str] = {}
    for role, rx in (
        ("mean", _TIME_RE["avg"]),
        ("mean", _TIME_RE["plain"]),
        ("min", _TIME_RE["min"]),
        ("max", _TIME_RE["max"]),
    ):
        if role not in found:
            for k in keys:
                if rx.match(k):
                    found[role] = k
                    break
    return tuple(found.items())


def _time_attrs(prof: CaliperProfile) -> dict[str, tuple[str, float]]:
    """{'mean'|'min'|'max': (attribute, scale to seconds)}."""
    keys = set(prof.meta) | {k for r in prof.records[:5] for k in r}
    found: dict[str, tuple[str, float]] = {}
    for role, k in _time_roles(tuple(sorted(keys))):
        unit = str(
            prof.meta.get(k, {}).get("attribute.unit") or ("ns" if k.endswith(".ns") else "sec")
        )
        try:
            found[role] = (k, seconds_per(unit))
        except ValueError as e:
            raise IngestError(prof.path, f"time attribute {k!r}: {e}") from None
    if "mean" not in found:
        raise IngestError(
            prof.path,
            "no inclusive time attribute (e.g. "
            "avg#inclusive#sum#time.duration or "
            "inclusive#sum#time.duration[.ns]); expected a RAJAPerf Caliper profile"
            f"{_alias_hint(prof)}",
        )
    return found


class _Attrs:
    """Every record attribute of one file, classified once: kernel figures, BlockSize, top-down,
    extra."""

    def __init__(self, prof: CaliperProfile, time_attrs: set[str]):
        self.figures: list[tuple[str, str]] = []  # (attribute, column), sorted by column
        self.block: list[str] = []
        self.topdown: dict[str, str] = {}
        self.extra: dict[str, str] = {}  # attribute -> name kept in extra_metrics
        for k in sorted(prof.attribute_names() - _NOT_METRICS - time_attrs):
            meta, name = _metric_name(k, prof)
            if name == "BlockSize":
                self.block.append(k)
            elif name in KERNEL_METRICS:
                self.figures.append((k, KERNEL_METRICS[name]))
            elif name.startswith("topdown.") and f"topdown_{name[8:]}" in _SCHEMA_COLUMNS:
                self.topdown[k] = f"topdown_{name[8:]}"
            else:
                meta = prof.meta.get(k, {}) if meta is None else meta
                self.extra[k] = meta.get("attribute.alias") or k
        self.figures.sort(key=lambda ac: ac[1])
        self._tuples: dict[int, tuple] = {}
        # the top-down counters as (attributes, columns) and the extra metrics in the order they
        # are listed (by name; a stable sort keeps attributes sharing an alias in their order)
        self.topdown_keys = frozenset(self.topdown)
        self._topdown_get = _getter(tuple(self.topdown))
        self.topdown_cols = tuple(self.topdown.values())
        self.extra_by_name = [
            (a, name, "sum" in a or "count" in a or "time" in a)
            for a, name in sorted(self.extra.items(), key=lambda an: an[1])
        ]

    def figure_tuple(self, rec: dict) -> tuple:
        """The kernel figures a record carries, BlockSize aside (it belongs to the tuning, and may
        be nan)."""
        got = self._tuples.get(id(rec))
        if got is None:
            try:  # nearly every record: each figure is a number
                got = tuple([(col, float(rec[a])) for a, col in self.figures if a in rec])
            except (TypeError, ValueError):
                got = tuple((col, _num(rec[a])) for a, col in self.figures if a in rec)
            self._tuples[id(rec)] = got
        return got


def _getter(keys: tuple[str, ...]):
    """What takes ``keys``' values from a record, always as a tuple."""
    if len(keys) == 1:
        key = keys[0]
        return lambda rec: (rec[key],)
    return operator.itemgetter(*keys) if keys else lambda rec: ()


def _metric_name(attr: str, prof: CaliperProfile) -> tuple[dict | None, str]:
    """(the attribute's metadata where its name needed it, else None; the name it is read by):
    a kernel figure or top-down counter by its own name, another by its alias."""
    base = attr.split("#")[-1]
    if base in KERNEL_METRICS or base.startswith("topdown."):
        return None, base
    meta = prof.meta.get(attr, {})
    return meta, meta.get("attribute.alias") or base


def parse_npasses(cmdline, path) -> int:
    """``--npasses N`` (or ``--npasses=N``) from RAJAPerf's recorded command line; 1 when absent."""
    if cmdline is None:
        return 1
    parts = [
        p.strip()
        for p in (cmdline if isinstance(cmdline, list) else str(cmdline).strip("[]").split(","))
    ]
    for i, p in enumerate(parts):
        value = (
            p.split("=", 1)[1]
            if p.startswith("--npasses=")
            else (parts[i + 1] if p == "--npasses" and i + 1 < len(parts) else None)
        )
        if p == "--npasses" and value is None:
            raise IngestError(
                path,
                "the recorded cmdline ends with --npasses and no value; expected --npasses N",
                record="cmdline",
            )
        if value is not None:
            if not value.strip().isdigit() or int(value) < 1:
                raise IngestError(
                    path,
                    f"the recorded cmdline says --npasses {value!r}; expected a whole number >= 1",
                    record="cmdline",
                )
            return int(value)
    return 1


def _single_tuning(g: dict) -> str | None:
    for key in ("tuning", "Tuning"):
        if g.get(key):
            return str(g[key])
    names = [x.strip() for x in str(g.get("tunings") or "").strip("{}[]").split(",") if x.strip()]
    return names[0] if len(names) == 1 else None


def _finite_int(x) -> int | None:
    v = _num(x)
    return int(v) if v is not None and math.isfinite(v) and abs(v) < 2**62 else None


def _alias_hint(prof: CaliperProfile) -> str:
    """A hint for Thicket profiles whose metric columns are aliases xamm cannot map back to Caliper
    attributes."""
    return (
        "; this Thicket names its metrics by alias and its metadata has "
        "no spot.metrics to map them back (is "
        "'time' inclusive or exclusive, seconds or ns?): build it with native names, "
        "Thicket.from_caliperreader(files, native=True)"
        if prof.layout == "thicket"
        else ""
    )


def _no_globals(prof: CaliperProfile) -> str:
    """A hint for files whose layout drops the Adiak globals."""
    return (
        "; cali-query's default format json layout leaves out the "
        'globals: write it with -q "select * format '
        'json(object)"'
        if prof.layout == "json-records"
        else ""
    )


def _machine_of(g: dict, path: Path, machine: str | None, hint: str = "") -> str:
    cluster = g.get("cluster")
    if machine:
        if cluster and source_machine(str(cluster), path, "the cluster metadata") != machine:
            raise IngestError(
                path,
                f"the file says cluster={cluster!r} but the machine was given as "
                f"{machine!r}; "
                "ingest it separately or drop --machine",
            )
        return machine
    if not cluster:
        raise IngestError(
            path,
            "no 'cluster' in the Adiak metadata; pass --machine NAME or add "
            "an xamm.toml "
            f'with machine = "NAME" beside the runs{hint}',
        )
    return source_machine(str(cluster), path, "the cluster metadata")


def _run_metadata(
    src: Source,
    g: dict,
    machine: str | None,
    variant: str,
    hint: str = "",
    fmt: str | None = None,
    ranks: float | None = None,
) -> dict:
    """The columns every row of the file shares (``ranks``: what the records say where the
    metadata does not, :func:`spot_ranks`)."""
    compiler = g.get("compiler")
    for key, label in (("cuda_compiler_version", "nvcc"), ("hip_compiler_version", "hipcc")):
        if compiler and g.get(key):
            compiler = f"{compiler}+{label}-{g[key]}"
    flags = g.get("rajaperf_compiler_options") or g.get("cmake_cxx_flags")
    launch = _finite_int(g.get("launchdate"))
    run_date = (
        datetime.fromtimestamp(launch, tz=UTC) if launch and 0 < launch < 32503680000 else None
    )
    tools = {
        "caliper": g.get("cali.caliper.version"),
        "rajaperf": g.get("perfsuite_version"),
        "raja": g.get("raja_version"),
        "cuda": g.get("cuda_compiler_version"),
        "hip": g.get("hip_compiler_version"),
    }
    fmt = fmt or ("caliper-json" if src.path.suffix.lower() == ".json" else "caliper-cali")
    return {
        "machine": _machine_of(g, src.path, machine, hint),
        "variant": variant,
        "suite_version": g.get("perfsuite_version"),
        "compiler": str(compiler) if compiler else None,
        "compiler_flags": " ".join(str(flags).split()) if flags else None,
        "npasses": float(parse_npasses(g.get("cmdline"), src.path)),
        "omp_max_threads": _num(g.get("omp_max_threads")),
        "problem_size_param": _num(g.get("ProblemSizeRunParam")),
        "ranks": _num(g.get("mpi.world.size") or g.get("jobsize")) or ranks,
        **provenance(src, fmt, READER, tools, run_date),
    }


def spot_ranks(prof: CaliperProfile) -> float | None:
    """The ranks a spot profile aggregated, where its metadata names none: at the root region every
    rank contributes, so its total over ranks (``sum#``) is the rank count times their mean
    (``avg#``). None unless the ratio is a whole number (within 1%)."""
    for rec in prof.records:
        p = rec.get("path")
        if p is None or (not isinstance(p, str) and len(p) != 1):
            continue
        for key in rec:
            if key.startswith("sum#inclusive#") and (avg := "avg#" + key[4:]) in rec:
                total, mean = _num(rec[key]), _num(rec[avg])
                if total and mean and mean > 0:
                    n = total / mean
                    if not math.isfinite(n):  # a time that is no number: its record says so
                        return None
                    return float(round(n)) if abs(n - round(n)) <= 0.01 * n else None
    return None


def _by_path(prof: CaliperProfile) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for rec in prof.records:
        p = rec.get("path")
        if p is not None:
            out.setdefault((p,) if isinstance(p, str) else tuple(p), []).append(rec)
    return out


def _kernel_nodes(
    by_path: dict[tuple, list[dict]], path: Path
) -> tuple[dict[tuple, str], dict[tuple, list[str]]]:
    """({kernel path: kernel name}, {kernel path: tuning leaf names})."""
    kernels = {
        p: p[-1]
        for p in by_path
        if len(p) >= 3
        and (p[0] == "RAJAPerf" or VARIANT_RE.match(p[0]))
        and split_kernel(p[-1])
        and p[-1].startswith(p[-2] + "_")
    }
    leaves: dict[tuple, list[str]] = {}
    for p in by_path:
        if len(p) >= 3 and p[:-1] in kernels and p[-1].startswith(p[-2] + "."):
            leaves.setdefault(p[:-1], []).append(p[-1][len(p[-2]) + 1 :])
    if not kernels:
        roots = sorted({str(p[0]) for p in by_path})[:3]
        raise IngestError(
            path,
            "no RAJAPerf kernel regions (expected a call tree RAJAPerf -> "
            "Group -> Group_KERNEL "
            f"or Variant -> Group -> Group_KERNEL; the roots are {roots}); is "
            "this a RAJAPerf profile?",
        )
    return kernels, leaves


def _stray_regions(by_path: dict[tuple, list[dict]], kernels: dict[tuple, str]) -> list[tuple]:
    """Regions where a kernel belongs (root -> group -> ?) that are not a kernel of that group."""
    roots = {p[0] for p in kernels}
    return [p for p in by_path if len(p) == 3 and p[0] in roots and p not in kernels]


def _times(recs: list[dict], times: dict[str, tuple[str, float]]) -> tuple:
    """(mean, min, max) over ranks of a region's inclusive time, each None where unknown; a
    rank's records (passes) are summed."""
    return _one_time(recs[0], times) if len(recs) == 1 else _summed_times(recs, times)


def _summed_times(recs: list[dict], times: dict[str, tuple[str, float]]) -> tuple:
    """:func:`_times` of any number of records: each rank's summed, then over ranks."""
    per_rank: dict[object, list[dict]] = {}
    for r in recs:
        per_rank.setdefault(r.get("mpi.rank"), []).append(r)
    sums: dict[str, list[float]] = {"mean": [], "min": [], "max": []}
    split = any(len(rs) > 1 for rs in per_rank.values())
    for rs in per_rank.values():
        for role, (attr, scale) in times.items():
            if xs := _floats(rs, attr):
                sums[role].append(exact_sum(xs) * scale)
    mean = sums["mean"]
    if not mean:
        return None, None, None
    if split and (sums["min"] or sums["max"]):  # min/max over ranks of a sum of parts is unknowable
        return exact_sum(mean) / len(mean), None, None
    return exact_sum(mean) / len(mean), min(sums["min"] or mean), max(sums["max"] or mean)


def _one_time(rec: dict, times: dict[str, tuple[str, float]]) -> tuple:
    """:func:`_summed_times` of a region's one record (nearly every region), which sums one value
    (``exact_sum([x])`` is ``x + 0.0``: a sum of -0.0 is 0.0) and averages one rank."""
    got = {}
    for role, (attr, scale) in times.items():
        if attr in rec:
            x = _num(rec[attr])
            got[role] = ((math.nan if x is None else x) + 0.0) * scale
    one = got.get("mean")
    if one is None:
        return None, None, None
    return one + 0.0, got.get("min", one), got.get("max", one)


def _floats(recs: list[dict], attr: str, missing: float | None = math.nan) -> list:
    """``attr``'s values in the records that hold it, one that is no number as ``missing``."""
    try:  # nearly always: each is a number
        return [float(r[attr]) for r in recs if attr in r]
    except (TypeError, ValueError):
        return [missing if (x := _num(r[attr])) is None else x for r in recs if attr in r]


def _printed_resolution(recs: list[dict], times: dict[str, tuple[str, float]]) -> float:
    """Caliper writes doubles with 6 decimals (std::to_string): half a unit of that, in seconds, per
    summed record."""
    most = 1 if len(recs) <= 1 else max(Counter(r.get("mpi.rank") for r in recs).values())
    return 5e-7 * times["mean"][1] * most


def _block_size(recs: list[dict], attrs: _Attrs, figures: tuple) -> float | None:
    """BlockSize from a record carrying the kernel's own figures."""
    if not attrs.block:
        return None
    for r in recs:
        if not figures or attrs.figure_tuple(r) == figures:
            for a in attrs.block:
                if a in r:
                    return _num(r[a])
    return None


def _own_metrics(
    node: tuple, recs: list[dict], attrs: _Attrs, tuples_by_node: dict[tuple, set]
) -> tuple[dict, str | None]:
    """The kernel's own figures among its records' (per-pass records may carry another kernel's).

    Returns (figures, problem): ``problem`` says why the figures cannot be told apart, else None.
    """
    mine = tuples_by_node[node]  # the figure tuples of ``recs``, worked out once per file
    if len(mine) <= 1:
        own = next(iter(mine), ())
        return {**dict(own), "block_size": _block_size(recs, attrs, own)}, None
    elsewhere = Counter(t for other, ts in tuples_by_node.items() if other != node for t in ts)
    unique = [t for t in mine if not elsewhere[t]]
    if len(unique) == 1:
        return {**dict(unique[0]), "block_size": _block_size(recs, attrs, unique[0])}, None
    shown = " vs ".join(str(dict(t).get("problem_size")) for t in sorted(mine, key=str))
    return {}, (
        "its per-pass records carry different kernel figures "
        f"(ProblemSize {shown}) and none is "
        "this kernel's alone; cannot tell which are its own"
    )


def _merged_under_max(kernels: dict, by_path: dict, attrs: _Attrs, tuples: dict) -> set[tuple]:
    """Kernels whose figures may be max(own, last kernel's) when npasses > 1.

    From v2023.06.0 RAJAPerf sets the figures once (first pass) and never unsets them, so later
    passes run under the last kernel's values; ``any(max#...)`` merges them into the kernel's one
    record. RAJAPerf develop (2024-08 on) groups spot records by ``Complexity``, which later passes
    inherit from the last kernel: a kernel of another Complexity gets a second record (its first
    keeps its own figures), one of the same Complexity gets one record whose figures merge its own
    with the leaked ones. Only the same run's CSV can tell those apart."""
    if any(VARIANT_RE.match(p[0]) for p in kernels):
        # the pre-release branch ends its attributes after the first pass: nothing leaks
        return set()
    if not any("Complexity" in r for p in kernels for r in by_path[p]):
        # v2023.06.0 / v2024.07.0: every kernel's record merges all passes under max()
        return set(kernels)
    leaked = None
    for p in kernels:
        if len({r.get("Complexity") for r in by_path[p]}) > 1:
            others = {t for q, ts in tuples.items() if q != p for t in ts}
            leaked = next(
                (r.get("Complexity") for r in by_path[p] if attrs.figure_tuple(r) in others), leaked
            )
    return {
        p
        for p in kernels
        if len({r.get("Complexity") for r in by_path[p]}) == 1
        and (leaked is None or by_path[p][0].get("Complexity") == leaked)
    }


def _extra_metrics(recs: list[dict], attrs: _Attrs) -> list[dict]:
    """Numeric attributes no column names, kept raw; parts of a split total are summed."""
    return _one_extra(recs[0], attrs) if len(recs) == 1 else _summed_extra(recs, attrs)


def _one_extra(rec: dict, attrs: _Attrs) -> list[dict]:
    """:func:`_extra_metrics` of a region's one record (nearly every region): each value is its
    sum and its max (+ 0.0: the sum of one -0.0 is 0.0, as :func:`exact_sum` gives it)."""
    return [
        {"name": name, "value": x + 0.0 if additive else x}
        for attr, name, additive in attrs.extra_by_name
        if attr in rec and (x := _num(rec[attr])) is not None
    ]


def _summed_extra(recs: list[dict], attrs: _Attrs) -> list[dict]:
    """:func:`_extra_metrics` of any number of records: additive figures summed, others their
    largest."""
    out = []
    for attr, name, additive in attrs.extra_by_name:
        if xs := [x for x in _floats(recs, attr, None) if x is not None]:
            out.append({"name": name, "value": exact_sum(xs) if additive else max(xs)})
    return out


def _add_topdown(row: dict, rec: dict, attrs: _Attrs) -> None:
    """The top-down fractions ``rec`` holds into ``row`` (one that is no number as None)."""
    try:  # nearly every record: each counter is a number
        if attrs.topdown_keys <= rec.keys():
            row.update(zip(attrs.topdown_cols, map(float, attrs._topdown_get(rec))))
            return
        got = {col: float(rec[a]) for a, col in attrs.topdown.items() if a in rec}
    except (TypeError, ValueError):
        got = {col: _num(rec[a]) for a, col in attrs.topdown.items() if a in rec}
    row.update(got)


def _adiak_kernel_info(g: dict, kernel: str, path: Path) -> dict:
    """Per-kernel figures the pre-release branch stored as Adiak globals named after the kernel."""
    gk = g.get(kernel)
    if not gk:
        return {}
    try:
        info = gk if isinstance(gk, dict) else ast.literal_eval(str(gk))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise IngestError(
            path, f"Adiak value for {kernel} is not a dict: {str(gk)[:80]!r}", record=kernel
        ) from None
    if not isinstance(info, dict):
        raise IngestError(
            path,
            f"Adiak value for {kernel} is {type(info).__name__}; expected a dict",
            record=kernel,
        )
    return {col: _num(info[k]) for k, col in _GLOBAL_KERNEL_KEYS.items() if k in info}


def read_caliper(src: Source, *, machine: str | None = None) -> ReadResult:
    """Read a RAJAPerf ``.cali`` or Caliper JSON file into benchmark rows (numbers unchecked: see
    records.py)."""
    return read_caliper_profile(load_profile(src.path, src.data), src, machine=machine)


def read_thicket_json(src: Source, *, machine: str | None = None) -> ReadResult:
    """Every profile of a Thicket's ``to_json()`` file, read as its Caliper file would be. A profile
    that cannot be read is a dropped record of the file (named by the profile's original file), not
    a lost file."""
    try:
        import thicket  # heavy (pandas, hatchet): only for Thicket files
    except ImportError:
        raise IngestError(
            src.path,
            "a Thicket to_json() file; reading it needs Thicket: pip install 'xamm[thicket]'",
        ) from None

    try:
        tk = thicket.Thicket.from_json(src.path.read_text(encoding="utf-8"))
    except Exception as e:
        raise IngestError(
            src.path,
            f"Thicket.from_json could not read it ({type(e).__name__}: {e}); "
            "expected a "
            "Thicket's to_json() output",
        ) from None
    if is_xamm_thicket(tk):
        return _exported_rows(tk, src)
    result = ReadResult()
    for label, psrc, prof in thicket_profiles(tk, source=src):
        try:
            got = read_caliper_profile(prof, psrc, machine=machine, fmt="thicket-json")
        except IngestError as e:
            result.dropped_record(f"profile {label}", "profile", label, e.problem or str(e))
            continue
        rows = got.full_rows()  # each profile's own run metadata
        for row in rows:
            row["_record"] = f"{label}: {row['_record']}"
        result.rows += rows
        result.notes += got.notes
        result.dropped += [(f"{label}: {r}", *rest) for r, *rest in got.dropped]
    return result


def _exported_rows(tk, src: Source) -> ReadResult:
    """The rows of a Thicket xamm wrote (``to_thicket``, ``xamm datasets export``): they come from
    this file now, each keeping its measurement's hash, and are checked again like any other
    source's."""
    fixed = {
        "source_path": src.rel_path,
        "source_format": "thicket-json",
        "reader": READER,
        "xamm_version": __version__,
        "_time_resolution_s": None,
        "_uncertain_figures": False,
    }
    return ReadResult(rows=[{**r, **fixed, "_record": r["kernel"]} for r in thicket_records(tk)])


def _variant(prof: CaliperProfile, kernels: dict, path) -> str:
    """The run's variant: the call tree's root when it is one, else Adiak's ``variant``."""
    roots = {p[0] for p in kernels}
    variant = (
        next(iter(roots))
        if len(roots) == 1 and VARIANT_RE.match(next(iter(roots)))
        else prof.globals.get("variant")
    )
    if not variant:
        raise IngestError(
            path,
            "no 'variant' in the Adiak metadata and the call tree root is "
            "not a variant; "
            f"expected RAJAPerf's Adiak metadata{_no_globals(prof)}",
        )
    check_variant(path, str(variant))
    return str(variant)


def _with_stray_regions_dropped(by_path: dict, kernels: dict) -> ReadResult:
    """A result that names every region under a group that is not one of its kernels."""
    result = ReadResult()
    for p in _stray_regions(by_path, kernels):
        result.dropped_record(
            "/".join(p),
            "kernel",
            p[-1],
            f"region {p[-1]!r} under {'/'.join(p[:2])} is not a RAJAPerf "
            f"kernel of group {p[1]!r}; expected a name such as {p[1]}_DAXPY "
            "(corrupt file?)",
        )
    return result


def read_caliper_profile(
    prof: CaliperProfile, src: Source, *, machine: str | None = None, fmt: str | None = None
) -> ReadResult:
    """Benchmark rows of one parsed RAJAPerf profile (a file's, or one profile of a Thicket);
    ``fmt`` overrides the ``source_format`` told by the file's suffix."""
    path = src.path
    g = prof.globals
    times = _time_attrs(prof)
    by_path = _by_path(prof)
    kernels, leaves = _kernel_nodes(by_path, path)
    variant = _variant(prof, kernels, path)
    common = _run_metadata(
        src, g, machine, str(variant), _no_globals(prof), fmt, ranks=spot_ranks(prof)
    )
    # and what the run's variant, ranks and threads make of every row (the variant is checked)
    common.update(run_columns(variant, common["ranks"], common["omp_max_threads"], path))
    file_tuning = _single_tuning(g)
    attrs = _Attrs(prof, {a for a, _ in times.values()})
    tuples = {p: {attrs.figure_tuple(r) for r in recs} - {()} for p, recs in by_path.items()}
    suspect = _merged_under_max(kernels, by_path, attrs, tuples) if common["npasses"] > 1 else set()
    result = _with_stray_regions_dropped(by_path, kernels)
    result.shared = common  # every row's, given once
    for kp, kernel in sorted(kernels.items()):
        targets = [(kp + (f"{kernel}.{t}",), t) for t in sorted(leaves.get(kp, []))] or [
            (kp, file_tuning or "default")
        ]
        for node, tuning in targets:
            try:
                row = _kernel_row(
                    node, kp, kernel, tuning, by_path, prof, times, tuples, attrs, g, common, result
                )
            except RecordError as e:
                result.dropped_record(e.record or "/".join(node), e.field, e.value, e.problem)
                continue
            if row is not None:
                row["_uncertain_figures"] = kp in suspect
                result.rows.append(row)
    if suspect:
        result.notes.append(
            f"{src.rel_path}: {len(suspect)} kernel(s) ran later passes under "
            "another kernel's "
            "attributes (RAJAPerf's blackboard leak with --npasses > 1); "
            "their figures are taken "
            "from the same run's CSV files, or the records are dropped"
        )
    return result


def _kernel_row(
    node, kp, kernel, tuning, by_path, prof, times, tuples, attrs, g, common, result
) -> dict | None:
    """One benchmark row for a kernel (or a tuning leaf under it); None (and a dropped record) if
    its figures clash."""
    record = "/".join(node)
    figures, problem = _own_metrics(kp, by_path[kp], attrs, tuples)
    if node != kp:
        leaf, leaf_problem = _own_metrics(node, by_path[node], attrs, tuples)
        figures, problem = {**figures, **leaf}, problem or leaf_problem
    lacking = problem or figures.get("problem_size") is None or figures.get("reps") is None
    adiak = _adiak_kernel_info(g, kernel, prof.path) if lacking else {}
    if problem and not adiak:
        result.dropped_record(record, "ProblemSize", "ambiguous", problem)
        return None
    for col, v in adiak.items():
        figures.setdefault(col, v)
    for need, label in (("problem_size", "ProblemSize"), ("reps", "Reps")):
        if figures.get(need) is None:
            result.dropped_record(
                record,
                label,
                "missing",
                f"no {label} for the kernel; expected a region attribute "
                f"{label} or RAJAPerf's per-kernel Adiak metadata",
            )
            return None
    recs = by_path[node]
    mean, low, high = _times(recs, times)
    denom = (figures["reps"] or math.nan) * common["npasses"]
    row = {  # the file's columns aside (ReadResult.shared)
        **figures,
        "kernel": kernel,
        "group": kernel_group(kernel, prof.path, record),
        "tuning": tuning,
        "_record": record,
        "time_per_rep_s": math.nan if mean is None else mean / denom,
        "time_per_rep_min_s": None if low is None else low / denom,
        "time_per_rep_max_s": None if high is None else high / denom,
        "_time_resolution_s": _printed_resolution(recs, times) / denom,
    }
    _add_topdown(row, recs[0], attrs)  # in the row's column order, before extra_metrics
    row["extra_metrics"] = _extra_metrics(recs, attrs)
    return finish_kernel(row, common["device"])
