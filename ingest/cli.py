"""The ``xamm-ingest`` command (also ``xamm ingest``).

Exit codes: 0 ok, 1 bad input (nothing ingestable, or any rejection with ``--strict``), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EPILOG = """\
examples:
  xamm-ingest rajaperf ./runs                        machine names from the Caliper metadata
  xamm-ingest rajaperf ./h100-runs --machine h100-node
  xamm-ingest rajaperf ./runs --dry-run --json       read and validate only; print the summary as JSON
  xamm-ingest rajaperf ./runs --strict               fail (exit 1, write nothing) if any file is rejected
"""


def build_parser(prog: str = "xamm-ingest") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog, description="Ingest HPC performance outputs into the xamm store.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="format", metavar="FORMAT")
    sub.required = True
    p = sub.add_parser(
        "rajaperf", help="RAJAPerf runs: Caliper .cali / JSON and RAJAPerf's CSV outputs",
        description="Read RAJAPerf outputs (directories are searched recursively) into the benchmark_runs table.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="+", type=Path, help="files or directories")
    p.add_argument("--machine", help="machine id for every file (CSV runs carry none; Caliper files must agree)")
    p.add_argument("--store", type=Path, default=None, help="store root (default: $XAMM_HOME/store)")
    p.add_argument("--workers", type=int, default=None, help="parsing processes (default: CPU count)")
    p.add_argument("--dry-run", action="store_true", help="read and validate, write nothing")
    p.add_argument("--strict", action="store_true", help="any rejected file fails the run (exit 1) and nothing is written")
    p.add_argument("--rtol", type=float, default=1e-4, help="agreement required between CSV and Caliper times (default 1e-4)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    return parser


def _print_report(report, as_json: bool, dry_run: bool) -> None:
    s = report.summary()
    s["rejected_files"] = [{"path": r.path, "reason": r.reason} for r in report.rejected]
    s["notes"] = report.notes
    s["ignored_files"] = len(report.ignored)
    s["dry_run"] = dry_run
    if report.write:
        s["partitions"] = [{"machine": p.machine, "rows_before": p.rows_before, "rows_replaced": p.rows_replaced,
                            "rows_after": p.rows_after, "path": str(p.path)} for p in report.write.partitions]
    if as_json:
        print(json.dumps(s, indent=2, default=str))
        return
    from xamm_data.summary import print_frame, summarize_benchmark_runs

    if report.frame.height:
        print_frame(summarize_benchmark_runs(report.frame), title="ingested benchmark runs")
    print(f"sources read: {s['sources_read']}   rows: {s['rows']}   machines: {', '.join(s['machines']) or '-'}   "
          f"kernels: {s['kernels']}   variants: {', '.join(s['variants']) or '-'}")
    if report.merged_rows:
        print(f"CSV and Caliper rows of the same runs merged: {report.merged_rows}")
    for n in report.notes:
        print(f"note: {n}")
    if report.ignored:
        print(f"ignored {len(report.ignored)} file(s) with nothing to ingest (checksum reports, logs, summaries)")
    if report.write:
        for p in s["partitions"]:
            print(f"wrote {p['path']}: {p['rows_after']} rows ({p['rows_replaced']} replaced)")
    elif dry_run:
        print("dry run: nothing written")
    if report.rejected:
        print(f"rejected {len(report.rejected)} file(s):", file=sys.stderr)
        for r in report.rejected:
            print(f"  {r.reason}", file=sys.stderr)


def main(argv: list[str] | None = None, prog: str = "xamm-ingest") -> int:
    """Entry point of ``xamm-ingest``."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    from xamm_ingest.errors import IngestError
    from xamm_ingest.rajaperf import ingest_rajaperf

    if args.workers is not None and args.workers < 1:
        parser.error("--workers must be >= 1")
    try:
        report = ingest_rajaperf(
            args.paths, machine=args.machine, store=args.store, workers=args.workers, dry_run=args.dry_run,
            strict=args.strict, progress=not args.no_progress and sys.stderr.isatty(), rtol=args.rtol,
        )
    except (IngestError, FileNotFoundError, ValueError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    _print_report(report, args.json, args.dry_run)
    if report.frame.is_empty():
        print(f"{prog}: error: nothing ingestable found under {', '.join(map(str, args.paths))}", file=sys.stderr)
        return 1
    if args.strict and report.rejected:
        print(f"{prog}: error: {len(report.rejected)} file(s) rejected and --strict given; nothing written",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
