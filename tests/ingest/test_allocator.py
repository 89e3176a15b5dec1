"""The ``xamm-ingest`` command's allocator settings (:mod:`xamm_ingest._allocator`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from xamm_ingest import _allocator

# a 2 MiB block allocated after a 4 MiB one was freed: served by mmap (True) or carved from the heap
_PROBE = """
import ctypes, sys
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
if sys.argv[1] == "command":
    import xamm_ingest._allocator
big = bytearray(4 << 20)
del big
before = libc.mallinfo2().hblkhd
block = bytearray(2 << 20)
print(libc.mallinfo2().hblkhd - before >= 2 << 20)
"""


def test_the_threshold_is_fixed_unless_the_user_set_one(monkeypatch):
    """glibc's mmap threshold is fixed at its starting value; one the user set
    (``GLIBC_TUNABLES``, ``MALLOC_MMAP_THRESHOLD_``) is left to glibc."""
    calls: list[tuple[int, int]] = []

    def mallopt(param: int, value: int) -> int:
        calls.append((param, value))
        return 1

    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert _allocator.fix_mmap_threshold(mallopt) is True
    assert calls == [(-3, 128 * 1024)]
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=65536")
    assert _allocator.fix_mmap_threshold(mallopt) is False and len(calls) == 1
    monkeypatch.delenv("GLIBC_TUNABLES")
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert _allocator.fix_mmap_threshold(mallopt) is False and len(calls) == 1


@pytest.mark.skipif(
    not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"), reason="glibc's allocator"
)
def test_after_a_large_block_is_freed_the_next_one_still_comes_from_mmap():
    """In a process that loaded the command's settings, a large block allocated after a larger
    one was freed is mapped on its own (given back whole when freed); without them glibc carves
    it from the heap, whose freed middle it keeps."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")
    }

    def probe(mode: str) -> str:
        out = subprocess.run(
            [sys.executable, "-c", _PROBE, mode], env=env, capture_output=True, text=True
        )
        if "mallinfo2" in out.stderr:
            pytest.skip("this glibc has no mallinfo2 (before 2.33)")
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert probe("command") == "True"
    assert probe("library") == "False"
