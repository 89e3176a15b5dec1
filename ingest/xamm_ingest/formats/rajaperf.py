"""``xamm-ingest rajaperf``: RAJAPerf outputs into ``benchmark_runs`` rows.

Discovery funnels each source to its reader (:mod:`~xamm_ingest.readers.rajaperf_caliper` for
``.cali``/Caliper JSON, :mod:`~xamm_ingest.readers.rajaperf_csv` for RAJAPerf's CSV files, grouped
into runs by directory and prefix). The pipeline (:mod:`xamm_ingest.pipeline`) isolates every
source; in batches, a directory's files stay in one batch (:attr:`Format.group_of`).

When one directory holds both a Caliper file and the CSV files of the same run, each
(kernel, variant, tuning) appears once: the Caliper row is kept (it carries the compiler, run date,
tool versions and counters), the CSV's extra per-rep figures fill its gaps, and the CSV's own time
per rep (RAJAPerf's timer) is kept beside Caliper's in ``extra_metrics`` as
``rajaperf_timer.time_per_rep_s``. The two are two timers of one run, not one number written twice:
RAJAPerf starts its timer before Caliper's region opens and stops it after the region closes, and
the two read different clocks (docs/formats.md, "Two timers of one run"). They must agree within
:data:`AGREE_RTOL` (or both files' printed digits, whichever is larger) and have the same problem
size. A pair beyond that (the factor-of-passes class: another run's file, or a pass count applied
twice) is refused **as a record**: that kernel-variant-tuning is dropped from both files, naming
both values; every other record of both files is kept. This check runs for every RAJAPerf generation
(see docs/formats.md).

The CSV files of a run record no machine: without ``--machine`` or an ``xamm.toml`` they take the
``cluster`` the Caliper files of the same directory name (all of them must agree).
"""

from __future__ import annotations

import collections
from pathlib import Path

import polars as pl

from xamm_data.tables.schema import BENCHMARK_RUNS
from xamm_ingest.arguments import AGREE_RTOL
from xamm_ingest.errors import IngestError
from xamm_ingest.machine_names import find_config, load_config, machine_id
from xamm_ingest.readers import rajaperf_caliper, rajaperf_csv
from xamm_ingest.readers.base import ReadResult, Source
from xamm_ingest.records import PER_REP, DroppedRecord
from xamm_ingest.report import Rejected
from xamm_ingest.sniff import json_kind
from xamm_ingest.sources import Plan, Task, ingest_root, list_files

IGNORED_CSV_SUFFIXES = ("-fom.csv",)
TIMER_METRIC = "rajaperf_timer.time_per_rep_s"
NO_MACHINE = (
    "RAJAPerf CSV files carry no machine name{why}; pass --machine "
    "NAME or put an xamm.toml with "
    'machine = "NAME" beside the runs'
)


def _config(path: Path, root: Path, cache: dict):
    """The xamm.toml that applies to ``path`` (cached per directory), or None; a bad one raises its
    error."""
    key = ("dir", path.parent)
    if key not in cache:
        cache[key] = find_config(path, root)
    cfg = cache[key]
    if cfg is not None and cfg not in cache:
        try:
            cache[cfg] = load_config(cfg)
        except IngestError as e:
            cache[cfg] = e
    got = cache.get(cfg) if cfg is not None else None
    if isinstance(got, IngestError):
        raise got
    return got


