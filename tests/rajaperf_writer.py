"""Write what RAJAPerf writes for a simulated run, generation by generation (test fixtures).

Every layout here is derived from LLNL/RAJAPerf's source, not guessed (``git show <tag>:<file>``):

* CSV, ``src/common/Executor.cpp``: ``writeKernelInfoSummary`` (``-kernels.csv``: first line
  ``Kernels run on N MPI ranks`` or ``Kernels run without MPI``, header column ``Kernels``, columns
  widened in v2024.07.0 by BytesRead/BytesWritten/BytesAtomicModifyWritten) and ``writeCSVReport``
  (``-timing-<combiner>.csv``: a title line ``Mean Runtime Report (sec.) `` followed by one `` , ``
  per column, then a variant row and a tuning row both labelled ``Kernel  `` in v2023.06.0 and
  v2024.07.0, values ``std::fixed`` with 6 decimals; Average = total over passes / npasses,
  Minimum/Maximum over passes (``KernelBase::recordExecTime``)). The newer files
  (``-kernel-details.csv``, ``-kernel-run-data.csv``, ``Variant``/``Tuning`` labels) follow the real
  v2026.04.1-RC outputs in ../shared/data (llnl/RAJAPerf-Benchmark); numbers there print with 6
  significant digits (C++'s default stream precision).
* Caliper, ``src/common/KernelBase.{hpp,cpp}``: the pre-release branch (``0a9bef0f``, 2022) marks
  ``Variant -> Group -> Kernel -> Kernel.tuning`` and opens ``ProblemSize`` etc. with
  ``cali_begin_double_byname`` in the first pass only, grouped by them, so later passes form a
  second record without them; it also stores each kernel's figures as an Adiak dict. From
  v2023.06.0 the tree is ``RAJAPerf -> Group -> Kernel``, one file per variant-tuning, and the
  figures are set once with ``cali_set_double`` and never unset: later passes run under the last
  kernel's values, merged by ``any(max#...)`` into one record (v2023.06.0, v2024.07.0) or, once
  develop grouped by ``Complexity`` (2024-08), split into a second record when the last kernel's
  Complexity differs. v2024.07.0 writes ``BlockSize`` = nan for CPU variants and ``Feature*`` flags.
  Caliper writes doubles with 6 decimals (``std::to_string``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from cali_writer import write_cali

GIB = float(1 << 30)
GENERATIONS = ("pre-release", "v2023.06.0", "v2024.07.0", "develop-2024.10", "v2026.04")


@dataclass
class SimKernel:
    """One kernel of a simulated run; ``times[(variant, tuning)][p]`` = time of all reps in pass p
    (s)."""

    name: str
    size: int
    reps: int
    bytes: int
    flops: int
    complexity: str = "N"
    times: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def figures(self, gen: str, tuning: str) -> dict[str, float]:
        out = {
            "ProblemSize": self.size,
            "Reps": self.reps,
            "Iterations/Rep": self.size,
            "Kernels/Rep": 1,
            "Bytes/Rep": self.bytes,
            "Flops/Rep": self.flops,
        }
        if gen != "v2023.06.0" and gen != "pre-release":
            out.update(
                {
                    "BytesRead/Rep": self.bytes * 2 // 3,
                    "BytesWritten/Rep": self.bytes // 3,
                    "BytesAtomicModifyWritten/Rep": 0,
                }
            )
        block = int(tuning.split("_")[-1]) if tuning.startswith("block_") else math.nan
        out["BlockSize"] = block
        if gen in ("v2024.07.0", "develop-2024.10"):
            out["Forall"] = 1
        return out


@dataclass
class SimRun:
    kernels: list[SimKernel]
    variants: list[tuple[str, str]]
    npasses: int
    ranks: int | None = None  # None: built without MPI
    omp_max_threads: int = 1  # what omp_get_max_threads() returns (the OpenMP variants' threads)

    def total(self, k: SimKernel, vt) -> float:
        return math.fsum(k.times[vt])


def _pad(cells: list[str], widths: list[int], left_first: bool = True) -> str:
    out = [cells[0].ljust(widths[0]) if left_first else cells[0].rjust(widths[0])]
    out += [c.rjust(w) for c, w in zip(cells[1:], widths[1:])]
    return " , ".join(out)


def _rank_line(run: SimRun) -> str:
    return f"Kernels run on {run.ranks} MPI ranks" if run.ranks else "Kernels run without MPI"


def write_kernels_csv(run: SimRun, d: Path, gen: str, prefix: str = "RAJAPerf") -> Path:
    """``-kernels.csv`` (v2023.06.0 .. develop-2024.10)."""
    head = [
        "Kernels",
        "Problem size",
        "Reps",
        "Iterations/rep",
        "Kernels/rep",
        "Bytes/rep",
        "FLOPS/rep",
    ]
    if gen != "v2023.06.0":
        head += ["BytesRead/rep", "BytesWritten/rep", "BytesAtomicModifyWritten/rep"]
    widths = [max(len(k.name) for k in run.kernels) + 2] + [len(h) + 3 for h in head[1:]]
    lines = [_rank_line(run), _pad(head, widths)]
    for k in run.kernels:
        vals = [k.name, k.size, k.reps, k.size, 1, k.bytes, k.flops]
        if gen != "v2023.06.0":
            vals += [k.bytes * 2 // 3, k.bytes // 3, 0]
        lines.append(_pad([str(v) for v in vals], widths))
    return _write(d / f"{prefix}-kernels.csv", lines)


def write_details_and_run_data(run: SimRun, d: Path, prefix: str = "RAJAPerf") -> None:
    """``-kernel-details.csv`` and ``-kernel-run-data.csv`` (newer RAJAPerf, as in the v2026.04.1-RC
    data)."""
    head = [
        "Kernel",
        "Problem size",
        "Reps",
        "Iterations/rep",
        "Kernels/rep",
        "BytesMoved/rep",
        "FLOPS/rep",
        "BytesTouched/rep",
        "BytesRead/rep",
        "BytesWritten/rep",
        "BytesModifyWritten/rep",
        "BytesAtomicModifyWritten/rep",
        "BytesAllocated/rep",
        "ChecksumConsistency",
        "OperationalComplexity",
        "MaxPerfectLoopDimensions",
        "ProblemDimensionality",
    ]
    widths = [20] + [len(h) + 3 for h in head[1:]]
    lines = [_rank_line(run), _pad(head, widths)]
    for k in run.kernels:
        vals = [
            k.name,
            k.size,
            k.reps,
            k.size,
            1,
            k.bytes,
            k.flops,
            k.bytes,
            k.bytes * 2 // 3,
            k.bytes // 3,
            0,
            0,
            k.bytes,
            "ConsistentPerVariantTuning",
            f"O({k.complexity})",
            1,
            1,
        ]
        lines.append(_pad([str(v) for v in vals], widths))
    _write(d / f"{prefix}-kernel-details.csv", lines)
    head = [
        "Kernel",
        "Variant",
        "Tuning",
        "Problem size",
        "Checksum",
        "Mean time per rep (sec.)",
        "Mean Bandwidth (GiB per sec.)",
        "Mean flops (gigaFLOP per sec.)",
    ]
    widths = [20, 12, 12] + [len(h) + 3 for h in head[3:]]
    lines = [_rank_line(run), _pad(head, widths)]
    for k in run.kernels:
        for vt in run.variants:
            if vt not in k.times:
                continue
            t = run.total(k, vt) / (run.npasses * k.reps)
            lines.append(
                _pad(
                    [
                        k.name,
                        vt[0],
                        vt[1],
                        str(k.size),
                        "PASSED",
                        f"{t:g}",
                        f"{k.bytes / t / GIB:g}",
                        f"{k.flops / t / 1e9:g}",
                    ],
                    widths,
                )
            )
    _write(d / f"{prefix}-kernel-run-data.csv", lines)


def write_timing(run: SimRun, d: Path, gen: str, prefix: str = "RAJAPerf") -> None:
    """``-timing-{Average,Minimum,Maximum}.csv``."""
    labels = ("Variant", "Tuning") if gen == "v2026.04" else ("Kernel  ", "Kernel  ")
    kw = max(len("Kernel  "), *(len(k.name) for k in run.kernels)) + 1
    widths = [kw] + [max(8, len(v), len(t)) for v, t in run.variants]
    for combiner, title in (("Average", "Mean"), ("Minimum", "Min"), ("Maximum", "Max")):
        lines = [
            f"{title} Runtime Report (sec.) " + " , " * len(run.variants),
            _pad([labels[0]] + [v for v, _ in run.variants], widths),
            _pad([labels[1]] + [t for _, t in run.variants], widths),
        ]
        for k in run.kernels:
            cells = [k.name]
            for vt in run.variants:
                if vt not in k.times:
                    cells.append("Not run")
                    continue
                ts = k.times[vt]
                value = {
                    "Average": run.total(k, vt) / run.npasses,
                    "Minimum": min(ts),
                    "Maximum": max(ts),
                }[combiner]
                cells.append(f"{value:.6f}")
            lines.append(_pad(cells, widths))
        _write(d / f"{prefix}-timing-{combiner}.csv", lines)


def write_csv(run: SimRun, d: Path, gen: str, prefix: str = "RAJAPerf") -> None:
    """Every CSV file of the run, as generation ``gen`` writes them."""
    if gen == "v2026.04":
        write_details_and_run_data(run, d, prefix)
    else:
        write_kernels_csv(run, d, gen, prefix)
    write_timing(run, d, gen, prefix)


def _write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def _globals(run: SimRun, variant: str, tuning: str, cluster: str, gen: str) -> dict:
    g = {
        "cali.caliper.version": "2.10.0",
        "cluster": cluster,
        "variant": variant,
        "compiler": "g++-12.2.0",
        "rajaperf_compiler_options": "-O3",
        "perfsuite_version": gen,
        "raja_version": gen,
        "launchdate": "1700000000",
        "cmdline": f"[./raja-perf.exe,--npasses,{run.npasses},--size,1000000]",
        "ProblemSizeRunParam": "1000000.000000",
        "omp_max_threads": str(run.omp_max_threads),
    }
    if gen != "pre-release":
        g["tuning"] = tuning
    return g


def _records(run: SimRun, vt: tuple[str, str], gen: str) -> dict[tuple, dict[tuple, dict]]:
    """{kernel: {aggregation key: {"time": summed seconds, "fig": {name: max}}}} over every pass."""
    last = run.kernels[-1]
    out: dict[tuple, dict[tuple, dict]] = {}
    for k in run.kernels:
        if vt not in k.times:
            continue
        for p, t in enumerate(k.times[vt]):
            if gen == "pre-release":  # begin/end in the first pass only; grouped by the figures
                fig = k.figures(gen, vt[1]) if p == 0 else {}
                key = tuple(sorted(fig.items()))
            else:  # set once, never unset: later passes run under the last kernel's values
                owner = k if p == 0 else last
                fig = owner.figures(gen, run.variants[-1][1] if p else vt[1])
                key = (owner.complexity,) if gen == "develop-2024.10" else ()
            slot = out.setdefault((k.name,), {}).setdefault(key, {"time": 0.0, "fig": {}})
            slot["time"] += t
            for name, v in fig.items():
                old = slot["fig"].get(name)
                slot["fig"][name] = (
                    v if old is None or (isinstance(v, float) and math.isnan(v)) else max(old, v)
                )
    return out


def timer_skew(rng) -> float:
    """Caliper's time over RAJAPerf's for one record of a same-run pair: 1 + a relative difference
    drawn like the ones real same-run outputs show (median 1.8e-4, at most 1.2e-2; either sign: two
    clocks read at different moments)."""
    size = min(10 ** rng.gauss(math.log10(1.8e-4), 0.6), 1.2e-2)
    return 1 + size * rng.choice((-1, 1))


def _regions(
    run: SimRun,
    vts: list[tuple[str, str]],
    gen: str,
    time_attrs: tuple[str, ...],
    prefix: str,
    skew=None,
) -> list:
    """Records of one file: a root and group record each, then every record of every kernel (and
    tuning leaf). ``skew``: a seeded ``random.Random`` that makes Caliper's timer differ from
    RAJAPerf's as in real runs."""
    regions = []
    root = [vts[0][0]] if gen == "pre-release" else ["RAJAPerf"]
    for vt in vts:
        recs = _records(run, vt, gen)
        for k in run.kernels:
            group = k.name.split("_")[0]
            for key, slot in recs.get((k.name,), {}).items():
                t = slot["time"] * (timer_skew(skew) if skew is not None else 1.0)
                metrics = {a: t for a in time_attrs}
                metrics.update(
                    {
                        (name if gen == "pre-release" else prefix + name): float(v)
                        for name, v in slot["fig"].items()
                    }
                )
                if gen == "develop-2024.10":
                    metrics["Complexity"] = key[0]
                node = root + [group, k.name]
                if gen == "pre-release":
                    regions.append((node, metrics))
                    node = node + [f"{k.name}.{vt[1]}"]
                regions.append((node, metrics))
    return regions


