"""Whole-program runtimes from the logs of mini-apps that print them (the UoB
performance-portability study, 2019: TeaLeaf, neutral, miniFMM).

* TeaLeaf prints its wall clock cumulatively after every time step, as ``Wallclock:  517.520s``
  (C versions) or ``Wall clock  558.12`` (Fortran-derived versions), and ends with a verification
  verdict (``This run PASSED`` / ``This test is considered PASSED``). The runtime of a log is its
  last wall-clock figure.
* neutral prints ``Wallclock`` per iteration and ends with ``PASSED validation.`` and
  ``Final Wallclock 4.283386109s``: the runtime is the final figure.
* miniFMM prints ``solve time = 3.553102s`` once per run (some logs hold several runs of one
  build) and then its errors against direct summation (``pot err = ...``, ``acc err = ...``); it
  prints no verdict. The runtime of a log is its fastest run; a run counts as verified when both
  errors are printed and finite.

A log is kept only when the run verified.
"""

from __future__ import annotations

import math
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


_NEUTRAL_WALL = re.compile(r"^\s*Final Wallclock\s+([0-9.eE+-]+)s?\s*$", re.M)
_NEUTRAL_PASSED = re.compile(r"^\s*PASSED validation", re.M)
_FMM_SOLVE = re.compile(r"^\s*solve time\s*=\s*([0-9.eE+-]+)s?\s*$", re.M)
_FMM_ERR = re.compile(r"^\s*(pot|acc) err\s*=\s*(\S+)\s*$", re.M)


def neutral_run(text: str) -> AppRun:
    """The runtime of a neutral log (its ``Final Wallclock``) and its validation verdict.

    Args:
        text: the log as written.

    Returns:
        The run; ``runtime_s`` is None when no final wall clock was printed.
    """
    walls = [float(m.group(1)) for m in _NEUTRAL_WALL.finditer(text)]
    return AppRun(walls[-1] if walls else None, bool(_NEUTRAL_PASSED.search(text)), len(walls))


def minifmm_run(text: str) -> AppRun:
    """The runtime of a miniFMM log (its fastest ``solve time``) and whether its errors were
    printed and finite.

    Args:
        text: the log as written.

    Returns:
        The run; ``runtime_s`` is None when no solve time was printed.
    """
    solves = [float(m.group(1)) for m in _FMM_SOLVE.finditer(text)]
    errs = {m.group(1): m.group(2) for m in _FMM_ERR.finditer(text)}
    finite = len(errs) == 2 and all(_finite(v) for v in errs.values())
    return AppRun(min(solves) if solves else None, finite, len(solves))


def _finite(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


#: Application -> the function reading one of its logs.
APP_LOGS = {"tealeaf": tealeaf_run, "neutral": neutral_run, "minifmm": minifmm_run}


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
