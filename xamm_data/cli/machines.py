"""``xamm machines list|show|add``: the machine registry and its node facts."""

from __future__ import annotations

import argparse

from xamm_data.machines.facts import COUNTS, NODE_FACTS

LIST = "examples:\n  xamm machines list\n  xamm machines list 'mi*' --json\n"
SHOW = "examples:\n  xamm machines show dane\n"
ADD = (
    "examples:\n  xamm machines add newbox --cpu 'AMD EPYC 9654' --sockets 2 "
    "--cores-per-node 192 --memory-bandwidth-gbs 921.6 --source 'vendor specification'\n"
)
EPILOG = LIST + SHOW[len("examples:\n") :] + ADD[len("examples:\n") :]


def add(sub) -> None:
    """Add ``machines`` to ``xamm``."""
    p = sub.add_parser(
        "machines",
        help="list, show and add machines and the facts of their nodes",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    msub = p.add_subparsers(dest="action", metavar="ACTION")
    msub.required = True
    raw = argparse.RawDescriptionHelpFormatter
    q = msub.add_parser(
        "list", help="every machine with its node facts", epilog=LIST, formatter_class=raw
    )
    q.add_argument("pattern", nargs="?", default="*", help="shell-style pattern, e.g. 'xeon*'")
    q.add_argument("--json", action="store_true", help="print as JSON")
    q = msub.add_parser(
        "show",
        help="one machine: what it is, its facts and their sources",
        epilog=SHOW,
        formatter_class=raw,
    )
    q.add_argument("machine", help="a machine id or alias")
    q.add_argument("--json", action="store_true", help="print as JSON")
    q = msub.add_parser(
        "add",
        help="add a machine, or facts of a known one, to $XAMM_HOME/machines.toml",
        epilog=ADD,
        formatter_class=raw,
    )
    q.add_argument("machine", help="a new id, or a known machine whose facts to add or correct")
    q.add_argument("--cpu", help="processor model")
    q.add_argument("--gpu", help="GPU model")
    for field, what in NODE_FACTS:
        kind = int if field in COUNTS else float
        q.add_argument(f"--{field.replace('_', '-')}", type=kind, dest=field, help=what)
    q.add_argument("--alias", action="append", dest="aliases", help="another name (repeatable)")
    q.add_argument("--source", help="where the facts come from")
    q.add_argument("--notes", help="anything else worth saying")
    q.add_argument("--json", action="store_true", help="print the machine as JSON")
    p.set_defaults(handler=run)


def run(args) -> int:
    """The ``machines`` handler.

    Args:
        args: the parsed command line.
    """
    # the command's own work (the registry, the tables): loaded when it runs
    from xamm_data.cli.machine_views import machines_command

    return machines_command(args)
