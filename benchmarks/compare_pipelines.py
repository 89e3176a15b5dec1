"""Every stored value of the shared data, before and after a change to the ingest wing.

Builds one store with the ``xamm-ingest`` of another checkout (``--old``, e.g. a ``git worktree`` of
the commit before the change) and one with this checkout's, from the same real inputs and the same
command lines, then compares the two stores table by table: the same sources, the same rows, every
column equal (strings and integers exactly, floats within 1e-12 relative, nested lists and structs
value by value), and the same sources rejected. Writes ``docs/bench/pipeline-equivalence.md``.

    git worktree add /tmp/xamm-old <commit>
    python benchmarks/compare_pipelines.py --old /tmp/xamm-old --data ../shared/data
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
RTOL = 1e-12
#: sources the new pipeline refuses on purpose, by input, each with why: the old stored them, the
#: new names them rejected; the comparison leaves them out of both sides and says how many
INTENDED = {
    "babelstream: UoB": {
        "2022/babelstream/results/babelstream-uhdp630_oneapi-2022.2_sycl.out": "its SYCL device "
        "selector picked the host's Xeon: a CPU run under the GPU-only uhdp630",
    },
}
UOB_PATTERNS = (
    r"^2019/babelstream/(?P<machine>[^/]+)/",
    r"babelstream-(?P<machine>[a-z0-9]+(?:_80g)?)_(?P<compiler>[a-z]+-[0-9.]+)_",
)


def cases(data: Path, quick: bool) -> list[tuple[str, list[str]]]:
    """(label, xamm-ingest arguments) of every real input compared."""
    fcr = data / "llnl+RAJAPerf-Benchmark" / "2026-FCR" / "data"
    tut = data / "LLNL+thicket-tutorial" / "data"
    hat = data / "LLNL+hatchet" / "hatchet" / "tests" / "data"
    meta = data / "HPCToolkit+hpcviewer.e4" / "tests" / "resources" / "metadb"
    out = [
        (
            "rajaperf: thicket tests",
            ["rajaperf", str(data / "LLNL+thicket/thicket/tests/data/rajaperf")],
        ),
        ("rajaperf: tutorial quartz", ["rajaperf", str(tut / "quartz")]),
        ("rajaperf: tutorial lassen", ["rajaperf", str(tut / "lassen")]),
        (
            "rajaperf: H100 tiers 1-2",
            [
                "rajaperf",
                str(fcr / "RPBenchmark_H100_tier1"),
                str(fcr / "RPBenchmark_H100_tier2"),
                "--machine",
                "h100-node",
            ],
        ),
        (
            "rajaperf: MI300A tiers 1-2",
            [
                "rajaperf",
                str(fcr / "RPBenchmark_MI300A_tier1-SPX"),
                str(fcr / "RPBenchmark_MI300A_tier2-SPX"),
                "--machine",
                "mi300a-spx",
            ],
        ),
        (
            "rajaperf: rse-ops CSV + .cali",
            ["rajaperf", str(data / "rse-ops+vis-experiment"), "--machine", "rse-node"],
        ),
        (
            "babelstream: UoB",
            [
                "babelstream",
                str(data / "UoB-HPC+performance-portability" / "benchmarking"),
                *[a for p in UOB_PATTERNS for a in ("--path-pattern", p)],
            ],
        ),
        ("caliper: LULESH", ["caliper", str(tut / "lulesh"), "--app", "LULESH"]),
        (
            "caliper: hatchet LULESH JSON",
            ["caliper", str(hat / "caliper-lulesh-json"), "--app", "LULESH", "--machine", "quartz"],
        ),
        ("hpctoolkit: meta.db", ["hpctoolkit", str(meta), "--app", "tests", "--machine", "quartz"]),
        (
            "hpctoolkit: experiment.xml",
            ["hpctoolkit", str(hat), "--app", "cpi", "--machine", "quartz"],
        ),
    ]
    if not quick:
        out.append(
            (
                "caliper: parallel sorting",
                ["caliper", str(tut / "parallel-sorting"), "--app", "sort"],
            )
        )
    return out


# one process per checkout runs every case through its ``xamm-ingest`` entry point, as the console
# script would (argv, exit code, printed JSON): a process per case would spend most of its time
# importing the same modules again
DRIVER = """
import contextlib, io, json, sys, time
from xamm_ingest.cli import main
for label, argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    print(json.dumps({"label": label, "exit": int(code or 0), "stdout": out.getvalue(),
                      "stderr": err.getvalue()[-2000:], "seconds": time.perf_counter() - t0}),
          flush=True)
"""


def build(src: Path, store: Path, runs: list[tuple[str, list[str]]]) -> dict[str, dict]:
    """Run every case through the ``xamm-ingest`` of checkout ``src`` into ``store``, in order, in
    one process of that checkout's code."""
    env = {
        **os.environ,
        "PYTHONPATH": f"{src}{os.pathsep}{src / 'ingest'}",
        "XAMM_HOME": str(store.parent),
    }
    argvs = [
        (label, [*argv, "--store", str(store), "--json", "--no-progress"]) for label, argv in runs
    ]
    p = subprocess.run(
        [sys.executable, "-c", DRIVER, json.dumps(argvs)],
        capture_output=True,
        text=True,
        env=env,
        cwd=src,
    )
    done = {r["label"]: r for r in map(json.loads, p.stdout.splitlines())}
    if len(done) != len(runs):
        raise SystemExit(f"{src}: the cases stopped after {len(done)} of {len(runs)}:\n"
                         f"{p.stderr[-3000:]}")  # fmt: skip
    out = {}
    for label, _ in runs:
        r = done[label]
        try:
            s = json.loads(r["stdout"])
        except json.JSONDecodeError:
            s = {"error": (r["stderr"] or r["stdout"]).strip().splitlines()[-1:]}
        rejected = sorted(
            x["path"] if isinstance(x, dict) else str(x) for x in s.get("rejected_files", [])
        )
        out[label] = {
            "exit": r["exit"],
            "rejected": rejected,
            "dropped": len(s.get("dropped_records", [])),
            "seconds": r["seconds"],
        }
        print(f"  {label}: exit {r['exit']}, {len(rejected)} rejected, {r['seconds']:.1f} s",
              flush=True)  # fmt: skip
    return out


