"""Thicket in and out, against Thicket's own readers (the peer), on the real RAJAPerf ``.cali``
sets.

    python benchmarks/bench_thicket.py [--data ../shared/data] [--repeat 3]

For each set, the best of ``--repeat`` runs of:

* ``Thicket.from_caliperreader(files)`` (the peer: what a Thicket user pays first) and
  ``from_thicket`` of it;
* ``read_rajaperf(files)`` (xamm reading the same files directly);
* ``to_thicket(rows)``, ``tk.to_json()`` and ``Thicket.from_json`` + ``from_thicket`` of the text
  (the round trip).

Prints seconds, rows, and ``from_thicket`` / ``Thicket.from_caliperreader`` (the share xamm adds to
a Thicket read).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

from _data import printed_to

REPO = Path(__file__).resolve().parents[1]


def best(fn, repeat: int):
    out, t_best = None, float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        t_best = min(t_best, time.perf_counter() - t)
    return out, t_best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, help="also write what is printed here (a Markdown page)")
    args = ap.parse_args(argv)
    with printed_to(args.out, "bench_thicket.py"):
        return run(args)


def run(args) -> int:
    """Every set timed, printed as a Markdown table."""
    warnings.filterwarnings("ignore")
    import thicket

    from xamm_data import to_thicket
    from xamm_ingest import from_thicket, read_rajaperf

    t = args.data / "LLNL+thicket" / "thicket" / "tests" / "data" / "rajaperf"
    sets = {
        "thicket quartz": sorted((t / "quartz").rglob("*.cali")),
        "thicket lassen": sorted((t / "lassen").rglob("*.cali")),
        "tutorial lassen new-cali": sorted(
            (args.data / "LLNL+thicket-tutorial" / "data" / "lassen" / "new-cali").glob("*.cali")
        ),
    }
    print(
        "| set | files | rows | Thicket.from_caliperreader | "
        "from_thicket | read_rajaperf (files) | to_thicket | "
        "to_json | from_json + from_thicket | from_thicket / Thicket read |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, files in sets.items():
        paths = [str(f) for f in files]
        tk, t_peer = best(
            lambda: thicket.Thicket.from_caliperreader(paths, disable_tqdm=True), args.repeat
        )
        rep, t_from = best(lambda: from_thicket(tk), args.repeat)
        direct, t_direct = best(lambda: read_rajaperf(files, workers=1), args.repeat)
        xt, t_to = best(lambda: to_thicket(direct.frame), args.repeat)
        text, t_json = best(xt.to_json, args.repeat)
        back, t_back = best(lambda: from_thicket(thicket.Thicket.from_json(text)), args.repeat)
        assert rep.frame.height == direct.frame.height == back.frame.height
        print(
            f"| {name} | {len(files)} | {rep.frame.height} | {t_peer:.2f} s | "
            f"{t_from:.2f} s | {t_direct:.2f} s | "
            f"{t_to:.2f} s | {t_json:.2f} s | {t_back:.2f} s | {t_from / t_peer:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
