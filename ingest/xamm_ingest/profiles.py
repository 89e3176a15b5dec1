"""What the application-profile formats share (``caliper``, ``hpctoolkit``, ``table``, and any
other package's profile format): finding files with the ``xamm.toml`` beside them, the sample
options of the command line, and the cross-source step (features).

Each source gives one sample (HPCToolkit database, Caliper file) or many (a table); rows carry the
canonical counters, the Table II and seed-001 features computed over the whole frame
(:mod:`xamm_data.tables.features`), the counters present, unknown metrics kept raw, and
provenance. The pipeline (:mod:`xamm_ingest.pipeline`) isolates every source: a bad one is
rejected naming it.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Iterator
from pathlib import Path

import polars as pl
from pydantic import ValidationError

from xamm_data.tables.features import add_features
from xamm_data.tables.schema import APP_PROFILES
from xamm_data.tables.validate import conform
from xamm_ingest._frozen import built
from xamm_ingest.arguments import add_map_argument as add_map_argument
from xamm_ingest.arguments import add_sample_arguments as add_sample_arguments
from xamm_ingest.errors import IngestError
from xamm_ingest.machine_names import CONFIG_NAME, find_config, load_config
from xamm_ingest.metadata_map import FIELDS, MetadataMap
from xamm_ingest.readers.base import Source
from xamm_ingest.readers.profile_common import SampleSpec
from xamm_ingest.report import Rejected
from xamm_ingest.sources import Plan, Task, ingest_root, list_files, walk_dirs


def plan_files(fmt: str, suffixes: tuple[str, ...]):
    """A format's ``plan``: every file under the paths with one of ``suffixes`` is a source, with
    the metadata map of the ``xamm.toml`` over it.

    Args:
        fmt: the format's name.
        suffixes: the file endings it reads (lower case).
    """

    def plan(paths: list[Path], opts: dict) -> Plan:
        out = Plan(root=ingest_root(paths))
        configs: dict[Path, tuple | Rejected] = {}
        for f in list_files(paths, out):
            if task := file_task(fmt, f, suffixes, out, configs):
                out.tasks.append(task)
        return out

    return plan


def walk_file_tasks(fmt: str, suffixes: tuple[str, ...]):
    """A format's ``walk``: as :func:`plan_files`, lazily, one directory at a time in name order
    (a corpus of millions of files is never listed).

    Args:
        fmt: the format's name.
        suffixes: the file endings it reads (lower case).
    """

    def walk(paths: list[Path], opts: dict, plan: Plan):
        configs: dict = {}
        for directory, names, files in walk_dirs(paths, plan):
            yield from dir_tasks(fmt, directory, names, files, suffixes, plan, configs)

    return walk


def dir_tasks(
    fmt: str,
    directory: Path,
    names: list[str],
    files: list[Path],
    suffixes: tuple[str, ...],
    plan: Plan,
    configs: dict,
) -> Iterator[Task]:
    """The tasks of one directory's files, each with the metadata map of the ``xamm.toml`` over
    the directory (looked up once for all of them); a file with nothing to ingest is listed in
    ``plan.ignored``, one a bad ``xamm.toml`` covers is rejected naming it (the ``xamm.toml``
    itself is neither).

    Args:
        fmt: the format.
        directory: the files' directory (:func:`~xamm_ingest.sources.walk_dirs`).
        names: the files' names.
        files: the files, each ``directory / name``.
        suffixes: the file endings the format reads.
        plan: where ignored and rejected files are listed.
        configs: each directory's map, read once (filled here).
    """
    here = None
    for name, f in zip(names, files):
        if name == CONFIG_NAME:
            continue
        if suffix_of(name) not in suffixes:
            plan.ignored.append(str(f))
            continue
        if here is None:
            here = _dir_metadata(directory, plan.root, configs)
        if isinstance(here, Rejected):
            plan.rejected.append(Rejected(str(f), f"{f}: {here.reason}", here.problem))
            continue
        # the fields as Task(fmt, f, plan.root, defaults=here) sets them (built: no setattr each)
        yield built(
            Task, {**_TASK_DEFAULTS, "fmt": fmt, "path": f, "root": plan.root, "defaults": here}
        )


_TASK_DEFAULTS = {k.name: k.default for k in dataclasses.fields(Task)}


def suffix_of(name: str) -> str:
    """A file name's ending in lower case, as ``os.path.splitext(name)[1].lower()`` gives it: from
    its last dot, unless only dots stand before that dot (``.cali`` has none).

    Args:
        name: a file name (no separator).
    """
    i = name.rfind(".")
    return name[i:].lower() if i > 0 and name[:i].lstrip(".") else ""


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
    return next(dir_tasks(fmt, f.parent, [f.name], [f], suffixes, plan, configs), None)


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
    found: Path | None
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


def require_spec(fmt: str):
    """A format's ``prepare``: profile files do not name their application, so the caller must
    (``spec=SampleSpec(app=...)``, the CLI's ``--app``)."""

    def prepare(opts: dict) -> dict:
        if opts.get("spec") is None:
            raise ValueError(
                f"{fmt} profiles need spec=SampleSpec(app=...) (the CLI's --app): the files do "
                "not name their application"
            )
        return opts

    return prepare


def need_spec(opts: dict, fmt: str) -> SampleSpec:
    """The sample spec the caller gave; profile files do not name their application."""
    if opts.get("spec") is None:
        raise ValueError(f"{fmt} ingest needs the application name (--app)")
    return opts["spec"]


def task_source(task: Task) -> Source:
    """The task's source, its SHA-256 (and bytes) taken from where it was hashed already."""
    return Source.of(task.path, task.root, task.sha256, task.link, task.data)


def metadata_map_of(task: Task, opts: dict) -> MetadataMap | None:
    """The command line's metadata map over the one of the ``xamm.toml`` beside the task."""
    here = dict(task.defaults).get("metadata")
    given = opts.get("metadata_map")
    if not isinstance(here, MetadataMap):
        return given
    return here.merged(given)


def conformed(frame: pl.DataFrame) -> pl.DataFrame:
    """A table reader's frame as ``app_profiles`` columns (trial 0 where it has none)."""
    if "trial" not in frame.columns:
        frame = frame.with_columns(pl.lit(0).alias("trial"))
    return conform(frame.with_columns(pl.col("trial").fill_null(0)), APP_PROFILES)


def finish(frame: pl.DataFrame, report, opts: dict) -> pl.DataFrame:
    """The cross-source step of profile formats: the features computed over the frame."""
    return conform(add_features(frame), APP_PROFILES)


def _parse_params(items: list[str], parser: argparse.ArgumentParser) -> dict:
    """``--param KEY=VALUE`` options as a dict: a value is an integer, else a finite number, else
    text (``nan`` stays text: the parameters are stored as JSON, which has no NaN); a missing or
    repeated KEY is a usage error."""
    out: dict[str, int | float | str] = {}
    for item in items:
        k, eq, text = item.partition("=")
        key = k.strip()
        if not eq or not key:
            parser.error(f"--param {item!r}: expected KEY=VALUE")
        if key in out:
            parser.error(f"--param {key!r} given twice ({out[key]!r} and {text!r})")
        value: int | float | str = text
        for conv in (int, float):
            try:
                value = conv(text)
                break
            except ValueError:
                continue
        out[key] = text if isinstance(value, float) and not math.isfinite(value) else value
    return out


def sample_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    """``{"spec": SampleSpec(...)}`` from :func:`add_sample_arguments`' options; a bad value is a
    usage error naming its option.

    Args:
        args: the parsed command line.
        parser: its parser (for ``parser.error``).
    """
    try:
        spec = SampleSpec(
            app=args.app,
            machine=args.machine,
            params=_parse_params(args.param, parser),
            threads=args.threads,
            ranks=args.ranks,
            gpus=args.gpus,
            device=args.device,
            runtime_s=args.runtime_s,
            time_unit=args.time_unit,
        )
    except ValidationError as e:
        err = e.errors()[0]
        parser.error(f"--{str(err['loc'][0]).replace('_', '-')}: {err['msg']}")
    return {"spec": spec}


def map_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> dict:
    """``{"metadata_map": MetadataMap(...)}`` from ``--map`` (nothing when none is given)."""
    if not args.map:
        return {}
    keys: dict[str, list[str]] = {}
    for item in args.map:
        column, _, key = item.partition("=")
        if column.strip() not in FIELDS or not key.strip():
            parser.error(
                f"--map {item!r}: expected COLUMN=KEY with COLUMN one of {', '.join(FIELDS)}"
            )
        keys.setdefault(column.strip(), []).append(key.strip())
    return {"metadata_map": MetadataMap(**{c: tuple(k) for c, k in keys.items()})}