def write_caliper(
    run: SimRun, d: Path, gen: str, cluster: str = "sim-node", skew=None
) -> list[Path]:
    """One ``.cali`` per variant-tuning (per variant for the pre-release branch), as generation
    ``gen`` writes it; ``skew`` (a seeded ``random.Random``) gives Caliper's timer the same-run
    noise of :func:`timer_skew`."""
    time_attrs = (
        "avg#inclusive#sum#time.duration",
        "min#inclusive#sum#time.duration",
        "max#inclusive#sum#time.duration",
    )
    prefix = "any#any#max#"
    if gen == "pre-release":
        files = [
            [vt for vt in run.variants if vt[0] == v]
            for v in dict.fromkeys(v for v, _ in run.variants)
        ]
    else:
        files = [[vt] for vt in run.variants]
    paths = []
    for vts in files:
        g = _globals(run, *vts[0], cluster, gen)
        if gen == "pre-release":
            g["tunings"] = "{" + ",".join(t for _, t in vts) + "}"
            for k in run.kernels:
                g[k.name] = (
                    f"{{'Problem size': {k.size},'Reps':{k.reps},'Iterations/rep': {k.size},"
                    f"'Kernels/rep': 1,'Bytes/rep': {k.bytes},'FLOPS/rep': {k.flops}}}"
                )
        name = f"{vts[0][0]}.cali" if gen == "pre-release" else f"{vts[0][0]}-{vts[0][1]}.cali"
        paths.append(
            write_cali(
                d / name,
                _regions(run, vts, gen, time_attrs, prefix, skew),
                g,
                units={a: "sec" for a in time_attrs},
                aliases={time_attrs[0]: "Avg time/rank", prefix + "Forall": "FeatureForall"},
            )
        )
    return paths


