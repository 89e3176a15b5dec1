"""Whole-program values from a new-format HPCToolkit database (``meta.db`` + ``profile.db``, format
4.x).

An application profile needs one value per metric for the whole run: HPCToolkit stores exactly
that as the summary profile's values at the implicit global context (ctxId 0), "propagated from the
root contexts" (FORMATS.md, profile.db Profile-Major Sparse Value Block). This module reads those
with ``struct`` as FORMATS.md specifies, for every metric and every summary statistic of the
``execution`` (inclusive) scope, so no calling-context tree is built.

Hatchet's ``from_hpctoolkit_latest`` reads the same databases into a full tree but fails on some
real ones (a summary profile without the root context, databases without a time metric); the tests
compare both where Hatchet succeeds.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from xamm_ingest.errors import IngestError

COMBINE = {0: "sum", 1: "min", 2: "max"}
FOOTERS = {b"meta": b"_meta.db", b"prof": b"_prof.db"}  # FORMATS.md: each file's last 8 bytes


@dataclass
class MetricSummary:
    name: str  # as HPCToolkit wrote it, e.g. "REALTIME (sec)" or "instructions"
    # "sum"/"min"/"max": the summary profile's statistics; "max_over_profiles": computed from the
    # per-thread profiles. All whole-program inclusive (global context, execution scope).
    values: dict[str, float] = field(default_factory=dict)


@dataclass
class DatabaseSummary:
    metrics: list[MetricSummary]
    n_profiles: int  # application threads/streams measured (summary profiles excluded)
    version: str


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


def read_summary(db: str | Path) -> DatabaseSummary:
    """Every metric's whole-program inclusive summary statistics from ``db`` (a database
    directory)."""
    db = Path(db)
    meta = _read(db / "meta.db", b"meta")
    prof = _read(db / "profile.db", b"prof")
    try:
        # meta.db: Performance Metrics section pointer is the third {sz,p} pair of the header
        _, p_sec = struct.unpack_from("<QQ", meta, 0x10 + 2 * 16)
        p_metrics, n_metrics, sz_metric, sz_scope_inst, sz_summary = struct.unpack_from(
            "<QIBBB", meta, p_sec
        )
        by_stat: dict[int, tuple[int, str]] = {}
        by_prop: dict[int, int] = {}
        metrics: list[MetricSummary] = []
        for i in range(n_metrics):
            for scope, formula, combine, stat_id in _summaries(
                meta, p_metrics + i * sz_metric, sz_metric, sz_scope_inst, sz_summary
            ):
                if scope == "execution" and combine == "prop":
                    by_prop[stat_id] = len(metrics)
                elif scope == "execution" and formula == "$$" and combine in COMBINE:
                    by_stat[stat_id] = (len(metrics), COMBINE[combine])
            metrics.append(
                MetricSummary(
                    _cstr(meta, struct.unpack_from("<Q", meta, p_metrics + i * sz_metric)[0])
                )
            )
        # profile.db: Profile Info section; profile 0 is the canonical summary profile
        _, p_info = struct.unpack_from("<QQ", prof, 0x10)
        p_profiles, n_prof, sz_prof = struct.unpack_from("<QIB", prof, p_info)
        threads = [
            k
            for k in range(n_prof)
            if not struct.unpack_from("<I", prof, p_profiles + k * sz_prof + 0x28)[0] & 1
        ]
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
    except (struct.error, ValueError, IndexError) as e:
        raise IngestError(db, f"damaged or truncated database ({type(e).__name__}: {e})") from None
    return DatabaseSummary(
        metrics=metrics, n_profiles=len(threads), version=f"{meta[14]}.{meta[15]}"
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
