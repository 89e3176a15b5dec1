"""RAJAPerf runs recorded by Caliper + Adiak: ``.cali`` files and Caliper JSON (``json-split``).

Parsing does not build a Hatchet graph per file nor a union of trees across files, as Thicket's
``from_caliperreader`` does: one RAJAPerf file is one small flat profile. ``.cali`` text is parsed
by :mod:`~xamm_ingest.readers.cali_format`, which gives exactly what ``caliperreader`` (the parser
beneath Thicket and Hatchet) gives (the tests compare them on every real file) at a fraction of
the cost.

What is read:

* the call tree ``RAJAPerf -> Group -> Group_KERNEL`` (newer RAJAPerf) or
  ``Variant -> Group -> Group_KERNEL -> Group_KERNEL.tuning`` (older RAJAPerf, several tunings per file);
* the kernel's inclusive time, which covers every rep of every pass, so time per rep =
  time / (Reps x npasses), with ``npasses`` from the run's ``cmdline`` (``--npasses N``, default 1).
  Spot-channel files hold per-rank statistics (``avg/min/max#inclusive#sum#time.duration``: mean
  over ranks, and its min and max); units come from the attribute's ``attribute.unit`` metadata,
  else from the name (``time.duration.ns`` is nanoseconds, ``time.duration`` seconds);
* per-kernel figures from region attributes (``ProblemSize``, ``Reps``, ``Iterations/Rep``,
  ``Kernels/Rep``, ``Bytes/Rep``, ``Flops/Rep``, ``BlockSize``; any aggregation prefix) or, in older
  files, from Adiak globals named after each kernel (``{'Problem size': ..., 'Reps': ...}``);
* top-down fractions (``topdown.*``) when the run measured them;
* Adiak metadata: ``cluster`` (machine), ``variant``, ``tuning``/``Tuning``/``tunings``,
  ``compiler``, ``rajaperf_compiler_options``, ``omp_max_threads``, ``ProblemSizeRunParam``,
  ``launchdate``, ``cmdline`` and tool versions.
"""

from __future__ import annotations

import ast
import math
import re
from datetime import datetime, timezone
from pathlib import Path

from xamm_ingest.errors import IngestError
from xamm_ingest.readers.caliper_files import CaliperProfile, load_profile
from xamm_ingest.readers.base import ReadResult, Source, provenance
from xamm_ingest.readers.names import VARIANT_RE, split_kernel
from xamm_ingest.readers.rajaperf_common import check_time, finish_row

READER = "xamm_ingest.readers.rajaperf_caliper"
_UNIT_SCALE = {"sec": 1.0, "s": 1.0, "seconds": 1.0, "ms": 1e-3, "msec": 1e-3, "usec": 1e-6, "us": 1e-6,
               "ns": 1e-9, "nsec": 1e-9}
_TIME_RE = {
    "avg": re.compile(r"^avg#inclusive#sum#time\.duration(\.ns)?$"),
    "plain": re.compile(r"^(inclusive#sum#time\.duration|sum#inclusive#sum#time\.duration|inclusive#time\.duration|time\.inclusive\.duration)(\.ns)?$"),
    "min": re.compile(r"^min#inclusive#sum#time\.duration(\.ns)?$"),
    "max": re.compile(r"^max#inclusive#sum#time\.duration(\.ns)?$"),
}
_KERNEL_METRICS = {
    "ProblemSize": "problem_size", "Reps": "reps", "Iterations/Rep": "iterations_per_rep",
    "Kernels/Rep": "kernels_per_rep", "Bytes/Rep": "bytes_per_rep", "BytesMoved/Rep": "bytes_per_rep",
    "BytesRead/Rep": "bytes_read_per_rep", "BytesWritten/Rep": "bytes_written_per_rep",
    "BytesModifyWritten/Rep": "bytes_modify_written_per_rep",
    "BytesAtomicModifyWritten/Rep": "bytes_atomic_modify_written_per_rep",
    "BytesTouched/Rep": "bytes_touched_per_rep", "BytesAllocated/Rep": "bytes_allocated_per_rep",
    "Flops/Rep": "flops_per_rep", "FLOPS/Rep": "flops_per_rep", "BlockSize": "block_size",
}
_GLOBAL_KERNEL_KEYS = {
    "Problem size": "problem_size", "Reps": "reps", "Iterations/rep": "iterations_per_rep",
    "Kernels/rep": "kernels_per_rep", "Bytes/rep": "bytes_per_rep", "FLOPS/rep": "flops_per_rep",
}
_INT_COLS = {"problem_size", "reps", "block_size"}
TOPDOWN = ("retiring", "frontend_bound", "backend_bound", "bad_speculation", "branch_mispredict", "machine_clears",
           "frontend_latency", "frontend_bandwidth", "memory_bound", "core_bound", "ext_mem_bound",
           "l1_bound", "l2_bound", "l3_bound")


