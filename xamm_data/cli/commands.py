"""The ``xamm`` command.

Exit codes: 0 ok, 1 bad input (unknown dataset, invalid data, missing files), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import polars as pl

from xamm_data._version import __version__
from xamm_data.cli import machines as machines_cli
from xamm_data.cli.summary import summarize_benchmark_runs
from xamm_data.cli.tools import add_common, configure_logging, emit, quiet_pipe
from xamm_data.errors import XammError
from xamm_data.extras import install_hint
from xamm_data.hub.datasets import (
    derived_datasets,
    list_datasets,
    load_dataset,
    registry_frame,
    resolve_name,
)
from xamm_data.plugins import plugins
from xamm_data.store.locations import store_arg
from xamm_data.store.store import Store
from xamm_data.tables.schema_files import check_schema_files, write_schema_files
from xamm_data.thicket import to_thicket

EPILOG = """\
examples:
  xamm-ingest rajaperf ./runs --machine quartz     ingest RAJAPerf outputs into the store
  xamm datasets list                               known datasets and what the store holds
  xamm datasets show quartz                        summary of quartz's benchmark runs
  xamm datasets push quartz --repo org/xamm-data --license mit   publish it to the Hub
  xamm datasets history quartz                     the store's versions and what each commit \
ingested
  xamm datasets verify                             check the store's logs and every data file
  xamm store optimize; xamm store vacuum           compact partitions; remove files no version needs
  xamm machines show dane                          a machine and the public facts of its node
  xamm schemas export --check                      check schemas/ matches the code
