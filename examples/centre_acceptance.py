"""A centre accepts a machine, updates it and sees the drift (docs/guide/acceptance.md).

Runs every step with the ``xamm`` command line on real public runs in a fresh ``$XAMM_HOME`` and
writes the page from what the commands print (JSON), never from numbers typed by hand:

* dane (thicket's five RAJAPerf runs, clang 14 -O3, 112 ranks) is accepted on its first two runs
  against quartz (the embedded snapshot); a routine update adds the other three: no drift, and
  the rerun certificate changes nothing;
* quartz (the thicket tutorial's runs with GCC 8.3.1: ten at -O3) gets a bad update, a build at
  -O0: the drift is found in every kernel group;
* ``xamm report`` writes the home's static site, with a LULESH profile predicted
  (``docs/guide/acceptance-report/``, linked from the page).

    python examples/centre_acceptance.py [--data ../shared/data] [--page docs/guide/acceptance.md]
        [--report docs/guide/acceptance-report]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

CRITERIA = """\
schema_version = 1
name = "dane against quartz"
size_ratio = 16          # dane's runs are 8M elements over 112 ranks: 75k per rank

[[criterion]]
id = "stream-bandwidth"
description = "Stream at least 80% of quartz's node bandwidth"
kind = "throughput"
groups = ["Stream"]
at_least = 0.8

[[criterion]]
id = "no-slow-group"
description = "no kernel group slower than quartz by more than 10%, node against node"
kind = "slowdown"
groups = ["*"]
at_most = 0.10
"""

DANE = Path("LLNL+thicket-newer/thicket/tests/data/rajaperf/dane/clang14.0.6_8388608/O3")
QUARTZ = Path("LLNL+thicket-tutorial/data/quartz")
LULESH = Path("LLNL+thicket-tutorial/data/lulesh")


def xamm(*argv: str) -> tuple[int, str]:
    """Run ``xamm ARGV`` here; its exit code and what it printed."""
    from xamm_data.cli.commands import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def ingest(*paths: Path) -> None:
    from xamm_ingest.cli import main

    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["rajaperf", *map(str, paths), "--no-progress", "-q", "--workers", "1"])
    if code != 0:
        raise SystemExit(f"ingest of {paths} failed ({code})")


def _copy(files: list[Path], d: Path) -> Path:
    """Files copied into their own folder, each keeping its parent folder's name (one run each)."""
    for f in files:
        (d / f.parent.name).mkdir(parents=True, exist_ok=True)
        shutil.copy(f, d / f.parent.name / f.name)
    return d


def _runs(data: Path, work: Path) -> dict[str, Path]:
    """The four batches of runs."""
    dane = sorted((data / DANE).glob("*/*.cali"))
    o3 = sorted((data / QUARTZ / "GCC_831_BaseSeq_O3_08388608").glob("*.cali"))
    o0 = sorted((data / QUARTZ / "GCC_831_BaseSeq_O0_08388608").glob("*.cali"))
    batches = {"dane-accepted": dane[:2], "dane-routine": dane[2:], "quartz-O3": o3,
               "quartz-O0": o0}  # fmt: skip
    return {name: _copy(files, work / name) for name, files in batches.items()}


def steps(data: Path, work: Path) -> list[dict]:
    """Every step: the command, its exit code and output, and its JSON."""
    work.mkdir(parents=True, exist_ok=True)
    crit = work / "criteria.toml"
    crit.write_text(CRITERIA)
    runs = _runs(data, work)
    log: list[dict] = []

    def run(*argv: str) -> None:
        code, text = xamm(*argv)
        log.append({"argv": list(argv), "code": code, "text": text,
                    "json": json.loads(xamm(*argv, "--json")[1])})  # fmt: skip

    def accept(n: int) -> None:
        out = work / f"certificate-{n}"
        argv = ("accept", "dane", "--against", "quartz", "--criteria", "criteria.toml")
        code, text = xamm(*argv[:-1], str(crit), "--out", str(out))
        cert = json.loads((out / "certificate.json").read_text())
        log.append({"argv": [*argv, "--out", f"certificate-{n}/"], "code": code, "text": text,
                    "json": cert, "markdown": (out / "certificate.md").read_text()})  # fmt: skip

    def build(machine: str) -> None:
        code, text = xamm("amm", "build", machine, "--kind", "physics")
        log.append({"argv": ["amm", "build", machine, "--kind", "physics"], "code": code,
                    "text": text})  # fmt: skip

    ingest(runs["dane-accepted"])
    build("dane")
    accept(1)
    ingest(runs["dane-routine"])
    build("dane")
    run("amm", "history", "dane")
    run("compare", "dane@now", "dane@accepted")
    run("amm", "diff", "dane:cpu@1", "dane:cpu@2")
    accept(2)
    ingest(runs["quartz-O3"])
    build("quartz")
    ingest(runs["quartz-O0"])
    build("quartz")
    run("amm", "history", "quartz")
    run("compare", "quartz@now", "quartz@1")
    report(data, work, log)
    return log


def report(data: Path, work: Path, log: list[dict]) -> None:
    """``xamm report`` of the home, with the thicket tutorial's first LULESH profile predicted:
    the site goes to ``work/acceptance-report``."""
    shutil.copy(sorted((data / LULESH).glob("*.cali"))[0], work / "lulesh.cali")
    argv = ("report", "--out", "acceptance-report/", "--profile", "lulesh.cali")
    code, text = xamm("report", "--out", str(work / "acceptance-report"), "--profile",
                      str(work / "lulesh.cali"), "--json")  # fmt: skip
    log.append({"argv": list(argv), "code": code, "text": text, "json": json.loads(text)})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--data", type=Path, default=Path(__file__).resolve().parents[1].parent / "shared" / "data"
    )
    p.add_argument("--page", type=Path, default=Path("docs/guide/acceptance.md"))
    p.add_argument("--report", type=Path, default=Path("docs/guide/acceptance-report"),
                   help="where the report of the page's home goes (replaced)")  # fmt: skip
    p.add_argument("--log", type=Path, help="also write every step's output as JSON here")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XAMM_HOME"] = str(Path(tmp) / "home")
        log = steps(args.data.resolve(), Path(tmp) / "runs")
        shutil.rmtree(args.report, ignore_errors=True)
        shutil.copytree(Path(tmp) / "runs" / "acceptance-report", args.report)
    import acceptance_page  # beside this script

    acceptance_page.CRITERIA_TEXT = CRITERIA
    args.page.write_text(acceptance_page.page(log))
    if args.log:
        args.log.write_text(json.dumps(log, indent=1, default=str))
    print(f"wrote {args.page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
