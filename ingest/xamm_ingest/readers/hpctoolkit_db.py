"""Values from a new-format HPCToolkit database (``meta.db`` + ``profile.db``, format 4.x), read
with ``struct`` as the database's own FORMATS.md specifies.

* :func:`read_summary`: one value per metric for the whole run, the summary profile's values at the
  implicit global context (ctxId 0), "propagated from the root contexts" (FORMATS.md, profile.db
  Profile-Major Sparse Value Block), for every summary statistic of the ``execution`` (inclusive)
  scope; no calling-context tree is built.
* :func:`read_contexts`: the calling-context tree (meta.db Context Tree section) and every
  context's ``execution``-scope sum over profiles from the summary profile, for reading a database
  region by region.

Hatchet's ``from_hpctoolkit_latest`` reads the same databases into a full tree but fails on some
real ones (a summary profile without the root context, databases without a time metric); the tests
compare both where Hatchet succeeds.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from xamm_ingest.errors import IngestError

COMBINE = {0: "sum", 1: "min", 2: "max"}
LEXICAL = {0: "function", 1: "loop", 2: "line", 3: "instruction"}  # FORMATS.md {Ctx} lexicalType
FOOTERS = {b"meta": b"_meta.db", b"prof": b"_prof.db"}  # FORMATS.md: each file's last 8 bytes


@dataclass
class MetricSummary:
    name: str  # as HPCToolkit wrote it, e.g. "REALTIME (sec)" or "instructions"
    # "sum"/"min"/"max": the summary profile's statistics; "max_over_profiles": computed from the
    # per-thread profiles. All whole-program inclusive (global context, execution scope).
    values: dict[str, float] = field(default_factory=dict)
    profiles: int = 0  # application profiles with a value at the global context


@dataclass
class DatabaseSummary:
    metrics: list[MetricSummary]
    n_profiles: int  # application threads/streams measured (summary profiles excluded)
    version: str
    # the pre-release metric layout (24-byte metric descriptions), whose context tree section is
    # not FORMATS.md 4.0's either
    prerelease: bool = False


def _cstr(buf: bytes, off: int) -> str:
    end = buf.index(b"\0", off)
    return buf[off:end].decode("utf-8", errors="replace")


def _read(path: Path, fmt: bytes) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise IngestError(path, f"cannot read: {e.strerror}") from None
    if len(data) < 0x30 or data[:10] != b"HPCTOOLKIT" or data[10:14] != fmt:
        raise IngestError(
            path, f"not an HPCToolkit {fmt.decode()} file (magic or format identifier missing)"
        )
    if data[14] != 4:
        raise IngestError(path, f"format major version {data[14]}; this reader knows version 4")
    footer = FOOTERS[fmt]
    # hpcprof ends every file with its footer: a file without it is cut short
    if not data.endswith(footer):
        raise IngestError(
            path,
            f"does not end with the footer {footer.decode()!r} hpcprof writes "
            "last: truncated "
            "or damaged; expected the complete file",
        )
    return data


def _summaries(meta: bytes, p_md: int, sz_metric: int, sz_scope: int, sz_summary: int):
    """(scope name, formula, combine, statMetricId) of one metric description.

    Two layouts exist in real databases: the released 4.0 one of FORMATS.md (32-byte metric,
    24-byte summary, each summary naming its scope) and a pre-release one (24-byte metric holding
    scopes, 24-byte scopes holding 16-byte summaries), found in some of hpcviewer's test databases.
    """
    if sz_metric >= 32 and sz_summary >= 24:
        _, p_insts, p_summaries, n_insts, n_summaries = struct.unpack_from("<QQQHH", meta, p_md)
        for j in range(n_insts):
            p_scope, prop_id = struct.unpack_from("<QH", meta, p_insts + j * sz_scope)
            yield _cstr(meta, struct.unpack_from("<Q", meta, p_scope)[0]), "$$", "prop", prop_id
        for j in range(n_summaries):
            p_scope, p_formula, combine, stat_id = struct.unpack_from(
                "<QQBxH", meta, p_summaries + j * sz_summary
            )
            yield (
                _cstr(meta, struct.unpack_from("<Q", meta, p_scope)[0]),
                _cstr(meta, p_formula),
                combine,
                stat_id,
            )
    elif sz_metric == 24 and sz_scope == 24 and sz_summary == 16:
        _, n_scopes, p_scopes = struct.unpack_from("<QH6xQ", meta, p_md)
        for k in range(n_scopes):
            p_name, n_sum, prop_id, p_sum = struct.unpack_from(
                "<QHH4xQ", meta, p_scopes + k * sz_scope
            )
            scope = _cstr(meta, p_name)
            yield scope, "$$", "prop", prop_id
            for j in range(n_sum):
                p_formula, combine, stat_id = struct.unpack_from(
                    "<QBxH", meta, p_sum + j * sz_summary
                )
                yield scope, _cstr(meta, p_formula), combine, stat_id
    else:
        raise ValueError(
            f"unknown metric description layout (szMetric={sz_metric}, szSummary={sz_summary})"
        )


def _metric_ids(meta: bytes):
    """Metric names, and the ids of their execution-scope values: summary statistic id ->
    (metric index, statistic), propagated id -> metric index."""
    # meta.db: Performance Metrics section pointer is the third {sz,p} pair of the header
    _, p_sec = struct.unpack_from("<QQ", meta, 0x10 + 2 * 16)
    p_metrics, n_metrics, sz_metric, sz_scope_inst, sz_summary = struct.unpack_from(
        "<QIBBB", meta, p_sec
    )
    names: list[str] = []
    by_stat: dict[int, tuple[int, str]] = {}
    prerelease = sz_metric < 32
    by_prop: dict[int, int] = {}
    for i in range(n_metrics):
        p_md = p_metrics + i * sz_metric
        for scope, formula, combine, stat_id in _summaries(
            meta, p_md, sz_metric, sz_scope_inst, sz_summary
        ):
            if scope == "execution" and combine == "prop":
                by_prop[stat_id] = i
            elif scope == "execution" and formula == "$$" and combine in COMBINE:
                by_stat[stat_id] = (i, COMBINE[combine])
        names.append(_cstr(meta, struct.unpack_from("<Q", meta, p_md)[0]))
    return names, by_stat, by_prop, prerelease


def _profiles(prof: bytes) -> tuple[int, int, list[int]]:
    """(pointer to the profile array, its stride, indices of the application profiles); profile 0
    is the canonical summary profile, and bit 0 of a profile's flags marks a summary."""
    _, p_info = struct.unpack_from("<QQ", prof, 0x10)
    p_profiles, n_prof, sz_prof = struct.unpack_from("<QIB", prof, p_info)
    threads = [
        k
        for k in range(n_prof)
        if not struct.unpack_from("<I", prof, p_profiles + k * sz_prof + 0x28)[0] & 1
    ]
    return p_profiles, sz_prof, threads


