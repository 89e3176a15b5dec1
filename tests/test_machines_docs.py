"""docs/machines.md's table of the paper's 16 machines against the registry file and the embedded
snapshot: which have public runs, which are answered from specifications, which get no answer."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from xamm_data.hub import snapshot
from xamm_data.machines import registry as machines

DOC = Path(__file__).resolve().parents[1] / "docs" / "machines.md"


def _table() -> dict[str, tuple[str, str]]:
    text = DOC.read_text()
    part = text[text.index("## The paper's 16 machines") : text.index("## Signatures from spec")]
    rows = re.findall(r"^\| `([a-z0-9.-]+)` \| ([^|]+) \| ([^|]+) \|$", part, re.M)
    return {mid: (runs.strip(), answer.strip()) for mid, runs, answer in rows}


def _has_peaks(rec: dict, device: str) -> bool:
    """Peak bandwidth and flop rate of a unit in the file: a node's with its cores, one
    processor's with its cores, or one GPU's (docs/machines.md's facts)."""
    if device == "gpu":
        return "gpu_memory_bandwidth_gbs" in rec and "gpu_peak_gflops" in rec
    node = "cores_per_node" in rec and "memory_bandwidth_gbs" in rec and "peak_gflops" in rec
    chip = "processor_cores" in rec and all(
        f"processor_{k}" in rec for k in ("memory_bandwidth_gbs", "peak_gflops")
    )
    return node or chip


def test_the_docs_say_which_paper_machines_have_runs_specifications_or_nothing():
    raw = tomllib.loads(machines.SHIPPED.read_text())["machines"]
    paper = {k for k, v in raw.items() if v.get("in_paper")}
    table = _table()
    assert set(table) == paper and len(paper) == 16
    with_runs = set(snapshot.machines())
    for mid, (runs, answer) in table.items():
        rec = raw[mid]
        assert (runs != "none") == (mid in with_runs), mid
        specced = [d for d in ("cpu", "gpu") if _has_peaks(rec, d)]
        if mid in with_runs:
            assert answer.startswith("runs"), mid
        elif specced:
            assert answer.startswith("specifications"), mid
            assert "answers it from its specifications" in rec["notes"], mid
        else:
            assert answer.startswith("no answer") and "no answer" in rec["notes"], mid
