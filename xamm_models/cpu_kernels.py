"""One CPU instruction set for torch's kernels, so a seeded run gives the same numbers on every x86-64 machine.

torch dispatches its CPU kernels by what the processor offers (AVX2, AVX-512, ...), and their floating-point
results differ in the last bits. Training the attention embedder amplifies that: the same code and seed put 0.75 of
one fold's pairs within 2x (``xamm eval``, attention + AMMs -> XGBoost, leave the Stream group out) with torch's
AVX2 kernels and 0.80 with its AVX-512 ones, on one machine. Seeds alone fix a result on one kind of processor.

:func:`pin` asks torch for its AVX2 kernels (``ATEN_CPU_CAPABILITY=avx2``), which every x86-64 processor of the
last decade runs, for this process and every process it starts. torch reads the setting when it is imported, so
the ``xamm`` model commands call it before importing torch, and the evaluation's worker processes do too. A value the
user set is kept (``ATEN_CPU_CAPABILITY=default`` turns vector kernels off; unset it for torch's own choice). On
other processors it does nothing.
"""

from __future__ import annotations

import os
import platform

VAR = "ATEN_CPU_CAPABILITY"
ISA = "avx2"


def x86() -> bool:
    """Whether this processor is x86-64, where the pin applies."""
    return platform.machine().lower() in ("x86_64", "amd64")


def pin() -> str | None:
    """Set ``ATEN_CPU_CAPABILITY=avx2`` unless it is set already, on x86-64 only; the value in force, else None.
    A process that imported torch before this call keeps its kernels; the processes it starts get the setting."""
    if not x86():
        return os.environ.get(VAR)
    return os.environ.setdefault(VAR, ISA)


def capability() -> str:
    """The kernels torch runs in this process (``AVX2``, ``AVX512``, ``DEFAULT``, ...); imports torch."""
    import torch  # the models extra

    return torch.backends.cpu.get_cpu_capability()