def read_summary(db: str | Path) -> DatabaseSummary:
    """Every metric's whole-program inclusive summary statistics.

    Args:
        db: the database directory.

    Returns:
        One :class:`MetricSummary` per metric, and the number of application profiles.
    """
    db = Path(db)
    meta = _read(db / "meta.db", b"meta")
    prof = _read(db / "profile.db", b"prof")
    try:
        names, by_stat, by_prop, prerelease = _metric_ids(meta)
        metrics = [MetricSummary(n) for n in names]
        p_profiles, sz_prof, threads = _profiles(prof)
        for mid, value in _global_values(prof, p_profiles):
            if mid in by_stat:
                idx, comb = by_stat[mid]
                metrics[idx].values[comb] = value
        # the max over application threads, from each thread's own profile (propagated values)
        for k in threads:
            for mid, value in _global_values(prof, p_profiles + k * sz_prof):
                if mid in by_prop:
                    m = metrics[by_prop[mid]]
                    m.values["max_over_profiles"] = max(
                        m.values.get("max_over_profiles", value), value
                    )
                    m.profiles += value != 0
    except (struct.error, ValueError, IndexError) as e:
        raise IngestError(db, f"damaged or truncated database ({type(e).__name__}: {e})") from None
    return DatabaseSummary(
        metrics=metrics,
        n_profiles=len(threads),
        version=f"{meta[14]}.{meta[15]}",
        prerelease=prerelease,
    )


def _global_values(prof: bytes, p_block: int):
    """(metricId, value) pairs a profile attributes to the global context (ctxId 0)."""
    n_values, p_values, n_ctxs, p_idx = struct.unpack_from("<QQI4xQ", prof, p_block)
    if not n_ctxs:
        return
    ctx0, start = struct.unpack_from("<IQ", prof, p_idx)
    if ctx0 != 0:
        return
    end = struct.unpack_from("<IQ", prof, p_idx + 12)[1] if n_ctxs > 1 else n_values
    for k in range(start, end):
        yield struct.unpack_from("<Hd", prof, p_values + 10 * k)


def _context_name(meta: bytes, flags: int, lexical: int, words: tuple[int, ...]) -> str | None:
    """A function context's function name (FORMATS.md: ``flex[0]`` is ``pFunction`` when bit 0 of
    the flags is set; a Function Specification starts with ``pName``)."""
    if lexical != 0:
        return None
    if not flags & 1:
        return "<unknown function>"
    p_name = struct.unpack_from("<Q", meta, words[0])[0]
    return _cstr(meta, p_name) if p_name else "<unknown function>"


