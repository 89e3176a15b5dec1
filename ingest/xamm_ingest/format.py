"""The format contract: what one input format is, and the registry of every installed one.

One format = one ``Format(...)`` object (xarray's ``BackendEntrypoint`` is the model), registered
through the ``xamm.formats`` entry-point group; its work may be named rather than loaded
(:class:`Deferred`), as xamm's own are in :mod:`xamm_ingest.formats.catalog`. xamm's own formats are
declared in its ``pyproject.toml`` the same way another package declares its own::

    [project.entry-points."xamm.formats"]
    toy = "my_package.toy:FORMAT"

``xamm-ingest`` and ``xamm predict`` are loops over this registry: the command line gets one
sub-command per format (its options from :attr:`Format.add_arguments`), every ingest goes through
one pipeline (:mod:`xamm_ingest.pipeline`), and a profile handed to ``xamm predict`` is read by the
format that :func:`guess_format` finds for it.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xamm_data.errors import XammError
from xamm_data.plugins import plugins
from xamm_data.registry import Registry, UnknownNameError

if TYPE_CHECKING:  # the types only: declaring a format loads neither polars nor its readers
    import polars as pl

    from xamm_data.tables.regions import RegionProfile
    from xamm_data.tables.schema import TableSchema
    from xamm_ingest.readers.base import ReadResult
    from xamm_ingest.sources import Plan, Task

__all__ = [
    "ENTRY_POINT_GROUP",
    "Deferred",
    "Format",
    "UnknownFormatError",
    "UnknownFormatNameError",
    "formats",
    "get_format",
    "guess_format",
    "list_formats",
]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "xamm.formats"


@functools.cache
def _resolve(target: str) -> Any:
    module, _, attr = target.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class Deferred:
    """A format's function named ``"module:attribute"``, imported on its first call.

    A format declared with these loads none of its readers until it is used: ``--help`` lists every
    format, and a command loads only the format it reads (an entry point's laziness, one level
    down). Picklable (it is its name), so workers resolve it themselves.

    Args:
        target: ``"package.module:function"``.
    """

    __slots__ = ("target",)

    def __init__(self, target: str) -> None:
        module, sep, attr = target.partition(":")
        if not (sep and module and attr):
            raise ValueError(f"expected 'module:attribute', not {target!r}")
        self.target = target

    def resolve(self) -> Callable:
        """The function itself (imported once)."""
        return _resolve(self.target)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Deferred) and other.target == self.target

    def __hash__(self) -> int:
        return hash(self.target)

    def __repr__(self) -> str:
        return f"Deferred({self.target!r})"

    def __reduce__(self):
        return (Deferred, (self.target,))


def _as_is(frame: pl.DataFrame, report, opts: dict) -> pl.DataFrame:
    """The default cross-source step: none.

    Args:
        frame: the checked rows.
        report: the ingest's report.
        opts: the format's options.

    Returns:
        ``frame`` as it is.
    """
    return frame


def _same_options(opts: dict) -> dict:
    """The default ``prepare``: the options as given.

    Args:
        opts: the format's options.

    Returns:
        ``opts``.
    """
    return opts


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    """The default ``add_arguments``: no options of its own.

    Args:
        parser: the format's sub-command parser.
    """


def _no_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    """The default ``options``: none.

    Args:
        args: the parsed command line.
        parser: its parser.

    Returns:
        No options.
    """
    return {}


def _no_plan(paths: list[Path], opts: dict) -> Plan:
    """The ``plan`` of a format that stores nothing (never called: :meth:`Format.rows_table`
    refuses first).

    Args:
        paths: files or directories.
        opts: the options.

    Returns:
        Nothing: it raises.
    """
    raise ValueError("this format is read for prediction only; nothing is stored from it")


def _no_read(task: Task, opts: dict) -> ReadResult:
    """The ``read`` of a format that stores nothing (never called).

    Args:
        task: a source.
        opts: the options.

    Returns:
        Nothing: it raises.
    """
    raise ValueError("this format is read for prediction only; nothing is stored from it")


def _no_regions(path: Path, opts: dict) -> RegionProfile:
    """The ``read_regions`` of a format that holds no application profile (never called: only
    formats that read regions are asked).

    Args:
        path: a file or directory.
        opts: the options.

    Returns:
        Nothing: it raises.
    """
    # heavy (pydantic): the profile types load only with a profile
    from xamm_data.tables.regions import RegionProfileError

    raise RegionProfileError(f"{path}: this format holds no application profile")


def _never(path: Path) -> bool:
    """The default ``guess``: the format recognises no path by itself.

    Args:
        path: a file or directory.

    Returns:
        False.
    """
    return False


@dataclass(frozen=True)
class Format:
    """One input format.

    Attributes:
        name: the sub-command (``xamm-ingest NAME``) and the registry key.
        summary: one line for ``--help`` and the format table.
        table: the table its rows go to, or its name (``"benchmark_runs"``: resolved when rows are
            read); None: a format ``xamm predict`` reads, never stored.
        plan: ``plan(paths, opts) -> Plan``: the sources under ``paths`` (files ignored or refused
            at once are listed in the plan, with their reason).
        prepare: ``prepare(opts) -> opts``: checks and completes the options once, before any
            source is read (a missing option is the caller's mistake, told at once).
        read: ``read(task, opts) -> ReadResult``: the rows of one source. Runs in worker
            processes: plain Python and the format's parser, no polars thread pool.
        finish: ``finish(frame, report, opts) -> frame``: what needs several sources at once
            (merging, features); by default the frame as it is.
        guess: ``guess(path) -> bool``: whether ``path`` is this format's (cheap: its name, its
            first bytes), as xarray's ``guess_can_open``.
        read_regions: ``read_regions(path, opts) -> RegionProfile``: the profile region by
            region, for ``xamm predict`` (by default none: the format holds no application
            profile).
        add_arguments: adds the format's own options to its sub-command's parser.
        options: ``options(args, parser) -> dict``: the pipeline options from the parsed command
            line (``parser.error`` for a bad value).
        batched: committed in batches by default (a large corpus of independent sources);
            otherwise read whole and committed once.
        walk: ``walk(paths, opts, plan) -> Iterator[Task]``: the sources lazily, in walk order, for
            a corpus too large to list (default: ``plan``'s tasks).
        group_of: ``group_of(task) -> key``: sources :attr:`finish` must see together (one run's
            files); batches are only cut between groups. None: any source alone.
        description: the sub-command's description (default: the summary).
        examples: command lines for ``--help``, each a runnable example.
    """

    name: str
    summary: str
    table: TableSchema | str | None = None
    plan: Callable[[list[Path], dict], Plan] = _no_plan
    prepare: Callable[[dict], dict] = _same_options
    read: Callable[[Task, dict], ReadResult] = _no_read
    finish: Callable[[pl.DataFrame, object, dict], pl.DataFrame] = _as_is
    guess: Callable[[Path], bool] = _never
    read_regions: Callable[[Path, dict], RegionProfile] = _no_regions
    add_arguments: Callable[[argparse.ArgumentParser], None] = _no_arguments
    options: Callable[[argparse.Namespace, argparse.ArgumentParser], dict] = _no_options
    batched: bool = False
    walk: Callable[[list[Path], dict, Plan], Iterator[Task]] | None = None
    group_of: Callable[[Task], object] | None = None
    description: str = ""
    examples: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.table is not None and (self.plan is _no_plan or self.read is _no_read):
            raise ValueError(f"format {self.name!r} stores rows: it needs plan and read")
        if self.table is None and not self.regions:
            raise ValueError(f"format {self.name!r} neither stores rows nor reads regions")

    @property
    def ingests(self) -> bool:
        """Whether the format's rows go to a table (``xamm-ingest NAME``)."""
        return self.table is not None

    @property
    def regions(self) -> bool:
        """Whether the format reads an application profile region by region."""
        return self.read_regions is not _no_regions

    @property
    def table_name(self) -> str | None:
        """The name of the table the format's rows go to (None: stored nowhere), without loading
        the table's schema."""
        return self.table if isinstance(self.table, str) or self.table is None else self.table.name

    @property
    def rows_table(self) -> TableSchema:
        """The table the format's rows go to; a ``ValueError`` for a format read for prediction
        only."""
        if self.table is None:
            raise ValueError(
                f"format {self.name!r} is read for prediction only; nothing is stored from it"
            )
        if isinstance(self.table, str):
            # heavy (polars): a table's schema, resolved when rows are read
            from xamm_data.tables.schema import TABLES

            if self.table not in TABLES:
                raise ValueError(
                    f"format {self.name!r} names table {self.table!r}; expected one of "
                    + ", ".join(sorted(TABLES))
                )
            return TABLES[self.table]
        return self.table

    def tasks(self, paths: list[Path], opts: dict, plan: Plan) -> Iterator[Task]:
        """The sources to read, lazily where the format can walk.

        Args:
            paths: files or directories.
            opts: the format's options.
            plan: where what discovery ignores or refuses is listed, as it is met.

        Yields:
            Each source's task, in walk order.
        """
        if self.walk is not None:
            yield from self.walk(paths, opts, plan)
            return
        found = self.plan(paths, opts)
        plan.ignored += found.ignored
        plan.rejected += found.rejected
        yield from found.tasks


class UnknownFormatError(XammError, ValueError):
    """No installed format reads a path; the message lists what is installed."""


class UnknownFormatNameError(UnknownNameError, ValueError):
    """A format name no installed format has (a ``ValueError`` too: the caller's mistake); the
    message lists the installed ones and proposes the closest."""


_REGISTRY: Registry[Format] | None = None


def formats() -> Registry[Format]:
    """Every installed format, loaded once from the ``xamm.formats`` entry points.

    A format package that fails to load is left out with a warning naming it: one broken plug-in
    never takes the others down.
    """
    global _REGISTRY
    if _REGISTRY is None:
        reg: Registry[Format] = Registry("format", error=UnknownFormatNameError)
        for ep in plugins(ENTRY_POINT_GROUP).values():
            try:
                fmt = ep.load()
            except Exception as e:  # a third-party package's bug: say it, keep the others
                log.warning(
                    "format %r (%s) did not load: %s: %s", ep.name, ep.value, type(e).__name__, e
                )
                continue
            if not isinstance(fmt, Format) or fmt.name != ep.name:
                log.warning(
                    "entry point %s:%s names %r, not a xamm_ingest.format.Format called %r",
                    ENTRY_POINT_GROUP,
                    ep.name,
                    fmt,
                    ep.name,
                )
                continue
            if ep.name not in reg:
                reg.add(ep.name, fmt)
        if "rajaperf" not in reg:
            raise LookupError(
                f"xamm's own formats are not among the {ENTRY_POINT_GROUP} entry points: reinstall "
                "xamm (pip install -e .) so they are known"
            )
        _REGISTRY = reg
    return _REGISTRY


def get_format(name: str) -> Format:
    """The format called ``name``.

    Args:
        name: a format's name (``rajaperf``, ``caliper``, ...).

    Returns:
        The format; an :class:`UnknownFormatNameError` lists the installed ones.
    """
    return formats().get(name)


def list_formats(*, ingests: bool | None = None, regions: bool | None = None) -> list[Format]:
    """The installed formats, by name.

    Args:
        ingests: keep those that do (True) or do not (False) store rows; None: all.
        regions: keep those that do (True) or do not (False) read a profile's regions; None: all.

    Returns:
        The formats.
    """
    out = [formats().get(n) for n in formats().list()]
    if ingests is not None:
        out = [f for f in out if f.ingests == ingests]
    if regions is not None:
        out = [f for f in out if f.regions == regions]
    return out


_BROKEN_GUESS: set[str] = set()  # formats whose guess raised: warned about once, then skipped


def _guesses(fmt: Format, path: Path) -> bool:
    """``fmt.guess(path)``; a plug-in whose ``guess`` raises is warned about once and skipped, so
    the other formats still answer."""
    if fmt.name in _BROKEN_GUESS:
        return False
    try:
        return bool(fmt.guess(path))
    except Exception as e:  # a third-party package's bug: say it once, keep the others
        _BROKEN_GUESS.add(fmt.name)
        log.warning("format %r: its guess raised %s: %s; skipped", fmt.name, type(e).__name__, e)
        return False


def guess_format(path: str | Path, *, regions: bool = False) -> Format:
    """The format ``path`` is in: the first installed format (by name) whose ``guess`` says yes.

    Args:
        path: a file or directory.
        regions: only formats that read a profile's regions (what ``xamm predict`` takes).

    Returns:
        The format.

    Raises:
        UnknownFormatError: no format recognises it; the message lists the installed ones.
    """
    path = Path(path)
    among = list_formats(regions=True if regions else None)
    for fmt in among:
        if _guesses(fmt, path):
            return fmt
    raise UnknownFormatError(
        f"{path}: not a {'profile' if regions else 'source'} xamm reads (no installed format "
        "recognises it); expected one of: " + "; ".join(f"{f.name}: {f.summary}" for f in among)
    )
