"""Thicket in and out, against Thicket's own readers (the peer), on the real RAJAPerf ``.cali``
sets.

    python benchmarks/bench_thicket.py [--data ../shared/data] [--repeat 3]
        [--json docs/bench/thicket.json --out docs/bench/thicket.md]

For each set, the best of ``--repeat`` runs of:

* ``Thicket.from_caliperreader(files)`` (the peer: what a Thicket user pays first) and
  ``from_thicket`` of it;
* ``read_rajaperf(files)`` (xamm reading the same files directly);
* ``to_thicket(rows)``, ``tk.to_json()`` and ``Thicket.from_json`` + ``from_thicket`` of the text
  (the round trip).

Prints seconds, rows, and ``from_thicket`` / ``Thicket.from_caliperreader`` (the share xamm adds to
a Thicket read): in-process figures against in-process figures, with the machine's floor
(``python -c pass`` as a process) beside them. ``--json`` writes the figures, from which ``report``
prints the page again (``tests/test_bench_pages.py``).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

from _data import floor_cpu_s, published

REPO = Path(__file__).resolve().parents[1]


def best(fn, repeat: int):
    out, t_best = None, float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        t_best = min(t_best, time.perf_counter() - t)
    return out, t_best


STEPS = (
    ("Thicket.from_caliperreader", "peer"),
    ("from_thicket", "from_thicket"),
    ("read_rajaperf (files)", "read_rajaperf"),
    ("to_thicket", "to_thicket"),
    ("to_json", "to_json"),
    ("from_json + from_thicket", "round_trip"),
)


def sets(data: Path) -> dict[str, list[Path]]:
    """The real RAJAPerf ``.cali`` sets, by name."""
    t = data / "LLNL+thicket" / "thicket" / "tests" / "data" / "rajaperf"
    return {
        "thicket quartz": sorted((t / "quartz").rglob("*.cali")),
        "thicket lassen": sorted((t / "lassen").rglob("*.cali")),
        "tutorial lassen new-cali": sorted(
            (data / "LLNL+thicket-tutorial" / "data" / "lassen" / "new-cali").glob("*.cali")
        ),
    }


def measure(data: Path, repeat: int) -> dict:
    """Each set's seconds per step (the best of ``repeat``), in this process."""
    warnings.filterwarnings("ignore")
    import thicket

    from xamm_data import to_thicket
    from xamm_ingest import from_thicket, read_rajaperf

    out = {}
    for name, files in sets(data).items():
        paths = [str(f) for f in files]
        tk, peer = best(
            lambda: thicket.Thicket.from_caliperreader(paths, disable_tqdm=True), repeat
        )
        rep, t_from = best(lambda: from_thicket(tk), repeat)
        direct, t_direct = best(lambda: read_rajaperf(files, workers=1), repeat)
        xt, t_to = best(lambda: to_thicket(direct.frame), repeat)
        text, t_json = best(xt.to_json, repeat)
        back, t_back = best(lambda: from_thicket(thicket.Thicket.from_json(text)), repeat)
        assert rep.frame.height == direct.frame.height == back.frame.height
        seconds = (peer, t_from, t_direct, t_to, t_json, t_back)
        out[name] = {
            "files": len(files),
            "rows": rep.frame.height,
            **{key: round(x, 4) for (_, key), x in zip(STEPS, seconds)},
        }
    return {"repeat": repeat, "sets": out}


def report(f: dict) -> None:
    """Print the table and the machine's floor beside it."""
    print(f"floor: `python -c pass` {f['floor_cpu_s']:.3f} cpu-s (a process, median of 7)")
    print(f"in this process, best of {f['repeat']} per step, wall seconds")
    print(
        "| set | files | rows | "
        + " | ".join(label for label, _ in STEPS)
        + " | from_thicket / Thicket read |"
    )
    print("|---|---:|---:|" + "---:|" * (len(STEPS) + 1))
    for name, x in f["sets"].items():
        steps = " | ".join(f"{x[key]:.2f} s" for _, key in STEPS)
        print(
            f"| {name} | {x['files']} | {x['rows']} | {steps} | "
            f"{x['from_thicket'] / x['peer']:.2f}x |"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--out", type=Path, help="also write what is printed here (a Markdown page)")
    args = ap.parse_args(argv)
    figures = {**measure(args.data, args.repeat), "floor_cpu_s": floor_cpu_s()}
    published(figures, args.json, args.out, "bench_thicket.py", report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
