"""The ``xamm-ingest`` command (also ``xamm ingest``).

Exit codes: 0 ok, 1 bad input (nothing ingestable, or any rejection with ``--strict``), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from pydantic import ValidationError

from xamm_data.cli_tools import add_common, configure_logging, quiet_pipe
from xamm_data.extras import install_hint
from xamm_data.locations import store_arg
from xamm_data.summary import print_frame, summarize_benchmark_runs
from xamm_data.table_files import CorruptDataError
from xamm_data.units import canonical
from xamm_ingest import _allocator  # noqa: F401  (before polars loads: see the module)
from xamm_ingest.archive import (
    ARCHIVE_FORMATS,
    DEFAULT_BATCH_FILES,
    EXECUTORS,
    ArchiveReport,
    ingest_archive,
)
from xamm_ingest.dispatch import ingest_sources
from xamm_ingest.errors import IngestError
from xamm_ingest.metadata_map import FIELDS, MetadataMap
from xamm_ingest.readers.profile_common import SampleSpec
from xamm_ingest.records import Bounds

EPILOG = """\
examples:
  xamm-ingest rajaperf ./runs                        machine names from the Caliper metadata
  xamm-ingest hpctoolkit ./hpctoolkit-lulesh-database --app LULESH --machine quartz --param \
size=30 --ranks 8
  xamm-ingest caliper ./profiles --app Laghos --machine ruby --time-unit usec
  xamm-ingest caliper ./profiles --app Laghos --machine ruby --time-unit usec --map \
variant=implementation --batch-files 500   a team's key as the variant; a rerun skips what is stored
  xamm-ingest table samples.csv --mapping mapping.toml
  xamm-ingest rajaperf ./h100-runs --machine h100-node
  xamm-ingest rajaperf ./runs --dry-run --json       read and validate only; print the summary as \
JSON
  xamm-ingest rajaperf ./runs --strict               fail (exit 1, write nothing) if any file or \
record is rejected
  xamm-ingest rajaperf ./runs --bound max_time_per_rep_s=1e6   allow slower repetitions than the \
default bound
  xamm-ingest rajaperf tk.json                       a Thicket's to_json() file, one source with \
many profiles
  xamm-ingest babelstream ./stream-runs --machine v100-isambard --dry-run
  xamm-ingest babelstream ./uob --path-pattern 'babelstream-(?P<machine>[a-z0-9]+)_' --dry-run