def _equal(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (
            (math.isnan(a) and math.isnan(b)) or a == b or abs(a - b) <= RTOL * max(abs(a), abs(b))
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return a == b


def compare_table(old: pl.DataFrame, new: pl.DataFrame) -> dict:
    """Rows of each side and the columns whose values differ (by the same key order)."""
    key = [
        c
        for c in ("source_sha256", "source_path", "kernel", "variant", "tuning", "machine", "trial")
        if c in old.columns
    ]
    res = {
        "rows_old": old.height,
        "rows_new": new.height,
        "columns": len(old.columns),
        "differ": [],
    }
    if set(old.columns) != set(new.columns):
        res["differ"].append(f"columns: {sorted(set(old.columns) ^ set(new.columns))}")
        return res
    if old.height != new.height:
        return res
    old, new = old.sort(key), new.select(old.columns).sort(key)
    for c in old.columns:
        if not all(_equal(x, y) for x, y in zip(old[c].to_list(), new[c].to_list())):
            res["differ"].append(c)
    return res


def stored(store: Path) -> dict[str, pl.DataFrame]:
    from xamm_data.store.store import Store

    st = Store(store)
    return {
        k: st.scan(k).collect()
        for k in ("benchmark_runs", "app_profiles")
        if st.version(k) is not None
    }


def write_doc(path: Path, runs: dict, tables: dict, old_rev: str, new_rev: str) -> None:
    lines = [
        "# Stored values before and after the ingest change",
        "",
        "Generated by `benchmarks/compare_pipelines.py` "
        f"(old checkout `{old_rev}`, new `{new_rev}`): the same real inputs and command lines "
        "through both `xamm-ingest`s into two stores, compared "
        f"column by column (every column; floats within {RTOL:g} relative).",
        "",
        "| input | exit old / new | sources rejected old / new | same rejections "
        "| records dropped old / new |",
        "|---|---|---|---|---|",
    ]
    for label, (o, n) in runs.items():
        on_purpose = INTENDED.get(label, {})
        same = o["rejected"] == [r for r in n["rejected"] if r not in on_purpose]
        said = f" (+{len(on_purpose)} on purpose)" if on_purpose else ""
        lines.append(
            f"| {label} | {o['exit']} / {n['exit']} | {len(o['rejected'])} / "
            f"{len(n['rejected'])}{said} | {'yes' if same else 'NO'} | "
            f"{o['dropped']} / {n['dropped']} |"
        )
    lines += [
        "",
        "| table | rows old | rows new | columns | columns that differ |",
        "|---|---|---|---|---|",
    ]
    for kind, r in tables.items():
        lines.append(
            f"| {kind} | {r['rows_old']} | {r['rows_new']} | {r['columns']} | "
            f"{', '.join(r['differ']) or 'none'} |"
        )
    if INTENDED:
        lines += ["", "Refused on purpose by the new pipeline, left out of both sides' rows:", ""]
        lines += [f"* {label}: `{f}`: {why}" for label, fs in INTENDED.items()
                  for f, why in fs.items()]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")


def _rev(src: Path) -> str:
    p = subprocess.run(
        ["git", "-C", str(src), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(src), "status", "--porcelain", "--", "ingest"],
        capture_output=True,
        text=True,
    )
    return p.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--old", type=Path, required=True, help="checkout of the old code")
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--quick", action="store_true", help="leave out the 10,563-file corpus")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "bench" / "pipeline-equivalence.md")
    args = ap.parse_args(argv)
    runs = cases(args.data.resolve(), args.quick)
    with tempfile.TemporaryDirectory() as tmp:
        res = {}
        for side, src in (("old", args.old.resolve()), ("new", REPO)):
            print(f"{side}: {src}", flush=True)
            res[side] = build(src, Path(tmp) / side / "store", runs)
        old, new = stored(Path(tmp) / "old" / "store"), stored(Path(tmp) / "new" / "store")
        purpose = sorted(f for fs in INTENDED.values() for f in fs)
        old = {k: v.filter(~pl.col("source_path").is_in(purpose)) for k, v in old.items()}
        tables = {k: compare_table(old[k], new.get(k, old[k].clear())) for k in old}
    both = {label: (res["old"][label], res["new"][label]) for label, _ in runs}
    write_doc(args.out, both, tables, _rev(args.old), _rev(REPO))
    same = all(
        (o["rejected"], o["exit"], o["dropped"])
        == ([r for r in n["rejected"] if r not in INTENDED.get(label, {})], n["exit"], n["dropped"])
        for label, (o, n) in both.items()
    )
    same = same and all(not r["differ"] and r["rows_old"] == r["rows_new"] for r in tables.values())
    print(f"wrote {args.out}: {'identical' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
