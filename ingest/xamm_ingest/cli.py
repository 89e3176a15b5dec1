"""The ``xamm-ingest`` command (also ``xamm ingest``): one sub-command per installed format
(:func:`~xamm_ingest.format.list_formats`), each with the common options below and its own
(:attr:`Format.add_arguments <xamm_ingest.format.Format.add_arguments>`), all going through one
pipeline (:func:`xamm_ingest.pipeline.ingest`).

Exit codes: 0 ok, 1 bad input (nothing ingestable, or any rejection with ``--strict``), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from xamm_data.cli.terminal import one_line
from xamm_data.cli.tools import (
    add_common,
    configure_logging,
    console_script,
    loaded,
    parse_command_line,
    path_arg,
    quiet_pipe,
    store_arg,
)
from xamm_data.extras import install_hint
from xamm_ingest import _allocator  # noqa: F401  (before polars loads: see the module)
from xamm_ingest.choices import DEFAULT_BATCH_FILES, EXECUTORS, canonical_executor
from xamm_ingest.errors import IngestError
from xamm_ingest.format import Format, list_formats

if TYPE_CHECKING:
    from xamm_ingest.records import Bounds

BOUNDS_HELP = {
    "benchmark_runs": "min_time_per_rep_s (1e-10), max_time_per_rep_s (1e5), max_bytes_per_rep "
    "(1e16), max_flops_per_rep (1e16), max_problem_size (1e12)",
    "app_profiles": "min_runtime_s (1e-9), max_runtime_s (1e7)",
}


def _examples(fmt: Format) -> list[str]:
    return list(fmt.examples) or [f"xamm-ingest {fmt.name} ./runs --dry-run"]


def _epilog(lines: list[str]) -> str:
    return "examples:\n" + "".join(f"  {line}\n" for line in lines)


def _executor(text: str) -> str:
    try:
        return canonical_executor(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _common_arguments(q: argparse.ArgumentParser, fmt: Format) -> None:
    """The options every format takes: where to write, how to read and commit, what to print."""
    add_common(q, subcommand=True)
    q.add_argument("paths", nargs="+", type=path_arg, help="files or directories")
    q.add_argument(
        "--store", type=store_arg, default=None, help="store root (default: $XAMM_HOME/store)"
    )
    q.add_argument("--dry-run", action="store_true", help="read and validate, write nothing")
    q.add_argument(
        "--strict",
        action="store_true",
        help="any rejected source or record fails the run (exit 1) and nothing is written",
    )
    q.add_argument("--json", action="store_true", help="print the summary as JSON")
    q.add_argument(
        "--bound",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change a plausibility bound (repeatable): "
        + BOUNDS_HELP.get(fmt.table_name or "", "see xamm_ingest.records.Bounds"),
    )
    workers = "parsing processes (default: CPU count; under 256 sources: this one)"
    q.add_argument("--workers", type=int, default=None, help=workers)
    _batch_arguments(q, fmt)
    q.add_argument(
        "--executor",
        type=_executor,
        choices=EXECUTORS,
        default="processes",
        help="where sources are read: here (serial), on local processes, or on the workers of a "
        "Dask cluster (which commits in batches)",
    )
    q.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="a running Dask scheduler (tcp://host:8786); without it --executor dask starts a "
        "LocalCluster of --workers processes",
    )
    q.add_argument("--no-progress", action="store_true", help="no progress bar")
    q.add_argument(
        "--update-machine",
        action="store_true",
        help="let an xamm.toml [node] table change the facts of a machine the registry already "
        "has (by default the differing facts are named and left as they are)",
    )


def _batch_arguments(q: argparse.ArgumentParser, fmt: Format) -> None:
    """The options of a batched ingest: how often it commits, how a rerun finds what it holds."""
    q.add_argument(
        "--batch-files",
        type=int,
        default=None,
        metavar="N",
        help=f"commit every N sources (default {DEFAULT_BATCH_FILES} for "
        + (
            "this format, which commits in batches"
            if fmt.batched
            else "a batched ingest; this format commits once unless N is given"
        )
        + "); a rerun skips what was committed",
    )
    q.add_argument(
        "--rehash",
        action="store_true",
        help="a batched ingest reads every file to hash it, even one unchanged (same stat) since "
        "xamm last hashed it",
    )


def build_parser(prog: str = "xamm-ingest") -> argparse.ArgumentParser:
    """The command line: one sub-command per installed format that stores rows."""
    formats = list_formats(ingests=True)
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Ingest HPC performance outputs into the xamm store.",
        epilog=_epilog([e for f in formats for e in _examples(f)]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(parser)
    sub = parser.add_subparsers(dest="format", metavar="FORMAT")
    sub.required = True
    for fmt in formats:
        q = sub.add_parser(
            fmt.name,
            help=fmt.summary,
            description=fmt.description or fmt.summary,
            epilog=_epilog(_examples(fmt)),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _common_arguments(q, fmt)
        fmt.add_arguments(q)
        q.set_defaults(_format=fmt)
    return parser


def _bounds(args: argparse.Namespace, parser: argparse.ArgumentParser) -> Bounds:
    from xamm_ingest.records import Bounds  # with the record rules (polars): after parsing

    try:
        return Bounds.from_items(args.bound)
    except ValueError as e:
        parser.error(str(e).splitlines()[0])


def _options(args, parser) -> dict:
    """The pipeline's options for the parsed command line: the common ones, then the format's."""
    fmt: Format = args._format
    if args.workers is not None and args.workers < 1:
        parser.error("--workers must be >= 1")
    if args.batch_files is not None and args.batch_files < 1:
        parser.error("--batch-files must be >= 1")
    if args.scheduler and args.executor != "dask":
        parser.error("--scheduler goes with --executor dask")
    if args.strict and args.executor == "dask":
        parser.error(
            "--strict reads everything here before writing; it does not go with --executor dask"
        )
    if args.strict and args.batch_files is not None:
        parser.error("--strict reads everything before writing; it does not go with --batch-files")
    batched = not args.strict and (
        fmt.batched or args.batch_files is not None or args.executor == "dask"
    )
    return {
        "commit": "batches" if batched else "once",
        "batch_files": args.batch_files or DEFAULT_BATCH_FILES,
        "workers": args.workers,
        "executor": args.executor,
        "scheduler": args.scheduler,
        "rehash": args.rehash,
        "progress": not args.no_progress and sys.stderr.isatty(),
        "bounds": _bounds(args, parser),
        **fmt.options(args, parser),
    }


def _nothing(report) -> bool:
    """Nothing ingestable was found (sources already stored count as found)."""
    if _is_archive(report):
        return report.rows == 0 and report.already_stored == 0
    return report.frame.is_empty()


def _is_archive(report) -> bool:
    # the report types (polars) load with the pipeline that made the report
    from xamm_ingest.report import ArchiveReport

    return isinstance(report, ArchiveReport)


def _print_archive(report, s: dict) -> None:
    apps = f"   apps: {', '.join(s['apps']) or '-'}" if report.table == "app_profiles" else ""
    print(
        f"sources read: {s['sources_read']}   rows: {s['rows']}   "
        f"machines: {', '.join(s['machines']) or '-'}{apps}"
    )
    if report.merged_rows:
        print(f"CSV and Caliper rows of the same runs merged: {report.merged_rows}")
    if report.already_stored:
        how = f"; {report.unread} unchanged since hashed, not read" if report.unread else ""
        print(
            f"skipped {report.already_stored} source(s) the store already holds (same SHA-256{how})"
        )
    if report.copies:
        print(f"read {report.copies} byte-identical cop(ies) of other sources once")
    if report.commits:
        print(
            f"wrote {report.rows_written} row(s) in {len(report.commits)} commit(s) "
            f"(versions {report.commits[0]}..{report.commits[-1]}) in {report.seconds:.1f} s"
        )
    for n in report.notes[:5]:
        print(f"note: {one_line(n)}")
    if len(report.notes) > 5:
        print(f"... and {len(report.notes) - 5} more note(s) (all in --json)")


def _print_report(report, args) -> None:
    s = report.as_json()
    s["dry_run"] = args.dry_run
    if report.write:
        s["partitions"] = [
            {
                "machine": p.machine,
                "rows_before": p.rows_before,
                "rows_replaced": p.rows_replaced,
                "rows_after": p.rows_after,
                "path": str(p.path),
            }
            for p in report.write.partitions
        ]
    if args.json:
        print(json.dumps(s, indent=2, default=str))
        return
    if _is_archive(report):
        _print_archive(report, s)
        if args.dry_run:
            print("dry run: nothing written")
        _print_problems(report)
        return
    if report.table == "benchmark_runs" and report.frame.height:
        # the table printer (polars) loads only when there are rows to print
        from xamm_data.cli.summary import print_frame, summarize_benchmark_runs

        print_frame(summarize_benchmark_runs(report.frame), title="ingested benchmark runs")
    what = (
        f"kernels: {s['kernels']}   variants: {', '.join(s['variants']) or '-'}"
        if report.table == "benchmark_runs"
        else f"apps: {', '.join(s['apps']) or '-'}"
    )
    print(
        f"sources read: {s['sources_read']}   rows: {s['rows']}   "
        f"machines: {', '.join(s['machines']) or '-'}   {what}"
    )
    if report.aliases:
        print(
            "machine names resolved through the registry: "
            + one_line(", ".join(f"{n} \u2192 {mid}" for n, mid in sorted(report.aliases.items())))
        )
    if report.merged_rows:
        print(f"CSV and Caliper rows of the same runs merged: {report.merged_rows}")
    for n in report.notes:
        print(f"note: {one_line(n)}")
    if report.ignored:
        print(
            f"ignored {len(report.ignored)} file(s) with nothing to ingest "
            "(checksum reports, logs, summaries)"
        )
    for p in s.get("partitions", []):
        where = one_line(p["path"])
        print(f"wrote {where}: {p['rows_after']} rows ({p['rows_replaced']} replaced)")
    if not report.write and args.dry_run:
        print("dry run: nothing written")
    _print_problems(report)


def _print_problems(report, shown: int = 3) -> None:
    """Rejections grouped by identical reason; dropped records grouped by field (the full lists are
    in --json)."""
    if report.rejected:
        print(f"rejected {len(report.rejected)} source(s):", file=sys.stderr)
        for problem, files in report.grouped():
            if len(files) == 1:
                reason = next(
                    r.reason for r in report.rejected if r.path == files[0] and r.problem == problem
                )
                print(f"  {one_line(reason)}", file=sys.stderr)
            else:
                print(
                    f"  {len(files)} files: {one_line(problem)}  (e.g. "
                    f"{one_line(', '.join(files[:shown]))}; all in --json)",
                    file=sys.stderr,
                )
    if report.dropped:
        print(
            f"dropped {len(report.dropped)} record(s) from sources that were otherwise read:",
            file=sys.stderr,
        )
        for fld, recs in report.grouped_drops():
            for d in recs[:shown]:
                print(f"  {one_line(d.reason)}", file=sys.stderr)
            if len(recs) > shown:
                print(
                    f"  ... and {len(recs) - shown} more record(s) with a bad {fld} "
                    "(all in --json)",
                    file=sys.stderr,
                )


def _ingest(args, opts: dict):
    """The one pipeline, with the commit the command line chose."""
    # the pipeline (polars, the store) loads once a command is parsed, not for --help
    from xamm_ingest.pipeline import ingest

    loaded()
    return ingest(
        args._format,
        args.paths,
        store=args.store,
        dry_run=args.dry_run,
        strict=args.strict,
        update_machines=args.update_machine,
        debug=args.debug,
        **opts,
    )


@quiet_pipe
def main(argv: list[str] | None = None, prog: str = "xamm-ingest") -> int:
    """Entry point of ``xamm-ingest``. Exit codes: 0 ok, 1 bad input, 2 usage."""
    parser = build_parser(prog)
    args = parse_command_line(parser, argv)
    configure_logging(args)
    opts = _options(args, parser)

    # the store's error type (polars) loads with the store
    from xamm_data.store.files import CorruptDataError

    try:
        report = _ingest(args, opts)
    # OSError: a store that cannot be written (a file where a folder goes, no permission, a full
    # disk), as well as a path that is not there
    except (IngestError, OSError, ValueError, CorruptDataError, ModuleNotFoundError) as e:
        if (
            args.debug
            or isinstance(e, BrokenPipeError)
            or (isinstance(e, ModuleNotFoundError) and install_hint(e) is None)
        ):
            raise
        if isinstance(e, ModuleNotFoundError):
            e = IngestError(" ".join(map(str, args.paths)), str(install_hint(e)))
        if args.json:  # machine-readable output promised: the error as JSON too
            print(
                json.dumps(
                    {"error": str(e), "rows": 0, "rejected_files": [], "dropped_records": []},
                    indent=2,
                )
            )
        print(f"{prog}: error: {one_line(e)}", file=sys.stderr)
        return 1
    _print_report(report, args)
    if _nothing(report):
        print(
            f"{prog}: error: nothing ingestable found under "
            + one_line(", ".join(map(str, args.paths))),
            file=sys.stderr,
        )
        return 1
    if args.strict and (report.rejected or report.dropped):
        print(
            f"{prog}: error: {len(report.rejected)} source(s) rejected, "
            f"{len(report.dropped)} record(s) dropped "
            "and --strict given; nothing written",
            file=sys.stderr,
        )
        return 1
    return 0


#: the ``xamm-ingest`` console script (``[project.scripts]``): ``main`` on ``sys.argv``, then
#: :func:`~xamm_data.cli.tools.exit_now`
console = console_script(main, loads_then_forks=True)


if __name__ == "__main__":
    console()