"""


def _add_rajaperf(sub) -> None:
    """``xamm-ingest rajaperf`` and its options."""
    p = sub.add_parser(
        "rajaperf",
        help="RAJAPerf runs: Caliper .cali / JSON (json-split, format "
        "json(object)), Thicket to_json, CSV",
        description="Read RAJAPerf outputs (directories are searched recursively) "
        "into the benchmark_runs table.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(p, subcommand=True)
    p.add_argument("paths", nargs="+", type=Path, help="files or directories")
    p.add_argument(
        "--machine",
        help="machine id for every file (CSV runs carry none; Caliper files must agree)",
    )
    p.add_argument(
        "--store", type=store_arg, default=None, help="store root (default: $XAMM_HOME/store)"
    )
    p.add_argument(
        "--workers", type=int, default=None, help="parsing processes (default: CPU count)"
    )
    p.add_argument("--dry-run", action="store_true", help="read and validate, write nothing")
    p.add_argument(
        "--strict",
        action="store_true",
        help="any rejected file fails the run (exit 1) and nothing is written",
    )
    p.add_argument(
        "--rtol",
        type=float,
        default=None,
        help="relative agreement required between the CSV's and Caliper's "
        "times of one run (default 0.05; "
        "a record beyond it is refused in both files, see docs/formats.md)",
    )
    p.add_argument(
        "--bound",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change a plausibility bound (repeatable): min_time_per_rep_s "
        "(1e-10), max_time_per_rep_s (1e5), "
        "max_bytes_per_rep (1e16), max_flops_per_rep (1e16), "
        "max_problem_size (1e12)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def _add_babelstream(sub) -> None:
    """``xamm-ingest babelstream`` and its options."""
    p = sub.add_parser(
        "babelstream",
        help="BabelStream outputs (v3-v5, plain or --csv; many runs a file)",
        description="Read BabelStream outputs (directories are searched recursively) into the "
        "benchmark_runs table as Stream_* rows. BabelStream records no machine and no compiler: "
        "say them with --machine/--compiler, an xamm.toml beside the runs, or --path-pattern.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(p, subcommand=True)
    p.add_argument("paths", nargs="+", type=Path, help="files or directories")
    p.add_argument("--machine", help="machine id for every file")
    p.add_argument("--compiler", help="compiler of every file, e.g. gcc-12.1")
    p.add_argument(
        "--device", choices=["cpu", "gpu"], help="for runs that do not name their device"
    )
    p.add_argument(
        "--implementation",
        help="for runs that name none (--csv output), as BabelStream spells it, e.g. CUDA",
    )
    p.add_argument(
        "--one-device",
        action="store_true",
        help="the device names the runs of one machine print are one device (e.g. gfx90a and "
        "'AMD Instinct MI210'); without it, two names of one kind refuse those runs",
    )
    p.add_argument(
        "--path-pattern",
        action="append",
        default=[],
        metavar="REGEX",
        help="regular expression searched in each file's path under the ingest root; its named "
        "groups machine, compiler, device supply those facts (repeatable: first match wins)",
    )
    p.add_argument(
        "--store", type=store_arg, default=None, help="store root (default: $XAMM_HOME/store)"
    )
    p.add_argument(
        "--workers", type=int, default=None, help="parsing processes (default: CPU count)"
    )
    p.add_argument("--dry-run", action="store_true", help="read and validate, write nothing")
    p.add_argument(
        "--strict",
        action="store_true",
        help="any rejected file fails the run (exit 1) and nothing is written",
    )
    p.add_argument(
        "--bound",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change a plausibility bound (repeatable), as for rajaperf",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def _add_table(sub) -> None:
    """``xamm-ingest table``: flattened samples with a column mapping."""
    q = sub.add_parser(
        "table",
        help="samples already flattened to CSV/Parquet, with a column mapping",
        description="Read CSV/Parquet samples into app_profiles using a TOML mapping "
        "(see xamm_ingest.readers.table for its format).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    q.add_argument("paths", nargs="+", type=Path, help="CSV or Parquet files or directories")
    q.add_argument(
        "--mapping",
        required=True,
        type=Path,
        help="TOML file mapping your columns to canonical ones",
    )
    _common_profile_args(q)


def _add_profile_formats(sub) -> None:
    """``xamm-ingest hpctoolkit|caliper|table``: application profiles."""
    for fmt, what in (
        (
            "hpctoolkit",
            "HPCToolkit database directories (old experiment.xml or new meta.db format)",
        ),
        (
            "caliper",
            "Caliper application profiles (.cali, or .json: json-split or format json(object))",
        ),
    ):
        q = sub.add_parser(
            fmt,
            help=what,
            description=f"Read {what} into the app_profiles table, one sample each.",
            epilog=EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        _sample_args(q)
        if fmt == "caliper":
            q.add_argument(
                "--map",
                action="append",
                default=[],
                metavar="COLUMN=KEY",
                help="read COLUMN (variant, input_size, input_type, programming_model, ranks, "
                "threads) from metadata key KEY before the default keys (repeatable; an "
                "xamm.toml [metadata] table does the same per directory)",
            )
        _archive_args(q)
        _common_profile_args(q)
    _add_table(sub)


def _sample_args(q: argparse.ArgumentParser) -> None:
    """What the user states of every sample: the sources, the application, the run."""
    q.add_argument(
        "paths", nargs="+", type=Path, help="databases/files or directories holding them"
    )
    q.add_argument("--app", required=True, help="application name")
    q.add_argument("--machine", help="machine id (required unless the profile names its cluster)")
    q.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="application parameter (repeatable)",
    )
    q.add_argument("--threads", type=int, help="threads per rank")
    q.add_argument("--ranks", type=int, help="MPI ranks (default: from the profile)")
    q.add_argument("--gpus", type=int, help="GPUs used")
    q.add_argument(
        "--device",
        choices=["cpu", "gpu"],
        default=None,
        help="the processor class (default: gpu when the profile's programming model is "
        "CUDA, HIP, SYCL, ...; else cpu)",
    )
    q.add_argument(
        "--runtime-s", type=float, help="runtime in seconds, when the profile has no time metric"
    )
    q.add_argument(
        "--time-unit",
        type=_time_unit,
        metavar="UNIT",
        help="unit of a time attribute that states none: s/sec/seconds, "
        "ms/msec, us/usec/µs/microseconds, ns/nsec",
    )


def _archive_args(q: argparse.ArgumentParser) -> None:
    """Options of the batched, resumable path profiles take (:mod:`xamm_ingest.archive`)."""
    q.add_argument(
        "--workers", type=int, default=None, help="parsing processes (default: CPU count)"
    )
    q.add_argument(
        "--batch-files",
        type=int,
        default=DEFAULT_BATCH_FILES,
        metavar="N",
        help=f"sources per commit (default {DEFAULT_BATCH_FILES}); a rerun skips what was "
        "committed",
    )
    q.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="where files are parsed: local processes, or the workers of a Dask cluster",
    )
    q.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="a running Dask scheduler (tcp://host:8786); without it --executor dask starts a "
        "LocalCluster of --workers processes",
    )
    q.add_argument("--no-progress", action="store_true", help="no progress bar")


def build_parser(prog: str = "xamm-ingest") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Ingest HPC performance outputs into the xamm store.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(parser)
    sub = parser.add_subparsers(dest="format", metavar="FORMAT")
    sub.required = True
    _add_rajaperf(sub)
    _add_babelstream(sub)
    _add_profile_formats(sub)
    return parser


def register_xamm(sub) -> dict:
    """``xamm ingest ...``: the same as ``xamm-ingest ...`` (a pass-through command of ``xamm``)."""
    sub.add_parser(
        "ingest", help="same as the xamm-ingest command (xamm ingest --help)", add_help=False
    )
    return {"ingest": lambda argv: main(argv, prog="xamm ingest")}


def _time_unit(text: str) -> str:
    try:
        return canonical(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _common_profile_args(q: argparse.ArgumentParser) -> None:
    add_common(q, subcommand=True)
    q.add_argument(
        "--store", type=store_arg, default=None, help="store root (default: $XAMM_HOME/store)"
    )
    q.add_argument("--dry-run", action="store_true", help="read and validate, write nothing")
    q.add_argument(
        "--strict",
        action="store_true",
        help="any rejected source or record fails the run (exit 1), nothing written",
    )
    q.add_argument("--json", action="store_true", help="print the summary as JSON")
    q.add_argument(
        "--bound",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change a plausibility bound (repeatable): min_runtime_s (1e-9), max_runtime_s (1e7)",
    )


def _parse_params(items: list[str], parser) -> dict:
    out = {}
    for item in items:
        if "=" not in item:
            parser.error(f"--param {item!r}: expected KEY=VALUE")
        k, v = item.split("=", 1)
        for conv in (int, float):
            try:
                v = conv(v)
                break
            except ValueError:
                continue
        out[k.strip()] = v
    return out


def _bounds(args, parser) -> Bounds:
    try:
        return Bounds.from_items(args.bound)
    except (ValueError, ValidationError) as e:
        parser.error(
            str(e).splitlines()[0]
            if not isinstance(e, ValidationError)
            else f"--bound: {e.errors()[0]['msg']}"
        )


def _options(args, parser) -> dict:
    """The dispatcher's options for the parsed command line."""

    bounds = _bounds(args, parser)
    if args.format == "rajaperf":
        if args.workers is not None and args.workers < 1:
            parser.error("--workers must be >= 1")
        rtol = {} if args.rtol is None else {"rtol": args.rtol}
        return {
            "machine": args.machine,
            "workers": args.workers,
            **rtol,
            "bounds": bounds,
            "progress": not args.no_progress and sys.stderr.isatty(),
        }
    if args.format == "babelstream":
        if args.workers is not None and args.workers < 1:
            parser.error("--workers must be >= 1")
        for pattern in args.path_pattern:
            try:
                re.compile(pattern)
            except re.error as e:
                parser.error(f"--path-pattern {pattern!r}: {e}")
        return {
            "machine": args.machine,
            "device": args.device,
            "compiler": args.compiler,
            "implementation": args.implementation,
            "one_device": args.one_device,
            "path_patterns": tuple(args.path_pattern),
            "workers": args.workers,
            "bounds": bounds,
            "progress": not args.no_progress and sys.stderr.isatty(),
        }
    if args.format == "table":
        return {"mapping": args.mapping, "workers": 1, "bounds": bounds}
    try:
        spec = SampleSpec(
            app=args.app,
            machine=args.machine,
            params=_parse_params(args.param, parser),
            threads=args.threads,
            ranks=args.ranks,
            gpus=args.gpus,
            device=args.device,
            runtime_s=args.runtime_s,
            time_unit=args.time_unit,
        )
    except ValidationError as e:
        err = e.errors()[0]
        parser.error(f"--{str(err['loc'][0]).replace('_', '-')}: {err['msg']}")
    return {"spec": spec, "bounds": bounds, **_archive_options(args, parser)}