def sim_run(
    npasses: int,
    *,
    seed: int = 0,
    variants=(("Base_Seq", "default"), ("Base_CUDA", "block_256")),
    ranks: int | None = None,
    omp_max_threads: int = 1,
    speedup: dict[str, float] | None = None,
) -> SimRun:
    """Four kernels with distinct figures; the last (largest) one leaks into later passes.
    Seeded. ``speedup``: back-end -> the factor its times take (default: CUDA 0.05)."""
    import random

    rng = random.Random(seed)
    spec = [
        ("Basic_DAXPY", 1_000_000, 500, 24_000_000, 2_000_000, "N"),
        ("Stream_TRIAD", 1_000_000, 1000, 24_000_000, 2_000_000, "N"),
        ("Apps_ENERGY", 1_000_000, 130, 288_000_000, 24_000_000, "N_logN"),
        ("Polybench_GEMM", 2_000_000, 4, 96_000_000, 8_000_000_000, "N"),
    ]
    kernels = []
    for name, size, reps, b, f, cx in spec:
        k = SimKernel(name, size, reps, b, f, cx)
        for vt in variants:
            factor = (speedup or {"CUDA": 0.05}).get(vt[0].split("_", 1)[1], 1.0)
            base = (0.2 + rng.random()) * factor
            k.times[vt] = [round(base * (1 + 0.03 * rng.random()), 6) for _ in range(npasses)]
        kernels.append(k)
    return SimRun(kernels, list(variants), npasses, ranks, omp_max_threads)


