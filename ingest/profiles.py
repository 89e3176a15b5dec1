"""``xamm-ingest hpctoolkit|caliper|table``: application profiles into the ``app_profiles`` table.

Each source gives one sample (HPCToolkit database, Caliper file) or many (a table); rows carry the
canonical counters, the Table II and seed-001 features computed over the whole frame
(:mod:`xamm_data.features`), the counters present, unknown metrics kept raw, and provenance. A bad
source is rejected with a message naming it; the others are written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from xamm_data.features import add_features
from xamm_data.schema import APP_PROFILES
from xamm_data.store import Store, dedupe_sources, renumber_trials
from xamm_data.validate import ValidationError, conform
from xamm_ingest.errors import IngestError
from xamm_ingest.rajaperf import validate_by_source
from xamm_ingest.report import Rejected, Report, distinct
from xamm_ingest.readers.base import Source
from xamm_ingest.readers.caliper_profile import read_caliper_profile
from xamm_ingest.readers.hpctoolkit import find_databases, read_hpctoolkit
from xamm_ingest.readers.profile_common import SampleSpec
from xamm_ingest.readers.table import load_mapping, read_table

FORMATS = ("hpctoolkit", "caliper", "table")


@dataclass
class ProfileReport(Report):
    """What an application-profile ingest read, rejected and wrote."""

    def summary(self) -> dict:
        return {**super().summary(), "apps": distinct(self.frame, "app")}


def _sources(fmt: str, paths: list[Path]) -> tuple[list[Path], Path]:
    paths = [Path(p) for p in paths]
    for p in paths:
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such file or directory")
    root = paths[0] if len(paths) == 1 and paths[0].is_dir() else Path(
        __import__("os").path.commonpath([str(p.resolve().parent) for p in paths]))
    if fmt == "hpctoolkit":
        return find_databases(paths), root
    suffixes = (".cali", ".json") if fmt == "caliper" else (".csv", ".parquet")
    out = []
    for p in paths:
        out.extend(sorted(q for q in p.rglob("*") if q.suffix.lower() in suffixes) if p.is_dir() else [p])
    return out, root


def read_profiles(fmt: str, paths, spec: SampleSpec | None = None, *, mapping: str | Path | None = None) -> ProfileReport:
    """Read application profiles of format ``fmt`` (``hpctoolkit``, ``caliper``, ``table``) into a frame."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if isinstance(paths, (str, Path)):
        paths = [paths]
    sources, root = _sources(fmt, list(paths))
    report = ProfileReport(frame=APP_PROFILES.empty())
    if not sources:
        return report
    rows: list[dict] = []
    tables: list[pl.DataFrame] = []
    table_mapping = None
    if fmt == "table":
        if mapping is None:
            raise ValueError("table ingest needs --mapping FILE.toml")
        table_mapping = load_mapping(mapping)
    elif spec is None:
        raise ValueError(f"{fmt} ingest needs the application name (--app)")
    for path in sources:
        try:
            src = Source.of(path, root)
            if fmt == "hpctoolkit":
                rows.extend(read_hpctoolkit(src, spec).rows)
            elif fmt == "caliper":
                rows.extend(read_caliper_profile(src, spec).rows)
            else:
                tables.append(read_table(src, table_mapping, Path(mapping)))
            report.sources_read += 1
        except IngestError as e:
            report.rejected.append(Rejected(e.path, str(e)))
    frames = []
    if rows:
        frames.append(pl.from_dicts(rows, schema=APP_PROFILES.polars_schema, strict=False))
    frames.extend(tables)
    if not frames:
        return report
    frame = pl.concat(frames, how="diagonal_relaxed")
    frame = add_features(frame)
    frame = frame.with_columns(pl.col("trial").fill_null(0) if "trial" in frame.columns else pl.lit(0).alias("trial"))
    try:
        frame = conform(frame, APP_PROFILES)
    except ValidationError as e:  # a table column of the wrong type, say
        report.rejected.append(Rejected(str(e.column), str(e)))
        return report
    frame = renumber_trials(dedupe_sources(frame, APP_PROFILES), APP_PROFILES)
    frame, bad = validate_by_source(frame, APP_PROFILES)
    report.rejected.extend(bad)
    report.frame = frame
    return report


def ingest_profiles(fmt: str, paths, spec: SampleSpec | None = None, *, mapping=None,
                    store: Store | str | Path | None = None, dry_run: bool = False, strict: bool = False) -> ProfileReport:
    """Read application profiles (see :func:`read_profiles`) and upsert them into the store."""
    report = read_profiles(fmt, paths, spec, mapping=mapping)
    if dry_run or (strict and report.rejected) or report.frame.is_empty():
        return report
    st = store if isinstance(store, Store) else Store(store)
    report.write = st.write(report.frame, "app_profiles")
    return report
