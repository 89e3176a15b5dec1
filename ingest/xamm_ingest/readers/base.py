"""What every reader receives and returns."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath

import polars as pl

from xamm_data._version import __version__
from xamm_data.hashing import dir_sha256, file_sha256
from xamm_ingest._frozen import built


@dataclass(frozen=True)
class Source:
    """A file to read: its path, where it sits under the ingest root, and its hash."""

    path: Path
    rel_path: str
    sha256: str
    data: bytes | None = field(default=None, repr=False, compare=False)  # the bytes hashed

    @classmethod
    def of(
        cls,
        path: str | Path,
        root: str | Path | None = None,
        sha256: str | None = None,
        link: bool | None = None,
        data: bytes | None = None,
    ) -> Source:
        """The source at ``path`` under ``root``.

        Args:
            path: the file (or directory).
            root: the ingest root its relative path is taken from (default: its directory).
            sha256: its hash, when the caller hashed it already (else hashed here).
            link: whether the caller's read found the path a symbolic link, if it could tell.
            data: the bytes the caller hashed, for a reader that parses them (read once).
        """
        path = path if isinstance(path, Path) else Path(path)
        rel = relative_path(path, root if root is not None else path.parent, link)
        if sha256 is None:
            sha256 = dir_sha256(path) if path.is_dir() else file_sha256(path)
        # one is made per source: built as __init__ builds it, less its call per field
        return built(cls, {"path": path, "rel_path": rel, "sha256": sha256, "data": data})


@functools.lru_cache(maxsize=256)
def _resolved(directory: str, cwd: str | None) -> str:
    """``directory`` resolved; ``cwd`` is the working directory it was resolved in (None when
    the paths are absolute), kept in the cache's key: a relative path names another file there."""
    return os.path.realpath(directory)


@functools.lru_cache(maxsize=256)
def _resolved_head(directory: str, cwd: str | None) -> str:
    """``directory`` resolved, ending in the separator: what ``os.path.join`` puts before a name
    (one directory's files share it); ``cwd`` as for :func:`_resolved`."""
    real = _resolved(directory, cwd)
    return real if real.endswith(os.sep) else real + os.sep


def relative_path(path: str | Path, root: str | Path, link: bool | None = None) -> str:
    """``path`` relative to ``root`` as POSIX text (both resolved: links followed, as
    ``Path.resolve`` does), or its name when it is not under it. Cached: the pipeline and the
    reader ask it of the same source, and a root is resolved once for all its files.

    Args:
        path: a source.
        root: the ingest root.
        link: whether ``path`` is a symbolic link, where the caller knows (the open that hashed
            it told: :func:`xamm_data.hashing.hash_file`); None: asked here.
    """
    # a Path as its text in one call (os.fspath asks it in two)
    path = str(path) if isinstance(path, PurePath) else os.fspath(path)
    root = str(root) if isinstance(root, PurePath) else os.fspath(root)
    # a relative path is another file in another working directory: the caches key on it
    cwd = None if os.path.isabs(path) and os.path.isabs(root) else os.getcwd()
    return _relative(path, root, link, cwd)


@functools.lru_cache(maxsize=1024)
def _relative(path: str, root: str, link: bool | None, cwd: str | None) -> str:
    # strings, not Path objects: this runs once per source, and a Path costs more than the rest
    sep = os.sep
    path = path.rstrip(sep) or path  # as a Path drops a trailing separator
    # os.path.split in place (this runs once per source), less its trailing separators on the
    # directory, which realpath drops
    cut = path.rfind(sep) + 1
    directory, name = path[:cut], path[cut:]
    own = name  # what a source outside the root is called: its own name, not its target's
    # a file resolves as its directory does (one directory's files share it), a link as the
    # directory of what it points to: its own links followed here, the directory's by realpath
    if link is not False:  # a path the caller knows is no link is not asked
        target, directory, name = _target(path, directory, name)
        if target is None:
            return own
    # os.path.join of the resolved directory and a name (which holds no separator)
    real = _resolved_head(directory or os.curdir, cwd) + name
    if real == _resolved(root, cwd):
        return "."
    head = _resolved_head(root, cwd)
    if real.startswith(head):
        return real[len(head) :].replace(sep, "/")
    return own