def _archive_options(args, parser) -> dict:
    if args.workers is not None and args.workers < 1:
        parser.error("--workers must be >= 1")
    if args.batch_files < 1:
        parser.error("--batch-files must be >= 1")
    if args.scheduler and args.executor != "dask":
        parser.error("--scheduler goes with --executor dask")
    if args.strict and args.executor == "dask":
        parser.error(
            "--strict reads everything here before writing; it does not go with --executor dask"
        )
    out = {
        "workers": args.workers,
        "batch_files": args.batch_files,
        "executor": args.executor,
        "scheduler": args.scheduler,
        "progress": not args.no_progress and sys.stderr.isatty(),
    }
    if getattr(args, "map", None):
        out["metadata_map"] = _metadata_map(args.map, parser)
    return out


def _metadata_map(items: list[str], parser) -> MetadataMap:
    keys: dict[str, list[str]] = {}
    for item in items:
        column, _, key = item.partition("=")
        if column.strip() not in FIELDS or not key.strip():
            parser.error(
                f"--map {item!r}: expected COLUMN=KEY with COLUMN one of {', '.join(FIELDS)}"
            )
        keys.setdefault(column.strip(), []).append(key.strip())
    return MetadataMap(**{c: tuple(k) for c, k in keys.items()})


def _nothing(report) -> bool:
    """Nothing ingestable was found (sources already stored count as found)."""
    if isinstance(report, ArchiveReport):
        return report.rows == 0 and report.already_stored == 0
    return report.frame.is_empty()


