"""torch's CPU kernels pinned to AVX2 on x86-64 (``xamm_models.runtime``): a model command asks for
them before torch is imported, so a seeded run gives the same numbers on an AVX-512 machine as on an
AVX2 one; a value the user set is kept. (The evaluation's workers:
tests/models/benchmark/test_evaluation.py; the committed run: its results.json.)"""

from __future__ import annotations

import functools
import os
import subprocess
import sys

import pytest

from xamm_models import runtime as cpu_kernels

pytest.importorskip("torch", reason="the models extra (torch) is not installed")

X86 = cpu_kernels.x86()
PINNED = ("ATEN_CPU_CAPABILITY", "MKL_CBWR")
# a seeded matrix product through oneMKL, to the last bit, and the settings in force
PRODUCT = (
    "import os, torch; torch.set_num_threads(1); g = torch.Generator().manual_seed(0); "
    "a = torch.randn(300, 517, generator=g); b = torch.randn(517, 131, generator=g); "
    "print(torch.backends.cpu.get_cpu_capability(), "
    "os.environ.get('MKL_CBWR'), (a @ b).double().sum().item().hex())"
)
# the same from a model command's wrapper, in a fresh process, which pins before torch is imported
CODE = (
    "import types; from xamm_models.cli.common import needs_models; "
    f"needs_models(lambda a: exec({PRODUCT!r}))(types.SimpleNamespace(command='x'))"
)


def run(code: str = CODE, **env) -> list[str]:
    """(torch's kernels, MKL_CBWR, the product's bits) in a fresh process with neither setting
    inherited (one process per code and settings: each imports torch, seconds of CPU)."""
    return list(_ran(code, tuple(sorted(env.items()))))


@functools.cache
def _ran(code: str, env: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    clean = {k: v for k, v in os.environ.items() if k not in PINNED}
    return tuple(
        subprocess.run(
            [sys.executable, "-c", code],
            env={**clean, **dict(env)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    )


@pytest.mark.skipif(not X86, reason="the pin applies to x86-64 processors only")
def test_a_model_command_runs_torchs_avx2_kernels_unless_the_user_chose_others():
    assert run()[0] == "AVX2"
    assert run(ATEN_CPU_CAPABILITY="default")[0] == "DEFAULT"  # the user's choice is kept


@pytest.mark.skipif(not X86, reason="the pin applies to x86-64 processors only")
def test_a_model_command_runs_onemkls_compatible_branch_unless_the_user_chose_another():
    """The pin reaches oneMKL: the wrapper's product has the bits of a plain process told
    ``MKL_CBWR=COMPATIBLE`` (on this project's Intel AVX-512 machine they differ from oneMKL's own
    choice and from its AVX2 branch)."""
    pinned = run()
    assert pinned[1] == "COMPATIBLE" and pinned[2] == run(PRODUCT, MKL_CBWR="COMPATIBLE")[2]
    chosen = run(MKL_CBWR="AVX2")
    # the user's choice is kept
    assert chosen[1] == "AVX2" and chosen[2] == run(PRODUCT, MKL_CBWR="AVX2")[2]


def test_pin_keeps_a_value_already_set_and_sets_avx2_on_x86(monkeypatch):
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    monkeypatch.setenv("MKL_CBWR", "AVX2")
    assert cpu_kernels.pin() == "default" and os.environ["MKL_CBWR"] == "AVX2"
    monkeypatch.delenv("ATEN_CPU_CAPABILITY")
    monkeypatch.delenv("MKL_CBWR")
    assert cpu_kernels.pin() == ("avx2" if X86 else None)
    assert os.environ.get("ATEN_CPU_CAPABILITY") == ("avx2" if X86 else None)
    assert os.environ.get("MKL_CBWR") == ("COMPATIBLE" if X86 else None)


def _intel_avx512() -> bool:
    try:
        info = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return "GenuineIntel" in info and "avx512f" in info


@pytest.mark.skipif(
    not _intel_avx512(),
    reason="oneMKL's branches are compared where the README measured them: "
    "an Intel AVX-512 processor",
)
def test_on_an_intel_avx512_processor_onemkls_branches_give_different_bits():
    """Why the pin is needed (the README's 'same numbers on another processor'): the seeded
    product's last bits differ between oneMKL's own branch, its AVX2 branch and its COMPATIBLE
    branch."""
    bits = {
        branch: run(PRODUCT, **({"MKL_CBWR": branch} if branch else {}))[2]
        for branch in ("", "AVX2", "COMPATIBLE")
    }
    assert len(set(bits.values())) == 3, bits
