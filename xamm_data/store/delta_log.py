"""The Delta log of a store table, verified like its data files.

delta-rs trusts the log: a flipped bit in a ``_delta_log/<version>.json`` either stops it with an
internal error or, worse, changes what the table holds (a remove action whose path no longer matches
keeps a replaced file alive; a deleted newest entry rolls the table back). xamm checks the log
itself, three ways:

* **Every entry parses**: each line of each log file is one JSON object holding one known action
  with the fields the Delta protocol requires, of the right types (:func:`check_entries`); versions
  are contiguous.
* **The replay is consistent**: a remove names a file an earlier version added; no file is added
  twice while it is live (:func:`replay_problems`).
* **The newest version is the one xamm committed**: after each commit xamm writes a head record,
  ``<table>/_xamm/head.json`` (outside the log, which delta-rs's vacuum leaves alone), holding the
  version, the SHA-256 of that version's log file and a digest of the files it makes live; and each
  commit carries the SHA-256 of the log file of the version it was built on (``log_prev`` in its
  ``xamm`` metadata). A lost newest entry, an edited entry or an edited head is reported
  (:func:`head_problems`, :func:`chain_problems`).

Before delta-rs opens a table, the log lines it is about to read are screened for depth
(:func:`nesting_problems`): its JSON reader ends the process on a line nested tens of thousands of
levels deep, where a Delta action nests a few.

A head behind the log is not an error: another tool may commit, and a writer killed between its
commit and its head leaves the previous head; the next xamm commit catches up. Heads only move
forward.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
import uuid
from dataclasses import dataclass

import polars as pl

from xamm_data.store.files import CorruptDataError
from xamm_data.store.locations import TableLocation
from xamm_data.store.parquet_depth import ParquetDepthError, checked_footer, footer_of

LOG_DIR = "_delta_log"
HEAD = "_xamm/head.json"
_ENTRY = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.\d+\.\d+)?\.parquet$")
SCREEN_BRACKETS = 512  # deepest log line delta-rs is given; a line of more brackets is measured
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")

# The fields each action must carry (Delta protocol, "Actions"), with their JSON types.
_REQUIRED: dict[str, dict[str, type]] = {
    "add": {
        "path": str,
        "partitionValues": dict,
        "size": int,
        "modificationTime": int,
        "dataChange": bool,
    },
    "remove": {"path": str, "dataChange": bool},
    "metaData": {"id": str, "format": dict, "schemaString": str, "partitionColumns": list},
    "protocol": {"minReaderVersion": int, "minWriterVersion": int},
    "commitInfo": {},
    "txn": {"appId": str, "version": int},
    "cdc": {"path": str, "partitionValues": dict, "size": int, "dataChange": bool},
    "domainMetadata": {"domain": str, "configuration": str, "removed": bool},
    "checkpointMetadata": {"version": int},
    "sidecar": {"path": str, "sizeInBytes": int, "modificationTime": int},
}


class CorruptLogError(CorruptDataError):
    """A store table's Delta log is unreadable, inconsistent, or not the one xamm committed."""


def entry_path(version: int) -> str:
    """The table-relative path of a version's log file."""
    return f"{LOG_DIR}/{version:020d}.json"


@dataclass(frozen=True)
class LogListing:
    """The log files of a table: version -> bytes, and the versions that have a checkpoint."""

    entries: dict[int, bytes]
    checkpoints: frozenset[int]


def read_log(loc: TableLocation) -> LogListing:
    """Every JSON log file of a table (bytes by version) and its checkpoint versions."""
    entries, checkpoints = {}, set()
    for name in loc.list_dir(LOG_DIR):
        if m := _ENTRY.match(name):
            entries[int(m[1])] = loc.read_bytes(f"{LOG_DIR}/{name}")
        elif m := _CHECKPOINT.match(name):
            checkpoints.add(int(m[1]))
    return LogListing(entries, frozenset(checkpoints))


def _type_ok(value, want: type) -> bool:
    # JSON booleans are Python ints too: an int field must not take true/false, nor a bool field 0/1
    return type(value) is want if want in (int, bool) else isinstance(value, want)


