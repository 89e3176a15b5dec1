"""The floating-point noise of the paper's pipeline: the within-2x of every entry that trains a
torch model, from full ``xamm eval`` runs of the same code, seeds and data that differ only in the
processor or oneMKL's code branch.

    python benchmarks/processors.py --run NAME=PATH/results.json [--run ...] \\
        [--describe NAME="what differs"] [--out docs/eval/processors.json]

Every run must hold the same data version (``xplat-rajaperf``'s content hash); the file records
it, each run's torch CPU kernels and the entries' pooled within 2x over the kernel-group folds.
``tests/models/benchmark/test_processors.py`` checks the run that is the documentation's against
``docs/eval/results.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# the entries whose figures hang on torch's last bits (an embedder or a VAE-DNN is trained)
TORCH_MARKS = ("attention", "mlp+", "ae+", "vae", "random-amm")


def torch_entries(summary: dict) -> dict[str, float]:
    """Entry -> pooled within 2x over the kernel-group folds, for the entries that train torch."""
    entries = summary["results"]["kernel-group"]["entries"]
    return {
        n: e["pooled"]["all"]["within_2"]["value"]
        for n, e in sorted(entries.items())
        if any(m in n for m in TORCH_MARKS)
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--run", action="append", required=True, metavar="NAME=RESULTS_JSON")
    ap.add_argument("--describe", action="append", default=[], metavar="NAME=TEXT")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "eval" / "processors.json")
    args = ap.parse_args(argv)
    about = dict(d.split("=", 1) for d in args.describe)
    runs, versions = {}, set()
    for spec in args.run:
        name, path = spec.split("=", 1)
        summary = json.loads(Path(path).read_text())
        versions.add(summary["dataset"]["version"])
        runs[name] = {
            "about": about.get(name, ""),
            "torch_cpu_kernels": summary.get("torch_cpu_kernels"),
            "seed": summary["settings"]["seed"],
            "within_2": torch_entries(summary),
        }
    if len(versions) != 1:
        print(
            f"runs of different data versions {sorted(versions)}: not comparable", file=sys.stderr
        )
        return 1
    out = {
        "description": "Within 2x across kernel groups (pooled) of the entries that train a torch "
        "model, from full `xamm eval` runs of one code and data version that differ only in what "
        "each run's `about` says (benchmarks/processors.py).",
        "data_version": versions.pop(),
        "runs": runs,
    }
    args.out.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.out}: {len(runs)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
