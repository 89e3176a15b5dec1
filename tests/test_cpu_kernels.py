"""torch's CPU kernels pinned to AVX2 on x86-64 (``xamm_models.cpu_kernels``): a model command asks for them before
torch is imported, so a seeded run gives the same numbers on an AVX-512 machine as on an AVX2 one; a value the user
set is kept. (The evaluation's workers: tests/test_evaluation.py; the committed run: its results.json.)"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from xamm_models import cpu_kernels

pytest.importorskip("torch", reason="the models extra (torch) is not installed")

X86 = cpu_kernels.x86()
# a model command's wrapper, in a fresh process, reporting the kernels torch then runs
CODE = ("import types; from xamm_models.cli import _needs_models; "
        "_needs_models(lambda a: print(__import__('torch').backends.cpu.get_cpu_capability()))"
        "(types.SimpleNamespace(command='x'))")


def kernels(**env) -> str:
    clean = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    return subprocess.run([sys.executable, "-c", CODE], env={**clean, **env}, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.skipif(not X86, reason="the pin applies to x86-64 processors only")
def test_a_model_command_runs_torchs_avx2_kernels_unless_the_user_chose_others():
    assert kernels() == "AVX2"
    assert kernels(ATEN_CPU_CAPABILITY="default") == "DEFAULT"  # the user's choice is kept


def test_pin_keeps_a_value_already_set_and_sets_avx2_on_x86(monkeypatch):
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    assert cpu_kernels.pin() == "default"
    monkeypatch.delenv("ATEN_CPU_CAPABILITY")
    assert cpu_kernels.pin() == ("avx2" if X86 else None)
    assert os.environ.get("ATEN_CPU_CAPABILITY") == ("avx2" if X86 else None)