def _action_problem(action) -> str | None:
    """What is wrong with one parsed log line (None: a well-formed action)."""
    if not isinstance(action, dict) or len(action) != 1:
        return "is not one action (a JSON object with a single key)"
    ((name, body),) = action.items()
    if name not in _REQUIRED:
        return f"holds an unknown action {name!r}"
    if not isinstance(body, dict):
        return f"{name} is not a JSON object"
    for fld, want in _REQUIRED[name].items():
        if fld not in body:
            return f"{name} lacks its {fld!r} field"
        if not _type_ok(body[fld], want):
            return f"{name}.{fld} is {type(body[fld]).__name__}, expected {want.__name__}"
    if name == "add" and body.get("stats") is not None:
        return _stats_problem(body["stats"])
    if name == "commitInfo" and isinstance(body.get("xamm"), str):
        try:
            json.loads(body["xamm"])
        except (ValueError, RecursionError):
            return "commitInfo.xamm is not JSON"
    return None


def _stats_problem(stats) -> str | None:
    try:
        s = json.loads(stats) if isinstance(stats, str) else None
    except (ValueError, RecursionError):
        s = None
    if not isinstance(s, dict):
        return "add.stats is not a JSON object"
    n = s.get("numRecords")
    if n is not None and not (type(n) is int and n >= 0):
        return f"add.stats.numRecords is {n!r}, expected a count"
    return None


def parse_entry(
    kind: str, loc: TableLocation, version: int, data: bytes
) -> tuple[list[dict], list[str]]:
    """The actions of one log file and the problems found in it (each naming the table, file and
    line)."""
    where = loc.display(entry_path(version))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return [], [f"{kind}: {where}: not UTF-8 text (byte {e.start})"]
    actions, problems = [], []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            action = json.loads(line)
        except ValueError as e:
            problems.append(
                f"{kind}: {where} line {n}: not JSON ({getattr(e, 'msg', e)} at column "
                f"{getattr(e, 'colno', '?')})"
            )
            continue
        except RecursionError:  # a commit's actions nest a few levels deep
            problems.append(f"{kind}: {where} line {n}: JSON nested deeper than its parser reads")
            continue
        if (p := _action_problem(action)) is not None:
            problems.append(f"{kind}: {where} line {n}: {p}")
        else:
            actions.append(action)
    if not actions and not problems:
        problems.append(f"{kind}: {where}: empty (a commit holds at least one action)")
    return actions, problems


def check_entries(
    kind: str, loc: TableLocation, log: LogListing
) -> tuple[dict[int, list[dict]], list[str]]:
    """Parse every log file; (actions by version, problems), including missing versions."""
    parsed, problems = {}, []
    for v in sorted(log.entries):
        parsed[v], p = parse_entry(kind, loc, v, log.entries[v])
        problems += p
    if log.entries:
        lo, hi = min(log.entries), max(log.entries)
        gaps = sorted(set(range(lo, hi + 1)) - set(log.entries))
        if gaps:
            problems.append(
                f"{kind}: {loc.display(LOG_DIR)}: version(s) {_ranges(gaps)} "
                f"missing between {lo} and {hi}"
            )
        if lo > 0 and not any(c >= lo - 1 for c in log.checkpoints):
            problems.append(
                f"{kind}: {loc.display(LOG_DIR)}: the log starts at version {lo} "
                "with no checkpoint "
                f"before it (versions 0..{lo - 1} are gone)"
            )
    return parsed, problems


def _ranges(vs: list[int]) -> str:
    out, start = [], vs[0]
    for a, b in zip(vs, [*vs[1:], None]):
        if b != a + 1:
            out.append(str(start) if start == a else f"{start}..{a}")
            if b is not None:
                start = b
    return ", ".join(out)


