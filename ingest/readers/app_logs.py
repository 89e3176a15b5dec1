"""Whole-program runtimes from the logs of mini-apps that print them (UoB TeaLeaf, 2019 study).

TeaLeaf prints its wall clock cumulatively after every time step, as ``Wallclock:  517.520s``
(C versions) or ``Wall clock  558.12`` (Fortran-derived versions), and ends with a verification
verdict (``This run PASSED`` / ``This test is considered PASSED``). The runtime of a log is its last
wall-clock figure, kept only when the run says it passed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# one build prints the label twice ("Wallclock: Wallclock    289.998s")
_WALL = re.compile(
    r"^\s*(?:Wall\s?clock:?\s+)+([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)s?\s*$", re.M
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the C versions colour their verdict
_PASSED = re.compile(r"\bPASSED\b")


@dataclass(frozen=True)
class AppRun:
    """One log's runtime and whether the program verified its answer."""

    runtime_s: float | None
    passed: bool
    steps: int


def tealeaf_run(text: str) -> AppRun:
    """The runtime of a TeaLeaf log (its last cumulative wall clock) and its verdict.

    Args:
        text: the log as written.

    Returns:
        The run; ``runtime_s`` is None when no wall clock was printed.
    """
    text = _ANSI.sub("", text)
    walls = [float(m.group(1)) for m in _WALL.finditer(text)]
    return AppRun(walls[-1] if walls else None, bool(_PASSED.search(text)), len(walls))


# the UoB study's file names say the programming model: ``gcc-8.1_kokkos.out``, ``p100-cuda.out``
_MODELS = (
    ("kokkos", "kokkos"),
    ("omp-target", "omp-target"),
    ("omptarget", "omp-target"),
    ("oacc", "acc"),
    ("acc", "acc"),
    ("cuda", "cuda"),
    ("ocl", "opencl"),
    ("omp", "omp"),
)


def uob_model(file_name: str) -> str:
    """The programming model a UoB study log's file name states; ``ref`` for a bare compiler name
    (the reference version).

    Args:
        file_name: e.g. ``cuda-7.5-kokkos.out``.

    Returns:
        ``kokkos``, ``omp-target``, ``acc``, ``cuda``, ``opencl``, ``omp`` or ``ref``.
    """
    name = file_name.lower()
    return next((model for key, model in _MODELS if key in name), "ref")
