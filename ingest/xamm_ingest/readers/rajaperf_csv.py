"""RAJAPerf's native CSV outputs.

A RAJAPerf run writes files sharing one prefix (``--outfile`` prefix, default ``RAJAPerf``):

* newer RAJAPerf (after v2024.07.0): ``<p>-kernel-run-data.csv`` (per kernel, variant, tuning:
  problem size, checksum, mean time per rep, bandwidth, GFLOP/s) and ``<p>-kernel-details.csv``
  (per kernel: reps, iterations, bytes and flops per rep, ...);
* RAJAPerf v2023.06.0 and v2024.07.0: ``<p>-kernels.csv`` (header column ``Kernels``: problem size,
  reps, iterations/rep, kernels/rep, bytes/rep, FLOPS/rep, and from v2024.07.0 bytes read/written);
* all: ``<p>-timing-{Average,Minimum,Maximum}.csv``, kernel x (variant, tuning) matrices of the
  time of all reps of one pass (Average: total over passes / npasses; Minimum/Maximum: over
  passes), printed with 6 decimals; cells may say ``Not run``. The two header rows are labelled
  ``Variant``/``Tuning`` in newer releases and ``Kernel``/``Kernel`` in v2023.06.0 and v2024.07.0.

Fields are ``,``-separated and space-padded; the first line of the per-kernel tables says
``Kernels run on N MPI ranks`` or ``Kernels run without MPI`` (one rank). A UTF-8 byte-order mark is
skipped. Time per rep is the run-data's mean time per rep when present (more digits), else
timing-Average / Reps; min and max per rep come from the Minimum/Maximum matrices. Each time
carries the resolution it was printed with, so the CSV/Caliper cross-check allows for rounding.
Reported bandwidth and GFLOP/s are checked against bytes and flops per rep / time per rep.
Per-kernel columns this reader does not know are kept in ``extra_metrics`` (numbers) with a note.
A bad cell drops that record, not the file.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from xamm_ingest.errors import IngestError, RecordError
from xamm_ingest.readers.base import ReadResult, Source, provenance
from xamm_ingest.readers.names import canonical_kernel
from xamm_ingest.readers.rajaperf_common import GIB, finish_row
from xamm_ingest.sniff import RAJAPERF_CSV_RE

READER = "xamm_ingest.readers.rajaperf_csv"
RANKS_RE = re.compile(r"^\s*Kernels run (?:on (\d+) MPI ranks?|without MPI)\s*$")
ROLE_RE = RAJAPERF_CSV_RE
NOT_RUN = "Not run"
REPORTED_RTOL = 1e-4  # printed bandwidth / GFLOP/s against bytes or flops per rep / time per rep

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
    "ChecksumConsistency": (None, "str"),  # a property of the kernel's checksum, not a measurement
    "OperationalComplexity": ("operational_complexity", "str"),
    "MaxPerfectLoopDimensions": ("max_perfect_loop_dimensions", "extra"),
    "ProblemDimensionality": ("problem_dimensionality", "int"),
}
# the kernel table's columns that hold numbers: RAJAPerf writes one in each for every kernel
_DETAIL_NUMBERS = {c for c, kind in DETAILS_COLUMNS.values() if c and kind != "str"}
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
    """Group RAJAPerf CSV files into runs by directory and prefix; return (runs, unrelated
    files)."""
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
        text = path.read_text(encoding="utf-8-sig", errors="strict")
    except UnicodeDecodeError as e:
        raise IngestError(
            path, f"not a text file ({e.reason} at byte {e.start}); expected a RAJAPerf CSV"
        ) from None
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if '"' in line or "\x00" in line:
            raise IngestError(
                path,
                f"{'a double quote' if chr(34) in line else 'a NUL byte'} in the "
                "line; RAJAPerf writes "
                "neither (a corrupt file, or one re-saved by a spreadsheet?)",
                record=f"line {i + 1}",
            )
    return [ln.rstrip("\r") for ln in lines]


def resolution(text: str) -> float:
    """Half a unit in the last printed digit of a number (``0.000297`` -> 5e-7, ``5.93228e-06`` ->
    5e-12)."""
    mant, _, exp = text.strip().lower().partition("e")
    decimals = len(mant.split(".", 1)[1]) if "." in mant else 0
    try:
        shift = int(exp) if exp else 0
    except ValueError:
        shift = 0
    try:
        return 0.5 * 10.0 ** (shift - decimals)
    except OverflowError:  # past the largest double (1e400): the value reads as inf, refused later
        return math.inf


def _number(path: Path, value: str, column: str, record: str) -> float:
    try:
        return float(value) if value.strip() else math.nan
    except ValueError:
        raise RecordError(
            path,
            f"column {column!r} holds {value!r}; expected a number",
            record=record,
            field=column,
            value=value,
        ) from None


def _skip_preamble(path: Path, lines: list[str]) -> tuple[int, float | None]:
    """Index of the first line after blank lines and the rank line; the rank count (without MPI:
    1)."""
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i < len(lines) and (m := RANKS_RE.match(lines[i])):
        return i + 1, float(m.group(1)) if m.group(1) else 1.0
    return i, None


def _table_header(path: Path, lines: list[str], i: int, columns: dict, required: tuple[str, ...]):
    if i >= len(lines):
        raise IngestError(
            path, "file ends before the header row; expected a header starting with 'Kernel'"
        )
    header = _cells(lines[i])
    if header[0] not in ("Kernel", "Kernels"):
        raise IngestError(
            path,
            f"header starts with {header[0]!r}; expected 'Kernel' or 'Kernels'",
            record=f"line {i + 1}",
        )
    canon = [columns[h][0] if h in columns else None for h in header]
    missing = [r for r in required if r not in canon]
    if missing:
        raise IngestError(
            path,
            f"header lacks {missing}; expected the RAJAPerf columns for {path.name}",
            record=f"line {i + 1}",
        )
    return header, canon


def parse_table(path: Path, columns: dict[str, tuple[str | None, str]], required: tuple[str, ...]):
    """Parse a RAJAPerf per-kernel table: (ranks, [(line, row dict, cell texts)], dropped, notes).

    Unknown columns are kept: numbers go to the row's ``extra_metrics``. A row with a bad cell is
    dropped.
    """
    lines = _read_lines(path)
    i, ranks = _skip_preamble(path, lines)
    header, canon = _table_header(path, lines, i, columns, required)
    unknown = [h for h, c in zip(header, canon) if h and h not in columns]
    rows, dropped = [], []
    for j in range(i + 1, len(lines)):
        if not lines[j].strip():
            break
        cells = _cells(lines[j])
        record = f"line {j + 1} ({cells[0]})"
        if len(cells) != len(header):
            raise IngestError(
                path,
                f"{len(cells)} fields; expected {len(header)} as in the header (truncated file?)",
                record=f"line {j + 1}",
            )
        try:
            rows.append((j + 1, *_table_row(path, header, canon, columns, cells, record)))
        except RecordError as e:
            dropped.append((e.record, e.field, str(e.value), e.problem))
    if not rows and not dropped:
        raise IngestError(path, "no data rows after the header")
    notes = (
        [
            f"{path.name}: columns {unknown} are not RAJAPerf columns this "
            "reader knows; numbers kept in extra_metrics"
        ]
        if unknown
        else []
    )
    return ranks, rows, dropped, notes


def _table_row(path, header, canon, columns, cells, record) -> tuple[dict, dict]:
    row: dict = {"extra_metrics": []}
    texts: dict[str, str] = {}
    for h, c, value in zip(header, canon, cells):
        if not h:
            continue
        kind = columns[h][1] if h in columns else "extra"
        if value == NOT_RUN:
            row[c or h] = NOT_RUN
        elif kind == "str":
            if c:
                row[c] = value
        elif kind == "extra" or c is None:
            try:
                row["extra_metrics"].append({"name": h, "value": float(value)})
            except ValueError:
                pass  # a text column RAJAPerf added later; nothing numeric to keep
        else:
            row[c], texts[c] = _number(path, value, h, record), value
    return row, texts


def _matrix_header(path: Path, lines: list[str], idx: int) -> tuple[int, list[str], list[str]]:
    """Find the variant row (labelled ``Variant`` or ``Kernel``) and the tuning row under it."""
    while idx < len(lines) and _cells(lines[idx])[0] not in ("Variant", "Kernel"):
        idx += 1
    if idx >= len(lines):
        raise IngestError(
            path, "no header row labelled 'Variant' or 'Kernel'; expected a RAJAPerf timing matrix"
        )
    variants = _cells(lines[idx])[1:]
    idx += 1
    if idx < len(lines) and _cells(lines[idx])[0] in ("Tuning", "Kernel"):
        tunings = _cells(lines[idx])[1:]
        idx += 1
    # labelling every column "default" would store rows under the wrong tuning, the last one winning
    else:
        raise IngestError(
            path,
            f"no Tuning header row under the Variant row (line {idx + 1} is "
            f"{_cells(lines[idx])[0] if idx < len(lines) else 'the end of the file'!r}); "
            "RAJAPerf writes a "
            "Variant row and a Tuning row since v0.12.0",
            record=f"line {idx + 1}",
        )
    if len(tunings) != len(variants):
        raise IngestError(
            path, f"{len(tunings)} tunings for {len(variants)} variants", record=f"line {idx}"
        )
    seen: dict[tuple[str, str], int] = {}
    for col, vt in enumerate(zip(variants, tunings), start=2):
        if vt in seen:  # two columns would write one (variant, tuning): the last would silently win
            raise IngestError(
                path,
                f"columns {seen[vt]} and {col} are both {vt[0]}/{vt[1]}; expected "
                "one column per "
                "variant-tuning under a Variant row and a Tuning row (is the "
                "Tuning header row missing?)",
                record=f"line {idx}",
            )
        seen[vt] = col
    return idx, variants, tunings


def parse_timing_matrix(path: Path):
    """Parse a timing matrix: (ranks, {(kernel, variant, tuning): (seconds or None if 'Not run',
    text)}, bad cells).

    Bad cells are ``{(kernel, variant, tuning): (record, field, value, problem)}``: RAJAPerf writes
    a number or ``Not run`` in every cell, so an empty or non-numeric cell is a defect of that
    record.
    """
    lines = _read_lines(path)
    idx, ranks = _skip_preamble(path, lines)
    idx, variants, tunings = _matrix_header(path, lines, idx)
    out: dict[tuple[str, str, str], tuple[float | None, str]] = {}
    bad: dict[tuple[str, str, str], tuple[str, str, str, str]] = {}
    for j in range(idx, len(lines)):
        if not lines[j].strip():
            break
        cells = _cells(lines[j])
        if len(cells) != len(variants) + 1:
            raise IngestError(
                path,
                f"{len(cells)} fields; expected {len(variants) + 1} (truncated file?)",
                record=f"line {j + 1}",
            )
        record = f"{path.name} line {j + 1} ({cells[0]})"
        for v, t, value in zip(variants, tunings, cells[1:]):
            if value == NOT_RUN:
                out[(cells[0], v, t)] = (None, value)
            elif not value:
                bad[(cells[0], v, t)] = (
                    record,
                    f"{v}/{t}",
                    value,
                    "empty cell; RAJAPerf writes a time or 'Not run'",
                )
            else:
                try:
                    out[(cells[0], v, t)] = (_number(path, value, f"{v}/{t}", record), value)
                except RecordError as e:
                    bad[(cells[0], v, t)] = (e.record, e.field, str(e.value), e.problem)
    return ranks, out, bad


def _agree(
    path: Path, reported: float | None, computed: float | None, text: str, what: str, record: str
) -> None:
    if reported is None or computed is None or not math.isfinite(computed):
        return
    tol = max(REPORTED_RTOL * max(abs(reported), abs(computed)), resolution(text))
    if abs(reported - computed) > tol:
        raise RecordError(
            path,
            f"reported {what} {reported:g} disagrees with {computed:g} from "
            "bytes or flops per rep "
            f"/ time per rep (tolerance {tol:.2g})",
            record=record,
            field=what,
            value=text,
        )


def _details(run: CsvRun, result: ReadResult) -> tuple[Path, float | None, dict[str, dict]]:
    details_file = run.files.get("kernel-details") or run.files.get("kernels")
    if details_file is None:
        raise IngestError(
            run.primary,
            f"no {run.prefix}-kernel-details.csv or {run.prefix}-kernels.csv "
            "beside it; "
            "expected the per-kernel table of the same run",
        )
    ranks, rows, dropped, notes = parse_table(
        details_file, DETAILS_COLUMNS, ("kernel", "problem_size", "reps")
    )
    result.dropped.extend(dropped)
    result.notes.extend(notes)
    details = {}
    for line, row, _ in rows:
        k = canonical_kernel(row["kernel"])
        if k is None:
            result.dropped_record(
                f"{details_file.name} line {line}",
                "Kernel",
                row["kernel"],
                f"kernel name {row['kernel']!r} is not of the form Group_KERNEL",
            )
            continue
        if odd := sorted(c for c, v in row.items() if v == NOT_RUN and c in _DETAIL_NUMBERS):
            result.dropped_record(
                f"{details_file.name} line {line}",
                odd[0],
                NOT_RUN,
                f"'Not run' as the kernel's {odd[0]}; RAJAPerf writes a number in every cell of "
                "its kernel table (a variant not run is said in the timing files)",
            )
            continue
        details[k] = row
    return details_file, ranks, details


def _base_rows(
    run: CsvRun, timings: dict, result: ReadResult
) -> tuple[list[tuple[str, dict, dict]], float | None]:
    """(record, row, cell texts) per (kernel, variant, tuning) measured, and the rank count of the
    file."""
    files = run.files
    if "kernel-run-data" in files:
        ranks, rows, dropped, notes = parse_table(
            files["kernel-run-data"],
            RUN_DATA_COLUMNS,
            ("kernel", "variant", "tuning", "problem_size", "time_per_rep_s"),
        )
        result.dropped.extend(dropped)
        result.notes.extend(notes)
        return [
            (
                f"{files['kernel-run-data'].name} line {line} "
                f"({row.get('kernel')} {row.get('variant')}-{row.get('tuning')})",
                row,
                texts,
            )
            for line, row, texts in rows
        ], ranks
    if "timing-Average" in timings:
        name = files["timing-Average"].name
        return [
            (
                f"{name} {k} {v}-{t}",
                {"kernel": k, "variant": v, "tuning": t, "_total_s": val, "extra_metrics": []},
                {"_total_s": text},
            )
            for (k, v, t), (val, text) in timings["timing-Average"].items()
        ], None
    raise IngestError(
        run.primary,
        f"no {run.prefix}-kernel-run-data.csv or "
        f"{run.prefix}-timing-Average.csv; "
        "expected the run's times",
    )


def _csv_row(
    base: dict,
    texts: dict,
    det: dict,
    timings: dict,
    record: str,
    common: dict,
    defaults: dict,
    path: Path,
) -> dict:
    reps = det["reps"]
    if "_total_s" in base:
        t, res = (
            base["_total_s"] / reps if reps else math.nan,
            resolution(texts["_total_s"]) / (reps or 1),
        )
    else:
        t, res = base["time_per_rep_s"], resolution(texts.get("time_per_rep_s", "0"))
    row = {
        **common,
        "kernel": canonical_kernel(base["kernel"]),
        "variant": base["variant"],
        "tuning": base["tuning"],
        "problem_size": base.get("problem_size", det["problem_size"]),
        "reps": reps,
        "time_per_rep_s": t,
        "checksum_status": base.get("checksum_status"),
        "_record": record,
        "_time_resolution_s": res,
        **{
            k: v
            for k, v in det.items()
            if k not in ("kernel", "problem_size", "reps", "extra_metrics")
        },
        "extra_metrics": det.get("extra_metrics", []) + base.get("extra_metrics", []),
    }
    key = (base["kernel"], base["variant"], base["tuning"])
    for role, col in (
        ("timing-Minimum", "time_per_rep_min_s"),
        ("timing-Maximum", "time_per_rep_max_s"),
    ):
        value = timings.get(role, {}).get(key, (None, ""))[0]
        row[col] = value / reps if value is not None and reps else None
    if row["checksum_status"] not in (None, "PASSED", "FAILED"):
        raise RecordError(
            path,
            f"checksum {row['checksum_status']!r}; expected PASSED or FAILED",
            record=record,
            field="Checksum",
            value=row["checksum_status"],
        )
    finish_row(row, src_path=path, record=record, omp_max_threads=defaults.get("omp_max_threads"))
    if not (isinstance(t, float) and math.isfinite(t) and t > 0):
        return row  # the time itself is checked (and the record dropped) over the whole frame
    _rates_agree(row, base, texts, t, path, record)
    return row


def _rates_agree(row: dict, base: dict, texts: dict, t: float, path: Path, record: str) -> None:
    """The file's bandwidth and GFLOP/s columns agree with bytes and flops per rep over time."""
    if row.get("bytes_per_rep") is not None:
        _agree(
            path,
            base.get("_bandwidth_gib_s"),
            row["bytes_per_rep"] / t / GIB,
            texts.get("_bandwidth_gib_s", "0"),
            "bandwidth (GiB/s)",
            record,
        )
    if row.get("flops_per_rep") is not None:
        _agree(
            path,
            base.get("_gflops_s"),
            row["flops_per_rep"] / t / 1e9,
            texts.get("_gflops_s", "0"),
            "GFLOP/s",
            record,
        )


