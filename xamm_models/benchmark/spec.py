"""What ``xplat-rajaperf`` is built from and under which rules: named sources, one declared
configuration per target, and the tolerances of a like-for-like label (see
:mod:`xamm_models.benchmark.dataset`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

# the size ratio and tolerance ranges: defined where a command line reads them without pydantic
from xamm_models.benchmark.limits import MAX_SIZE_RATIO, MAX_TOLERANCE, SIZE_RATIO  # noqa: F401

NAME = "xplat-rajaperf"
SCHEMA_VERSION = 2
DEFINITION_RTOL = 0.10  # bytes and flops per iteration of the two samples agree within 10%
KEY = ("app", "app_params")


class Source(BaseModel):
    """A public data set the benchmark is built from: a folder under ``../shared/data``."""

    model_config = ConfigDict(frozen=True)
    name: str
    path: str
    machine: str | None = None  # None: the machine named in the files (Adiak cluster)
    origin: str
    license: str  # SPDX, of the source repository


_FCR = "llnl+RAJAPerf-Benchmark/2026-FCR/data"
_FCR_ORIGIN = "llnl/RAJAPerf-Benchmark @ b7b229cd (branch v2026.04.1-RC), BSD-3-Clause"
SOURCES = (
    Source(
        name="thicket-rajaperf",
        path="LLNL+thicket/thicket/tests/data/rajaperf",
        origin="LLNL/thicket @ 5f2d9aff, MIT: quartz (Base_Seq, g++ 10.3.1) and "
        "lassen (Base_CUDA) .cali files",
        license="MIT",
    ),
    Source(
        name="h100-tier1",
        path=f"{_FCR}/RPBenchmark_H100_tier1",
        machine="h100-node",
        origin=_FCR_ORIGIN,
        license="BSD-3-Clause",
    ),
    Source(
        name="h100-tier2",
        path=f"{_FCR}/RPBenchmark_H100_tier2",
        machine="h100-node",
        origin=_FCR_ORIGIN,
        license="BSD-3-Clause",
    ),
    Source(
        name="mi300a-tier1",
        path=f"{_FCR}/RPBenchmark_MI300A_tier1-SPX",
        machine="mi300a-spx",
        origin=_FCR_ORIGIN,
        license="BSD-3-Clause",
    ),
    Source(
        name="mi300a-tier2",
        path=f"{_FCR}/RPBenchmark_MI300A_tier2-SPX",
        machine="mi300a-spx",
        origin=_FCR_ORIGIN,
        license="BSD-3-Clause",
    ),
    Source(
        name="thicket-dane",
        path="LLNL+thicket-newer/thicket/tests/data/rajaperf/dane",
        machine="dane",
        origin="LLNL/thicket @ 1e6f4068, MIT: dane (Intel Xeon Platinum 8480+; Base_Seq, "
        "clang++ 14.0.6, RAJAPerf 2024.07.0, 112 ranks) .cali files",
        license="MIT",
    ),
    Source(
        name="ruby-caliper-baselines",
        path="LLNL+RAJAPerf/test/caliper-baselines",
        machine="ruby",
        origin="LLNL/RAJAPerf @ 256fc527 (Jan 2023 CI), BSD-3-Clause: ruby (Intel Xeon "
        "CLX-8276L; g++ 8.3.1 -O2, RAJAPerf 0.11.0), one .cali file per variant",
        license="BSD-3-Clause",
    ),
    Source(
        name="mi300a-cpx-tier1",
        path=f"{_FCR}/RPBenchmark_MI300A_tier1-CPX",
        machine="mi300a-cpx",
        origin=_FCR_ORIGIN + ": the MI300A node of the SPX sets in CPX mode, 24 ranks",
        license="BSD-3-Clause",
    ),
    Source(
        name="mi300a-cpx-tier2",
        path=f"{_FCR}/RPBenchmark_MI300A_tier2-CPX",
        machine="mi300a-cpx",
        origin=_FCR_ORIGIN + ": the MI300A node of the SPX sets in CPX mode, 24 ranks",
        license="BSD-3-Clause",
    ),
    Source(
        name="vm-rajaperf",
        path="vm-rajaperf",
        machine="vm",
        origin="a RAJAPerf run made for the xamm project on a 2-core cloud VM (Intel Xeon, "
        "Sapphire Rapids family; g++ 12.2.0 -O3, RAJAPerf 2024.07.0): CSV and .cali files of "
        "the same runs",
        license="BSD-3-Clause",
    ),
)


class TargetConfig(BaseModel):
    """The one configuration a target is measured in. ``None`` for compiler or flags: the files do
    not record them (runs must then record none either); ``release`` is declared from the source's
    provenance."""

    model_config = ConfigDict(frozen=True)
    target: str
    release: str
    compiler: str | None
    compiler_flags: str | None
    variant: str
    ranks: int | None
    threads: int | None = 1  # OpenMP threads per rank (every Base_* run here is single-threaded)
    # a regular expression the run's source_path matches: files laid out as the named source's
    path_pattern: str
    policy: str = "the variant's fastest tuning per kernel and size; trials averaged"


_DANE_FLAGS = (
    "{-O3,-g,-fpass-plugin=/g/g11/bogale2/my_workspace/repos/Src_LLNL_Perf_Analysis_with_"
    "Compiler_Remarks/diagnostic_handler/build/libDiagPassPlugin.so,-mllvm,-pass-remarks=.*;,"
    "-Wall,-Wextra}"
)
# the FCR sweep's per-kernel, per-factor runs
_FCR_FILES = r"(^|/)[A-Z0-9_]+_factor_\d+-kernel-run-data\.csv$"
CONFIGS = (
    TargetConfig(
        target="quartz:cpu",
        release="1.10.0",
        compiler="g++-10.3.1",
        compiler_flags="-Ofast -march=native; -Wall -Wextra -g -O3",
        variant="Base_Seq",
        ranks=1,  # the root's total over ranks equals its mean (xamm_ingest: spot_ranks)
        path_pattern=r"(^|/)gcc10\.3\.1_\d+/O3/\d+/Base_Seq-default\.cali$",
    ),
    TargetConfig(
        target="lassen:gpu",
        release="1.10.0",
        compiler="clang++-10.0.1+nvcc-10.2.89",
        compiler_flags="-Wall -Wextra",
        variant="Base_CUDA",
        ranks=1,  # as quartz's: one rank, so one of the node's four V100s
        path_pattern=r"(^|/)clang10\.0\.1_nvcc10\.2\.89_\d+/\d+/Base_CUDA-block_\d+\.cali$",
    ),
    TargetConfig(
        target="h100-node:cpu",
        release="v2026.04.1-RC",
        compiler=None,
        compiler_flags=None,
        variant="Base_Seq",
        ranks=4,
        path_pattern=_FCR_FILES,
    ),
    TargetConfig(
        target="h100-node:gpu",
        release="v2026.04.1-RC",
        compiler=None,
        compiler_flags=None,
        variant="Base_CUDA",
        ranks=4,
        path_pattern=_FCR_FILES,
    ),
    TargetConfig(
        target="mi300a-spx:cpu",
        release="v2026.04.1-RC",
        compiler=None,
        compiler_flags=None,
        variant="Base_Seq",
        ranks=4,
        path_pattern=_FCR_FILES,
    ),
    TargetConfig(
        target="mi300a-spx:gpu",
        release="v2026.04.1-RC",
        compiler=None,
        compiler_flags=None,
        variant="Base_HIP",
        ranks=4,
        path_pattern=_FCR_FILES,
    ),
    TargetConfig(
        target="dane:cpu",
        release="2024.07.0",
        compiler="clang++-14.0.6",
        # as the files record them: the build carried a compiler-remarks plugin
        compiler_flags=_DANE_FLAGS,
        variant="Base_Seq",
        ranks=112,
        path_pattern=r"(^|/)clang14\.0\.6_\d+/O3/\d+/Base_Seq-default\.cali$",
    ),
    TargetConfig(
        target="ruby:cpu",
        release="0.11.0",
        compiler="g++-8.3.1",
        compiler_flags="-O2 -g -DNDEBUG; -Wall -Wextra",
        variant="Base_Seq",
        ranks=1,
        path_pattern=r"(^|/)Base_Seq\.cali$",
    ),
    TargetConfig(
        target="mi300a-cpx:cpu",
        release="v2026.04.1-RC",
        compiler=None,
        compiler_flags=None,
        variant="Base_Seq",
        ranks=24,
        path_pattern=_FCR_FILES,
    ),
    TargetConfig(
        target="mi300a-cpx:gpu",
        release="v2026.04.1-RC",
        compiler=None,
        compiler_flags=None,
        variant="Base_HIP",
        ranks=24,
        path_pattern=_FCR_FILES,
    ),
    TargetConfig(
        target="vm:cpu",
        release="2024.07.0",
        compiler="g++-12.2.0",
        compiler_flags="{-O3,-DNDEBUG;,-Wall,-Wextra}",
        variant="Base_Seq",
        ranks=1,
        # the three runs: one pass at full size, two passes, one pass at half size
        path_pattern=r"(^|/)omp(1|2|2_sizefact0\.5)/",
    ),
)
