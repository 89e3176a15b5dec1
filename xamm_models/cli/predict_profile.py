"""``xamm predict`` on what application teams have: a Caliper file, an HPCToolkit database, a table
of regions, or an application in the store (``--app NAME --machine M``).

The profile is recognised and read through the ``xamm.profiles`` entry points (the ingest layer's
``guess_profile`` and ``read_regions``, a loop over every installed format), predicted region by
region and composed (:mod:`xamm_models.predictors.composed`), and printed as one row per target,
fastest first.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from xamm_data.cli import summary
from xamm_data.cli.tools import UsageError, write_table
from xamm_data.plugins import load
from xamm_data.tables.regions import RegionProfile, RegionProfileError
from xamm_models.cli.common import TOP_REGIONS

#: columns of the whole-program table printed to a terminal
SHOWN = (
    "rank",
    "target",
    "basis",
    "relR",
    "relR_lo",
    "relR_hi",
    "p_fastest",
    "time_s",
    "time_lo_s",
    "time_hi_s",
    "assumes",
    "target_from",
    "target_configuration",
)
REGIONS_SHOWN = (
    "region",
    "category",
    "exclusive_s",
    "target",
    "relR",
    "relR_lo",
    "relR_hi",
    "regime",
    "time_s",
)


#: the whole-program table in 100 columns: relR and the seconds each with their interval; what a
#: target assumes under the table, its source and configuration in the notes (--wide: SHOWN)
NARROW = ("rank", "target", "basis", "relR", "p_fastest", "time_s")


def _print_programs(programs, title: str, wide: bool) -> None:
    """The predicted time per target: every column of :data:`SHOWN` 200 wide with ``wide``, else
    :data:`NARROW` in 100 columns and a line per assumption naming the targets it holds for."""
    # the Triad ratio beside the answer, where time without bytes or flops was predicted
    triad = ("triad_relR",) if programs["triad_relR"].is_not_null().any() else ()
    if wide:
        summary.print_frame(programs.select(*SHOWN, *triad), title=title, width=summary.WIDE)
        return
    bounds = {"relR": ("relR_lo", "relR_hi"), "time_s": ("time_lo_s", "time_hi_s")}
    shown = summary.with_intervals(programs.select(*SHOWN, *triad), bounds, digits=3)
    summary.print_frame(
        shown.select(*NARROW, *triad), title=f"{title} (--wide: every column)",
        width=summary.WIDTH,
    )  # fmt: skip
    by: dict[str, list[str]] = {}
    for target, assumes in programs.select("target", "assumes").iter_rows():
        if assumes:
            by.setdefault(assumes, []).append(target)
    for assumes, targets in by.items():
        summary.say(f"{', '.join(targets)} assume{'s' if len(targets) == 1 else ''} {assumes}")


def _print_regions(regions, every: bool, wide: bool = False) -> None:
    """The prediction per region in 100 columns: the regions with the most time on the source
    (:data:`~xamm_models.cli.common.TOP_REGIONS` of them, or ``every`` one), each by its name
    and its seconds there, then per target its relR with the interval and its predicted seconds;
    with ``wide``, the same regions by path with :data:`REGIONS_SHOWN`, 200 wide (``--json`` and
    ``--out`` hold every column)."""
    time = (
        regions.group_by("region")
        .agg(pl.col("exclusive_s").max())
        .sort(["exclusive_s", "region"], descending=[True, False])
    )
    n = time.height
    kept = time.get_column("region").to_list()[: n if every else TOP_REGIONS]
    order = {r: i for i, r in enumerate(kept)}
    ordered = (
        regions.filter(pl.col("region").is_in(kept))
        .with_columns(pl.col("region").replace_strict(order, return_dtype=pl.Int64).alias("_at"))
        .sort("_at", maintain_order=True)
    )
    title = (
        "per region"
        if every or n <= TOP_REGIONS
        else f"per region: the {TOP_REGIONS} of {n} regions with the most time (--all: every one)"
    )
    if wide:
        summary.print_frame(ordered.select(REGIONS_SHOWN), title=title, width=summary.WIDE)
        return
    shown = (
        ordered.select(
            pl.format(
                "{} ({} s)",
                pl.col("region").str.split("/").list.last(),
                pl.col("exclusive_s").round_sig_figs(4),
            ).alias("region (seconds here)"),
            "target", "relR", "relR_lo", "relR_hi", "time_s", "regime",
        )
    )  # fmt: skip
    summary.print_frame(
        summary.with_intervals(shown, {"relR": ("relR_lo", "relR_hi")}),
        title=title,
        width=summary.WIDTH,
    )


def is_profile(path: Path) -> bool:
    """Whether an installed format reads ``path`` as an application profile (rather than a table
    of model features or a store): the ``xamm.profiles`` entry point ``guess``, which asks every
    format registered under ``xamm.formats`` (Caliper, HPCToolkit, a region table, another
    package's)."""
    return bool(load("xamm.profiles", "guess", "recognising application profiles")(path))


def read_profile(args) -> RegionProfile:
    """The profile named on the command line: a file or database read by the ingest layer's
    reader, or one configuration of an application in the store (``--app``, ``--select``)."""
    if args.app:
        if not args.machine:
            raise RegionProfileError("--app NAME needs --machine M (where the app ran)")
        # the store and the data sets: only a stored application needs them
        from xamm_data.stored_profiles import parse_select, stored_profile

        try:
            select = parse_select(getattr(args, "select", None))
        except ValueError as e:  # how --select is written: a usage error
            raise UsageError(str(e)) from None
        return stored_profile(
            args.app, args.machine, store=getattr(args, "store", None), select=select
        )
    if args.profiles is None:
        raise RegionProfileError("no profile: pass a profile file or database, or --app NAME")
    read = load("xamm.profiles", "read", "reading application profiles")
    return read(args.profiles, time_unit=args.time_unit, clock_ghz=args.clock_ghz)


def _bench(args):
    if not args.target_benchmarks:
        return None
    # in the handler: `xamm --help` never loads the models
    from xamm_models.stored import load_benchmark_runs

    return load_benchmark_runs(args.target_benchmarks)


def _write(pred, args) -> None:
    if args.out:
        written = write_table(pred.programs, args.out)
        print(f"wrote {written} ({pred.programs.height} targets)")
        if args.regions:
            p = Path(written)
            out = write_table(pred.regions, p.with_name(f"{p.stem}-regions{p.suffix}"))
            print(f"wrote {out} ({pred.regions.height} region x target rows)")
    if args.plot:
        from xamm_models.report.figures import plot_programs  # matplotlib: only for --plot

        title = f"{pred.profile.meta.app} from {pred.source}"
        print(f"wrote {plot_programs(pred.programs, title, args.plot)}")


def profile_cmd(args) -> int:
    """``xamm predict`` on an application profile (see the module docstring)."""
    # in the handler: `xamm --help` never loads the models
    from xamm_models.predictors.composed import predict_profile
    from xamm_models.predictors.kinds import load_model  # in the handler, as above

    profile = read_profile(args)
    model = load_model(str(args.model or "xamm/default"), revision=args.revision)
    pred = predict_profile(
        profile,
        model,
        source=args.source,
        targets=args.target,
        target_benchmarks=_bench(args),
        config=args.config,
        store=False if args.no_store_targets else getattr(args, "store", None),
        kind=getattr(args, "variant", None),
    )
    if args.json:
        doc = {"notes": pred.notes, "programs": pred.programs.to_dicts()}
        if args.regions:
            doc["regions"] = pred.regions.to_dicts()
        print(json.dumps(doc, indent=2, default=str))
    else:  # the table is shown with --out too: the file is a copy, not the answer
        title = (
            f"{pred.profile.meta.app}: predicted time per target, fastest first "
            f"(relR = time there / on {pred.source}; 80% intervals)"
        )
        _print_programs(pred.programs, title, wide=getattr(args, "wide", False))
        if args.regions:
            _print_regions(
                pred.regions, every=getattr(args, "all", False), wide=getattr(args, "wide", False)
            )
        print("\n".join(f"- {n}" for n in pred.notes))
    _write(pred, args)
    return 0
