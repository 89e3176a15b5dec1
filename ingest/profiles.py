"""``xamm-ingest hpctoolkit|caliper|table``: application profiles into the ``app_profiles`` table.

Each source gives one sample (HPCToolkit database, Caliper file) or many (a table); rows carry the
canonical counters, the Table II and seed-001 features computed over the whole frame
(:mod:`xamm_data.features`), the counters present, unknown metrics kept raw, and provenance. The
dispatcher (:mod:`xamm_ingest.dispatch`) isolates every source: a bad one is rejected naming it.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
from xamm_ingest.errors import IngestError
from xamm_ingest.formats import IngestFormat, register
from xamm_ingest.readers import caliper_profile, hpctoolkit, table
from xamm_ingest.readers.base import ReadResult, Source
from xamm_ingest.records import flag_app_records
from xamm_ingest.report import Rejected
from xamm_ingest.sources import Plan, Task, ingest_root, list_files

from xamm_data.features import add_features
from xamm_data.schema import APP_PROFILES
from xamm_data.validate import conform


def _plan_files(fmt: str, suffixes: tuple[str, ...]):
    def plan(paths: list[Path], opts: dict) -> Plan:
        out = Plan(root=ingest_root(paths))
        for f in list_files(paths, out):
            if f.suffix.lower() in suffixes:
                out.tasks.append(Task(fmt, f, out.root))
            else:
                out.ignored.append(str(f))
        return out

    return plan


def _plan_hpctoolkit(paths: list[Path], opts: dict) -> Plan:
    out = Plan(root=ingest_root(paths))
    list_files(paths, out)  # reports dangling links and traces
    found, refused = hpctoolkit.find_databases(paths)
    out.tasks = [Task("hpctoolkit", d, out.root) for d in found]
    out.rejected += [Rejected(str(d), f"{d}: {why}", problem=why) for d, why in refused]
    return out


def _need_spec(opts: dict, fmt: str):
    if opts.get("spec") is None:
        raise ValueError(f"{fmt} ingest needs the application name (--app)")
    return opts["spec"]


def _read_hpctoolkit(task: Task, opts: dict) -> ReadResult:
    res = hpctoolkit.read_hpctoolkit(
        Source.of(task.path, task.root), _need_spec(opts, "hpctoolkit")
    )
    return _one_frame(res, task, opts)


def _read_caliper(task: Task, opts: dict) -> ReadResult:
    res = caliper_profile.read_caliper_profile(
        Source.of(task.path, task.root), _need_spec(opts, "caliper")
    )
    return _one_frame(res, task, opts)


def _read_table(task: Task, opts: dict) -> ReadResult:
    frame, dropped = table.read_table(
        Source.of(task.path, task.root),
        opts["table_mapping"],
        Path(opts["mapping"]),
        bounds=opts.get("bounds"),
    )
    return ReadResult(frame=_conformed(frame), dropped=dropped)


def _one_frame(res: ReadResult, task: Task, opts: dict) -> ReadResult:
    """The one sample of a profile as a frame; a sample that breaks a plausibility rule refuses the
    source."""
    frame = pl.from_dicts(res.rows, schema=APP_PROFILES.polars_schema, strict=True)
    bad = flag_app_records(frame, opts.get("bounds")).filter(pl.col("_why").is_not_null())
    if bad.height:
        why = bad.get_column("_why")[0]
        raise IngestError(task.path, why["rule"], record=why["field"])
    res.frame = _conformed(frame)
    res.rows = []
    return res


def _conformed(frame: pl.DataFrame) -> pl.DataFrame:
    if "trial" not in frame.columns:
        frame = frame.with_columns(pl.lit(0).alias("trial"))
    return conform(frame.with_columns(pl.col("trial").fill_null(0)), APP_PROFILES)


def _finish(frame: pl.DataFrame, report, opts: dict) -> pl.DataFrame:
    return conform(add_features(frame), APP_PROFILES)


for _name, _plan, _read, _what in (
    (
        "hpctoolkit",
        _plan_hpctoolkit,
        _read_hpctoolkit,
        "HPCToolkit database directories (old experiment.xml or new meta.db format)",
    ),
    (
        "caliper",
        _plan_files("caliper", (".cali", ".json")),
        _read_caliper,
        "Caliper application profiles (.cali or json-split .json)",
    ),
    (
        "table",
        _plan_files("table", (".csv", ".parquet")),
        _read_table,
        "samples already flattened to CSV/Parquet, with a column mapping",
    ),
):
    register(
        IngestFormat(
            name=_name, table=APP_PROFILES, plan=_plan, read=_read, finish=_finish, summary=_what
        )
    )
