"""What every xamm command line shares: output as a table or ``--json``, ``-v``/``-q`` logging,
``--debug``, shell completion (``shtab``) and a quiet exit when the reader of a pipe goes away."""

from __future__ import annotations

import argparse
import atexit
import gc
import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from xamm_data.cli.terminal import filter_streams, one_line
from xamm_data.errors import XammError
from xamm_data.store.locations import is_uri
from xamm_data.tables.units import canonical as canonical_unit

if TYPE_CHECKING:
    import polars as pl


class UsageError(XammError):
    """Bad command-line usage (exit code 2)."""


#: the shells ``--print-completion`` writes for (shtab's, named here so that building a parser
#: never imports it)
SHELLS = ("bash", "zsh", "tcsh", "fish", "powershell")


def path_arg(value: str) -> Path:
    """A path on the command line; an empty one is a usage error. ``Path("")`` is the current
    folder, so ``xamm-ingest rajaperf "$RUNS"`` with ``RUNS`` unset would read (or write) there.

    Args:
        value: the argument as written.

    Returns:
        The path.
    """
    if not value:
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    return Path(value)


def text_arg(value: str) -> str:
    """A name or other text on the command line (``--machine``, ``--source``, ``--model``, a
    dataset's name ...); an empty or blank one is a usage error: ``--machine "$NAME"`` with
    ``NAME`` unset must not read as no machine given.

    Args:
        value: the argument as written.

    Returns:
        The text as written.
    """
    if not value.strip():
        raise argparse.ArgumentTypeError(
            "expected text, got " + ("an empty string" if not value else "only white space")
        )
    return value