def replay_problems(
    kind: str, loc: TableLocation, parsed: dict[int, list[dict]], full: bool
) -> list[str]:
    """Replay adds and removes in version order. A remove must name a live file and a file is not
    added twice while live (only checkable when the log is ``full``: it starts at version 0)."""
    if not full:
        return []
    live, problems = set(), []
    for v in sorted(parsed):
        where = loc.display(entry_path(v))
        for a in parsed[v]:
            if "remove" in a:
                path = a["remove"]["path"]
                if path not in live:
                    problems.append(
                        f"{kind}: {where}: removes {path}, which no earlier version added "
                        "(the path in "
                        "the log was altered, so the file it should remove stays in the table)"
                    )
                live.discard(path)
            elif "add" in a:
                path = a["add"]["path"]
                if path in live and not any(
                    r.get("remove", {}).get("path") == path for r in parsed[v]
                ):
                    problems.append(
                        f"{kind}: {where}: adds {path} again while it is live (its rows "
                        "would count twice)"
                    )
                live.add(path)
    return problems


def commit_metadata(parsed_actions: list[dict]) -> dict:
    """The ``xamm`` metadata of a commit (its commitInfo), {} when there is none."""
    for a in parsed_actions:
        if "commitInfo" in a and isinstance(a["commitInfo"].get("xamm"), str):
            try:
                return json.loads(a["commitInfo"]["xamm"])
            except (ValueError, RecursionError):
                return {}
    return {}


def chain_problems(
    kind: str, loc: TableLocation, log: LogListing, parsed: dict[int, list[dict]]
) -> list[str]:
    """Each xamm commit names the SHA-256 of the log file it was built on; that file must still have
    it."""
    problems = []
    for v in sorted(parsed):
        prev = commit_metadata(parsed[v]).get("log_prev")
        if not (isinstance(prev, list) and len(prev) == 2) or prev[0] not in log.entries:
            continue
        if hashlib.sha256(log.entries[prev[0]]).hexdigest() != prev[1]:
            problems.append(
                f"{kind}: {loc.display(entry_path(prev[0]))} changed after "
                f"version {v} was committed on "
                f"it (its SHA-256 no longer matches the one {entry_path(v)} records)"
            )
    return problems


def missing_head_problems(
    kind: str, loc: TableLocation, parsed: dict[int, list[dict]]
) -> list[str]:
    """A log whose newest xamm commit says xamm keeps a head record (it carries ``log_prev``),
    without one."""
    xamm_commits = [v for v in sorted(parsed) if "log_prev" in commit_metadata(parsed[v])]
    # one such commit may be a writer killed before its head: two cannot both have been
    if len(xamm_commits) < 2 or read_head(kind, loc) != (None, []):
        return []
    return [
        f"{kind}: {loc.display(HEAD)} (xamm's record of its last commit, "
        f"version {xamm_commits[-1]} or later) is "
        "missing, so a lost newest log entry could not be told; the next "
        "xamm commit writes it again"
    ]


def state_digest(files: pl.DataFrame) -> str:
    """SHA-256 over the live files of a version: sorted ``machine path size rows`` lines."""
    h = hashlib.sha256()
    for m, p, s, r in (
        files.select("machine", "path", "size", "rows").sort("machine", "path").iter_rows()
    ):
        h.update(f"{m}\0{p}\0{s}\0{r}\n".encode())
    return h.hexdigest()


def _head_body(head: dict) -> bytes:
    return json.dumps({k: v for k, v in head.items() if k != "sha256"}, sort_keys=True).encode()


def read_head(kind: str, loc: TableLocation) -> tuple[dict | None, list[str]]:
    """The head record (None if there is none) and what is wrong with it."""
    try:
        data = loc.read_bytes(HEAD)
    except FileNotFoundError:
        return None, []
    bad = [
        f"{kind}: {loc.display(HEAD)} (xamm's record of its last commit) "
        "is corrupt: restore it, or delete it "
        "to trust the log as it is"
    ]
    try:
        head = json.loads(data)
    except (ValueError, RecursionError):
        return None, bad
    ok = (
        isinstance(head, dict)
        and head.get("table") == kind
        and type(head.get("version")) is int
        and hashlib.sha256(_head_body(head)).hexdigest() == head.get("sha256")
    )
    return (head, []) if ok else (None, bad)


