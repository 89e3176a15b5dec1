"""Freed memory goes back to the system before a commit (xamm_data.store.memory): on glibc the
pages a fragmented heap holds free leave the process's resident memory, and every commit of the
store asks for it once (an ingest's peak is its commit: benchmarks/bench_whole.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import FIXTURES

from xamm_data.store import log
from xamm_data.store.memory import release_freed_memory
from xamm_data.store.store import Store
from xamm_ingest import read_rajaperf

# 40 MB of 2 KB blocks (each from malloc, past Python's small-object allocator), every eighth kept
# so the heap cannot shrink from its top; the anonymous resident memory before and after the rest
# is freed and after the release
FRAGMENTED = """
import json, re
from xamm_data.store.memory import release_freed_memory
def anon():
    return int(re.search(r"RssAnon:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
blocks = [bytes(2048) for _ in range(20_000)]
kept = blocks[::8]
del blocks
freed = anon()
done = release_freed_memory()
print(json.dumps({"freed": freed, "released": anon(), "done": done}))
"""


def test_the_free_pages_of_a_fragmented_heap_leave_the_process():
    if not release_freed_memory():
        pytest.skip("no glibc malloc_trim here: nothing to release")
    r = subprocess.run([sys.executable, "-c", FRAGMENTED], capture_output=True, text=True)
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["done"] is True
    # about 35 MB were freed inside the heap: most of it leaves the resident memory
    assert got["freed"] - got["released"] > 20_000  # KiB


def test_every_commit_releases_what_was_freed_once(tmp_path, monkeypatch):
    frame = read_rajaperf(FIXTURES / "rajaperf_sample", workers=1).frame
    calls = []
    monkeypatch.setattr(log, "release_freed_memory", lambda: calls.append(1) or True)
    st = Store(tmp_path / "s")
    st.write(frame, "benchmark_runs")
    assert calls == [1]
    st.append(frame.with_columns(source_sha256=frame["source_sha256"].str.replace("^.", "f")),
              "benchmark_runs")  # fmt: skip
    assert calls == [1, 1]
