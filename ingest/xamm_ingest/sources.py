"""Finding the sources under the paths given to ``xamm-ingest``: files, what is not read, and why.

A dangling symbolic link is reported, not skipped in silence; an OTF2 trace (which Caliper can
write) is named as such, since xamm reads profiles, not traces.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path

from xamm_data.errors import type_name
from xamm_ingest.errors import IngestError
from xamm_ingest.report import Rejected

OTF2_SUFFIXES = (".otf2", ".def", ".evt")
READS = (
    "xamm reads RAJAPerf CSV, Caliper .cali/.json and Thicket "
    "to_json files (xamm-ingest rajaperf), Caliper profiles "
    "(caliper), HPCToolkit databases (hpctoolkit) and CSV/Parquet tables (table)"
)


@dataclass(frozen=True)
class Task:
    """One source to read: a file (or a database directory, or the primary file of a CSV run)."""

    fmt: str
    path: Path
    root: Path
    machine: str | None = None
    run: object = None  # a CsvRun for RAJAPerf CSV runs
    defaults: tuple[tuple[str, object], ...] = ()  # xamm.toml facts (CSV runs, BabelStream)
    # for CSV runs without a machine: why the files beside them could not name one
    why_no_machine: str = ""
    sha256: str | None = None  # the source's hash, when the plan took it (archive ingest)
    # a CSV run without a machine beside Caliper files: it takes the cluster they name when the
    # cross-source step meets their rows (each file parsed once)
    machine_beside: bool = False
    # whether the path is a symbolic link, as the open that hashed it told (None: not known)
    link: bool | None = None
    # the bytes hashed, where the process that reads the source hashed it (read once, not twice)
    data: bytes | None = field(default=None, repr=False, compare=False)


@dataclass
class Plan:
    """What discovery found: tasks to read, files with nothing to ingest, sources refused at
    once."""

    tasks: list[Task] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    root: Path = Path(".")


def same_directory(task: Task) -> str:
    """A format's ``group_of`` for runs whose files share a directory (RAJAPerf's CSV and Caliper
    files of one run; BabelStream's runs of one machine): batches are cut between directories.

    Args:
        task: a source.

    Returns:
        Its directory.
    """
    return str(task.path.parent)


def as_paths(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    """A file, a directory or a list of them, as a list of paths.

    Args:
        paths: what the caller named.

    Raises:
        TypeError: ``paths``, or one of them, is no path.
        ValueError: no path at all, or an empty one (``Path("")`` is the current folder: an
            unset variable would read it).
    """
    if isinstance(paths, (str, os.PathLike)):
        given = [paths]
    elif isinstance(paths, (bytes, dict)) or not isinstance(paths, Iterable):
        raise TypeError(
            f"paths: {type_name(paths, article=True)}; expected a file or folder, or a list of them"
        )
    else:
        given = list(paths)
    if not given:
        raise ValueError("paths: an empty list names no file or folder")
    for p in given:
        if not isinstance(p, (str, os.PathLike)):
            raise TypeError(
                f"paths: {type_name(p, article=True)} among them; expected files or folders"
            )
        if not os.fspath(p):
            raise ValueError("paths: an empty path (it would read the current folder)")
    return [Path(p) for p in given]


def ingest_root(paths: list[Path]) -> Path:
    """The directory source paths are stored relative to: the one directory given, else the common
    parent."""
    if len(paths) == 1 and paths[0].is_dir():
        return paths[0]
    parents = [(p.resolve() if p.is_dir() else p.resolve().parent) for p in paths] or [Path.cwd()]
    return Path(os.path.commonpath([str(p) for p in parents]))


def not_a_source(p: Path) -> Exception:
    """Why ``p``, named as a source, cannot be read: it is not there, or it is there but neither a
    file nor a folder (a named pipe would block a read, a device has no end).

    Args:
        p: a path that is neither a file nor a folder.
    """
    try:
        mode = os.stat(p).st_mode
    except OSError:
        return FileNotFoundError(f"{p}: no such file or directory")
    what = (
        "a named pipe"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "not a regular file"
    )
    return IngestError(p, f"{what}; expected a file or a folder of files")


def list_files(paths: list[Path], plan: Plan) -> list[Path]:
    """Every file at or under ``paths`` (sorted); dangling links and OTF2 traces go to
    ``plan.rejected``."""
    files: list[Path] = []
    for p in paths:
        if p.is_symlink() and not p.exists():
            plan.rejected.append(dangling(p))
        elif p.is_dir():
            for q in sorted(p.rglob("*")):
                if q.is_symlink() and not q.exists():
                    plan.rejected.append(dangling(q))
                elif q.is_file():
                    files.append(q)
        elif p.is_file():
            files.append(p)
        else:
            raise not_a_source(p)
    return _without_traces(files, plan)


def walk_files(paths: list[Path], plan: Plan) -> Iterator[Path]:
    """Every file at or under ``paths``, lazily: each directory's files in name order, then its
    subdirectories in name order. Dangling links and OTF2 traces go to ``plan.rejected``, as in
    :func:`list_files`, which holds the whole list at once; this holds one directory's."""
    for _, _, files in walk_dirs(paths, plan):
        yield from files