def plan(paths: list[Path], opts: dict) -> Plan:
    """Find RAJAPerf sources under ``paths``: Caliper files one task each, CSV files one task per
    run."""
    out = Plan(root=ingest_root(paths))
    files = list_files(paths, out)
    machine = machine_id(opts["machine"]) if opts.get("machine") else None
    cache: dict = {}
    csvs = []
    for f in files:
        suffix = f.suffix.lower()
        try:
            cfg = _config(f, out.root, cache)
        except IngestError as e:  # each source the bad xamm.toml applies to, by its own path
            if f.name != "xamm.toml":
                out.rejected.append(Rejected(str(f), f"{f}: {e}", f"bad xamm.toml: {e}"))
            continue
        m = machine or (cfg.machine if cfg else None)
        if suffix == ".cali" or (suffix == ".json" and f.name != "xamm.json"):
            out.tasks.append(Task("rajaperf", f, out.root, m))
        elif suffix == ".csv":
            csvs.append(f)
        elif f.name != "xamm.toml":
            out.ignored.append(str(f))
    runs, other = rajaperf_csv.group_runs(csvs)
    beside_of = _caliper_per_directory(out.tasks)
    for run in runs:
        try:
            cfg = _config(run.primary, out.root, cache)
        except IngestError:
            continue  # already rejected above, naming the xamm.toml
        m = machine or (cfg.machine if cfg else None)
        beside = 0 if m else beside_of[run.directory]
        out.tasks.append(
            Task(
                "rajaperf",
                run.primary,
                out.root,
                m,
                run,
                tuple(sorted(cfg.run_defaults().items())) if cfg else (),
                ""
                if m
                else f", and none of the {beside} Caliper file(s) beside them names a cluster "
                "that could be read"
                if beside
                else ", and no Caliper file of the same run lies beside them",
                machine_beside=bool(beside),
            )
        )
    for f in other:
        if "-speedup-" in f.name or f.name.endswith(IGNORED_CSV_SUFFIXES):
            continue  # derived reports RAJAPerf writes beside the timings; nothing new in them
        out.ignored.append(str(f))
    return out


def _caliper_per_directory(tasks: list[Task]) -> collections.Counter:
    """How many Caliper files of ``tasks`` lie in each directory (their cluster names the machine
    of a CSV run there; they are read once, with the others)."""
    return collections.Counter(
        t.path.parent for t in tasks if t.path.suffix.lower() in (".cali", ".json")
    )


def machine_beside(frame: pl.DataFrame, report) -> pl.DataFrame:
    """CSV rows waiting for a machine (``_no_machine``) take the one the Caliper rows of the same
    directory name; where those name none or several, the CSV run is refused, saying why.

    Args:
        frame: rows of many sources, Caliper and CSV.
        report: where the refused CSV runs go.

    Returns:
        The rows, every one with a machine.
    """
    if "_no_machine" not in frame.columns or frame.get_column("_no_machine").is_null().all():
        return frame
    folder = pl.col("source_path").str.replace(r"/?[^/]*$", "").alias("_bdir")
    f = frame.with_columns(folder)
    waiting = pl.col("_no_machine").is_not_null()
    named = (
        f.filter(~waiting & ~pl.col("source_format").str.starts_with("rajaperf"))
        .group_by("_bdir", "machine")
        .agg(pl.col("source_path").unique().sort().str.replace(r"^.*/", ""))
        .sort("_bdir", "machine")
    )
    machines = named.group_by("_bdir").agg(pl.col("machine"), pl.col("source_path"))
    pending = f.filter(waiting).join(machines, on="_bdir", how="left", suffix="_beside")
    one = pl.col("machine_beside").list.len() == 1
    taken = pending.filter(one.fill_null(False)).with_columns(
        pl.col("machine_beside").list.first().alias("machine")
    )
    for r in (
        pending.filter(~one.fill_null(False))
        .unique("source_path", maintain_order=True)
        .iter_rows(named=True)
    ):
        why = r["_no_machine"]
        if r["machine_beside"]:
            clusters = "; ".join(
                f"{m} ({', '.join(fs[:2])})"
                for m, fs in zip(r["machine_beside"], r["source_path_beside"], strict=True)
            )
            why = NO_MACHINE.format(
                why=f", and the Caliper files beside them name different clusters: {clusters}"
            )
        report.rejected.append(Rejected(r["source_path"], f"{r['source_path']}: {why}", why))
    done = f.filter(~waiting).vstack(taken.select(f.columns))
    return done.drop("_bdir").with_columns(pl.lit(None, pl.String).alias("_no_machine"))


