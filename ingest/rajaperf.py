"""``xamm-ingest rajaperf``: RAJAPerf outputs into ``benchmark_runs`` rows.

Discovery funnels each source to its reader (:mod:`~xamm_ingest.readers.rajaperf_caliper` for
``.cali``/Caliper JSON, :mod:`~xamm_ingest.readers.rajaperf_csv` for RAJAPerf's CSV files, grouped
into runs by directory and prefix). The dispatcher (:mod:`xamm_ingest.dispatch`) isolates every source.

When one directory holds both a Caliper file and the CSV files of the same run, each
(kernel, variant, tuning) appears once: the Caliper row is kept (it carries the compiler, run date,
tool versions and counters), the CSV's extra per-rep figures fill its gaps, and the problem size
and time per rep must agree (time within ``rtol``, default 1e-4, or the CSV's printed resolution,
whichever is larger). When they do not, the Caliper file is rejected and the CSV rows of that
variant-tuning are dropped, both naming the two values: one of the two is wrong and xamm cannot
tell which. This check runs for every RAJAPerf generation (see docs/formats.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from xamm_data.schema import BENCHMARK_RUNS
from xamm_ingest.errors import IngestError
from xamm_ingest.formats import IngestFormat, register
from xamm_ingest.machine_names import find_config, load_config, machine_id
from xamm_ingest.readers import rajaperf_caliper, rajaperf_csv
from xamm_ingest.readers.base import ReadResult, Source
from xamm_ingest.records import PER_REP, DroppedRecord
from xamm_ingest.report import Rejected
from xamm_ingest.sources import Plan, Task, ingest_root, list_files

IGNORED_CSV_SUFFIXES = ("-fom.csv",)
AGREE_RTOL = 1e-4
NO_MACHINE = ("RAJAPerf CSV files carry no machine name; pass --machine NAME or put an xamm.toml with "
              "machine = \"NAME\" beside the runs")


def _config(path: Path, root: Path, cache: dict):
    """The xamm.toml that applies to ``path`` (cached per directory), or None; a bad one raises its error."""
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
    """Find RAJAPerf sources under ``paths``: Caliper files one task each, CSV files one task per run."""
    out = Plan(root=ingest_root(paths))
    files = list_files(paths, out)
    machine = machine_id(opts["machine"]) if opts.get("machine") else None
    cache: dict = {}
    csvs = []
    for f in files:
        suffix = f.suffix.lower()
        try:
            cfg = _config(f, out.root, cache)
        except IngestError as e:
            out.rejected.append(Rejected(e.path, str(e)))
            continue
        m = machine or (cfg.machine if cfg else None)
        if suffix == ".cali" or (suffix == ".json" and f.name != "xamm.json"):
            out.tasks.append(Task("rajaperf", f, out.root, m))
        elif suffix == ".csv":
            csvs.append(f)
        elif f.name != "xamm.toml":
            out.ignored.append(str(f))
    runs, other = rajaperf_csv.group_runs(csvs)
    for run in runs:
        try:
            cfg = _config(run.primary, out.root, cache)
        except IngestError:
            continue  # already rejected above, naming the xamm.toml
        out.tasks.append(Task("rajaperf", run.primary, out.root, machine or (cfg.machine if cfg else None), run,
                              tuple(sorted(cfg.run_defaults().items())) if cfg else ()))
    for f in other:
        if "-speedup-" in f.name or f.name.endswith(IGNORED_CSV_SUFFIXES):
            continue  # derived reports RAJAPerf writes beside the timings; nothing new in them
        out.ignored.append(str(f))
    return out


def read(task: Task, opts: dict) -> ReadResult:
    """Read one RAJAPerf source: a Caliper file, or the files of one CSV run."""
    src = Source.of(task.path, task.root)
    if task.run is None:
        kind = _json_kind(task.path) if task.path.suffix.lower() == ".json" else "caliper"
        if kind is None:
            return ReadResult(notes=[f"ignored {src.rel_path}: not Caliper JSON (json-split or format json) nor a Thicket"])
        if kind == "thicket":
            return rajaperf_caliper.read_thicket_json(src, machine=task.machine)
        return rajaperf_caliper.read_caliper(src, machine=task.machine)
    if task.machine is None:
        raise IngestError(task.path, NO_MACHINE)
    return rajaperf_csv.read_csv_run(task.run, src, machine=task.machine, defaults=dict(task.defaults))


def _json_kind(path: Path) -> str | None:
    """``"thicket"`` (a Thicket's ``to_json()``, which writes the graph first), ``"caliper"`` (Caliper JSON), or None,
    from the file's first 4 KiB."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if re.match(rb'\s*\{\s*"graph"\s*:', head):
        return "thicket"
    if any(k in head for k in (b'"data"', b'"columns"', b'"nodes"', b'"records"')) or not head.strip().startswith(b"{"):
        return "caliper"
    return None


def finish(frame: pl.DataFrame, report, opts: dict) -> pl.DataFrame:
    """Merge the CSV and Caliper rows of the same runs (see the module docstring)."""
    frame, merged, rejected, dropped = merge_csv_and_caliper(frame, rtol=opts.get("rtol", AGREE_RTOL))
    report.merged_rows = merged
    report.rejected.extend(rejected)
    report.dropped.extend(dropped)
    return frame


_KEY = ["_dir", "machine", "kernel", "variant", "tuning"]
_FIGURES = ("problem_size", "reps", "iterations_per_rep", "kernels_per_rep", *PER_REP)
_TIMES = ("time_per_rep_s", "time_per_rep_min_s", "time_per_rep_max_s", "_time_resolution_s")


def _conflicts(pairs: pl.DataFrame, rtol: float) -> pl.DataFrame:
    """Caliper/CSV pairs whose problem size or time per rep disagree, with the reason."""
    diff = (pl.col("time_per_rep_s") - pl.col("time_per_rep_s_csv")).abs()
    tol = pl.max_horizontal(rtol * pl.max_horizontal("time_per_rep_s", "time_per_rep_s_csv"),
                            pl.col("_time_resolution_s_csv").fill_null(0.0) + pl.col("_time_resolution_s").fill_null(0.0))
    size = pl.col("problem_size") != pl.col("problem_size_csv")
    why = (pl.when(size).then(pl.format("problem size {} disagrees with {} in {}", "problem_size", "problem_size_csv",
                                        "source_path_csv"))
           .when(diff > tol).then(pl.format("time per rep {} s disagrees with {} s in {} (difference {} s > tolerance {} s "
                                            "from rtol and both files' printed digits)", "time_per_rep_s",
                                            "time_per_rep_s_csv", "source_path_csv", diff, tol)))
    return pairs.with_columns(why.alias("_why")).filter(pl.col("_why").is_not_null())


def _adopt_csv_figures(pairs: pl.DataFrame) -> pl.DataFrame:
    """Caliper rows whose figures may be another kernel's take the CSV's; their times are rescaled to its Reps."""
    unc = pl.col("_uncertain_figures").fill_null(False)
    ratio = pl.col("reps").cast(pl.Float64) / pl.col("reps_csv").cast(pl.Float64)
    out = pairs.with_columns([pl.when(unc).then(pl.col(t) * ratio).otherwise(pl.col(t)).alias(t) for t in _TIMES])
    out = out.with_columns([pl.when(unc).then(pl.col(f"{c}_csv")).otherwise(pl.col(c)).alias(c) for c in _FIGURES])
    return out.with_columns((pl.col("bytes_per_rep") / pl.col("time_per_rep_s")).alias("bandwidth_bytes_per_s"),
                            (pl.col("flops_per_rep") / pl.col("time_per_rep_s")).alias("flops_per_s"))


def _pairs(cali: pl.DataFrame, csv: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(pairs of equal problem size, all pairs to check); a Caliper row whose only CSV partners have
    another size (one run, two sizes) is a conflict too."""
    pairs = _adopt_csv_figures(cali.join(csv, on=_KEY, how="inner", suffix="_csv"))
    same = pairs.filter(pl.col("problem_size") == pl.col("problem_size_csv")).unique(
        subset=[*_KEY, "source_path"], keep="first", maintain_order=True)
    lonely = pairs.join(same.select([*_KEY, "source_path"]), on=[*_KEY, "source_path"], how="anti")
    return same, pl.concat([same, lonely.unique(subset=[*_KEY, "source_path"], keep="first", maintain_order=True)])


def merge_csv_and_caliper(frame: pl.DataFrame, *, rtol: float = AGREE_RTOL
                          ) -> tuple[pl.DataFrame, int, list[Rejected], list[DroppedRecord]]:
    """Collapse CSV and Caliper rows of the same run (same directory) into one; check they agree."""
    is_csv = pl.col("source_format").str.starts_with("rajaperf")
    f = frame.with_columns(pl.col("source_path").str.replace(r"/?[^/]*$", "").alias("_dir"))
    csv, cali = f.filter(is_csv), f.filter(~is_csv)
    same, pairs = _pairs(cali, csv) if not (csv.is_empty() or cali.is_empty()) else (None, None)
    if same is None or pairs.is_empty():
        return _drop_unconfirmed(f.drop("_dir"), 0, [], [])
    bad = _conflicts(pairs, rtol)
    rejected, dropped, bad_cali = _report_conflicts(bad)
    ok = same.filter(~pl.col("source_path").is_in(list(bad_cali)))
    bad_runs = bad.select("_dir", "variant", "tuning", pl.col("source_path_csv").alias("source_path")).unique()
    fill = [c for c in BENCHMARK_RUNS.names if c not in _KEY and not c.startswith("source_")
            and c not in ("reader", "xamm_version", "tool_versions", "run_date", *_TIMES) and f"{c}_csv" in ok.columns]
    filled = ok.with_columns(*[pl.coalesce(pl.col(c), pl.col(f"{c}_csv")).alias(c) for c in fill],
                             pl.lit(False).alias("_uncertain_figures")).select(f.columns)
    keys = ok.select(_KEY)
    csv_only = csv.join(keys, on=_KEY, how="anti").join(bad_runs, on=["_dir", "variant", "tuning", "source_path"], how="anti")
    cali_only = cali.filter(~pl.col("source_path").is_in(list(bad_cali))).join(keys, on=_KEY, how="anti")
    out = pl.concat([cali_only, filled, _inherit_run_metadata(csv_only, ok)], how="vertical")
    return _drop_unconfirmed(out.drop("_dir"), ok.height, rejected, dropped)


def _report_conflicts(bad: pl.DataFrame) -> tuple[list[Rejected], list[DroppedRecord], set[str]]:
    rejected, dropped, bad_cali = [], [], set()
    for (path,), part in bad.group_by(["source_path"], maintain_order=True):
        r = part.row(0, named=True)
        bad_cali.add(path)
        rejected.append(Rejected(path, f"{path} [{r['kernel']} {r['variant']}-{r['tuning']}]: {r['_why']} in "
                                 f"{part.height} row(s); expected the same run in both formats, so neither is kept",
                                 problem="Caliper and CSV files of the same run disagree"))
    for r in bad.iter_rows(named=True):
        dropped.append(DroppedRecord(path=r["source_path_csv"], record=r["_record_csv"] or r["kernel"],
                                     field="time_per_rep_s", value=str(r["time_per_rep_s_csv"]),
                                     rule=f"the Caliper file {r['source_path']} of the same run disagrees: {r['_why']}"))
    return rejected, dropped, bad_cali


def _drop_unconfirmed(frame: pl.DataFrame, merged: int, rejected: list, dropped: list):
    """Caliper rows whose figures only the run's CSV could confirm, left without one, are dropped."""
    unc = pl.col("_uncertain_figures").fill_null(False)
    for r in frame.filter(unc).iter_rows(named=True):
        dropped.append(DroppedRecord(
            path=r["source_path"], record=r["_record"] or r["kernel"], field="problem_size",
            value=str(r["problem_size"]),
            rule=("ProblemSize, Reps, bytes and flops may be another kernel's: with --npasses > 1 this RAJAPerf's "
                  "Caliper output merges later passes under the last kernel's attributes; ingest the run's CSV files "
                  "beside it (same directory) to confirm them, or run with --npasses 1")))
    return frame.filter(~unc), merged, rejected, dropped


RUN_LEVEL = ("compiler", "compiler_flags", "suite_version", "omp_max_threads", "npasses", "problem_size_param",
             "tool_versions", "run_date")


def _inherit_run_metadata(csv: pl.DataFrame, merged_pairs: pl.DataFrame) -> pl.DataFrame:
    """CSV rows of a run whose Caliper file was matched take that run's metadata (compiler, date, ...).

    One RAJAPerf invocation writes the CSV files for every variant and one Caliper file per variant,
    so the Caliper metadata of a matched run describes the CSV-only variants of the same directory too.
    """
    if csv.is_empty() or merged_pairs.is_empty():
        return csv
    meta = merged_pairs.group_by("_dir").agg([pl.col(c).drop_nulls().first().alias(f"{c}_run") for c in RUN_LEVEL])
    out = csv.join(meta, on="_dir", how="left")
    out = out.with_columns([pl.coalesce(pl.col(c), pl.col(f"{c}_run")).alias(c) for c in RUN_LEVEL])
    out = out.with_columns(
        pl.when((pl.col("backend") == "OpenMP") & pl.col("threads").is_null())
        .then(pl.col("omp_max_threads")).otherwise(pl.col("threads")).alias("threads"))
    return out.select(csv.columns)


RAJAPERF = register(IngestFormat(
    name="rajaperf", table=BENCHMARK_RUNS, plan=plan, read=read, finish=finish,
    summary="RAJAPerf runs: Caliper .cali / JSON and RAJAPerf's CSV outputs"))
