"""RAJAPerf's native CSV outputs.

A RAJAPerf run writes files sharing one prefix (``--outfile`` prefix, default ``RAJAPerf``):

* newer RAJAPerf: ``<p>-kernel-run-data.csv`` (per kernel, variant, tuning: problem size, checksum,
  mean time per rep, bandwidth, GFLOP/s) and ``<p>-kernel-details.csv`` (per kernel: reps,
  iterations, bytes and flops per rep, ...);
* older RAJAPerf: ``<p>-kernels.csv`` (per kernel: problem size, reps, iterations/rep,
  kernels/rep, bytes/rep, FLOPS/rep);
* both: ``<p>-timing-{Average,Minimum,Maximum}.csv``, kernel x (variant, tuning) matrices of the
  time of all reps of one pass, combined over ``--npasses`` passes; cells may say ``Not run``.

Fields are ``,``-separated and space-padded; a first line ``Kernels run on N MPI ranks`` gives the
rank count. Time per rep is the run-data's mean time per rep when present (more digits), else
timing-Average / Reps; min and max per rep come from the Minimum/Maximum matrices. Reported
bandwidth and GFLOP/s are checked against bytes and flops per rep / time per rep (rtol 1e-4).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from xamm_ingest.errors import IngestError
from xamm_ingest.readers.base import ReadResult, Source, provenance
from xamm_ingest.readers.names import canonical_kernel
from xamm_ingest.readers.rajaperf_common import GIB, check_time, finish_row

READER = "xamm_ingest.readers.rajaperf_csv"
RANKS_RE = re.compile(r"^\s*Kernels run on (\d+) MPI ranks?\s*$")
ROLE_RE = re.compile(r"^(?P<prefix>.+)-(?P<role>kernel-run-data|kernel-details|kernels|timing-Average|timing-Minimum|timing-Maximum)\.csv$")
NOT_RUN = "Not run"
AGREE_RTOL = 1e-4

# source header -> (canonical column, kind)
DETAILS_COLUMNS: dict[str, tuple[str | None, str]] = {
    "Kernel": ("kernel", "str"),
    "Kernels": ("kernel", "str"),
    "Problem size": ("problem_size", "int"),
    "Reps": ("reps", "int"),
    "Iterations/rep": ("iterations_per_rep", "float"),
    "Kernels/rep": ("kernels_per_rep", "float"),
    "Bytes/rep": ("bytes_per_rep", "float"),
    "BytesMoved/rep": ("bytes_per_rep", "float"),
    "FLOPS/rep": ("flops_per_rep", "float"),
    "BytesTouched/rep": ("bytes_touched_per_rep", "float"),
    "BytesRead/rep": ("bytes_read_per_rep", "float"),
    "BytesWritten/rep": ("bytes_written_per_rep", "float"),
    "BytesModifyWritten/rep": ("bytes_modify_written_per_rep", "float"),
    "BytesAtomicModifyWritten/rep": ("bytes_atomic_modify_written_per_rep", "float"),
    "BytesAllocated/rep": ("bytes_allocated_per_rep", "float"),
    "ChecksumConsistency": (None, "str"),
    "OperationalComplexity": ("operational_complexity", "str"),
    "MaxPerfectLoopDimensions": (None, "int"),
    "ProblemDimensionality": ("problem_dimensionality", "int"),
}
RUN_DATA_COLUMNS: dict[str, tuple[str | None, str]] = {
    "Kernel": ("kernel", "str"),
    "Variant": ("variant", "str"),
    "Tuning": ("tuning", "str"),
    "Problem size": ("problem_size", "int"),
    "Checksum": ("checksum_status", "str"),
    "Mean time per rep (sec.)": ("time_per_rep_s", "float"),
    "Mean Bandwidth (GiB per sec.)": ("_bandwidth_gib_s", "float"),
    "Mean flops (gigaFLOP per sec.)": ("_gflops_s", "float"),
}


@dataclass
class CsvRun:
    """The files of one RAJAPerf run (same directory, same prefix), by role."""

    directory: Path
    prefix: str
    files: dict[str, Path]

    @property
    def primary(self) -> Path:
        for role in ("kernel-run-data", "timing-Average", "kernel-details", "kernels"):
            if role in self.files:
                return self.files[role]
        return next(iter(self.files.values()))


def group_runs(paths: list[Path]) -> tuple[list[CsvRun], list[Path]]:
    """Group RAJAPerf CSV files into runs by directory and prefix; return (runs, unrelated files)."""
    runs: dict[tuple[Path, str], CsvRun] = {}
    other = []
    for p in paths:
        m = ROLE_RE.match(p.name)
        if not m:
            other.append(p)
            continue
        key = (p.parent, m["prefix"])
        runs.setdefault(key, CsvRun(p.parent, m["prefix"], {})).files[m["role"]] = p
    return [runs[k] for k in sorted(runs, key=lambda k: (str(k[0]), k[1]))], other


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.rstrip("\r\n").split(",")]


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="strict").splitlines()
    except UnicodeDecodeError as e:
        raise IngestError(path, f"not a text file ({e.reason} at byte {e.start}); expected a RAJAPerf CSV") from None


def _convert(path: Path, value: str, kind: str, column: str, record: str):
    if kind == "str":
        return value
    try:
        x = float(value)
    except ValueError:
        raise IngestError(path, f"column {column!r} holds {value!r}; expected a number", record=record) from None
    if kind == "int":
        if not math.isfinite(x) or x != int(x):
            raise IngestError(path, f"column {column!r} holds {value!r}; expected a whole number", record=record)
        return int(x)
    return x


def _parse_table(path: Path, columns: dict[str, tuple[str | None, str]], required: tuple[str, ...]):
    """Parse a RAJAPerf per-kernel table; return (ranks, list of (line number, row dict))."""
    lines = _read_lines(path)
    ranks = None
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i < len(lines) and (m := RANKS_RE.match(lines[i])):
        ranks = int(m.group(1))
        i += 1
    if i >= len(lines):
        raise IngestError(path, "file ends before the header row; expected a header starting with 'Kernel'")
    header = _cells(lines[i])
    if header[0] not in ("Kernel", "Kernels"):
        raise IngestError(path, f"header starts with {header[0]!r}; expected 'Kernel'", record=f"line {i + 1}")
    unknown = [h for h in header if h and h not in columns]
    if unknown:
        raise IngestError(path, f"unknown column(s) {unknown}; this reader knows {sorted(columns)}",
                          record=f"line {i + 1}")
    canon = [columns[h][0] if h else None for h in header]
    missing = [r for r in required if r not in canon]
    if missing:
        raise IngestError(path, f"header lacks {missing}; expected the RAJAPerf columns for {path.name}",
                          record=f"line {i + 1}")
    rows = []
    for j in range(i + 1, len(lines)):
        if not lines[j].strip():
            break
        cells = _cells(lines[j])
        if len(cells) != len(header):
            raise IngestError(path, f"{len(cells)} fields; expected {len(header)} as in the header (truncated file?)",
                              record=f"line {j + 1}")
        row = {}
        record = f"line {j + 1} ({cells[0]})"
        for h, c, value in zip(header, canon, cells):
            if c is None:
                continue
            if value == NOT_RUN:
                row[c] = NOT_RUN
                continue
            row[c] = _convert(path, value, columns[h][1], h, record)
        rows.append((j + 1, row))
    if not rows:
        raise IngestError(path, "no data rows after the header")
    return ranks, rows


def parse_timing_matrix(path: Path) -> tuple[int | None, dict[tuple[str, str, str], float | None]]:
    """Parse a timing matrix; return (ranks, {(kernel, variant, tuning): seconds or None if 'Not run'})."""
    lines = [ln for ln in _read_lines(path)]
    ranks = None
    idx = 0
    while idx < len(lines) and not lines[idx].strip():
        idx += 1
    if idx < len(lines) and (m := RANKS_RE.match(lines[idx])):
        ranks = int(m.group(1))
        idx += 1
    # title line, then Variant row, then Tuning row (older RAJAPerf may have no Tuning row)
    while idx < len(lines) and _cells(lines[idx])[0] != "Variant":
        idx += 1
    if idx >= len(lines):
        raise IngestError(path, "no 'Variant' header row; expected a RAJAPerf timing matrix")
    variants = _cells(lines[idx])[1:]
    idx += 1
    if idx < len(lines) and _cells(lines[idx])[0] == "Tuning":
        tunings = _cells(lines[idx])[1:]
        idx += 1
    else:
        tunings = ["default"] * len(variants)
    if len(tunings) != len(variants):
        raise IngestError(path, f"{len(tunings)} tunings for {len(variants)} variants", record=f"line {idx}")
    out: dict[tuple[str, str, str], float | None] = {}
    for j in range(idx, len(lines)):
        if not lines[j].strip():
            break
        cells = _cells(lines[j])
        if len(cells) != len(variants) + 1:
            raise IngestError(path, f"{len(cells)} fields; expected {len(variants) + 1} (truncated file?)",
                              record=f"line {j + 1}")
        kernel = cells[0]
        for v, t, value in zip(variants, tunings, cells[1:]):
            if value == NOT_RUN or value == "":
                out[(kernel, v, t)] = None
                continue
            out[(kernel, v, t)] = _convert(path, value, "float", f"{v}/{t}", f"line {j + 1} ({kernel})")
    return ranks, out


def _agree(path: Path, reported: float, computed: float, what: str, record: str) -> None:
    if reported is None or computed is None:
        return
    scale = max(abs(reported), abs(computed))
    if scale and abs(reported - computed) > AGREE_RTOL * scale:
        raise IngestError(path, f"reported {what} {reported:g} disagrees with the value from the time per rep "
                          f"{computed:g} (rtol {AGREE_RTOL:g})", record=record)


def read_csv_run(run: CsvRun, src: Source, *, machine: str, defaults: dict | None = None) -> ReadResult:
    """Read one RAJAPerf CSV run into benchmark rows (``src`` describes ``run.primary``).

    ``defaults`` (from an ``xamm.toml``) supplies what CSV files do not record: ``compiler``,
    ``compiler_flags`` and ``omp_max_threads``.
    """
    defaults = defaults or {}
    result = ReadResult()
    files = run.files
    details_file = files.get("kernel-details") or files.get("kernels")
    if details_file is None:
        raise IngestError(run.primary, f"no {run.prefix}-kernel-details.csv or {run.prefix}-kernels.csv beside it; "
                          "expected the per-kernel table of the same run")
    ranks, detail_rows = _parse_table(details_file, DETAILS_COLUMNS, ("kernel", "problem_size", "reps"))
    details = {}
    for line, row in detail_rows:
        k = canonical_kernel(row["kernel"])
        if k is None:
            raise IngestError(details_file, f"kernel name {row['kernel']!r} is not of the form Group_KERNEL",
                              record=f"line {line}")
        details[k] = row
    timings: dict[str, dict] = {}
    for role in ("timing-Average", "timing-Minimum", "timing-Maximum"):
        if role in files:
            r, timings[role] = parse_timing_matrix(files[role])
            ranks = ranks if ranks is not None else r

    base_rows: list[tuple[str, dict]] = []
    if "kernel-run-data" in files:
        r, run_rows = _parse_table(files["kernel-run-data"], RUN_DATA_COLUMNS,
                                   ("kernel", "variant", "tuning", "time_per_rep_s"))
        ranks = ranks if ranks is not None else r
        for line, row in run_rows:
            base_rows.append((f"{files['kernel-run-data'].name} line {line}", row))
    elif "timing-Average" in timings:
        for (kernel, variant, tuning), t in timings["timing-Average"].items():
            base_rows.append((f"{files['timing-Average'].name} {kernel} {variant}-{tuning}",
                              {"kernel": kernel, "variant": variant, "tuning": tuning, "_total_s": t}))
    else:
        raise IngestError(run.primary, f"no {run.prefix}-kernel-run-data.csv or {run.prefix}-timing-Average.csv; "
                          "expected the run's times")

    not_run = 0
    prov = provenance(src, "rajaperf-csv" if "kernel-run-data" in files else "rajaperf-timing-csv", READER)
    for record, base in base_rows:
        if any(v == NOT_RUN for v in base.values()) or base.get("_total_s", 0) is None:
            not_run += 1
            continue
        kernel = canonical_kernel(base["kernel"])
        if kernel is None:
            raise IngestError(src.path, f"kernel name {base['kernel']!r} is not of the form Group_KERNEL", record=record)
        det = details.get(kernel)
        if det is None:
            raise IngestError(src.path, f"kernel {kernel} has no row in {details_file.name}", record=record)
        reps = det["reps"]
        if reps is None or reps <= 0:
            raise IngestError(details_file, f"Reps is {reps!r}; expected a whole number > 0", record=kernel)
        key = (base["kernel"], base["variant"], base["tuning"])
        if "_total_s" in base:
            t = check_time(files["timing-Average"], base["_total_s"], "average time", record) / reps
        else:
            t = check_time(files["kernel-run-data"], base["time_per_rep_s"], "mean time per rep", record)
        row = {
            "machine": machine, "kernel": kernel, "variant": base["variant"], "tuning": base["tuning"],
            "problem_size": base.get("problem_size", det["problem_size"]), "reps": reps, "npasses": None,
            "ranks": ranks, "time_per_rep_s": t,
            "compiler": defaults.get("compiler"), "compiler_flags": defaults.get("compiler_flags"),
            "checksum_status": base.get("checksum_status"),
            **{k: v for k, v in det.items() if k not in ("kernel", "problem_size", "reps")},
            **prov,
        }
        for role, col in (("timing-Minimum", "time_per_rep_min_s"), ("timing-Maximum", "time_per_rep_max_s")):
            if role in timings and timings[role].get(key) is not None:
                row[col] = check_time(files[role], timings[role][key], role.split("-")[1].lower() + " time", record) / reps
        if row["checksum_status"] not in (None, "PASSED", "FAILED"):
            raise IngestError(src.path, f"checksum {row['checksum_status']!r}; expected PASSED or FAILED", record=record)
        finish_row(row, src_path=src.path, record=record, omp_max_threads=defaults.get("omp_max_threads"))
        if "_bandwidth_gib_s" in base and row.get("bytes_per_rep") is not None:
            _agree(src.path, base["_bandwidth_gib_s"], row["bytes_per_rep"] / t / GIB, "bandwidth (GiB/s)", record)
        if "_gflops_s" in base and row.get("flops_per_rep") is not None:
            _agree(src.path, base["_gflops_s"], row["flops_per_rep"] / t / 1e9, "GFLOP/s", record)
        result.rows.append(row)
    if not_run:
        result.notes.append(f"{src.rel_path}: skipped {not_run} 'Not run' cell(s)")
    if not result.rows:
        raise IngestError(src.path, "no kernel was run (every cell says 'Not run')")
    return result