def _walk_contexts(meta: bytes) -> dict[str, list]:
    """Every context of the Context Tree section: id, parent id (0 above an entry point), lexical
    type ("entry" for an entry point) and function name."""
    # the Context Tree section pointer is the fourth {sz,p} pair of the header
    _, p_sec = struct.unpack_from("<QQ", meta, 0x10 + 3 * 16)
    p_entries, n_entries, sz_entry = struct.unpack_from("<QHB", meta, p_sec)
    out: dict[str, list] = {"ctx_id": [], "parent_id": [], "lexical": [], "name": []}
    stack: list[tuple[int, int, int]] = []  # (children array, its size, parent id)
    arrays: set[int] = set()
    for e in range(n_entries):
        sz, p_kids, cid, _, p_pretty = struct.unpack_from(
            "<QQIH2xQ", meta, p_entries + e * sz_entry
        )
        for k, v in zip(out, (cid, 0, "entry", _cstr(meta, p_pretty) if p_pretty else "entry")):
            out[k].append(v)
        if p_kids:
            stack.append(_children(meta, p_kids, sz, cid, arrays))
    # a {Ctx} takes 32 bytes at least and no two share them: more contexts than that is a loop
    most = len(meta) // 0x20
    while stack:
        p, sz, parent = stack.pop()
        end = p + sz
        while p < end:
            sz_k, p_kids, cid, flags, _, lexical, n_flex = struct.unpack_from("<QQIBBBB", meta, p)
            words = struct.unpack_from(f"<{n_flex}Q", meta, p + 0x20)
            name = _context_name(meta, flags, lexical, words)
            for k, v in zip(out, (cid, parent, LEXICAL.get(lexical, "other"), name)):
                out[k].append(v)
            if len(out["ctx_id"]) > most:
                raise ValueError(f"more contexts than meta.db's {len(meta)} bytes can hold")
            if p_kids:
                stack.append(_children(meta, p_kids, sz_k, cid, arrays))
            p += 0x20 + 8 * n_flex  # a {Ctx}'s size follows from nFlexWords
    return out


def _children(meta: bytes, p: int, sz: int, parent: int, seen: set[int]) -> tuple[int, int, int]:
    """A context's children array, checked to lie in the file and, unless empty (an empty one
    may point where another starts), to be met once: a damaged pointer could name an array twice,
    closing a loop in the tree."""
    if p + sz > len(meta) or (sz and p in seen):
        where = "past the end of meta.db" if p + sz > len(meta) else "met twice (a loop)"
        raise ValueError(f"context {parent}'s children at byte {p}: {where}")
    if sz:
        seen.add(p)
    return p, sz, parent


def _summary_sums(prof: bytes, p_summary: int, sum_ids: dict[int, int]) -> dict[str, list]:
    """(ctx id, metric index, value) of the summary profile's execution-scope sums."""
    n_values, p_values, n_ctxs, p_idx = struct.unpack_from("<QQI4xQ", prof, p_summary)
    idx = list(struct.iter_unpack("<IQ", prof[p_idx : p_idx + 12 * n_ctxs]))
    vals = list(struct.iter_unpack("<Hd", prof[p_values : p_values + 10 * n_values]))
    out: dict[str, list] = {"ctx_id": [], "metric": [], "value": []}
    for j, (cid, start) in enumerate(idx):
        end = idx[j + 1][1] if j + 1 < len(idx) else n_values
        for mid, value in vals[start:end]:
            if mid in sum_ids:
                out["ctx_id"].append(cid)
                out["metric"].append(sum_ids[mid])
                out["value"].append(value)
    return out


def read_contexts(db: str | Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The calling-context tree and every context's inclusive values.

    Args:
        db: the database directory.

    Returns:
        ``(contexts, values)``: ``contexts`` has ``ctx_id``, ``parent_id`` (0 above an
        entry point), ``lexical`` (``entry``, ``function``, ``loop``, ``line``, ``instruction``)
        and ``name`` (function contexts' and entry points'); ``values`` has ``ctx_id``, ``metric``
        (as HPCToolkit names it) and ``value``, the ``execution``-scope (inclusive) sum over
        profiles.
    """
    db = Path(db)
    meta = _read(db / "meta.db", b"meta")
    prof = _read(db / "profile.db", b"prof")
    try:
        names, by_stat, _, prerelease = _metric_ids(meta)
    except (struct.error, ValueError, IndexError) as e:
        raise IngestError(db, f"damaged or truncated database ({type(e).__name__}: {e})") from None
    if prerelease:
        raise IngestError(
            db / "meta.db",
            "a pre-release database layout (24-byte metric descriptions): its calling-context "
            "tree is not FORMATS.md 4.0's; expected a database from a released hpcprof",
        )
    try:
        tree = _walk_contexts(meta)
        p_profiles, _, _ = _profiles(prof)
        sum_ids = {sid: i for sid, (i, comb) in by_stat.items() if comb == "sum"}
        sums = _summary_sums(prof, p_profiles, sum_ids)
    except (struct.error, ValueError, IndexError) as e:
        raise IngestError(db, f"damaged or truncated database ({type(e).__name__}: {e})") from None
    contexts = pl.DataFrame(
        tree,
        schema={
            "ctx_id": pl.UInt32,
            "parent_id": pl.UInt32,
            "lexical": pl.String,
            "name": pl.String,
        },
    )
    values = pl.DataFrame(
        sums, schema={"ctx_id": pl.UInt32, "metric": pl.UInt16, "value": pl.Float64}
    ).with_columns(
        pl.col("metric").replace_strict(list(range(len(names))), names, return_dtype=pl.String)
    )
    return contexts, values
