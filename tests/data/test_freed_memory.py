"""Freed memory goes back to the system before a commit (xamm_data.store.memory): on glibc the
pages a fragmented heap holds free leave the process's resident memory, and every commit of the
store asks for it once (an ingest's peak is its commit: benchmarks/bench_whole.py)."""

from __future__ import annotations

import json
import os
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


# polars' own frame of 160 MB freed: what the process holds while it lives and just after
POLARS_FREED = """
import json, os, re, sys
from xamm_data.cli.tools import console_script
def anon():
    return int(re.search(r"RssAnon:\\s+(\\d+)", open("/proc/self/status").read()).group(1)) // 1024
def main():
    import polars as pl
    df = pl.select(pl.int_range(0, 20_000_000).alias("x"))
    held = anon()
    del df
    print(json.dumps({"conf": os.environ.get("_RJEM_MALLOC_CONF"), "held": held, "after": anon()}))
    return 0
(console_script(main) if sys.argv[1] == "command" else main)()
"""


@pytest.mark.parametrize(
    ("mode", "user", "freed"), [("command", None, True), ("library", None, False),
                                ("command", "narenas:2", False)]
)  # fmt: skip
def test_a_command_hands_polars_freed_pages_back_at_once(monkeypatch, mode, user, freed):
    """In a console script polars' allocator returns a freed frame's pages when it is freed (a
    command's peak is its largest query's, not their sum); imported as a library, or with the
    user's own ``_RJEM_MALLOC_CONF``, the allocator is left as it is."""
    monkeypatch.delenv("_RJEM_MALLOC_CONF", raising=False)
    if user is not None:
        monkeypatch.setenv("_RJEM_MALLOC_CONF", user)
    out = subprocess.run(
        [sys.executable, "-c", POLARS_FREED, mode], capture_output=True, text=True, check=True
    )
    got = json.loads(out.stdout)
    assert got["held"] > 120  # MiB: the frame was resident
    assert (got["held"] - got["after"] > 100) is freed, got
    assert ("dirty_decay_ms:0," in (got["conf"] or "")) is freed
    assert user is None or user in got["conf"]


def test_the_allocator_is_left_alone_once_polars_has_loaded(monkeypatch):
    from xamm_data.cli.tools import free_pages_at_once

    monkeypatch.delenv("_RJEM_MALLOC_CONF", raising=False)
    assert "polars" in sys.modules  # the test session loaded it: too late to set
    assert free_pages_at_once() is False
    assert "_RJEM_MALLOC_CONF" not in os.environ


PYDANTIC_SEARCH = """
import sys
from xamm_data.cli.tools import console_script

def main():
    import pydantic
    from pydantic.plugin import _loader

    class Model(pydantic.BaseModel):
        x: int = 1

    Model()
    print("searched" if _loader._plugins is not None else "not searched", flush=True)
    return 0

console_script(main)() if sys.argv[1] == "command" else main()
"""


@pytest.mark.parametrize(
    ("mode", "user", "searched"),
    [("command", None, False), ("command", "", True), ("library", None, True)],
)
def test_a_command_makes_its_models_without_pydantic_s_plugin_search(
    monkeypatch, mode, user, searched
):
    """In a console script pydantic looks for no plugins (a search of every installed package's
    metadata when the first model is made); imported as a library, or with the user's own
    ``PYDANTIC_DISABLE_PLUGINS`` (empty: every plugin), pydantic looks as it always does."""
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    if user is not None:
        monkeypatch.setenv("PYDANTIC_DISABLE_PLUGINS", user)
    out = subprocess.run(
        [sys.executable, "-c", PYDANTIC_SEARCH, mode], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ("searched" if searched else "not searched"), out