def read(task: Task, opts: dict) -> ReadResult:
    """Read one RAJAPerf source: a Caliper file, or the files of one CSV run."""
    src = Source.of(task.path, task.root, task.sha256, task.link, task.data)  # hashed already
    if task.run is None:
        kind = json_kind(task.path) if task.path.suffix.lower() == ".json" else "caliper"
        if kind is None:
            return ReadResult(
                notes=[
                    f"ignored {src.rel_path}: not Caliper JSON (json-split or format "
                    "json) nor a Thicket"
                ]
            )
        if kind == "thicket":
            return rajaperf_caliper.read_thicket_json(src, machine=task.machine)
        return rajaperf_caliper.read_caliper(src, machine=task.machine)
    if task.machine is None and not task.machine_beside:
        raise IngestError(task.path, NO_MACHINE.format(why=task.why_no_machine))
    run = task.run
    if not isinstance(run, rajaperf_csv.CsvRun):  # the plan sets it on every CSV task
        raise TypeError(f"{task.path}: a RAJAPerf CSV task without its run")
    res = rajaperf_csv.read_csv_run(run, src, machine=task.machine, defaults=dict(task.defaults))
    if task.machine is None:  # the cross-source step gives it the Caliper files' (machine_beside)
        waiting = NO_MACHINE.format(why=task.why_no_machine)
        res.rows = [{**r, "_no_machine": waiting} for r in res.rows]
    return res


def finish(frame: pl.DataFrame, report, opts: dict) -> pl.DataFrame:
    """Merge the CSV and Caliper rows of the same runs (see the module docstring)."""
    frame = machine_beside(frame, report)
    frame, merged, rejected, dropped = merge_csv_and_caliper(
        frame, rtol=opts.get("rtol", AGREE_RTOL)
    )
    report.merged_rows = merged
    report.rejected.extend(rejected)
    report.dropped.extend(dropped)
    return frame


_KEY = ["_dir", "machine", "kernel", "variant", "tuning"]
_FIGURES = ("problem_size", "reps", "iterations_per_rep", "kernels_per_rep", *PER_REP)
_TIMES = ("time_per_rep_s", "time_per_rep_min_s", "time_per_rep_max_s", "_time_resolution_s")


def _conflicts(pairs: pl.DataFrame, rtol: float) -> pl.DataFrame:
    """Caliper/CSV pairs whose problem size differs or whose two timers disagree beyond ``rtol``,
    with the reason."""
    diff = (pl.col("time_per_rep_s") - pl.col("time_per_rep_s_csv")).abs()
    tol = pl.max_horizontal(
        rtol * pl.max_horizontal("time_per_rep_s", "time_per_rep_s_csv"),
        pl.col("_time_resolution_s_csv").fill_null(0.0)
        + pl.col("_time_resolution_s").fill_null(0.0),
    )
    size = pl.col("problem_size") != pl.col("problem_size_csv")
    why = (
        pl.when(size)
        .then(
            pl.format(
                "problem size {} in {} but {} in {}",
                "problem_size",
                "source_path",
                "problem_size_csv",
                "source_path_csv",
            )
        )
        .when(diff > tol)
        .then(
            pl.format(
                "time per rep {} s in {} but {} s in {}: the two timers of one "
                "run differ by {} relative, beyond the "
                "tolerance {} (--rtol); not the same run, or a pass count "
                "applied twice",
                "time_per_rep_s",
                "source_path",
                "time_per_rep_s_csv",
                "source_path_csv",
                (diff / pl.max_horizontal("time_per_rep_s", "time_per_rep_s_csv")).round_sig_figs(
                    2
                ),
                pl.lit(rtol),
            )
        )
    )
    return pairs.with_columns(why.alias("_why")).filter(pl.col("_why").is_not_null())