def created_files(kind: str, loc: TableLocation) -> tuple[bytes, pl.DataFrame]:
    """(the log file, the live files) of a table's first version, read from its log entry alone:
    the files a new table holds are the ones its first commit adds (the head of a table xamm just
    created is recorded without opening it in delta-rs, which would load a snapshot to list the
    files the commit has just named).

    Args:
        kind: the table.
        loc: where it lives.

    Returns:
        The entry's bytes and its (machine, path, size, rows) frame, as the opened table lists
        them (paths as the log spells them).
    """
    data = loc.read_bytes(entry_path(0))
    actions, problems = parse_entry(kind, loc, 0, data)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise CorruptLogError(problems[0] + more)
    adds = [a["add"] for a in actions if "add" in a]
    machines = [a["partitionValues"].get("machine") for a in adds]
    for a, m in zip(adds, machines):
        if not isinstance(m, str):
            raise CorruptLogError(
                f"{kind}: {loc.display(entry_path(0))}: add {a['path']!r} has partition value "
                f"machine={m!r}, expected a machine name"
            )
    files = pl.DataFrame(
        {
            "machine": machines,
            "path": [a["path"] for a in adds],
            "size": [a["size"] for a in adds],
            "rows": [json.loads(a.get("stats") or "{}").get("numRecords") for a in adds],
        },
        schema={"machine": pl.String, "path": pl.String, "size": pl.Int64, "rows": pl.Int64},
    )
    return data, files.sort("machine", "path")


def write_head(
    kind: str, loc: TableLocation, version: int, files: pl.DataFrame, entry: bytes | None = None
) -> None:
    """Record ``version`` as the last commit xamm made (never moving the head back).

    Args:
        kind: the table.
        loc: where it lives.
        version: the version committed.
        files: its live files (machine, path, size, rows).
        entry: its log file's bytes, when already read (default: read here).
    """
    head, _ = read_head(kind, loc)
    if head is not None and head["version"] > version:
        return
    if entry is None:
        entry = loc.read_bytes(entry_path(version))
    new = {
        "table": kind,
        "version": version,
        "log_sha256": hashlib.sha256(entry).hexdigest(),
        "state_sha256": state_digest(files),
    }
    new["sha256"] = hashlib.sha256(_head_body(new)).hexdigest()
    loc.put(
        HEAD,
        json.dumps(new, sort_keys=True, indent=1).encode(),
        tmp_name=f".head-{os.getpid()}-{uuid.uuid4().hex}.tmp",
    )


def _entry_matches(loc: TableLocation, head: dict) -> bool:
    """The log entry of the head's version is there, with the SHA-256 the head records: a
    concurrent commit landed between listing the log and reading the head, nothing is lost."""
    try:
        data = loc.read_bytes(entry_path(head["version"]))
    except FileNotFoundError:
        return False
    return hashlib.sha256(data).hexdigest() == head.get("log_sha256")


def head_problems(kind: str, loc: TableLocation, version: int, files: pl.DataFrame) -> list[str]:
    """Whether the table's latest ``version`` (with its live ``files``) is the one xamm last
    committed."""
    head, problems = read_head(kind, loc)
    if head is None or head["version"] < version:
        return problems
    if head["version"] > version:
        if _entry_matches(loc, head):  # another writer committed after the log was listed
            return []
        return [
            f"{kind}: xamm committed version {head['version']} but the log ends at {version}: "
            f"{loc.display(entry_path(version + 1))} and later are missing "
            "(restore them; without them the "
            f"table reads as it was at version {version})"
        ]
    try:
        log_sha = hashlib.sha256(loc.read_bytes(entry_path(version))).hexdigest()
    except FileNotFoundError:
        log_sha = None
    if log_sha != head.get("log_sha256"):
        return [
            f"{kind}: {loc.display(entry_path(version))} is not the log entry "
            "xamm committed (its SHA-256 "
            "differs from the head record's)"
        ]
    if state_digest(files) != head.get("state_sha256"):
        return [
            f"{kind}: the files {loc.display(LOG_DIR)} makes live at version "
            f"{version} are not those xamm "
            "committed (an entry was altered)"
        ]
    return []


def _depth(line: bytes) -> int:
    """How deep ``line`` nests, its strings left out (text that is no JSON is measured all the
    same: delta-rs's reader descends into it before it finds the fault)."""
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", line))
    return max(itertools.accumulate(1 if c in b"[{" else -1 for c in brackets), default=0)