def _num(value, path, what: str, record: str) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise IngestError(path, f"{what} is {value!r}; expected a number", record=record) from None
    return x


def _time_attrs(prof: CaliperProfile) -> dict[str, tuple[str, float]]:
    """{'mean'|'min'|'max': (attribute, scale to seconds)}."""
    keys = set(prof.meta) | {k for r in prof.records[:5] for k in r}
    found: dict[str, tuple[str, float]] = {}
    for role, rx in (("mean", _TIME_RE["avg"]), ("mean", _TIME_RE["plain"]), ("min", _TIME_RE["min"]), ("max", _TIME_RE["max"])):
        if role in found:
            continue
        for k in sorted(keys):
            if rx.match(k):
                unit = str(prof.meta.get(k, {}).get("attribute.unit") or ("ns" if k.endswith(".ns") else "sec"))
                if unit not in _UNIT_SCALE:
                    raise ValueError(f"time attribute {k!r} has unit {unit!r}")
                found[role] = (k, _UNIT_SCALE[unit])
                break
    return found


def _metric_name(attr: str, meta: dict) -> str:
    alias = meta.get("attribute.alias")
    base = attr.split("#")[-1]
    return base if base in _KERNEL_METRICS or base.startswith("topdown.") else (alias or base)


def _parse_npasses(cmdline) -> int | None:
    if cmdline is None:
        return None
    parts = [p.strip() for p in (cmdline if isinstance(cmdline, list) else str(cmdline).strip("[]").split(","))]
    for i, p in enumerate(parts):
        if p.startswith("--npasses="):
            return int(p.split("=", 1)[1])
        if p == "--npasses" and i + 1 < len(parts):
            return int(parts[i + 1])
    return 1


def _single_tuning(g: dict) -> str | None:
    for key in ("tuning", "Tuning"):
        if g.get(key):
            return str(g[key])
    t = g.get("tunings")
    if t:
        names = [x.strip() for x in str(t).strip("{}[]").split(",") if x.strip()]
        if len(names) == 1:
            return names[0]
    return None


def _int_or_none(x):
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return int(v) if math.isfinite(v) else None


def _machine_of(g: dict, path: Path, machine: str | None) -> str:
    from xamm_ingest.machine_names import machine_id

    cluster = g.get("cluster")
    if machine:
        if cluster and machine_id(str(cluster)) != machine:
            raise IngestError(path, f"the file says cluster={cluster!r} but the machine was given as {machine!r}; "
                              "ingest it separately or drop --machine")
        return machine
    if not cluster:
        raise IngestError(path, "no 'cluster' in the Adiak metadata; pass --machine NAME or add an xamm.toml "
                          "with machine = \"NAME\" beside the runs")
    return machine_id(str(cluster))