def text_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` (and every subcommand's) with each argument that takes plain text, choices
    aside, checked by :func:`text_arg`: one rule for every command, the ones added later too.

    Args:
        parser: the top-level parser.

    Returns:
        The same parser.
    """
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sub in {id(p): p for p in a.choices.values()}.values():  # aliases share one
                text_arguments(sub)
        elif a.type is None and a.nargs != 0 and not a.choices and a.option_strings != ["-h"]:
            if isinstance(a, (argparse._StoreAction, argparse._AppendAction)):
                a.type = text_arg
    return parser


def store_arg(value: str) -> Path | str:
    """``--store`` on the command line: a local directory, or an object-store URI kept as written;
    an empty one is a usage error (as :func:`path_arg` says).

    Args:
        value: the argument as written.

    Returns:
        The folder, or the URI.
    """
    if not value:
        raise argparse.ArgumentTypeError("expected a store's folder or URI, got an empty string")
    return value if is_uri(value) else Path(value)


def time_unit_arg(value: str) -> str:
    """``--time-unit`` on the command line: a time unit's usual spelling, as its canonical one
    (``sec``, ``ms``, ``usec``, ``ns``); another is a usage error listing the accepted ones.

    Args:
        value: the argument as written.

    Returns:
        The canonical spelling.
    """
    try:
        return canonical_unit(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


class _PrintCompletion(argparse.Action):
    """``--print-completion SHELL``: shtab's completion script of the parser, then exit."""

    def __call__(self, parser, namespace, values, option_string=None):
        import shtab  # completion: only when a script is asked for

        print(shtab.complete(parser, shell=values))
        parser.exit(0)


def add_common(parser: argparse.ArgumentParser, *, subcommand: bool = False) -> None:
    """``-v``/``-q`` (logging level of xamm's loggers), ``--debug`` (tracebacks) and, on the
    top-level parser, ``--print-completion SHELL``. On a subcommand the same options may follow it
    (``xamm-ingest rajaperf DIR -v``)."""
    # keep the top level's
    default = (lambda value: argparse.SUPPRESS) if subcommand else (lambda value: value)
    g = parser.add_argument_group("output")
    g.add_argument(
        "-v", "--verbose", action="count", default=default(0), help="more log messages (-vv: debug)"
    )
    g.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=default(False),
        help="only warnings and errors",
    )
    g.add_argument(
        "--debug",
        action="store_true",
        default=default(False),
        help="show the traceback of an unexpected error",
    )
    if not subcommand:
        parser.add_argument(
            "--print-completion",
            choices=SHELLS,
            action=_PrintCompletion,
            help=f"print a shell completion script ({', '.join(SHELLS)})",
        )


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(
        (dict(a.choices) for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
        {},
    )


def _exits(parser: argparse.ArgumentParser, token: str) -> bool:
    """Whether ``token`` names an option that prints and exits wherever it stands (``-h``,
    ``--version``, ``--print-completion``, or a prefix of one)."""
    if not token.startswith("-") or token == "-":
        return False
    key = token.split("=", 1)[0]
    exiting = (argparse._HelpAction, argparse._VersionAction, _PrintCompletion)
    return key in ("-h", "--help") or any(
        isinstance(a, exiting) and any(o.startswith(key) and len(key) > 2 for o in a.option_strings)
        for a in parser._actions
    )


def parse_command_line(
    parser: argparse.ArgumentParser, argv: list[str] | None
) -> argparse.Namespace:
    """``parser.parse_args(argv)``, except that an option no parser knows, given before the command
    (``xamm --nosuchflag``), is named as such: argparse would first say the command is missing;
    and plain text is never empty (:func:`text_arguments`).

    Args:
        parser: the top-level parser.
        argv: the arguments (None: ``sys.argv[1:]``).

    Returns:
        The parsed arguments.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    text_arguments(parser)
    if any(_exits(parser, token) for token in argv):
        return parser.parse_args(argv)  # help, version or completion wins, as argparse has it
    level, i = parser, 0
    while i < len(argv) and (subs := _subparsers(level)):
        token = argv[i]
        if token == "--":
            break
        if not token.startswith("-") or token == "-":
            if token not in subs:
                break  # argparse names the invalid choice
            level, i = subs[token], i + 1
            continue
        key = token.split("=", 1)[0]
        action = level._option_string_actions.get(key)
        if action is None:
            # a cluster of short flags (-vv), a value attached (-ofile) or a prefix (--deb)
            near = [o for o in level._option_string_actions if o.startswith(key) or key[:2] == o]
            if not near:
                level.error(f"unrecognized arguments: {token}")
            break  # argparse reads the rest as it always does
        takes_value = action.nargs != 0 and "=" not in token
        i += 2 if takes_value else 1
    return parser.parse_args(argv)


class OneLineFormatter(logging.Formatter):
    """Each log record's message on one line (it may name what a user's files hold:
    :func:`~xamm_data.cli.terminal.one_line`); a traceback keeps its lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        return one_line(super().formatMessage(record))


def configure_logging(args: argparse.Namespace) -> None:
    level = (
        logging.WARNING
        if getattr(args, "quiet", False)
        else (
            logging.DEBUG
            if getattr(args, "verbose", 0) > 1
            else logging.INFO
            if getattr(args, "verbose", 0)
            else logging.WARNING
        )
    )
    if not logging.getLogger().handlers:  # a program's own logging setup is left alone
        handler = logging.StreamHandler()
        handler.setFormatter(OneLineFormatter("%(levelname)s %(name)s: %(message)s"))
        logging.basicConfig(level=logging.WARNING, handlers=[handler])
    # huggingface_hub prints its own warnings through its own handler: passed on to ours too, each
    # shows twice
    logging.getLogger("huggingface_hub").propagate = False
    for name in ("xamm_data", "xamm_ingest", "xamm_models"):
        logging.getLogger(name).setLevel(level)


def _is_frame(obj) -> bool:
    """A polars DataFrame (without importing polars: an object can only be one once it is)."""
    pl_ = sys.modules.get("polars")
    return pl_ is not None and isinstance(obj, pl_.DataFrame)


def emit(obj, *, as_json: bool, title: str = "") -> None:
    """A frame (or any JSON-able object) as a table, or as JSON on stdout.

    Args:
        obj: a polars DataFrame, or anything ``json`` writes.
        as_json: JSON instead of a table.
        title: the table's title.
    """
    if as_json:
        data = obj.to_dicts() if _is_frame(obj) else obj
        print(json.dumps(data, indent=2, default=str))
    elif _is_frame(obj):
        # the table printer: loaded when a table is printed
        from xamm_data.cli.summary import print_frame

        print_frame(obj, title=title)
    else:
        print(json.dumps(obj, indent=2, default=str))


def print_frame(
    frame: pl.DataFrame, title: str | None = None, *, file=None, wide: bool = False
) -> None:
    """Print a small frame as a table (:func:`xamm_data.cli.summary.print_frame`, loaded when a
    table is printed, so that a command's parser imports no polars), 100 columns wide.

    Args:
        frame: the table.
        title: its title.
        file: where to print (default: stdout).
        wide: draw it 200 columns wide (``--wide``).
    """
    # the table printer: loaded when a table is printed
    from xamm_data.cli import summary

    summary.print_frame(frame, title, file=file, width=summary.WIDE if wide else summary.WIDTH)


def quiet_pipe(main: Callable[..., int]) -> Callable[..., int]:
    """``xamm ... | head``: when the reader closes the pipe, stop quietly (exit 0, no traceback)."""

    def run(*args, **kwargs) -> int:
        try:
            return main(*args, **kwargs)
        except BrokenPipeError:
            # Python flushes stdout at exit: point it somewhere
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 0

    run.__doc__, run.__name__ = main.__doc__, main.__name__
    run.__wrapped__ = main  # type: ignore[attr-defined]
    return run


#: polars' allocator (jemalloc) in a command: pages freed handed back to the system at once, not
#: kept for seconds. A query's transient buffers (a partition parsed to be aggregated, a batch
#: read and checked) then leave the process's memory when the query ends, so a command's peak is
#: its largest query's, not their sum (``benchmarks/bench_archive.py``,
#: ``benchmarks/bench_compare_memory.py``).
JEMALLOC_CONF = "dirty_decay_ms:0,muzzy_decay_ms:0"


def free_pages_at_once() -> bool:
    """Set :data:`JEMALLOC_CONF` for polars, which reads ``_RJEM_MALLOC_CONF`` when it loads; a
    value the user set wins. Commands only: importing xamm as a library leaves the process's
    allocators alone.

    Returns:
        Whether polars will run with :data:`JEMALLOC_CONF` (False once it has loaded, or when the
        user set another).
    """
    if "polars" in sys.modules:
        return False
    return os.environ.setdefault("_RJEM_MALLOC_CONF", JEMALLOC_CONF) == JEMALLOC_CONF


#: pydantic's plugins in a command: none looked for. Pydantic looks for them when a process makes
#: its first model, in the metadata of every installed package (about 9 ms of a command, however
#: small); a user who wants theirs sets ``PYDANTIC_DISABLE_PLUGINS`` (empty: all of them).
PYDANTIC_PLUGINS = "__all__"


def no_pydantic_plugin_search() -> bool:
    """Set ``PYDANTIC_DISABLE_PLUGINS`` to :data:`PYDANTIC_PLUGINS`, which pydantic reads each
    time a model is made; a value the user set wins. Commands only: importing xamm as a library
    leaves pydantic's plugins alone.

    Returns:
        Whether pydantic will look for no plugins (False when the user set another value).
    """
    return os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", PYDANTIC_PLUGINS) == PYDANTIC_PLUGINS


def console_script(
    main: Callable[[], int | None], *, loads_then_forks: bool = False
) -> Callable[[], NoReturn]:
    """The console script of ``main`` (``[project.scripts]``): its return value, or the code of
    the ``SystemExit`` it raises (``--help``, a usage error), is the exit status, and the process
    ends without the interpreter's teardown (:func:`exit_now`). Its ``stdout`` and ``stderr``
    write control characters as text (:mod:`~xamm_data.cli.terminal`). An exception ``main``
    lets through (``--debug``) ends it as Python does, with a traceback. Polars' allocator hands
    freed pages back at once (:func:`free_pages_at_once`), and pydantic looks for no plugins
    (:func:`no_pydantic_plugin_search`).

    Args:
        main: the command's ``main``, called with no arguments (it reads ``sys.argv``).
        loads_then_forks: ``main`` loads its modules, calls :func:`loaded`, then forks workers:
            the cyclic collector is paused until :func:`loaded` (the recipe of ``gc.freeze``'s
            documentation for a process that forks).
    """

    def run() -> NoReturn:
        global _OWNS_PROCESS
        _OWNS_PROCESS = loads_then_forks
        filter_streams()  # what a message quotes from the user's files is shown, never obeyed
        free_pages_at_once()
        no_pydantic_plugin_search()
        if loads_then_forks:
            gc.disable()
        code: str | int | None
        try:
            code = main()
        except SystemExit as e:
            code = e.code
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)  # what Python does with ``sys.exit("text")``
            code = 1
        exit_now(code or 0)

    run.__doc__, run.__name__ = main.__doc__, main.__name__
    run.loads_then_forks = loads_then_forks  # type: ignore[attr-defined]
    return run


_OWNS_PROCESS = False  # a console script made with loads_then_forks is running


def loaded() -> None:
    """A command's modules are loaded and its work (and forks) begin: in a console script made with
    ``loads_then_forks``, what exists now is frozen (``gc.freeze``: the collector no longer walks
    the modules' objects, and a forked worker's collections do not write to their pages) and the
    collector resumes. Called from Python (``main`` of a program), nothing happens: freezing would
    keep that program's garbage of the moment for good."""
    if _OWNS_PROCESS:
        gc.freeze()
        gc.enable()


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` once a command is done: the exit handlers run (logging's
    flush, temporary directories, multiprocessing's children), stdout and stderr are flushed, and
    ``os._exit`` skips the teardown that frees every object and module one at a time and collects
    them, a cost that grows with what the command made (the system takes the memory back whole).
    With a thread of Python's still running, or a profiler or tracer on (``python -m cProfile``,
    coverage, a debugger: each writes what it gathered once the script returns), Python's own
    exit: ``sys.exit``.

    Args:
        code: the exit status.
    """
    main = threading.main_thread()
    running = any(t is not main and not t.daemon and t.is_alive() for t in threading.enumerate())
    if running or sys.getprofile() is not None or sys.gettrace() is not None:
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader gone (``| head``) or a stream closed
            pass
    os._exit(code)


TABLE_SUFFIXES = (".parquet", ".pq", ".csv", ".json")


def write_table(frame: pl.DataFrame, path) -> str:
    """Write ``frame`` where ``--out`` says, in the format its suffix names (``.parquet`` or
    ``.pq``, ``.csv``, ``.json``); a path without a suffix becomes ``.parquet``.

    Parameters:
        frame: the table.
        path: the ``--out`` path.

    Returns:
        The path written, as a string for messages.

    Raises:
        ValueError: a suffix that names no table format.
    """
    p = Path(path)
    if not p.suffix:
        p = p.with_suffix(".parquet")
    if p.suffix.lower() not in TABLE_SUFFIXES:
        raise ValueError(f"--out {path}: expected a file ending in {', '.join(TABLE_SUFFIXES)}")
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.suffix.lower() == ".csv":
        frame.write_csv(p)
    elif p.suffix.lower() == ".json":
        p.write_text(json.dumps(frame.to_dicts(), indent=2, default=str))
    else:
        frame.write_parquet(p)
    return str(p)