#: A machine's kernels for drift fixtures: (name, problem size, reps, bytes/rep, flops/rep).
MACHINE_KERNELS = tuple(
    (f"{group}_{name}", size, reps, 24 * size, 2 * size)
    for group, names in (
        ("Basic", ("DAXPY", "IF_QUAD", "INIT3", "MULADDSUB", "NESTED_INIT", "REDUCE3_INT")),
        ("Stream", ("ADD", "COPY", "DOT", "MUL", "TRIAD")),
        ("Lcals", ("DIFF_PREDICT", "EOS", "FIRST_DIFF", "HYDRO_1D", "INT_PREDICT")),
        ("Polybench", ("2MM", "ATAX", "GEMVER", "JACOBI_1D")),
        ("Apps", ("ENERGY", "FIR", "PRESSURE", "VOL3D")),
    )
    for name, size, reps in [(n, 1_000_000, 100) for n in names]
)


def machine_run(
    seed: int,
    *,
    sigma: float = 0.02,
    shift: float = 0.005,
    slower: dict[str, float] | None = None,
    npasses: int = 2,
) -> SimRun:
    """One run of the same simulated machine (Base_Seq): each kernel's true time is fixed (seed
    7), and each run draws its own noise: a factor common to every kernel (sd ``shift`` in log),
    one per kernel (sd ``sigma``), and 0.5% per pass. ``slower``: kernel name or group prefix ->
    the factor a planted regression multiplies its time by."""
    import random

    truth, rng = random.Random(7), random.Random(seed)
    common = math.exp(rng.gauss(0, shift))
    kernels = []
    for name, size, reps, b, f in MACHINE_KERNELS:
        base = 0.2 + truth.random()
        factor = math.prod(v for k, v in (slower or {}).items() if name.startswith(k))
        k = SimKernel(name, size, reps, b, f)
        run_t = base * common * math.exp(rng.gauss(0, sigma)) * factor
        k.times[("Base_Seq", "default")] = [
            run_t * math.exp(rng.gauss(0, 0.005)) for _ in range(npasses)
        ]
        kernels.append(k)
    return SimRun(kernels, [("Base_Seq", "default")], npasses)
