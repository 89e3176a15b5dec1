"""One CPU instruction set for torch's kernels, so a seeded run gives the same numbers on every
x86-64 machine.

torch dispatches its CPU kernels by what the processor offers (AVX2, AVX-512, ...), and their
floating-point results differ in the last bits. Training the attention embedder amplifies that: the
same code and seed put 0.75 of one fold's pairs within 2x (``xamm eval``, attention + AMMs ->
XGBoost, leave the Stream group out) with torch's AVX2 kernels and 0.80 with its AVX-512 ones, on
one machine. Seeds alone fix a result on one kind of processor.

Two libraries dispatch: torch's own kernels (ATen) and the Intel oneMKL that torch's CPU build links
for matrix products, which picks its code branch by processor vendor and instruction set on its own.
With ATen pinned, the same seeded run still gave other numbers on an Intel AVX-512 machine than on
the AMD one before it (0.85 against
0.75 on that fold; a seeded 300x517 by 517x131 product differs in its last bits between oneMKL's
branches).

:func:`pin` asks torch for its AVX2 kernels (``ATEN_CPU_CAPABILITY=avx2``), which every x86-64
processor of the last decade runs, and oneMKL for its ``COMPATIBLE`` branch
(``MKL_CBWR=COMPATIBLE``: Intel's conditional numerical reproducibility, documented to give the same
results on every Intel and Intel-compatible processor at a fixed thread count; the seeded runs use
one thread per process), for this process and every process it starts. Both are read when torch is
loaded, so the ``xamm`` model commands call it before importing torch, and the evaluation's worker
processes do too. A value the user set is kept (``ATEN_CPU_CAPABILITY=default`` turns vector kernels
off; unset either for the libraries' own choice). On other processors it does nothing.
"""

from __future__ import annotations

import os
import platform

VAR = "ATEN_CPU_CAPABILITY"
ISA = "avx2"
MKL_VAR, MKL_BRANCH = "MKL_CBWR", "COMPATIBLE"


def x86() -> bool:
    """Whether this processor is x86-64, where the pin applies."""
    return platform.machine().lower() in ("x86_64", "amd64")


def pin() -> str | None:
    """Set ``ATEN_CPU_CAPABILITY=avx2`` and ``MKL_CBWR=COMPATIBLE``, each unless it is set already,
    on x86-64 only; the ATen value in force, else None. A process that imported torch before this
    call keeps its kernels; the processes it starts get the settings."""
    if not x86():
        return os.environ.get(VAR)
    os.environ.setdefault(MKL_VAR, MKL_BRANCH)
    return os.environ.setdefault(VAR, ISA)


def capability() -> str:
    """The kernels torch runs in this process (``AVX2``, ``AVX512``, ``DEFAULT``, ...); imports
    torch."""
    import torch  # the models extra

    return torch.backends.cpu.get_cpu_capability()