def _target(path: str, directory: str, name: str) -> tuple[str | None, str, str]:
    """(the path a chain of links ends at, its directory and name; the path itself where it is no
    link; None past 40 links, as the kernel's ELOOP)."""
    for _ in range(40):
        if not os.path.islink(path):
            return path, directory, name
        path = os.path.join(directory or os.curdir, os.readlink(path))
        directory, name = os.path.split(path)
    return None, directory, name


def _cache_clear() -> None:
    """Forget every resolved path (after a link or directory changed under a process)."""
    for cached in (_relative, _resolved, _resolved_head):
        cached.cache_clear()


relative_path.cache_clear = _cache_clear  # type: ignore[attr-defined]


class ColumnRows(Sequence[dict]):
    """Rows held as columns (one list per field, all of one length), read as the dicts they hold:
    a profile's regions as a reader works them out, handed to the batch frame as they are (its
    builder would take rows apart into columns again:
    :func:`~xamm_ingest.pipeline.row_frames.frame_of_sources`).

    Args:
        columns: each field's values, in row order.
    """

    __slots__ = ("columns",)

    def __init__(self, columns: dict[str, list]) -> None:
        self.columns = columns

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()), ()))

    def __getitem__(self, i):
        if isinstance(i, slice):
            return list(self)[i]
        return {k: v[i] for k, v in self.columns.items()}

    def __iter__(self) -> Iterator[dict]:
        names = list(self.columns)
        return (dict(zip(names, values)) for values in zip(*self.columns.values()))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ColumnRows | list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as a list's: equal to its rows

    def __repr__(self) -> str:
        return f"ColumnRows({list(self)!r})"


@dataclass
class ReadResult:
    """What a reader got from one source.

    ``rows`` (one dict per row, canonical column names) or ``frame`` (readers of tables); ``notes``
    about skipped content; ``dropped``: (record, field, value, rule) of records left out;
    ``shared``: columns every row holds with one value (a file's run metadata and provenance),
    given once and left out of ``rows`` (:meth:`full_rows` puts them back; the batch frame builds
    them once per source: :func:`~xamm_ingest.pipeline.row_frames.frame_of_sources`).
    """

    rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dropped: list[tuple[str, str, str, str]] = field(default_factory=list)
    frame: pl.DataFrame | None = None
    shared: dict = field(default_factory=dict)

    def dropped_record(self, record: str, field_: str, value: object, rule: str) -> None:
        self.dropped.append((record, field_, str(value), rule))

    def full_rows(self) -> list[dict]:
        """Each row with the :attr:`shared` columns (which win over a row's own)."""
        return [{**r, **self.shared} for r in self.rows] if self.shared else self.rows


_TEXT_TYPES = frozenset({str, type(None)})  # the versions whose text is kept (provenance)


@functools.lru_cache(maxsize=256)
def _versions_text(versions: tuple[tuple[str, object], ...]) -> str | None:
    """``tool=version`` pairs as stored, sorted, each tool with a version (cached: a corpus is
    written by one or two versions of its tools)."""
    return ";".join(f"{k}={v}" for k, v in sorted(versions) if v) or None


def provenance(
    src: Source, fmt: str, reader: str, tool_versions: dict[str, str] | None = None, run_date=None
) -> dict:
    """The provenance columns every row carries."""
    versions = tuple((tool_versions or {}).items())
    # kept where each version is text: a cache takes 1, 1.0 and True as one key, and a list as none
    if _TEXT_TYPES.issuperset(map(type, (tool_versions or {}).values())):
        text = _versions_text(versions)
    else:
        text = _versions_text.__wrapped__(versions)
    return {
        "source_path": src.rel_path,
        "source_sha256": src.sha256,
        "source_format": fmt,
        "reader": reader,
        "xamm_version": __version__,
        "tool_versions": text,
        "run_date": run_date,
    }