def read_csv_run(
    run: CsvRun, src: Source, *, machine: str | None, defaults: dict | None = None
) -> ReadResult:
    """Read one RAJAPerf CSV run into benchmark rows (``src`` describes ``run.primary``).

    ``defaults`` (from an ``xamm.toml``) supplies what CSV files do not record: ``compiler``,
    ``compiler_flags`` and ``omp_max_threads``.
    """
    defaults = defaults or {}
    result = ReadResult()
    details_file, ranks, details = _details(run, result)
    timings: dict[str, dict] = {}
    bad_cells: dict[tuple[str, str, str], tuple[str, str, str, str]] = {}
    for role in ("timing-Average", "timing-Minimum", "timing-Maximum"):
        if role in run.files:
            r, timings[role], bad = parse_timing_matrix(run.files[role])
            bad_cells = {**bad, **bad_cells}  # a record is named once, by its first bad cell
            ranks = ranks if ranks is not None else r
    result.dropped.extend(bad_cells.values())
    base_rows, r = _base_rows(run, timings, result)
    fmt = "rajaperf-csv" if "kernel-run-data" in run.files else "rajaperf-timing-csv"
    common = {
        "machine": machine,
        "npasses": None,
        "ranks": ranks if ranks is not None else r,
        "compiler": defaults.get("compiler"),
        "compiler_flags": defaults.get("compiler_flags"),
        **provenance(src, fmt, READER),
    }
    not_run = 0
    for record, base, texts in base_rows:
        if (base.get("kernel"), base.get("variant"), base.get("tuning")) in bad_cells:
            continue  # a bad cell of one of the run's matrices: that record is dropped, named above
        if any(v == NOT_RUN for v in base.values()) or (
            "_total_s" in base and base["_total_s"] is None
        ):
            not_run += 1
            continue
        try:
            kernel = canonical_kernel(base["kernel"])
            if kernel is None or kernel not in details:
                raise RecordError(
                    src.path,
                    f"kernel {base['kernel']!r} has no row in {details_file.name}"
                    if kernel
                    else f"kernel name {base['kernel']!r} is not of the form Group_KERNEL",
                    record=record,
                    field="Kernel",
                    value=base["kernel"],
                )
            result.rows.append(
                _csv_row(base, texts, details[kernel], timings, record, common, defaults, src.path)
            )
        except RecordError as e:
            result.dropped.append((e.record or record, e.field, str(e.value), e.problem))
    if not_run:
        result.notes.append(f"{src.rel_path}: skipped {not_run} 'Not run' cell(s)")
    if not result.rows and not result.dropped:
        raise IngestError(src.path, "no kernel was run (every cell says 'Not run')")
    return result
