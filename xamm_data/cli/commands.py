"""The ``xamm`` command.

Exit codes: 0 ok, 1 bad input (unknown dataset, invalid data, missing files), 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from xamm_data._version import __version__
from xamm_data.cli import machines as machines_cli
from xamm_data.cli.terminal import one_line
from xamm_data.cli.tools import (
    UsageError,
    add_common,
    configure_logging,
    console_script,
    parse_command_line,
    path_arg,
    quiet_pipe,
    store_arg,
)
from xamm_data.extras import install_hint
from xamm_data.plugins import plugins

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
        "--thicket", type=path_arg, required=True, help="the JSON file to write (Thicket.to_json())"
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
    p.add_argument(
        "--dir",
        type=path_arg,
        default=Path("schemas"),
        help="the folder (default: schemas, a checkout's; a wheel holds the code, not the files)",
    )
    p.add_argument("--check", action="store_true", help="do not write; exit 1 if the files differ")
    sc.set_defaults(handler=_work("schemas_command"))


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
    ds.set_defaults(handler=_work("datasets_command"))

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
        type=_hours,
        default=168,
        help="keep what versions this recent need (default 168)",
    )
    p.add_argument("--dry-run", action="store_true", help="list, do not remove")
    _add_store(p)
    st.set_defaults(handler=_work("store_command"))


def _hours(text: str) -> int:
    """``--retention-hours``: whole hours, 0 or more (a negative cutoff lies in the future)."""
    try:
        hours = int(text)
    except ValueError:
        hours = -1
    if hours < 0:
        raise argparse.ArgumentTypeError(f"expected whole hours, 0 or more, not {text!r}")
    return hours


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


def _work(name: str):
    """The handler that runs ``data_commands.<name>``: the command's own work (the store, polars)
    is loaded when it runs, never to build the parser."""

    def handler(args) -> int:
        # the command's own work: loaded when it runs
        from xamm_data.cli import data_commands

        return getattr(data_commands, name)(args)

    return handler


@quiet_pipe
def main(argv: list[str] | None = None) -> int:
    """Entry point of ``xamm``. Exit codes: 0 ok, 1 bad input, 2 usage."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, passthrough = build_parser()
    if argv[:1] and argv[0] in passthrough:
        return passthrough[argv[0]](argv[1:])
    args = parse_command_line(parser, argv)
    configure_logging(args)
    try:
        return args.handler(args)
    except UsageError as e:
        parser.error(str(e))
    except ModuleNotFoundError as e:  # an optional package not installed: which extra brings it
        if args.debug or install_hint(e) is None:
            raise
        return _failed(args, str(install_hint(e)))
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
        return _failed(args, e.args[0] if isinstance(e, KeyError) and e.args else str(e))
    return 0


def _failed(args: argparse.Namespace, message: object) -> int:
    """Say why a command failed on bad input (exit 1): one line on standard error, and, where
    the command was asked for ``--json``, ``{"error": ...}`` on standard output, so that a
    program reading it gets JSON either way.

    Args:
        args: the parsed command line.
        message: what went wrong.
    """
    if getattr(args, "json", False):
        print(json.dumps({"error": str(message)}, indent=2))
    print(f"xamm: error: {one_line(message)}", file=sys.stderr)
    return 1


#: the ``xamm`` console script (``[project.scripts]``): ``main`` on ``sys.argv``, then
#: :func:`~xamm_data.cli.tools.exit_now`
console = console_script(main)


if __name__ == "__main__":
    console()