def _print_archive(report: ArchiveReport, s: dict) -> None:
    print(
        f"sources read: {s['sources_read']}   rows: {s['rows']}   "
        f"machines: {', '.join(s['machines']) or '-'}   apps: {', '.join(s['apps']) or '-'}"
    )
    if report.already_stored:
        print(f"skipped {report.already_stored} source(s) the store already holds (same SHA-256)")
    if report.copies:
        print(f"read {report.copies} byte-identical cop(ies) of other sources once")
    if report.commits:
        print(
            f"wrote {report.rows_written} row(s) in {len(report.commits)} commit(s) "
            f"(versions {report.commits[0]}..{report.commits[-1]}) in {report.seconds:.1f} s"
        )
    for n in report.notes[:5]:
        print(f"note: {n}")
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
    if isinstance(report, ArchiveReport):
        _print_archive(report, s)
        if args.dry_run:
            print("dry run: nothing written")
        _print_problems(report)
        return
    if report.table == "benchmark_runs" and report.frame.height:
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
            + ", ".join(f"{name} \u2192 {mid}" for name, mid in sorted(report.aliases.items()))
        )
    if report.merged_rows:
        print(f"CSV and Caliper rows of the same runs merged: {report.merged_rows}")
    for n in report.notes:
        print(f"note: {n}")
    if report.ignored:
        print(
            f"ignored {len(report.ignored)} file(s) with nothing to ingest "
            "(checksum reports, logs, summaries)"
        )
    for p in s.get("partitions", []):
        print(f"wrote {p['path']}: {p['rows_after']} rows ({p['rows_replaced']} replaced)")
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
                print(
                    "  "
                    + next(
                        r.reason
                        for r in report.rejected
                        if r.path == files[0] and r.problem == problem
                    ),
                    file=sys.stderr,
                )
            else:
                print(
                    f"  {len(files)} files: {problem}  (e.g. "
                    f"{', '.join(files[:shown])}; all in --json)",
                    file=sys.stderr,
                )
    if report.dropped:
        print(
            f"dropped {len(report.dropped)} record(s) from sources that were otherwise read:",
            file=sys.stderr,
        )
        for fld, recs in report.grouped_drops():
            for d in recs[:shown]:
                print(f"  {d.reason}", file=sys.stderr)
            if len(recs) > shown:
                print(
                    f"  ... and {len(recs) - shown} more record(s) with a bad {fld} "
                    "(all in --json)",
                    file=sys.stderr,
                )


def _ingest(args, opts: dict):
    """Profiles go through the batched, resumable path; ``--strict`` (nothing written unless every
    source is good) and the other formats read everything, then commit once."""
    archive = ("batch_files", "executor", "scheduler")
    if args.format in ARCHIVE_FORMATS and not args.strict:
        return ingest_archive(
            args.format,
            args.paths,
            store=args.store,
            dry_run=args.dry_run,
            debug=args.debug,
            **opts,
        )
    return ingest_sources(
        args.format,
        args.paths,
        store=args.store,
        dry_run=args.dry_run,
        strict=args.strict,
        debug=args.debug,
        **{k: v for k, v in opts.items() if k not in archive},
    )


@quiet_pipe
def main(argv: list[str] | None = None, prog: str = "xamm-ingest") -> int:
    """Entry point of ``xamm-ingest``. Exit codes: 0 ok, 1 bad input, 2 usage."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    configure_logging(args)
    opts = _options(args, parser)

    try:
        report = _ingest(args, opts)
    except (IngestError, FileNotFoundError, ValueError, CorruptDataError, ModuleNotFoundError) as e:
        if args.debug or (isinstance(e, ModuleNotFoundError) and install_hint(e) is None):
            raise
        if isinstance(e, ModuleNotFoundError):
            e = IngestError(f"{' '.join(map(str, args.paths))}: {install_hint(e)}")
        if args.json:  # machine-readable output promised: the error as JSON too
            print(
                json.dumps(
                    {"error": str(e), "rows": 0, "rejected_files": [], "dropped_records": []},
                    indent=2,
                )
            )
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    _print_report(report, args)
    if _nothing(report):
        print(
            f"{prog}: error: nothing ingestable found under {', '.join(map(str, args.paths))}",
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


if __name__ == "__main__":
    sys.exit(main())