def _adopt_csv_figures(pairs: pl.DataFrame) -> pl.DataFrame:
    """Caliper rows whose figures may be another kernel's take the CSV's; their times are rescaled
    to its Reps."""
    unc = pl.col("_uncertain_figures").fill_null(False)
    ratio = pl.col("reps").cast(pl.Float64) / pl.col("reps_csv").cast(pl.Float64)
    out = pairs.with_columns(
        [pl.when(unc).then(pl.col(t) * ratio).otherwise(pl.col(t)).alias(t) for t in _TIMES]
    )
    out = out.with_columns(
        [pl.when(unc).then(pl.col(f"{c}_csv")).otherwise(pl.col(c)).alias(c) for c in _FIGURES]
    )
    return out.with_columns(
        (pl.col("bytes_per_rep") / pl.col("time_per_rep_s")).alias("bandwidth_bytes_per_s"),
        (pl.col("flops_per_rep") / pl.col("time_per_rep_s")).alias("flops_per_s"),
    )


def _pairs(cali: pl.DataFrame, csv: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(pairs of equal problem size, all pairs to check); a Caliper row whose only CSV partners have
    another size (one run, two sizes) is a conflict too."""
    pairs = _adopt_csv_figures(cali.join(csv, on=_KEY, how="inner", suffix="_csv"))
    same = pairs.filter(pl.col("problem_size") == pl.col("problem_size_csv")).unique(
        subset=[*_KEY, "source_path"], keep="first", maintain_order=True
    )
    lonely = pairs.join(same.select([*_KEY, "source_path"]), on=[*_KEY, "source_path"], how="anti")
    return same, pl.concat(
        [same, lonely.unique(subset=[*_KEY, "source_path"], keep="first", maintain_order=True)]
    )


def _with_timer(pairs: pl.DataFrame) -> pl.DataFrame:
    """Merged rows: Caliper's values, the CSV's where Caliper has none, and the CSV's time kept in
    extra_metrics."""
    fill = [
        c
        for c in BENCHMARK_RUNS.names
        if c not in _KEY
        and not c.startswith("source_")
        and c
        not in ("reader", "xamm_version", "tool_versions", "run_date", "extra_metrics", *_TIMES)
        and f"{c}_csv" in pairs.columns
    ]
    timer = pl.struct(
        pl.lit(TIMER_METRIC).alias("name"), pl.col("time_per_rep_s_csv").alias("value")
    )
    empty = pl.lit([], dtype=BENCHMARK_RUNS.column("extra_metrics").polars_dtype)
    extra = pl.coalesce(pl.col("extra_metrics"), pl.col("extra_metrics_csv"), empty)
    return pairs.with_columns(
        *[pl.coalesce(pl.col(c), pl.col(f"{c}_csv")).alias(c) for c in fill],
        pl.concat_list(extra, pl.concat_list(timer)).alias("extra_metrics"),
        pl.lit(False).alias("_uncertain_figures"),
    )


def merge_csv_and_caliper(
    frame: pl.DataFrame, *, rtol: float = AGREE_RTOL
) -> tuple[pl.DataFrame, int, list[Rejected], list[DroppedRecord]]:
    """Collapse CSV and Caliper rows of the same run (same directory) into one; refuse the records
    that disagree.

    Returns (rows, merged pairs, rejected sources (none: a disagreement refuses records), dropped
    records).
    """
    is_csv = pl.col("source_format").str.starts_with("rajaperf")
    csv_rows = frame.select(is_csv.sum()).item()
    if csv_rows in (0, frame.height):  # CSV files alone or Caliper files alone: no pair to make
        return _drop_unconfirmed(frame, 0, [], [])
    f = frame.with_columns(pl.col("source_path").str.replace(r"/?[^/]*$", "").alias("_dir"))
    csv, cali = f.filter(is_csv), f.filter(~is_csv)
    same, pairs = _pairs(cali, csv) if not (csv.is_empty() or cali.is_empty()) else (None, None)
    if same is None or pairs is None or pairs.is_empty():
        return _drop_unconfirmed(f.drop("_dir"), 0, [], [])
    bad = _conflicts(pairs, rtol)
    dropped = _refused_records(bad)
    bad_cali = bad.select([*_KEY, "source_path"]).unique()
    bad_csv = bad.select([*_KEY, pl.col("source_path_csv").alias("source_path")]).unique()
    ok = same.join(bad_cali, on=[*_KEY, "source_path"], how="anti")
    keys = ok.select(_KEY).unique()
    csv_only = csv.join(keys, on=_KEY, how="anti").join(
        bad_csv, on=[*_KEY, "source_path"], how="anti"
    )
    cali_only = cali.join(keys, on=_KEY, how="anti").join(
        bad_cali, on=[*_KEY, "source_path"], how="anti"
    )
    out = pl.concat(
        [cali_only, _with_timer(ok).select(f.columns), _inherit_run_metadata(csv_only, ok)],
        how="vertical",
    )
    return _drop_unconfirmed(out.drop("_dir"), ok.height, [], dropped)


def _refused_records(bad: pl.DataFrame) -> list[DroppedRecord]:
    """One dropped record per side of each disagreeing pair, each naming both values."""
    dropped = []
    for r in bad.iter_rows(named=True):
        what = f"{r['kernel']} {r['variant']}-{r['tuning']}"
        rule = f"{what} disagrees between the Caliper and CSV files of one run: {r['_why']}"
        dropped.append(
            DroppedRecord(
                path=r["source_path"],
                record=r["_record"] or what,
                field="time_per_rep_s",
                value=str(r["time_per_rep_s"]),
                rule=rule,
            )
        )
        dropped.append(
            DroppedRecord(
                path=r["source_path_csv"],
                record=r["_record_csv"] or what,
                field="time_per_rep_s",
                value=str(r["time_per_rep_s_csv"]),
                rule=rule,
            )
        )
    return dropped


def _drop_unconfirmed(frame: pl.DataFrame, merged: int, rejected: list, dropped: list):
    """Caliper rows whose figures only the run's CSV could confirm, left without one, are
    dropped."""
    unc = pl.col("_uncertain_figures").fill_null(False)
    if not frame.select(unc.any()).item():  # nearly always: every figure is the kernel's own
        return frame, merged, rejected, dropped
    for r in frame.filter(unc).iter_rows(named=True):
        dropped.append(
            DroppedRecord(
                path=r["source_path"],
                record=r["_record"] or r["kernel"],
                field="problem_size",
                value=str(r["problem_size"]),
                rule=(
                    "ProblemSize, Reps, bytes and flops may be another kernel's: "
                    "with --npasses > 1 this RAJAPerf's "
                    "Caliper output merges later passes under the last kernel's "
                    "attributes; ingest the run's CSV files "
                    "beside it (same directory) to confirm them, or run with --npasses 1"
                ),
            )
        )
    return frame.filter(~unc), merged, rejected, dropped


RUN_LEVEL = (
    "compiler",
    "compiler_flags",
    "suite_version",
    "omp_max_threads",
    "npasses",
    "problem_size_param",
    "tool_versions",
    "run_date",
)


def _inherit_run_metadata(csv: pl.DataFrame, merged_pairs: pl.DataFrame) -> pl.DataFrame:
    """CSV rows of a run whose Caliper file was matched take that run's metadata (compiler, date,
    ...).

    One RAJAPerf invocation writes the CSV files for every variant and one Caliper file per variant,
    so the Caliper metadata of a matched run describes the CSV-only variants of the same directory
    too.
    """
    if csv.is_empty() or merged_pairs.is_empty():
        return csv
    meta = merged_pairs.group_by("_dir").agg(
        [pl.col(c).drop_nulls().first().alias(f"{c}_run") for c in RUN_LEVEL]
    )
    out = csv.join(meta, on="_dir", how="left", maintain_order="left")
    out = out.with_columns([pl.coalesce(pl.col(c), pl.col(f"{c}_run")).alias(c) for c in RUN_LEVEL])
    out = out.with_columns(
        pl.when((pl.col("backend") == "OpenMP") & pl.col("threads").is_null())
        .then(pl.col("omp_max_threads"))
        .otherwise(pl.col("threads"))
        .alias("threads")
    )
    return out.select(csv.columns)
