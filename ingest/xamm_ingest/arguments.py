"""The command-line options of xamm's own formats (:attr:`Format.add_arguments
<xamm_ingest.format.Format.add_arguments>` and, where they need nothing heavy, :attr:`Format.options
<xamm_ingest.format.Format.options>`): declared apart from the readers so that ``xamm-ingest
--help`` builds every sub-command without loading one of them.
"""

from __future__ import annotations

import argparse

from xamm_data.cli.tools import path_arg, time_unit_arg
from xamm_ingest.choices import path_pattern_problem

__all__ = [
    "AGREE_RTOL",
    "add_babelstream_arguments",
    "add_caliper_arguments",
    "add_map_argument",
    "add_rajaperf_arguments",
    "add_sample_arguments",
    "add_table_arguments",
    "babelstream_options",
    "rajaperf_options",
    "table_options",
]

# Two timers of one run (docs/formats.md): same-run pairs differ by a median 1.8e-4 and at most
# 1.2e-2 relative in real outputs; the gross class (another run, a pass count applied twice)
# differs by 2x or more.
AGREE_RTOL = 0.05


def add_rajaperf_arguments(p: argparse.ArgumentParser) -> None:
    """``--machine`` and ``--rtol`` (``rajaperf`` and ``benchpark``).

    Args:
        p: the format's sub-command parser.
    """
    p.add_argument(
        "--machine",
        help="machine id for every file (CSV runs carry none; Caliper files must agree)",
    )
    p.add_argument(
        "--rtol",
        type=float,
        default=None,
        help="relative agreement required between the CSV's and Caliper's times of one run "
        f"(default {AGREE_RTOL}; a record beyond it is refused in both files, see "
        "docs/formats.md)",
    )


def rajaperf_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    """The pipeline options of ``--machine`` and ``--rtol``.

    Args:
        args: the parsed command line.
        parser: its parser (for ``parser.error``).
    """
    if args.rtol is not None and not args.rtol > 0:
        parser.error(f"--rtol must be > 0, not {args.rtol}")
    return {"machine": args.machine, **({} if args.rtol is None else {"rtol": args.rtol})}


def add_babelstream_arguments(p: argparse.ArgumentParser) -> None:
    """What BabelStream does not record: machine, compiler, device, implementation.

    Args:
        p: the format's sub-command parser.
    """
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
        "--one-node",
        action="store_true",
        help="a CPU and a GPU the runs of one machine name are one node's host and GPU; without "
        "it (and without a registry record of both), those runs are refused",
    )
    p.add_argument(
        "--path-pattern",
        action="append",
        default=[],
        metavar="REGEX",
        help="regular expression searched in each file's path under the ingest root; its named "
        "groups machine, compiler, device supply those facts (repeatable: first match wins)",
    )


def babelstream_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    """The pipeline options of the command line; a pattern that does not compile is a usage
    error.

    Args:
        args: the parsed command line.
        parser: its parser (for ``parser.error``).
    """
    for pattern in args.path_pattern:
        if problem := path_pattern_problem(pattern):
            parser.error(f"--path-pattern {pattern!r}: {problem}")
    return {
        "machine": args.machine,
        "device": args.device,
        "compiler": args.compiler,
        "implementation": args.implementation,
        "one_device": args.one_device,
        "one_node": args.one_node,
        "path_patterns": tuple(args.path_pattern),
    }


def add_caliper_arguments(q: argparse.ArgumentParser) -> None:
    """The sample options and ``--map``.

    Args:
        q: the format's sub-command parser.
    """
    add_sample_arguments(q)
    add_map_argument(q)


def add_table_arguments(q: argparse.ArgumentParser) -> None:
    """``--mapping``.

    Args:
        q: the format's sub-command parser.
    """
    q.add_argument(
        "--mapping",
        required=True,
        type=path_arg,
        help="TOML file mapping your columns to canonical ones",
    )


def table_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    """The mapping file.

    Args:
        args: the parsed command line.
        parser: its parser.
    """
    return {"mapping": args.mapping}


def add_sample_arguments(q: argparse.ArgumentParser) -> None:
    """What the user states of every sample on the command line: the application, the machine,
    parameters, ranks, threads, GPUs, device, runtime and time unit (a profile format's
    ``add_arguments`` calls this).

    Args:
        q: the format's sub-command parser.
    """
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
        type=time_unit_arg,
        metavar="UNIT",
        help="unit of a time attribute that states none: s/sec/seconds, "
        "ms/msec, us/usec/\u00b5s/microseconds, ns/nsec",
    )


def add_map_argument(q: argparse.ArgumentParser) -> None:
    """``--map COLUMN=KEY``: which metadata key fills which column (repeatable)."""
    q.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="COLUMN=KEY",
        help="read COLUMN (variant, input_size, input_type, programming_model, ranks, "
        "threads) from metadata key KEY before the default keys (repeatable; an "
        "xamm.toml [metadata] table does the same per directory)",
    )