def walk_dirs(paths: list[Path], plan: Plan) -> Iterator[tuple[Path, list[str], list[Path]]]:
    """:func:`walk_files` a directory at a time: (the directory, its files' names, its files), so
    that what depends on the directory alone is worked out once for all its files (a file named
    as a source comes as the one file of its parent).

    Args:
        paths: the files and folders given.
        plan: where dangling links and OTF2 traces are refused.
    """
    anchors: set[Path] = set()
    for p in paths:
        if p.is_symlink() and not p.exists():
            plan.rejected.append(dangling(p))
        elif p.is_dir():
            yield from _walk_dir(p, plan, anchors)
        elif p.is_file():
            if kept := _without_traces([p], plan, anchors):
                yield p.parent, [p.name], kept
        else:
            raise not_a_source(p)


_NAME = attrgetter("name")


def _walk_dir(top: Path, plan: Plan, anchors: set[Path]) -> Iterator[tuple[Path, list, list]]:
    """:func:`walk_dirs` under one directory, with ``os.scandir``: the type of each entry comes
    with the listing, so a file costs no ``stat`` of its own (at 10^5 files, most of a walk)."""
    stack = [str(top)]
    while stack:
        here = stack.pop()
        try:
            entries = sorted(os.scandir(here), key=_NAME)
        except OSError:  # unreadable, or gone since it was listed: os.walk skips it too
            continue
        names, dirs = [], []
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                dirs.append(e.path)
            elif e.is_file():  # a link to a file is the file
                names.append(e.name)
            elif e.is_symlink() and not os.path.exists(e.path):  # a link to nothing
                plan.rejected.append(dangling(Path(e.path)))
            # a link to a directory is not followed (as os.walk does not)
        if names:
            directory = Path(here)
            yield directory, *_dir_files(directory, names, plan, anchors)
        stack.extend(reversed(dirs))


def _plain(here: str, names: list[str]) -> bool:
    """Whether none of a directory's files can be part of an OTF2 trace or has a name that is not
    UTF-8 (nearly every directory: its files need no look beyond their names)."""
    joined = "\0".join(names)  # no file name holds a NUL
    try:
        here.encode("utf-8")
        joined.encode("utf-8")
    except UnicodeEncodeError:
        return False
    # one look at every name for the endings first: only a directory holding one looks closer
    low = joined.lower() + "\0"
    if not any(s + "\0" in low for s in OTF2_SUFFIXES):
        return True
    # each ending as _without_traces reads it, a path's suffix (``..otf2`` ends in ``.otf2``)
    return not any(Path(n).suffix.lower() in OTF2_SUFFIXES for n in names)


def _dir_files(
    top: Path, names: list[str], plan: Plan, anchors: set[Path]
) -> tuple[list[str], list[Path]]:
    """(the names, the files) of ``names`` in directory ``top`` that :func:`_without_traces`
    keeps; a child of the directory's path costs less than a path parsed whole, once per file."""
    files = [top / n for n in names]
    if _plain(str(top), names):
        return names, files
    kept = _without_traces(files, plan, anchors)
    return [f.name for f in kept], kept


def dangling(p: Path) -> Rejected:
    return Rejected(
        str(p),
        f"{p}: dangling symbolic link (to {os.readlink(p)}); expected a file or directory",
        problem="dangling symbolic link",
    )


def printable(p: Path | str) -> str:
    """A path as text that prints anywhere: bytes that are not UTF-8 shown as ``\\xff``."""
    return str(p).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _utf8_names(files: list[Path], plan: Plan) -> list[Path]:
    """``files`` whose names are UTF-8 text; each other one is refused by name (the store keeps
    a source's path as text), and the rest go on."""
    out = []
    for f in files:
        try:
            str(f).encode("utf-8")
        except UnicodeEncodeError:
            name = printable(f)
            plan.rejected.append(
                Rejected(
                    name,
                    f"{name}: the file name is not UTF-8 text; rename it to ingest it",
                    problem="file name not UTF-8",
                )
            )
            continue
        out.append(f)
    return out


def _without_traces(files: list[Path], plan: Plan, seen: set[Path] | None = None) -> list[Path]:
    """``files`` without the parts of OTF2 traces (reported once per trace) and without names
    that are not UTF-8 (refused by name); ``seen`` carries the traces of directories already
    walked, whose event files sit in subdirectories."""
    files = _utf8_names(files, plan)
    found = {f.with_suffix("") for f in files if f.suffix.lower() == ".otf2"}
    # a trace met again (its file named as a source beside its folder) is reported once
    new = found - seen if seen is not None else found
    anchors = found | (seen if seen is not None else set())
    if seen is not None:
        seen.update(new)
    for a in sorted(new):
        plan.rejected.append(
            Rejected(
                str(a) + ".otf2",
                f"{a}.otf2: an OTF2 trace; OTF2 traces are not read; {READS}. "
                "Record a profile instead (e.g. CALI_CONFIG=spot or runtime-report)",
                problem="OTF2 traces are not read",
            )
        )

    def in_trace(f: Path) -> bool:
        return f.suffix.lower() in OTF2_SUFFIXES and (
            f.with_suffix("") in anchors
            or any(a in f.parents for a in anchors)
            or f.suffix.lower() == ".otf2"
        )

    return [f for f in files if not in_trace(f)]
