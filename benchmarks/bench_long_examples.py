"""The ``--help`` examples too long for the test suite, run as written, timed.

    python benchmarks/bench_long_examples.py [--only SUBSTRING ...] [--json]

``tests/test_help_examples.py`` runs every other example in its sandbox and parses these; this
runs them in the same sandbox (the public data as ``../shared/data``, a store built from the data
set's named sources as ``./store``, a local Hub-protocol server for ``zoo push``), in order, so
``zoo push`` finds the zoo ``zoo build`` made. Prints each example's exit code and seconds; exits
1 when one fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from test_help_examples import BIN, LONG, _inputs, _stores  # noqa: E402


def sandbox(root: Path, shared: Path, endpoint: str) -> tuple[Path, dict]:
    """The examples' folder and environment (as the test builds them)."""
    (root / "shared").mkdir()
    (root / "shared" / "data").symlink_to(shared)
    work = root / "work"
    work.mkdir()
    _inputs(work, shared)
    _stores(work, shared)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HF_HUB_OFFLINE")},
        "XAMM_HOME": str(root / "home"),
        "HF_ENDPOINT": endpoint,
        "HF_TOKEN": "hf_xamm_test_token",
        "HF_HUB_DISABLE_XET": "1",
        "HF_HOME": str(root / "hf"),
        "MPLBACKEND": "Agg",
        "PATH": str(BIN) + os.pathsep + os.environ.get("PATH", ""),
    }
    return work, env


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--only", action="append", default=[], help="run examples containing this")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from hub_server import LocalHub

    chosen = [ex for ex in LONG if not args.only or any(s in ex for s in args.only)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, LocalHub() as hub:
        work, env = sandbox(Path(tmp), args.data.resolve(), hub.endpoint)
        for ex in chosen:
            t = time.perf_counter()
            r = subprocess.run(
                ["bash", "-c", ex], cwd=work, env=env, capture_output=True, text=True
            )
            rows.append(
                {
                    "example": ex,
                    "exit": r.returncode,
                    "seconds": round(time.perf_counter() - t, 1),
                    "stderr": r.stderr[-600:] if r.returncode else "",
                }
            )
            print(f"{rows[-1]['exit']:>2} {rows[-1]['seconds']:8.1f} s  {ex}", flush=True)
            if r.returncode:
                print(rows[-1]["stderr"], file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0 if all(r["exit"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