def nesting_problems(
    kind: str, loc: TableLocation, version: int | None = None, every: bool = False
) -> list[str]:
    """The lines of the log files delta-rs reads to open the table that nest deeper than
    :data:`SCREEN_BRACKETS` (a Delta action nests a few levels), and the checkpoints whose
    Parquet schema nests deeper than :data:`~xamm_data.store.parquet_depth.MAX_DEPTH`. delta-rs's
    readers end the process (a segmentation fault) on a line tens of thousands of levels deep, or
    a checkpoint some hundreds, so these are refused before it opens the table. Cheap on a sound
    log: a file holding at most :data:`SCREEN_BRACKETS` opening brackets cannot nest deeper, and
    only a line holding more is measured.

    Args:
        kind: the table.
        loc: where it lives.
        version: the version to be opened besides the latest (None: the latest only).
        every: every log file (a time travel by date, which may read any of them).

    Returns:
        One problem per such line, naming the table, the file and the line (numbered as delta-rs
        reads lines: cut at line feeds).
    """
    names = loc.list_dir(LOG_DIR)
    problems = _checkpoint_problems(kind, loc, names)
    entries = sorted(int(m[1]) for n in names if (m := _ENTRY.match(n)))
    checkpoints = [int(m[1]) for n in names if (m := _CHECKPOINT.match(n))]
    # delta-rs replays the entries after the newest checkpoint (at ``version``: at or before it)
    upto = checkpoints if version is None else [c for c in checkpoints if c <= version]
    after = -1 if every else max(upto, default=-1)
    for v in (v for v in entries if v > after):
        data = loc.read_bytes(entry_path(v))
        if data.count(b"[") + data.count(b"{") <= SCREEN_BRACKETS:
            continue
        for n, line in enumerate(data.split(b"\n"), 1):
            if line.count(b"[") + line.count(b"{") <= SCREEN_BRACKETS:
                continue
            if (depth := _depth(line)) > SCREEN_BRACKETS:
                problems.append(
                    f"{kind}: {loc.display(entry_path(v))} line {n}: JSON nested {depth:,} "
                    "levels deep (a Delta log action nests a few)"
                )
    return problems


def _checkpoint_problems(kind: str, loc: TableLocation, names: list[str]) -> list[str]:
    """The checkpoints (Parquet files delta-rs reads before the entries after them) whose schema
    nests deeper than polars' and delta-rs's readers survive (each footer read alone: a seek, or
    two ranged reads on an object store)."""
    problems = []
    for name in (n for n in names if _CHECKPOINT.match(n)):
        rel = f"{LOG_DIR}/{name}"
        try:
            checked_footer(footer_of(functools.partial(loc.read_tail, rel)), "")
        except ParquetDepthError as e:
            problems.append(f"{kind}: {loc.display(rel)}: {e}")
        except FileNotFoundError:  # gone since the listing: delta-rs says what it misses
            continue
    return problems


def diagnose(kind: str, loc: TableLocation) -> list[str]:
    """Every problem of a table's log that can be found without delta-rs."""
    log = read_log(loc)
    parsed, problems = check_entries(kind, loc, log)
    return (
        problems
        + replay_problems(kind, loc, parsed, full=0 in log.entries)
        + chain_problems(kind, loc, log, parsed)
        + missing_head_problems(kind, loc, parsed)
    )


def log_prev(loc: TableLocation, version: int | None) -> list | None:
    """``[version, SHA-256 of its log file]`` for a commit built on ``version`` (None for the first
    commit)."""
    if version is None:
        return None
    return [version, hashlib.sha256(loc.read_bytes(entry_path(version))).hexdigest()]


__all__ = [
    "HEAD",
    "LOG_DIR",
    "CorruptLogError",
    "LogListing",
    "chain_problems",
    "check_entries",
    "created_files",
    "diagnose",
    "entry_path",
    "head_problems",
    "log_prev",
    "missing_head_problems",
    "nesting_problems",
    "read_head",
    "read_log",
    "replay_problems",
    "state_digest",
    "write_head",
]