"""


RAW = argparse.RawDescriptionHelpFormatter


class UsageError(XammError):
    """Bad command-line usage (exit code 2)."""


def _add_store(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store", type=store_arg, default=None, help="store root (default: $XAMM_HOME/store)"
    )


def _add_export(dsub) -> None:
    p = dsub.add_parser(
        "export",
        help="write a machine's benchmark runs as a Thicket (to_json)",
        formatter_class=RAW,
        epilog="examples:\n  xamm datasets export quartz --thicket quartz.json\n"
        "  then in Python: thicket.Thicket.from_json(open('quartz.json').read())\n"
        "  xamm-ingest rajaperf quartz.json   reads it back (or xamm_ingest.from_thicket)",
    )
    p.add_argument("name")
    p.add_argument(
        "--thicket", type=Path, required=True, help="the JSON file to write (Thicket.to_json())"
    )
    p.add_argument(
        "--version", type=int, default=None, help="the store table's version to read (time travel)"
    )
    _add_store(p)


def _add_dataset_writes(dsub) -> None:
    """``xamm datasets`` actions past list and show."""
    p = dsub.add_parser(
        "history",
        help="the store's versions of a dataset's table and what each commit ingested",
        formatter_class=RAW,
        epilog="examples:\n  xamm datasets history quartz\n"
        "  xamm datasets show quartz --version 1   read that version",
    )
    p.add_argument("name")
    p.add_argument("--kind", default="benchmark_runs", choices=["benchmark_runs", "app_profiles"])
    p.add_argument("--json", action="store_true", help="print the history as JSON")
    _add_store(p)
    p = dsub.add_parser(
        "verify",
        help="check the store's logs and data files: every log entry, the "
        "last commit, "
        "every live file's checksum, size and rows",
        formatter_class=RAW,
        epilog="examples:\n  xamm datasets verify            exit 1 on any "
        "problem, one line each\n"
        "  xamm datasets verify --json     the problems as JSON",
    )
    p.add_argument("--json", action="store_true", help="print the problems as JSON")
    _add_store(p)
    _add_export(dsub)
    p = dsub.add_parser(
        "push",
        help="publish a machine's tables to a Hub dataset repo",
        formatter_class=RAW,
        epilog="examples:\n  xamm datasets push quartz --repo org/xamm-data "
        "--license mit\n"
        "  xamm datasets push h100-node --repo org/xamm-data --license "
        "bsd-3-clause --version 1",
    )
    p.add_argument("name")
    p.add_argument("--repo", required=True, help="Hub dataset repo id, e.g. org/xamm-data")
    p.add_argument("--revision", default="main", help="branch to commit to (default: main)")
    p.add_argument(
        "--version",
        type=int,
        default=None,
        help="the store table version to publish (default: latest)",
    )
    p.add_argument("--private", action="store_true")
    p.add_argument(
        "--license",
        action="append",
        required=True,
        dest="licenses",
        help="SPDX id of a source's licence (repeatable), e.g. --license mit "
        "--license bsd-3-clause",
    )
    _add_store(p)


def _add_schemas(sub) -> None:
    """``xamm schemas export [--check]``."""
    sc = sub.add_parser("schemas", help="export or check the language-neutral schema files")
    ssub = sc.add_subparsers(dest="action", metavar="ACTION")
    ssub.required = True
    p = ssub.add_parser(
        "export",
        help="write schemas/*.json from the code's table definitions",
        formatter_class=RAW,
        epilog="examples:\n  xamm schemas export\n  xamm schemas export --check "
        "  exit 1 if schemas/ is stale",
    )
    p.add_argument("--dir", type=Path, default=Path("schemas"))
    p.add_argument("--check", action="store_true", help="do not write; exit 1 if the files differ")
    sc.set_defaults(handler=_schemas)


def register(sub) -> dict:
    """Add the data commands (``datasets``, ``schemas``) to ``xamm``; no pass-through commands."""
    ds = sub.add_parser(
        "datasets",
        help="list, show and publish datasets",
        epilog="examples:\n  xamm datasets list 'xeon*'\n  xamm datasets show "
        "lassen --kind benchmark_runs\n"
        "  xamm datasets push quartz --repo org/xamm-data --license mit",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    dsub = ds.add_subparsers(dest="action", metavar="ACTION")
    dsub.required = True
    p = dsub.add_parser(
        "list",
        help="list known datasets (registry and local store)",
        formatter_class=RAW,
        epilog="examples:\n  xamm datasets list\n  xamm datasets list 'h100*' --json",
    )
    p.add_argument("pattern", nargs="?", default="*", help="shell-style pattern, e.g. 'xeon*'")
    p.add_argument("--json", action="store_true", help="print the listing as JSON")
    _add_store(p)
    p = dsub.add_parser(
        "show",
        help="summarise one dataset",
        formatter_class=RAW,
        epilog="examples:\n  xamm datasets show quartz\n  xamm datasets show "
        "quartz --kind app_profiles --json",
    )
    p.add_argument("name")
    p.add_argument("--kind", default="benchmark_runs", choices=["benchmark_runs", "app_profiles"])
    p.add_argument(
        "--revision", default=None, help="load this Hub revision instead of the local store"
    )
    p.add_argument(
        "--version", type=int, default=None, help="the store table's version to read (time travel)"
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    _add_store(p)
    _add_dataset_writes(dsub)
    ds.set_defaults(handler=_datasets)

    _add_store_commands(sub)
    machines_cli.add(sub)

    _add_schemas(sub)
    return {}


def _add_store_commands(sub) -> None:
    """``xamm store optimize|vacuum``."""
    st = sub.add_parser(
        "store",
        help="housekeeping of the store's Delta tables",
        formatter_class=RAW,
        epilog="examples:\n  xamm store optimize\n  xamm store vacuum "
        "--retention-hours 168 --dry-run",
    )
    ssub = st.add_subparsers(dest="action", metavar="ACTION")
    ssub.required = True
    p = ssub.add_parser(
        "optimize",
        help="compact each machine's partition into one data file",
        formatter_class=RAW,
        epilog="examples:\n  xamm store optimize --kind benchmark_runs",
    )
    p.add_argument(
        "--kind",
        choices=["benchmark_runs", "app_profiles"],
        default=None,
        help="default: every table",
    )
    _add_store(p)
    p = ssub.add_parser(
        "vacuum",
        help="remove files no retained version needs",
        formatter_class=RAW,
        epilog="examples:\n  xamm store vacuum --dry-run\n  xamm store vacuum --retention-hours 0",
    )
    p.add_argument(
        "--kind",
        choices=["benchmark_runs", "app_profiles"],
        default=None,
        help="default: every table",
    )
    p.add_argument(
        "--retention-hours",
        type=int,
        default=168,
        help="keep what versions this recent need (default 168)",
    )
    p.add_argument("--dry-run", action="store_true", help="list, do not remove")
    _add_store(p)
    st.set_defaults(handler=_store)


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    """The ``xamm`` parser, composed from every package's ``xamm.commands`` entry point, and the
    pass-through commands (name -> ``main(argv)``) they declare."""

    parser = argparse.ArgumentParser(
        prog="xamm",
        description="Cross-platform HPC performance data and models.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"xamm {__version__}")
    add_common(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    passthrough: dict = {}
    for ep in plugins("xamm.commands").values():
        passthrough.update(ep.load()(sub) or {})
    return parser, passthrough


def _datasets_list(args, store: Store) -> int:
    reg = registry_frame(store=store).filter(
        pl.col("name").is_in(list_datasets(args.pattern, store=store))
    )
    emit(reg, as_json=args.json, title=f"xamm datasets (store: {store.root})")
    return 0


def _datasets_show(args, store: Store) -> int:
    df = load_dataset(
        args.name, args.kind, store=store, revision=args.revision, version=args.version
    )
    if args.name in derived_datasets():  # labelled pairs, not runs: per machine pair
        summary = (
            df.group_by("source", "target")
            .agg(
                pl.len().alias("pairs"),
                pl.col("app").n_unique().alias("kernels"),
                pl.col("relR").median().alias("median_relR"),
            )
            .sort("source", "target")
        )
        emit(summary, as_json=args.json, title=f"{args.name}: {df.height} labelled pairs")
    elif args.kind == "benchmark_runs":
        emit(
            summarize_benchmark_runs(df),
            as_json=args.json,
            title=f"{args.name}: {df.height} benchmark runs",
        )
    else:
        emit(
            df.group_by("app", "machine", "device").len().sort("app"),
            as_json=args.json,
            title=f"{args.name}: app profiles",
        )
    return 0


def _datasets_history(args, store: Store) -> int:
    name = resolve_name(args.name, store=store)
    h = store.history(args.kind)
    h = h.filter(
        pl.col("xamm").str.contains(f'"{name}"', literal=True)
        | ~pl.col("xamm").str.contains('"rows"', literal=True)
        | pl.col("xamm").is_null()
    )
    if args.json:  # every commit's record as JSON objects, not strings holding JSON
        emit(
            [{**r, "xamm": json.loads(r["xamm"]) if r["xamm"] else None} for r in h.to_dicts()],
            as_json=True,
        )
        return 0
    emit(
        _history_table(h, name),
        as_json=False,
        title=f"{args.kind} versions touching {name} (store: {store.root}; --json: every source)",
    )
    return 0


def _history_table(h: pl.DataFrame, name: str) -> pl.DataFrame:
    """One line per commit: the rows it wrote for ``name``, how many sources and the first of
    them, and the xamm version that wrote it."""
    rows, sources, version = [], [], []
    for raw in h.get_column("xamm").to_list():
        rec = json.loads(raw) if raw else {}
        rows.append((rec.get("rows") or {}).get(name))
        names = rec.get("sources") or []
        n = rec.get("n_sources", len(names))
        more = f" (+{n - 1} more)" if n > 1 else ""
        sources.append(f"{n}: {names[0]}{more}" if names else (f"{n}" if n else ""))
        version.append(rec.get("xamm_version"))
    return h.select("version", "timestamp", "operation").with_columns(
        pl.Series("rows", rows, dtype=pl.Int64),
        pl.Series("sources", sources, dtype=pl.String),
        pl.Series("xamm", version, dtype=pl.String),
    )


def _datasets_verify(args, store: Store) -> int:
    problems = store.verify()
    emit(
        {"store": str(store.root), "problems": problems}
        if args.json
        else pl.DataFrame({"problem": problems}, schema={"problem": pl.String}),
        as_json=args.json,
        title=f"verify {store.root}: {len(problems)} problem(s)",
    )
    return 1 if problems else 0


def _datasets_export(args, store: Store) -> int:
    df = load_dataset(args.name, store=store, version=args.version)
    tk = to_thicket(df)
    args.thicket.write_text(tk.to_json(), encoding="utf-8")
    print(
        f"wrote {args.thicket}: {len(tk.profile)} profiles, {df.height} "
        f"kernel runs of {args.name} "
        "(thicket.Thicket.from_json reads it)"
    )
    return 0


def _datasets_push(args, store: Store) -> int:
    name = resolve_name(args.name, store=store)
    # Hub client: ~0.3 s import, only when a Hub is used
    from xamm_data.hub.publish import push_dataset

    sha = push_dataset(
        name,
        args.repo,
        store=store,
        revision=args.revision,
        private=args.private,
        licenses=args.licenses,
        version=args.version,
    )
    print(f"pushed {name} to {args.repo} (dataset) at commit {sha}")
    return 0


DATASET_ACTIONS = {
    "list": _datasets_list,
    "show": _datasets_show,
    "history": _datasets_history,
    "verify": _datasets_verify,
    "export": _datasets_export,
    "push": _datasets_push,
}


def _datasets(args) -> int:
    if args.action not in DATASET_ACTIONS:
        raise UsageError(args.action)
    return DATASET_ACTIONS[args.action](args, Store(args.store))


def _store(args) -> int:
    store = Store(args.store)
    kinds = [args.kind] if args.kind else ["benchmark_runs", "app_profiles"]
    for kind in kinds:
        if args.action == "optimize":
            done = store.optimize(kind)
            print(
                f"{kind}: "
                + (
                    ", ".join(f"{m} {n} files -> 1" for m, n in done.items())
                    or "nothing to compact"
                )
            )
        elif args.action == "vacuum":
            gone = store.vacuum(kind, retention_hours=args.retention_hours, dry_run=args.dry_run)
            print(f"{kind}: {'would remove' if args.dry_run else 'removed'} {len(gone)} file(s)")
            for g in gone:
                print(f"  {g}")
        else:
            raise UsageError(args.action)
    return 0


def _schemas(args) -> int:
    if args.check:
        diffs = check_schema_files(args.dir)
        for d in diffs:
            print(d, file=sys.stderr)
        if diffs:
            print("run `xamm schemas export` to update", file=sys.stderr)
        return 1 if diffs else 0
    for p in write_schema_files(args.dir):
        print(p)
    return 0


@quiet_pipe
def main(argv: list[str] | None = None) -> int:
    """Entry point of ``xamm``. Exit codes: 0 ok, 1 bad input, 2 usage."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, passthrough = build_parser()
    if argv[:1] and argv[0] in passthrough:
        return passthrough[argv[0]](argv[1:])
    args = parser.parse_args(argv)
    configure_logging(args)
    try:
        return args.handler(args)
    except UsageError as e:
        parser.error(str(e))
    except ModuleNotFoundError as e:  # an optional package not installed: which extra brings it
        if args.debug or install_hint(e) is None:
            raise
        print(f"xamm: error: {install_hint(e)}", file=sys.stderr)
        return 1
    except (
        KeyError,
        ValueError,
        FileNotFoundError,
        OSError,
        PermissionError,
        RuntimeError,
        LookupError,
    ) as e:
        if args.debug or isinstance(e, BrokenPipeError):
            raise
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        print(f"xamm: error: {msg}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