def read_caliper(src: Source, *, machine: str | None = None) -> ReadResult:
    """Read a RAJAPerf ``.cali`` or Caliper JSON file into benchmark rows."""
    path = src.path
    is_json = path.suffix.lower() == ".json"
    prof = load_profile(path)
    g = prof.globals
    try:
        times = _time_attrs(prof)
    except ValueError as e:
        raise IngestError(path, f"{e}; expected a time unit such as sec or ns") from None
    if "mean" not in times:
        raise IngestError(path, "no inclusive time attribute (e.g. avg#inclusive#sum#time.duration or "
                          "inclusive#sum#time.duration[.ns]); expected a RAJAPerf Caliper profile")

    # per-rank records (mpi.rank present) are combined over ranks: mean, min, max
    by_path: dict[tuple, list[dict]] = {}
    for rec in prof.records:
        p = rec.get("path")
        if p is None:
            continue
        p = (p,) if isinstance(p, str) else tuple(p)
        by_path.setdefault(p, []).append(rec)

    kernels: dict[tuple, tuple] = {}  # path -> (group, kernel)
    leaves: dict[tuple, list[str]] = {}  # kernel path -> tuning names of its leaves
    for p in by_path:
        if len(p) >= 2 and split_kernel(p[-1]) and p[-1].startswith(p[-2] + "_"):
            kernels[p] = (p[-2], p[-1])
    for p in by_path:
        if len(p) >= 3 and p[:-1] in kernels and p[-1].startswith(p[-2] + "."):
            leaves.setdefault(p[:-1], []).append(p[-1][len(p[-2]) + 1:])
    if not kernels:
        raise IngestError(path, "no RAJAPerf kernel regions (expected a call tree RAJAPerf -> Group -> Group_KERNEL); "
                          "is this a RAJAPerf profile?")

    machine_name = _machine_of(g, path, machine)
    root_variant = None
    roots = {p[0] for p in kernels}
    if len(roots) == 1 and VARIANT_RE.match(next(iter(roots))):
        root_variant = next(iter(roots))
    variant = root_variant or (str(g["variant"]) if g.get("variant") else None)
    if variant is None:
        raise IngestError(path, "no 'variant' in the Adiak metadata and the call tree root is not a variant; "
                          "expected RAJAPerf's Adiak metadata")
    file_tuning = _single_tuning(g)
    npasses = _parse_npasses(g.get("cmdline")) or 1
    omp = _int_or_none(g.get("omp_max_threads"))
    compiler = g.get("compiler")
    for key, label in (("cuda_compiler_version", "nvcc"), ("hip_compiler_version", "hipcc")):
        if compiler and g.get(key):
            compiler = f"{compiler}+{label}-{g[key]}"
    flags = g.get("rajaperf_compiler_options") or g.get("cmake_cxx_flags")
    flags = " ".join(str(flags).split()) if flags else None
    launch = _int_or_none(g.get("launchdate"))
    run_date = datetime.fromtimestamp(launch, tz=timezone.utc) if launch else None
    tools = {"caliper": g.get("cali.caliper.version"), "rajaperf": g.get("perfsuite_version"),
             "raja": g.get("raja_version"), "cuda": g.get("cuda_compiler_version"),
             "hip": g.get("hip_compiler_version")}
    prov = provenance(src, "caliper-json" if is_json else "caliper-cali", READER, tools, run_date)
    common = {
        "machine": machine_name, "variant": variant, "suite_version": g.get("perfsuite_version"),
        "compiler": compiler, "compiler_flags": flags, "npasses": npasses, "omp_max_threads": omp,
        "problem_size_param": _int_or_none(g.get("ProblemSizeRunParam")), "ranks": _int_or_none(g.get("mpi.world.size") or g.get("jobsize")),
        **prov,
    }

    def stats(recs: list[dict], record: str) -> dict:
        out = {}
        vals = {}
        for role, (attr, scale) in times.items():
            xs = [_num(r[attr], path, attr, record) * scale for r in recs if attr in r]
            if xs:
                vals[role] = xs
        if "mean" in vals:
            xs = vals["mean"]
            out["mean"] = sum(xs) / len(xs)
            out["min"] = min(vals.get("min", xs))
            out["max"] = max(vals.get("max", xs))
        for r in recs[:1]:
            for attr, v in r.items():
                if attr in ("path", "region", "annotation", "spot.channel", "mpi.rank"):
                    continue
                name = _metric_name(attr, prof.meta.get(attr, {}))
                if name in _KERNEL_METRICS:
                    out[_KERNEL_METRICS[name]] = _num(v, path, name, record)
                elif name.startswith("topdown."):
                    out["topdown_" + name.split(".", 1)[1]] = _num(v, path, name, record)
        return out

    result = ReadResult()
    for kp, (group, kernel) in sorted(kernels.items()):
        targets = [(kp + (f"{kernel}.{t}",), t) for t in sorted(leaves.get(kp, []))] or [(kp, file_tuning or "default")]
        kstats = stats(by_path[kp], kernel)
        for node, tuning in targets:
            record = "/".join(node)
            st = {**kstats, **stats(by_path[node], record)} if node != kp else kstats
            gk = g.get(kernel)
            if gk and ("problem_size" not in st or "reps" not in st):
                try:
                    info = ast.literal_eval(str(gk)) if not isinstance(gk, dict) else gk
                except (ValueError, SyntaxError):
                    raise IngestError(path, f"Adiak value for {kernel} is not a dict: {str(gk)[:80]!r}", record=kernel) from None
                for k, col in _GLOBAL_KERNEL_KEYS.items():
                    if k in info and col not in st:
                        st[col] = _num(info[k], path, k, kernel)
            for need, label in (("problem_size", "ProblemSize"), ("reps", "Reps")):
                if need not in st:
                    raise IngestError(path, f"no {label} for the kernel; expected a region attribute {label} or "
                                      "RAJAPerf's per-kernel Adiak metadata", record=record)
            reps = st["reps"]
            if not (reps >= 1 and reps == int(reps)):
                raise IngestError(path, f"Reps is {reps!r}; expected a whole number >= 1", record=record)
            if not (st["problem_size"] >= 1):
                raise IngestError(path, f"ProblemSize is {st['problem_size']!r}; expected >= 1", record=record)
            total = check_time(path, st.get("mean"), "inclusive time", record)
            denom = reps * npasses
            row = {
                **common, "kernel": kernel, "tuning": tuning,
                "time_per_rep_s": total / denom,
                "time_per_rep_min_s": check_time(path, st["min"], "min inclusive time", record) / denom,
                "time_per_rep_max_s": check_time(path, st["max"], "max inclusive time", record) / denom,
            }
            for k, v in st.items():
                if k in ("mean", "min", "max"):
                    continue
                row[k] = int(v) if k in _INT_COLS else v
            if row.get("block_size") == 0:
                row["block_size"] = None
            finish_row(row, src_path=path, record=record, omp_max_threads=omp)
            result.rows.append(row)
    return result
