"""xamm's own formats, declared: name, summary, options and examples, with the work named
(:class:`~xamm_ingest.format.Deferred`) rather than loaded.

Registered like any other package's formats, through the ``xamm.formats`` entry points in
``pyproject.toml`` (:mod:`xamm_ingest.format`). Each format's work lives in its own module
(``xamm_ingest.formats.rajaperf``, ``...babelstream``, ...), imported the first time the format
reads something: ``xamm-ingest --help`` loads none of them, and a command loads only the format it
uses.
"""

from __future__ import annotations

from xamm_ingest import arguments
from xamm_ingest.format import Deferred, Format
from xamm_ingest.sniff import (
    is_babelstream_output,
    is_caliper_file,
    is_hpctoolkit_database,
    is_rajaperf_file,
    is_ramble_workspace,
    table_columns,
)

__all__ = ["BABELSTREAM", "BENCHPARK", "CALIPER", "HPCTOOLKIT", "RAJAPERF", "REGION_TABLE", "TABLE"]

_HERE = "xamm_ingest.formats"
_SAME_DIRECTORY = Deferred("xamm_ingest.sources:same_directory")
_PROFILE_FINISH = Deferred("xamm_ingest.profiles:finish")


def _work(module: str, name: str) -> Deferred:
    return Deferred(f"{_HERE}.{module}:{name}")


def has_region_column(path) -> bool:
    """A ``.csv``/``.parquet`` file with a ``region`` column (the ``region-table`` format).

    Args:
        path: a file.
    """
    return "region" in (table_columns(path) or [])


RAJAPERF = Format(
    name="rajaperf",
    summary="RAJAPerf runs: Caliper .cali / JSON (json-split, format json(object)), Thicket "
    "to_json, CSV",
    table="benchmark_runs",
    plan=_work("rajaperf", "plan"),
    read=_work("rajaperf", "read"),
    finish=_work("rajaperf", "finish"),
    guess=is_rajaperf_file,
    add_arguments=arguments.add_rajaperf_arguments,
    options=arguments.rajaperf_options,
    group_of=_SAME_DIRECTORY,
    description="Read RAJAPerf outputs (directories are searched recursively) into the "
    "benchmark_runs table.",
    examples=(
        "xamm-ingest rajaperf ./runs                        machine names from the Caliper "
        "metadata",
        "xamm-ingest rajaperf ./h100-runs --machine h100-node",
        "xamm-ingest rajaperf ./runs --dry-run --json       read and validate only; print the "
        "summary as JSON",
        "xamm-ingest rajaperf ./runs --strict               fail (exit 1, write nothing) if any "
        "file or record is rejected",
        "xamm-ingest rajaperf ./runs --bound max_time_per_rep_s=1e6   allow slower repetitions "
        "than the default bound",
        "xamm-ingest rajaperf tk.json                       a Thicket's to_json() file, one "
        "source with many profiles",
    ),
)

BENCHPARK = Format(
    name="benchpark",
    summary="Benchpark/Ramble workspaces: their RAJAPerf experiments, with the experiment's "
    "system, modifiers and variables",
    table="benchmark_runs",
    plan=_work("benchpark", "plan"),
    read=_work("benchpark", "read"),
    finish=_work("rajaperf", "finish"),
    guess=is_ramble_workspace,
    add_arguments=arguments.add_rajaperf_arguments,
    options=arguments.rajaperf_options,
    group_of=_SAME_DIRECTORY,
    description="Read the RAJAPerf experiments of Benchpark/Ramble workspaces (a workspace, a "
    "Benchpark experiment or an experiments root; searched recursively) into the "
    "benchmark_runs table, each row with the workflow's metadata in run_metadata.",
    examples=(
        "xamm-ingest benchpark ./benchpark-root --machine dane   every workspace under it",
        "xamm-ingest benchpark ./benchpark-root --dry-run --json",
    ),
)

BABELSTREAM = Format(
    name="babelstream",
    summary="BabelStream outputs (v3-v5, plain or --csv; many runs a file)",
    table="benchmark_runs",
    plan=_work("babelstream", "plan"),
    prepare=_work("babelstream", "prepare"),
    read=_work("babelstream", "read"),
    finish=_work("babelstream", "finish"),
    guess=is_babelstream_output,
    add_arguments=arguments.add_babelstream_arguments,
    options=arguments.babelstream_options,
    group_of=_SAME_DIRECTORY,
    description="Read BabelStream outputs (directories are searched recursively) into the "
    "benchmark_runs table as Stream_* rows. BabelStream records no machine and no compiler: say "
    "them with --machine/--compiler, an xamm.toml beside the runs, or --path-pattern.",
    examples=(
        "xamm-ingest babelstream ./stream-runs --machine v100-isambard --dry-run",
        "xamm-ingest babelstream ./uob --path-pattern 'babelstream-(?P<machine>[a-z0-9]+)_' "
        "--dry-run",
    ),
)

CALIPER = Format(
    name="caliper",
    summary="Caliper application profiles (.cali, or .json: json-split or format json(object))",
    table="app_profiles",
    plan=_work("caliper", "plan"),
    walk=_work("caliper", "walk"),
    prepare=_work("caliper", "prepare"),
    read=_work("caliper", "read"),
    finish=_PROFILE_FINISH,
    guess=is_caliper_file,
    read_regions=_work("caliper", "read_regions"),
    add_arguments=arguments.add_caliper_arguments,
    options=_work("caliper", "options"),
    batched=True,
    description="Read Caliper application profiles (.cali, or .json: json-split or format "
    "json(object)) into the app_profiles table, one sample each.",
    examples=(
        "xamm-ingest caliper ./profiles --app Laghos --machine ruby --time-unit usec",
        "xamm-ingest caliper ./profiles --app Laghos --machine ruby --time-unit usec --map "
        "variant=implementation --batch-files 500   a team's key as the variant; a rerun skips "
        "what is stored",
    ),
)

HPCTOOLKIT = Format(
    name="hpctoolkit",
    summary="HPCToolkit database directories (old experiment.xml or new meta.db format)",
    table="app_profiles",
    plan=_work("hpctoolkit", "plan"),
    prepare=_work("hpctoolkit", "prepare"),
    read=_work("hpctoolkit", "read"),
    finish=_PROFILE_FINISH,
    guess=is_hpctoolkit_database,
    read_regions=_work("hpctoolkit", "read_regions"),
    add_arguments=arguments.add_sample_arguments,
    options=Deferred("xamm_ingest.profiles:sample_options"),
    batched=True,
    description="Read HPCToolkit database directories (old experiment.xml or new meta.db "
    "format) into the app_profiles table, one sample each.",
    examples=(
        "xamm-ingest hpctoolkit ./hpctoolkit-lulesh-database --app LULESH --machine quartz "
        "--param size=30 --ranks 8",
    ),
)

TABLE = Format(
    name="table",
    summary="samples already flattened to CSV/Parquet, with a column mapping",
    table="app_profiles",
    plan=_work("table", "plan"),
    prepare=_work("table", "prepare"),
    read=_work("table", "read"),
    finish=_PROFILE_FINISH,
    add_arguments=arguments.add_table_arguments,
    options=arguments.table_options,
    description="Read CSV/Parquet samples into app_profiles using a TOML mapping "
    "(see xamm_ingest.readers.table for its format).",
    examples=("xamm-ingest table samples.csv --mapping mapping.toml",),
)

REGION_TABLE = Format(
    name="region-table",
    summary=".csv/.parquet table of regions (a region column; exclusive_s or time_s, ...)",
    guess=has_region_column,
    read_regions=_work("region_table", "read_regions"),
)
