"""The content hashes of files xamm has hashed before, found again by what ``stat`` says of them,
so that resuming an archive does not read every file it already holds.

A record ties a file's identity as ``stat`` gives it (its absolute path, device, inode, size,
modification and change times, folded into a 128-bit key) to the first 128 bits of its SHA-256,
the part by which :class:`~xamm_ingest.pipeline.commit.Held` tells a stored source. It is the
assumption ``make``, ``rsync`` and git make: a file whose ``stat`` is unchanged holds what it held.
The change time cannot be set back by any tool short of the clock, and a file changed within
:data:`RACY_S` of being hashed is not recorded (git's "racily clean" entries: a file system's
clock may tick too coarsely to tell two writes apart).

The records only ever spare a read: a file whose recorded hash the table holds is skipped as held;
every other file (no record, another ``stat``, a recorded hash the table does not hold) is hashed
from its bytes, as without the records. A damaged record can therefore only fail to match; a file
skipped wrongly needs a record forged to the byte. ``--rehash`` (``rehash=True``) reads every
file anyway; deleting the file is always safe.

The file, ``$XAMM_HOME/ingest/file-hashes.bin``, is a header line and 32-byte records (four
little-endian unsigned 64-bit integers: the key's halves, the hash's halves), appended under a
lock. A torn last record is ignored (and cut before the next append), a file without the header
is begun anew, and the file is rewritten with each record once when it holds more than twice the
distinct records it is known to hold: those a run read, or else met, and those it made.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from hashlib import blake2b
from pathlib import Path
from typing import Any

from xamm_data.atomic import atomic_path, locked
from xamm_data.paths import xamm_home
from xamm_data.store.counts import find_keys

__all__ = ["FILE", "MAGIC", "MAX_RECORDS", "RACY_S", "FileHashes", "regular", "stat_key"]

log = logging.getLogger("xamm_ingest")

FILE = Path("ingest") / "file-hashes.bin"  # under $XAMM_HOME
MAGIC = b"xamm file hashes v1: key_hi key_lo sha_hi sha_lo, u64 little-endian\n"
RECORD = 32
RACY_S = 2.0  # a file changed this recently when hashed is hashed again next time
MAX_RECORDS = 4_000_000  # past this, a compaction keeps only this run's records
FLUSH_RECORDS = 8192  # records held in memory before they are appended


def stat_key(path: str, st: os.stat_result) -> bytes:
    """The 128-bit key of a file's identity as ``stat`` gives it.

    Args:
        path: the file's absolute path as text (not resolved: a link's target is in ``st``).
        st: its ``os.stat`` (links followed).

    Returns:
        The key, 16 bytes (two little-endian 64-bit halves in the file).
    """
    text = f"{path}\0{st.st_dev}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}"
    return blake2b(text.encode("utf-8", "surrogateescape"), digest_size=16).digest()


def _numpy():
    import numpy as np  # only with records to search: a resumed archive

    return np


class FileHashes:
    """The records of one ``$XAMM_HOME``: looked up by :meth:`known`, added by :meth:`note`,
    appended by :meth:`flush` and :meth:`close`.

    Args:
        path: the records' file (None: keep none, read none).
    """

    def __init__(self, path: Path | None, trusted: bool = True):
        self.path, self.trusted = path, trusted
        self.records: Any = None  # (n, 4) uint64, sorted by key, unique keys; read when searched
        self.stored = _count(path)  # records in the file when the run began (repeats included)
        self.pending = bytearray()
        self.used: Any = None  # which of self.records this run met
        self.noted = 0

    @classmethod
    def open(cls, rehash: bool = False) -> FileHashes:
        """The records of ``$XAMM_HOME``, read at the first search (an ingest into a table that
        holds nothing searches none).

        Args:
            rehash: believe no record (every file is hashed; the hashes are still recorded).
        """
        return cls(xamm_home() / FILE, trusted=not rehash)

    def known(self, keys: list[bytes]) -> list[tuple[int, int] | None]:
        """The recorded hash prefix of each key, or None.

        Args:
            keys: :func:`stat_key` of each file.
        """
        if not keys or not self.trusted or self.path is None:
            return [None] * len(keys)
        if self.used is None:
            self.records = _read(self.path)
            self.used = _numpy().zeros(0 if self.records is None else len(self.records), bool)
        if self.records is None:
            return [None] * len(keys)
        np = _numpy()
        q = np.frombuffer(b"".join(keys), dtype="<u8").reshape(-1, 2).astype(np.uint64)
        at = find_keys(self.records[:, 0], self.records[:, 1], q[:, 0], q[:, 1])
        self.used[at[at >= 0]] = True
        return [None if i < 0 else (int(self.records[i, 2]), int(self.records[i, 3])) for i in at]

    def note(self, key: bytes, sha256: str, st: os.stat_result) -> None:
        """Record that the file with ``key`` holds content ``sha256`` (unless it changed within
        :data:`RACY_S` of now: such a record could outlive a second write in the same tick)."""
        if self.path is None:
            return
        if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) < RACY_S * 1e9:
            return
        # the hash's halves as the integers Held compares (hex is big-endian), stored little-endian
        self.pending += key + bytes.fromhex(sha256[:16])[::-1] + bytes.fromhex(sha256[16:32])[::-1]
        self.noted += 1
        if len(self.pending) >= RECORD * FLUSH_RECORDS:
            self.flush()

    def flush(self) -> None:
        """Append the pending records (a file that cannot be written costs only the speed-up)."""
        if self.path is None or not self.pending:
            return
        data, self.pending = bytes(self.pending), bytearray()
        try:
            with locked(self.path.with_name(self.path.name + ".lock")):
                _append(self.path, data)
        except OSError as e:
            log.debug("file hashes not recorded in %s: %s", self.path, e)

    def close(self) -> None:
        """Append what is pending; then, once the file holds more than twice the distinct records
        it is known to hold (:meth:`_distinct`), rewrite it with each record once (past
        :data:`MAX_RECORDS`: only those this run met or made)."""
        self.flush()
        n = _count(self.path)
        if self.path is None or (n <= 2 * self._distinct() + FLUSH_RECORDS and n <= MAX_RECORDS):
            return
        try:
            with locked(self.path.with_name(self.path.name + ".lock")):
                self._compact()
        except OSError as e:
            log.debug("file hashes not compacted in %s: %s", self.path, e)

    def _distinct(self) -> int:
        """The distinct records the file is taken to hold: those this run read (each key once)
        and made, when it read them (a resumed archive: an ingest of new files into it rewrites
        nothing until repeats make up half the file); else those it met or made."""
        if self.records is not None:
            return len(self.records) + self.noted
        return self.noted + (int(self.used.sum()) if self.used is not None else 0)

    def _compact(self) -> None:
        """Rewrite the file as its unique records (under the lock held by :meth:`close`)."""
        np = _numpy()
        raw = _read_raw(self.path)  # others may have appended since this run read it
        if raw is None or self.path is None:
            return
        if len(raw) > MAX_RECORDS:  # what this run met, and what was appended since it began
            mine = self.records[self.used] if self.records is not None else raw[:0]
            raw = np.concatenate([mine, raw[self.stored :]])
        with atomic_path(self.path) as tmp:
            tmp.write_bytes(MAGIC + _unique(raw).astype("<u8").tobytes())


def _append(path: Path, data: bytes) -> None:
    """Append whole records to ``path`` (under its lock): a file that is not one of records is
    begun anew, and a torn last record is cut first, so every record stays on its boundary."""
    with open(path, "a+b") as f:
        f.seek(0)
        ours = f.read(len(MAGIC)) == MAGIC
        size = f.seek(0, os.SEEK_END)
        if not ours:
            f.truncate(0)
            f.write(MAGIC)
        elif (size - len(MAGIC)) % RECORD:
            f.truncate(size - (size - len(MAGIC)) % RECORD)
        f.write(data)


def _count(path: Path | None) -> int:
    """The records a file holds by its size (0 without one)."""
    try:
        return max(path.stat().st_size - len(MAGIC), 0) // RECORD if path is not None else 0
    except OSError:
        return 0


def _read_raw(path: Path | None) -> Any:
    """The file's records as written, (n, 4) uint64; None when there is no usable file (a torn
    last record is left out)."""
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(len(MAGIC))
            if head != MAGIC:
                if head:
                    log.debug("%s: not a file of file hashes; every file is hashed", path)
                return None
            body = f.read()
    except OSError:
        return None
    np = _numpy()
    n = len(body) // RECORD
    return np.frombuffer(body, dtype="<u8", count=4 * n).reshape(n, 4).astype(np.uint64)


def _read(path: Path | None) -> Any:
    """The file's records sorted and unique by key; None without any."""
    raw = _read_raw(path)
    return _unique(raw) if raw is not None and len(raw) else None


def _unique(raw):
    """``raw`` sorted by key with each key once; a key recorded with two hashes is dropped (either
    is doubtful)."""
    np = _numpy()
    order = np.lexsort((raw[:, 3], raw[:, 2], raw[:, 1], raw[:, 0]))
    r = raw[order]
    if len(r) < 2:
        return r
    same_key = (r[1:, 0] == r[:-1, 0]) & (r[1:, 1] == r[:-1, 1])
    same_all = same_key & (r[1:, 2] == r[:-1, 2]) & (r[1:, 3] == r[:-1, 3])
    r = r[np.concatenate([[True], ~same_all])]  # exact repeats once
    k = np.concatenate([[False], (r[1:, 0] == r[:-1, 0]) & (r[1:, 1] == r[:-1, 1])])
    return r[~(k | np.concatenate([k[1:], [False]]))]


def regular(st: os.stat_result) -> bool:
    """Whether ``st`` is a regular file's (a directory's content is not in its ``stat``)."""
    return stat.S_ISREG(st.st_mode)
