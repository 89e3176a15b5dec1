"""``xamm-ingest hpctoolkit|caliper|table``: application profiles into the ``app_profiles`` table.

Each source gives one sample (HPCToolkit database, Caliper file) or many (a table); rows carry the
canonical counters, the Table II and seed-001 features computed over the whole frame
(:mod:`xamm_data.features`), the counters present, unknown metrics kept raw, and provenance. The
dispatcher (:mod:`xamm_ingest.dispatch`) isolates every source: a bad one is rejected naming it.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from xamm_data.features import add_features
from xamm_data.schema import APP_PROFILES
from xamm_data.validate import conform
from xamm_ingest.errors import IngestError
from xamm_ingest.formats import IngestFormat, register
from xamm_ingest.machine_names import CONFIG_NAME, find_config, load_config
from xamm_ingest.metadata_map import MetadataMap
from xamm_ingest.readers import caliper_profile, hpctoolkit, table
from xamm_ingest.readers.base import ReadResult, Source
from xamm_ingest.report import Rejected
from xamm_ingest.sources import Plan, Task, ingest_root, list_files

CALIPER_SUFFIXES = (".cali", ".json")


def _plan_files(fmt: str, suffixes: tuple[str, ...]):
    def plan(paths: list[Path], opts: dict) -> Plan:
        out = Plan(root=ingest_root(paths))
        configs: dict[Path, tuple | Rejected] = {}
        for f in list_files(paths, out):
            if task := file_task(fmt, f, suffixes, out, configs):
                out.tasks.append(task)
        return out

    return plan


def file_task(
    fmt: str, f: Path, suffixes: tuple[str, ...], plan: Plan, configs: dict
) -> Task | None:
    """The task of file ``f``, with the metadata map of its directory's ``xamm.toml``; None for a
    file with nothing to ingest (listed in ``plan.ignored``) or one a bad ``xamm.toml`` covers
    (rejected, naming it).

    Args:
        fmt: the format.
        f: a file found under the ingest root ``plan.root``.
        suffixes: the file endings the format reads.
        plan: where ignored and rejected files are listed.
        configs: each directory's map, read once (filled here).
    """
    if f.name == CONFIG_NAME:
        return None
    if f.suffix.lower() not in suffixes:
        plan.ignored.append(str(f))
        return None
    here = _dir_metadata(f.parent, plan.root, configs)
    if isinstance(here, Rejected):
        plan.rejected.append(Rejected(str(f), f"{f}: {here.reason}", here.problem))
        return None
    return Task(fmt, f, plan.root, defaults=here)


def _dir_metadata(directory: Path, root: Path, cache: dict) -> tuple | Rejected:
    """The metadata map of the ``xamm.toml`` that applies to ``directory`` (read once per
    directory), as task defaults; a bad one is a rejection naming it."""
    key = str(directory)  # a string hashes far faster than a Path, once per file
    if key not in cache:
        found = _config_of(directory, root, cache)
        try:
            cfg = load_config(found) if found else None
            cache[key] = (("metadata", cfg.metadata),) if cfg and cfg.metadata else ()
        except IngestError as e:
            cache[key] = Rejected(str(found), str(e), f"bad {CONFIG_NAME} ({found}): {e}")
    return cache[key]


_CONFIGS = object()  # where _config_of keeps its answers in the plan's cache (no path equals it)


def _config_of(directory: Path, root: Path, cache: dict) -> Path | None:
    """:func:`find_config` of ``directory``, from its parent's answer when a sibling asked it
    already (an archive has many folders under few ``xamm.toml`` files)."""
    parents = cache.setdefault(_CONFIGS, {})
    if (directory / CONFIG_NAME).is_file():
        found = directory / CONFIG_NAME
    elif directory == root or directory.parent == directory or root not in directory.parents:
        found = find_config(directory, root)
    else:
        up = str(directory.parent)
        if up not in parents:
            parents[up] = _config_of(directory.parent, root, cache)
        found = parents[up]
    parents[str(directory)] = found
    return found


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


def task_source(task: Task) -> Source:
    """The task's source, its SHA-256 taken from the plan when the plan hashed it already."""
    return Source.of(task.path, task.root, task.sha256)


def metadata_map_of(task: Task, opts: dict) -> MetadataMap | None:
    """The command line's metadata map over the one of the ``xamm.toml`` beside the task."""
    here = dict(task.defaults).get("metadata")
    given = opts.get("metadata_map")
    if here is None:
        return given
    return here.merged(given)


def _read_hpctoolkit(task: Task, opts: dict) -> ReadResult:
    return hpctoolkit.read_hpctoolkit(task_source(task), _need_spec(opts, "hpctoolkit"))


def _read_caliper(task: Task, opts: dict) -> ReadResult:
    return caliper_profile.read_caliper_profile(
        task_source(task), _need_spec(opts, "caliper"), metadata_map_of(task, opts)
    )


def _read_table(task: Task, opts: dict) -> ReadResult:
    frame, dropped = table.read_table(
        Source.of(task.path, task.root),
        opts["table_mapping"],
        Path(opts["mapping"]),
        bounds=opts.get("bounds"),
    )
    return ReadResult(frame=_conformed(frame), dropped=dropped)


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
        _plan_files("caliper", CALIPER_SUFFIXES),
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
