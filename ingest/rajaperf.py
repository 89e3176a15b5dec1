"""``xamm-ingest rajaperf``: a directory of RAJAPerf outputs into validated ``benchmark_runs`` rows.

The dispatcher :func:`read_rajaperf` takes a file, a directory (searched recursively) or a list of
them, and funnels each source to its reader (:mod:`~xamm_ingest.readers.rajaperf_caliper` for
``.cali``/Caliper JSON, :mod:`~xamm_ingest.readers.rajaperf_csv` for RAJAPerf's CSV files).
Every good file is read; a bad one is rejected with a message naming the file, the record and what
was expected, and the others go on. :func:`ingest_rajaperf` then writes the rows to the store.

When one directory holds both a Caliper file and the CSV files of the same run, each
(kernel, variant, tuning, problem size) appears once: the Caliper row is kept (it carries the
compiler, run date, tool versions and counters), the CSV's extra per-rep figures fill its gaps,
and the two times per rep must agree within ``rtol`` (default 1e-4) or the Caliper file is
rejected, naming both values.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from xamm_data.schema import BENCHMARK_RUNS
from xamm_data.store import Store, dedupe_sources, renumber_trials
from xamm_data.validate import ValidationError, validate
from xamm_ingest.errors import IngestError
from xamm_ingest.machine_names import find_config, load_config, machine_id
from xamm_ingest.readers.base import ReadResult, Source
from xamm_ingest.report import Rejected, Report, distinct
from xamm_ingest.readers.rajaperf_caliper import read_caliper
from xamm_ingest.readers.rajaperf_csv import CsvRun, group_runs, read_csv_run

IGNORED_CSV_SUFFIXES = ("-fom.csv",)
AGREE_RTOL = 1e-4


@dataclass
class IngestReport(Report):
    """What a RAJAPerf ingest read, rejected, merged and wrote."""

    notes: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    merged_rows: int = 0

    def summary(self) -> dict:
        f = self.frame
        return {**super().summary(), "kernels": f.get_column("kernel").n_unique() if f.height else 0,
                "variants": distinct(f, "variant"), "merged_csv_caliper_rows": self.merged_rows}


@dataclass(frozen=True)
class _Task:
    kind: str  # "caliper" | "csv"
    path: Path  # the file (caliper) or the run's primary file (csv)
    root: Path
    machine: str | None
    run: CsvRun | None = None
    defaults: tuple[tuple[str, object], ...] = ()  # xamm.toml facts for CSV runs (compiler, flags, threads)


def _iter_files(paths: Iterable[str | Path]) -> tuple[list[Path], Path]:
    paths = [Path(p) for p in paths]
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted(q for q in p.rglob("*") if q.is_file()))
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such file or directory")
    if len(paths) == 1 and paths[0].is_dir():
        root = paths[0]
    else:
        parents = [f.resolve().parent for f in files] or [Path.cwd()]
        root = Path(os.path.commonpath([str(p) for p in parents]))
    return files, root


def _config_for(path: Path, root: Path, cache: dict):
    cfg = find_config(path, root)
    if cfg is None:
        return None
    if cfg not in cache:
        cache[cfg] = load_config(cfg)
    return cache[cfg]


def _machine_for(path: Path, root: Path, machine: str | None, cache: dict) -> str | None:
    if machine:
        return machine
    cfg = _config_for(path, root, cache)
    return cfg.machine if cfg else None


def plan(paths: Iterable[str | Path], machine: str | None = None) -> tuple[list[_Task], list[str], list[Rejected], Path]:
    """Find the sources under ``paths``: (tasks, ignored files, early rejections, ingest root)."""
    files, root = _iter_files(paths)
    machine = machine_id(machine) if machine else None
    cfg_cache: dict = {}
    tasks: list[_Task] = []
    ignored: list[str] = []
    rejected: list[Rejected] = []
    csvs = []
    for f in files:
        suffix = f.suffix.lower()
        try:
            m = _machine_for(f, root, machine, cfg_cache)
        except IngestError as e:
            rejected.append(Rejected(e.path, str(e)))
            continue
        if suffix == ".cali" or (suffix == ".json" and f.name != "xamm.json"):
            tasks.append(_Task("caliper", f, root, m))
        elif suffix == ".csv":
            csvs.append(f)
        elif f.name != "xamm.toml":
            ignored.append(str(f))
    runs, other = group_runs(csvs)
    for run in runs:
        cfg = _config_for(run.primary, root, cfg_cache)
        tasks.append(_Task("csv", run.primary, root, _machine_for(run.primary, root, machine, cfg_cache), run,
                           tuple(sorted(cfg.run_defaults().items())) if cfg else ()))
    for f in other:
        if "-speedup-" in f.name or f.name.endswith(IGNORED_CSV_SUFFIXES):
            continue  # derived reports RAJAPerf writes beside the timings; nothing new in them
        ignored.append(str(f))
    return tasks, ignored, rejected, root


def _run_task(task: _Task) -> tuple[_Task, ReadResult | IngestError]:
    try:
        src = Source.of(task.path, task.root)
        if task.kind == "caliper":
            if task.path.suffix.lower() == ".json" and not _looks_like_caliper_json(task.path):
                return task, ReadResult(notes=[f"ignored {src.rel_path}: not Caliper json-split output"])
            return task, read_caliper(src, machine=task.machine)
        if task.machine is None:
            raise IngestError(task.path, "RAJAPerf CSV files carry no machine name; pass --machine NAME or put an "
                              "xamm.toml with machine = \"NAME\" beside the runs")
        return task, read_csv_run(task.run, src, machine=task.machine, defaults=dict(task.defaults))
    except IngestError as e:
        return task, e
    except OSError as e:
        return task, IngestError(task.path, f"cannot read: {e.strerror or e}")


def _run_batch(batch: list[_Task]) -> tuple[list[IngestError | list[str]], pl.DataFrame]:
    """Read a batch of sources: per source its error or its notes, and all good rows as one frame."""
    outcomes: list[IngestError | list[str]] = []
    rows: list[dict] = []
    for task in batch:
        _, res = _run_task(task)
        if isinstance(res, IngestError):
            outcomes.append(res)
        else:
            outcomes.append(res.notes)
            rows.extend(res.rows)
    frame = pl.from_dicts(rows, schema=BENCHMARK_RUNS.polars_schema, strict=False) if rows else BENCHMARK_RUNS.empty()
    return outcomes, frame


def _looks_like_caliper_json(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(4096)
    return b'"data"' in head or b'"columns"' in head or b'"nodes"' in head or not head.strip().startswith(b"{")


def read_rajaperf(
    paths: str | Path | Iterable[str | Path],
    *,
    machine: str | None = None,
    workers: int | None = None,
    progress: bool = False,
    rtol: float = AGREE_RTOL,
) -> IngestReport:
    """Read RAJAPerf outputs (files, directories or a list) into a validated ``benchmark_runs`` frame.

    Args:
        paths: a file, a directory (searched recursively) or a list of them.
        machine: the machine id for every source; required for CSV runs unless an ``xamm.toml``
            beside them names it. A Caliper file naming another cluster is rejected.
        workers: processes to parse with (default: CPU count; 1 parses in this process).
        progress: show a progress bar.
        rtol: agreement required between CSV and Caliper times of the same run.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    tasks, ignored, rejected, root = plan(paths, machine)
    workers = workers or min(os.cpu_count() or 1, 8)
    # Batches keep memory bounded: each batch's rows become one columnar frame where they were read.
    size = max(1, min(64, -(-len(tasks) // (max(workers, 1) * 4))))
    batches = [tasks[i:i + size] for i in range(0, len(tasks), size)]
    iterator: Iterable
    if workers > 1 and len(tasks) >= 16:
        ex = ProcessPoolExecutor(max_workers=workers)
        iterator = ex.map(_run_batch, batches)
    else:
        ex = None
        iterator = map(_run_batch, batches)
    report = IngestReport(frame=BENCHMARK_RUNS.empty(), ignored=ignored, rejected=rejected)
    frames: list[pl.DataFrame] = []
    try:
        if progress and len(batches) > 1:
            from rich.progress import track

            iterator = track(iterator, total=len(batches), description="reading RAJAPerf files", transient=True)
        for outcomes, frame in iterator:
            for res in outcomes:
                if isinstance(res, IngestError):
                    report.rejected.append(Rejected(res.path, str(res)))
                else:
                    report.sources_read += 1
                    report.notes.extend(res)
            if frame.height:
                frames.append(frame)
    finally:
        if ex is not None:
            ex.shutdown()
    if frames:
        frame = pl.concat(frames, how="vertical")
        before = frame.height
        frame = renumber_trials(dedupe_sources(frame, BENCHMARK_RUNS), BENCHMARK_RUNS)
        if frame.height < before:
            report.notes.append(f"dropped {before - frame.height} row(s) from byte-identical copies of the same file")
        frame, bad = validate_by_source(frame)
        report.rejected.extend(bad)
        frame, merged, conflicts = merge_csv_and_caliper(frame, rtol=rtol)
        report.merged_rows = merged
        report.rejected.extend(conflicts)
        report.frame = frame
    return report


def validate_by_source(frame: pl.DataFrame, schema=BENCHMARK_RUNS) -> tuple[pl.DataFrame, list[Rejected]]:
    """Validate the whole frame; if it fails, validate each source's rows and drop the failing sources."""
    try:
        return validate(frame, schema), []
    except ValidationError:
        pass
    good, bad = [], []
    for (path,), part in frame.group_by(["source_path"], maintain_order=True):
        try:
            good.append(validate(part, schema))
        except ValidationError as e:
            bad.append(Rejected(path, f"{path}: {e}"))
    out = pl.concat(good) if good else schema.empty()
    return validate(out, schema), bad


def merge_csv_and_caliper(frame: pl.DataFrame, *, rtol: float = AGREE_RTOL) -> tuple[pl.DataFrame, int, list[Rejected]]:
    """Collapse CSV and Caliper rows of the same run (same directory) into one; check their times agree."""
    is_csv = pl.col("source_format").str.starts_with("rajaperf")
    key = ["_dir", "machine", "kernel", "variant", "tuning", "problem_size"]
    f = frame.with_columns(
        pl.col("source_path").str.replace(r"/?[^/]*$", "").alias("_dir"),
    )
    csv = f.filter(is_csv)
    cali = f.filter(~is_csv)
    if csv.is_empty() or cali.is_empty():
        return frame, 0, []
    pairs = cali.join(csv, on=key, how="inner", suffix="_csv")
    if pairs.is_empty():
        return frame, 0, []
    rel = ((pl.col("time_per_rep_s") - pl.col("time_per_rep_s_csv")).abs()
           / pl.max_horizontal("time_per_rep_s", "time_per_rep_s_csv"))
    pairs = pairs.with_columns(rel.alias("_rel"))
    bad = pairs.filter(pl.col("_rel") > rtol)
    rejected = []
    bad_cali = set()
    for (path,), part in bad.group_by(["source_path"], maintain_order=True):
        r = part.row(0, named=True)
        bad_cali.add(path)
        rejected.append(Rejected(path, (
            f"{path} [{r['kernel']} {r['variant']}-{r['tuning']}]: time per rep {r['time_per_rep_s']:.6g} s disagrees with "
            f"{r['time_per_rep_s_csv']:.6g} s in {r['source_path_csv']} (relative difference {r['_rel']:.2e} > {rtol:g}) "
            f"in {part.height} row(s); expected the same run in both formats")))
    ok = pairs.filter(~pl.col("source_path").is_in(list(bad_cali)))
    # fill the Caliper row's gaps from the CSV row
    fill_cols = [c for c in BENCHMARK_RUNS.names
                 if c not in key and not c.startswith("source_") and c not in ("reader", "xamm_version", "tool_versions",
                                                                              "run_date", "time_per_rep_s")]
    filled = ok.with_columns([pl.coalesce(pl.col(c), pl.col(f"{c}_csv")).alias(c) for c in fill_cols
                              if f"{c}_csv" in ok.columns])
    filled = filled.select(BENCHMARK_RUNS.names)
    merged_keys = ok.select([c for c in key])
    drop_csv = csv.join(merged_keys, on=key, how="anti")
    keep_cali = cali.filter(~pl.col("source_path").is_in(list(bad_cali))).join(merged_keys, on=key, how="anti")
    drop_csv = _inherit_run_metadata(drop_csv, ok)
    out = pl.concat([keep_cali.drop("_dir"), filled, drop_csv.drop("_dir")], how="vertical")
    return out, ok.height, rejected


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


def ingest_rajaperf(
    paths: str | Path | Iterable[str | Path],
    *,
    machine: str | None = None,
    store: Store | str | Path | None = None,
    workers: int | None = None,
    dry_run: bool = False,
    strict: bool = False,
    progress: bool = False,
    rtol: float = AGREE_RTOL,
) -> IngestReport:
    """Read RAJAPerf outputs (see :func:`read_rajaperf`) and upsert them into the store.

    With ``dry_run`` nothing is written. With ``strict`` nothing is written if any file was rejected.
    """
    report = read_rajaperf(paths, machine=machine, workers=workers, progress=progress, rtol=rtol)
    if dry_run or (strict and report.rejected) or report.frame.is_empty():
        return report
    st = store if isinstance(store, Store) else Store(store)
    report.write = st.write(report.frame, "benchmark_runs")
    return report
