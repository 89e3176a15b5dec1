"""BabelStream outputs (v3 to v5): plain tables and ``--csv`` tables, one or many runs a file.

What BabelStream writes (``src/main.cpp`` of UoB-HPC/BabelStream at tags v3.3, v4.0 and v5.0):

* plain output: a header (``BabelStream``, ``Version: V``, ``Implementation: I``, ``Running kernels
  N times``, ``Precision: float|double``, ``Array size: X MB (=Y GB)`` or ``MiB`` with
  ``--mibibytes``, ``Using <model> device NAME``), then a table ``Function  MBytes/sec  Min (sec)
  Max  Average`` with one row per kernel (Copy, Mul, Add, Triad, Dot, or Nstream). Bandwidth is
  computed from the minimum time over the timed iterations (the first of ``N`` is not timed into
  the statistics); ``Array size`` is printed to 0.1 MB.
* ``--triad-only``: ``Running triad N times``, ``Number of elements: E``, then ``Runtime (seconds):
  T`` (all ``N`` iterations) and ``Bandwidth (GB/s): B``.
* ``--csv``: no header; a table ``function,num_times,n_elements,sizeof,max_mbytes_per_sec,
  min_runtime,max_runtime,avg_runtime`` (v5 writes an ``Init``/``Read`` phase table before it,
  which is not a kernel and is skipped), or ``function,num_times,n_elements,sizeof,gbytes_per_sec,
  runtime`` for ``--triad-only``.

Job scripts often write several runs to one file; the UoB performance-portability scripts'
``run-scale.job`` marks each with ``>>>N>>>`` after setting ``OMP_NUM_THREADS=N``, which is kept as
the run's ``threads``. Each run's printed bandwidth is checked against its bytes and minimum time;
a kernel that disagrees beyond the printed digits is dropped, naming both values.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from xamm_data.errors import XammError
from xamm_ingest.sniff import BABELSTREAM_CSV_HEAD

# Arrays each kernel reads and writes per element (BabelStream's ``sizes`` in main.cpp) and its
# floating-point operations per element (the kernels in Stream.h's implementations).
KERNELS: dict[str, tuple[int, int, int]] = {  # name -> (arrays read, arrays written, flops)
    "Copy": (1, 1, 0),
    "Mul": (1, 1, 1),
    "Add": (2, 1, 1),
    "Triad": (2, 1, 2),
    "Dot": (2, 0, 2),
    "Nstream": (3, 1, 3),
}
# Implementation string -> (variant suffix, backend column); every IMPLEMENTATION_STRING of v3-v5.
IMPLEMENTATIONS: dict[str, tuple[str, str]] = {
    "OpenMP": ("OpenMP", "OpenMP"),
    "CUDA": ("CUDA", "CUDA"),
    "HIP": ("HIP", "HIP"),
    "HC": ("HC", "HIP"),
    "Kokkos": ("Kokkos", "Kokkos"),
    "RAJA": ("RAJA", "RAJA"),
    "OpenACC": ("OpenACC", "OpenACC"),
    "OpenCL": ("OpenCL", "OpenCL"),
    "SYCL": ("SYCL", "SYCL"),
    "SYCL 2020": ("SYCL2020", "SYCL"),
    "SYCL2020 USM": ("SYCL2020USM", "SYCL"),
    "SYCL2020 accessors": ("SYCL2020Acc", "SYCL"),
    "TBB": ("TBB", "TBB"),
    "Thrust": ("Thrust", "Thrust"),
    "STD (data-oriented)": ("StdData", "StdPar"),
    "STD (index-oriented)": ("StdIndices", "StdPar"),
    "STD C++ ranges": ("StdRanges", "StdPar"),
}
GPU_WORDS = re.compile(
    r"NVIDIA|Tesla|GeForce|Quadro|Radeon|Instinct|gfx\d|\bMI\d{2,3}|Graphics|\bGPU\b", re.I
)
CPU_WORDS = re.compile(r"\bCPU\b|Xeon|EPYC|Core\(TM\)|Processor|Neoverse|A64FX", re.I)

_MARK = re.compile(r"^>>>(\d+)>>>\s*$")
_ROW = re.compile(r"^(Copy|Mul|Add|Triad|Dot|Nstream)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")
# as every release prints a kernel line (std::fixed: bandwidth to 3 decimals, times to 5); a
# figure with fewer digits was cut or edited
_ROW_AS_PRINTED = re.compile(
    r"^(Copy|Mul|Add|Triad|Dot|Nstream)\s+\d+\.\d{3}\s+\d+\.\d{5}\s+\d+\.\d{5}\s+\d+\.\d{5}\s*$"
)
_KERNEL_START = re.compile(r"^(Copy|Mul|Add|Triad|Dot|Nstream)\b")
# the kernels one run prints, in order (main.cpp's labels): all five, or --nstream-only
RUN_KERNELS = (("Copy", "Mul", "Add", "Triad", "Dot"), ("Nstream",))
_ARRAY = re.compile(r"^Array size:\s*([0-9.]+)\s*(MB|MiB|KB)\b")
_DEVICE = re.compile(r"^Using \S+ device\s*(.*?)\s*$")
CSV_HEAD = BABELSTREAM_CSV_HEAD


class BabelStreamError(XammError, ValueError):
    """A BabelStream output that cannot be read: the message names the line and what was
    expected."""


@dataclass
class KernelResult:
    """One kernel's line: bandwidth as printed (in the run's unit), min/max/average seconds."""

    name: str
    bandwidth: float
    min_s: float
    max_s: float | None
    avg_s: float | None
    line: int
    digits: float = 0.0  # relative half-unit of the last printed digit of bandwidth and min time


@dataclass
class StreamRun:
    """One BabelStream invocation: its header facts and kernel lines."""

    line: int
    version: str | None = None
    implementation: str | None = None
    num_times: int | None = None
    sizeof: int | None = None
    n_elements: int | None = None
    array_printed: tuple[float, str] | None = None  # (value, unit) of ``Array size``
    device_name: str | None = None
    threads: int | None = None
    mib: bool = False
    triad_only: bool = False
    validation_failed: bool = False
    csv: bool = False
    table: bool = False  # its ``Function`` header (or CSV header) was seen
    kernels: list[KernelResult] = field(default_factory=list)
    # records that cannot be read: (line, what, value as written, the rule), each refused by name
    problems: list[tuple[int, str, str, str]] = field(default_factory=list)

    def refuse(self, line: int, what: str, value: str, rule: str) -> None:
        self.problems.append((line, what, value, rule))

    def elements(self) -> int:
        """The array length: stated (CSV, triad-only), else from ``Array size`` (0.1 MB digits),
        a power of two when one prints the same."""
        if self.n_elements is not None:
            return self.n_elements
        if self.array_printed is None or self.sizeof is None:
            raise BabelStreamError(
                f"line {self.line}: the run states neither 'Array size' nor 'Number of elements'"
            )
        value, unit = self.array_printed
        scale = {"MB": 1e6, "MiB": 2.0**20, "KB": 1e3}[unit]
        n = value * scale / self.sizeof
        pow2 = 2 ** round(math.log2(n)) if n > 0 else 0
        half_digit = 0.05 * scale / self.sizeof
        return int(pow2) if abs(pow2 - n) <= half_digit else round(n)


def half_unit(text: str) -> float:
    """Half a unit of the last digit printed in ``text`` (``"0.00099"`` -> 5e-6)."""
    try:
        exp = Decimal(text.strip()).as_tuple().exponent
    except InvalidOperation:
        return 0.0
    return 0.5 * 10.0**exp if isinstance(exp, int) else 0.0


def _rel(text: str) -> float:
    """:func:`half_unit` relative to the value printed."""
    x = float(text)
    return half_unit(text) / x if x > 0 else 0.0


def _relative_digits(bw: str, lo: str) -> float:
    return _rel(bw) + _rel(lo)


def _number(text: str, line: int, what: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise BabelStreamError(f"line {line}: {what} {text!r} is not a number") from None
    if not math.isfinite(x) or x < 0:
        raise BabelStreamError(f"line {line}: {what} {text!r} is not a finite number >= 0")
    return x


def _header(run: StreamRun, s: str, no: int) -> bool:
    """Read one header line into ``run``; False if it is none."""
    if s.startswith("Version:"):
        run.version = s.split(":", 1)[1].strip()
    elif s.startswith("Implementation:"):
        run.implementation = s.split(":", 1)[1].strip()
    elif m := re.match(r"^Running (kernels|triad) (\d+) times", s):
        run.num_times, run.triad_only = int(m.group(2)), m.group(1) == "triad"
    elif s.startswith("Precision:"):
        run.sizeof = {"float": 4, "double": 8}.get(s.split(":", 1)[1].strip())
        if run.sizeof is None:
            raise BabelStreamError(f"line {no}: precision {s!r}; expected float or double")
    elif m := _ARRAY.match(s):
        run.array_printed = (float(m.group(1)), m.group(2))
    elif m := re.match(r"^Number of elements:\s*(\d+)", s):
        run.n_elements = int(m.group(1))
    elif m := _DEVICE.match(s):
        run.device_name = m.group(1) or None
    elif s.startswith("Validation failed"):
        run.validation_failed = True
    elif s.startswith("Function"):
        run.mib, run.table = "MiBytes" in s, True
    else:
        return False
    return True


def _plain_row(run: StreamRun, s: str, no: int) -> bool:
    if run.table and not run.triad_only and (k := _KERNEL_START.match(s)):
        if not _ROW_AS_PRINTED.match(s):  # a kernel's line, but not as BabelStream prints one
            run.refuse(
                no,
                k.group(1),
                s,
                "not a kernel line as BabelStream prints it (the name, then the bandwidth to 3 "
                "decimals and min, max and average seconds to 5): cut or edited",
            )
            return True
    if m := _ROW.match(s):
        bw, lo, hi, avg = (_number(m.group(i), no, "a figure") for i in range(2, 6))
        digits = _relative_digits(m.group(2), m.group(3))
        run.kernels.append(KernelResult(m.group(1), bw, lo, hi, avg, no, digits))
        return True
    if m := re.match(r"^Runtime \(seconds\):\s*(\S+)", s):
        total = _number(m.group(1), no, "the runtime")
        n = run.num_times or 1
        digits = _rel(m.group(1))
        run.kernels.append(KernelResult("Triad", math.nan, total / n, None, total / n, no, digits))
        return True
    if m := re.match(r"^Bandwidth \((GB|GiB)/s\):\s*(\S+)", s):
        if run.kernels:
            k = run.kernels[-1]
            k.bandwidth = _number(m.group(2), no, "the bandwidth")
            k.digits += _rel(m.group(2))
            run.mib = m.group(1) == "GiB"
        return True
    return False


def _csv_table(lines: list[str], i: int, threads: int | None) -> tuple[StreamRun, int]:
    """The CSV table whose header is ``lines[i]``; (run, index after it)."""
    head = [h.strip() for h in lines[i].split(",")]
    run = StreamRun(line=i + 1, csv=True, threads=threads, table=True)
    run.mib = any("mibytes" in h or "gibytes" in h for h in head)
    run.triad_only = "runtime" in head and "min_runtime" not in head
    j = i + 1
    while j < len(lines) and lines[j].strip() and not lines[j].startswith(("function,", "phase,")):
        cells = dict(zip(head, (c.strip() for c in lines[j].split(",")), strict=False))
        if len(cells) != len(head) or cells.get("function") not in KERNELS:
            break
        no = j + 1
        run.num_times = int(_number(cells["num_times"], no, "num_times"))
        run.n_elements = int(_number(cells["n_elements"], no, "n_elements"))
        run.sizeof = int(_number(cells["sizeof"], no, "sizeof"))
        if run.triad_only:
            total = _number(cells["runtime"], no, "runtime")
            bw = _number(next(v for k, v in cells.items() if k.endswith("bytes_per_sec")), no, "bw")
            bw_text = cells[next(k for k in head if k.endswith("bytes_per_sec"))]
            digits = _relative_digits(bw_text, cells["runtime"])
            t = total / run.num_times
            run.kernels.append(KernelResult("Triad", bw, t, None, t, no, digits))
        else:
            bw_key = next(k for k in head if k.endswith("bytes_per_sec"))
            run.kernels.append(
                KernelResult(
                    cells["function"],
                    _number(cells[bw_key], no, bw_key),
                    _number(cells["min_runtime"], no, "min_runtime"),
                    _number(cells["max_runtime"], no, "max_runtime"),
                    _number(cells["avg_runtime"], no, "avg_runtime"),
                    no,
                    _relative_digits(cells[bw_key], cells["min_runtime"]),
                )
            )
        j += 1
    return run, j


def parse(text: str) -> list[StreamRun]:
    """Every BabelStream run in ``text`` (plain or CSV), in order; [] if it holds none.

    Args:
        text: the output as written (job-script lines around the runs are skipped).

    Returns:
        The runs, each with its kernel lines.

    Raises:
        BabelStreamError: a run whose figures cannot be read, naming the line.
    """
    lines = text.splitlines()
    runs: list[StreamRun] = []
    run: StreamRun | None = None
    threads: int | None = None
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        no = i + 1
        if m := _MARK.match(s):
            threads = int(m.group(1))
        elif s.startswith("<<<"):
            threads = None
        elif s == "BabelStream" or (
            s.startswith("Version:") and (run is None or run.table or run.kernels)
        ):
            # a Version line after a table (or before any banner) begins a run whose banner
            # line was lost: read as its own run, never into the one before
            run = StreamRun(line=no, threads=threads)
            runs.append(run)
            if s != "BabelStream":
                _header(run, s, no)
        elif s.startswith(CSV_HEAD):
            csv_run, i = _csv_table(lines, i, threads)
            runs.append(csv_run)
            continue
        elif run is not None and not run.csv and not _header(run, s, no):
            _plain_row(run, s, no)
        i += 1
    out = [r for r in runs if r.kernels or not r.csv]
    for r in out:
        _check_run(r, cut_line=None if text.endswith("\n") else len(lines))
    return out


def _check_run(run: StreamRun, cut_line: int | None) -> None:
    """Refuse, by record, what the run's lines cannot vouch for: a line the file ends inside
    (no newline after it: cut), figures out of order (min <= average <= max, to the digits
    printed), and kernels its table should list but does not (a lost or garbled line)."""
    kept = []
    for k in run.kernels:
        if k.line == cut_line:
            run.refuse(k.line, k.name, "", "the file ends inside this line (cut short)")
        elif why := _order_problem(k, run):
            run.refuse(k.line, k.name, f"{k.min_s} {k.max_s} {k.avg_s}", why)
        else:
            kept.append(k)
    listed_any = bool(run.kernels or run.problems)
    run.kernels = kept
    if not run.table or run.triad_only or not listed_any:  # an empty table: "no kernel results"
        return
    listed = {k.name for k in run.kernels} | {p[1] for p in run.problems}
    expected = next((ks for ks in RUN_KERNELS if listed & set(ks)), RUN_KERNELS[0])
    for name in expected:
        if name not in listed:
            run.refuse(
                run.line,
                name,
                "missing",
                f"the run's table has no {name} line (BabelStream prints {', '.join(expected)}): "
                "a line was lost or garbled",
            )


def _order_problem(k: KernelResult, run: StreamRun) -> str | None:
    """Why min <= average <= max does not hold within the digits printed, or None."""
    if k.max_s is None or k.avg_s is None:
        return None
    slack = 0.5e-5 if not run.csv else 5e-6 * max(k.max_s, k.min_s)
    if k.min_s - slack <= k.avg_s <= k.max_s + slack and k.min_s <= k.max_s + slack:
        return None
    return (
        f"min {k.min_s:g} s, average {k.avg_s:g} s, max {k.max_s:g} s; expected min <= average "
        "<= max"
    )


def device_of(run: StreamRun) -> str | None:
    """``cpu`` or ``gpu`` as the run itself says (its device line, or a GPU-only model), else
    None."""
    name = run.device_name or ""
    if GPU_WORDS.search(name):
        return "gpu"
    if CPU_WORDS.search(name):
        return "cpu"
    if run.implementation in ("CUDA", "HIP", "HC"):
        return "gpu"
    return None


def bytes_per_rep(kernel: str, n: int, sizeof: int) -> tuple[int, int, int]:
    """(bytes moved, read, written) per repetition of ``kernel`` over arrays of ``n`` elements."""
    r, w, _ = KERNELS[kernel]
    return (r + w) * n * sizeof, r * n * sizeof, w * n * sizeof


def printed_disagreement(run: StreamRun, k: KernelResult, n: int) -> str | None:
    """Why ``k``'s printed bandwidth contradicts its bytes and minimum time, or None if it agrees
    within the digits printed (of the bandwidth, the minimum time, and the array size's 0.1)."""
    if math.isnan(k.bandwidth) or k.min_s <= 0:
        return None
    moved = bytes_per_rep(k.name, n, run.sizeof or 8)[0]
    if run.triad_only:
        unit = 2.0**-30 if run.mib else 1e-9
    else:
        unit = 2.0**-20 if run.mib else 1e-6
    expect = unit * moved / k.min_s
    digits = k.digits + 1e-9
    if run.array_printed and run.n_elements is None:
        digits += 0.05 / max(run.array_printed[0], 0.05)
    if abs(k.bandwidth - expect) <= digits * expect:
        return None
    return (
        f"printed bandwidth {k.bandwidth:g} but {expect:g} from {moved} bytes in {k.min_s:g} s "
        f"(beyond the printed digits); the array size or the time is not this kernel's"
    )


@dataclass(frozen=True)
class RunFacts:
    """What the output does not say and the caller does: machine, device, compiler, and the
    implementation of ``--csv`` output (which prints no header)."""

    machine: str
    device: str
    compiler: str | None = None
    implementation: str | None = None


def _variant(impl: str, device: str) -> tuple[str, str]:
    suffix, backend = IMPLEMENTATIONS.get(impl, (re.sub(r"[^A-Za-z0-9]", "", impl), impl))
    if backend == "OpenMP" and device == "gpu":
        backend = "OpenMPTarget"
    return f"BabelStream_{suffix}", backend


def _implementation(run: StreamRun, facts: RunFacts) -> str:
    impl = run.implementation or facts.implementation
    if impl is None:
        raise BabelStreamError(
            f"line {run.line}: the run names no implementation (--csv output prints none); "
            "pass --implementation, e.g. CUDA or OpenMP"
        )
    return impl


def kernel_row(run: StreamRun, k: KernelResult, n: int, facts: RunFacts) -> dict:
    """The ``benchmark_runs`` row of one kernel line (integer columns as floats; checked later).

    Args:
        run: the run the line belongs to.
        k: the kernel line.
        n: the run's array length.
        facts: machine, device, compiler (and implementation when the run names none).

    Returns:
        The row, without provenance.
    """
    sizeof = run.sizeof or 8
    moved, read, written = bytes_per_rep(k.name, n, sizeof)
    flops = float(KERNELS[k.name][2] * n)
    device = facts.device
    variant, backend = _variant(_implementation(run, facts), device)
    # the average is the time of a repetition (min <= average <= max checked by the parser);
    # triad-only runs print one total, whose mean is the average
    t = k.avg_s if k.avg_s is not None else k.min_s
    printed = [] if math.isnan(k.bandwidth) else [{"name": _bw_name(run), "value": k.bandwidth}]
    return {
        "machine": facts.machine,
        "device": device,
        "suite": "BabelStream",
        "suite_version": run.version,
        "kernel": f"Stream_{k.name.upper()}",
        "group": "Stream",
        "variant": variant,
        "backend": backend,
        "tuning": "float" if sizeof == 4 else "double",
        "compiler": facts.compiler,
        "problem_size": float(n),
        "reps": float(run.num_times) if run.num_times else None,
        "threads": float(run.threads) if run.threads else None,
        "ranks": 1.0,  # BabelStream is one process
        "gpus": 1.0 if device == "gpu" else None,  # on one device
        "trial": 0,
        "time_per_rep_s": t,
        "time_per_rep_min_s": k.min_s,
        "time_per_rep_max_s": k.max_s,
        "iterations_per_rep": float(n),
        "kernels_per_rep": 1.0,
        "bytes_per_rep": float(moved),
        "bytes_read_per_rep": float(read),
        "bytes_written_per_rep": float(written),
        "flops_per_rep": flops,
        "bandwidth_bytes_per_s": moved / t if t > 0 else None,
        "flops_per_s": flops / t if t > 0 else None,
        "checksum_status": "FAILED" if run.validation_failed else None,
        "extra_metrics": printed,
        "_record": f"line {k.line} ({k.name})",
        # plain output prints seconds to 5 decimals; CSV to 6 significant digits
        "_time_resolution_s": None if run.csv else 0.5e-5,
        "_uncertain_figures": False,
    }


def _bw_name(run: StreamRun) -> str:
    if run.triad_only:
        return "babelstream.gibytes_per_sec" if run.mib else "babelstream.gbytes_per_sec"
    return "babelstream.max_mibytes_per_sec" if run.mib else "babelstream.max_mbytes_per_sec"
