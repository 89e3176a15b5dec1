"""``xamm predict`` on what application teams have: a Caliper file, an HPCToolkit database, a table
of regions, or an application in the store (``--app NAME --machine M``).

The profile is read through the ``xamm.profiles`` entry point (the ingest layer's
``read_regions``), predicted region by region and composed
(:mod:`xamm_models.predictors.composed`), and printed as one row per target, fastest first.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from xamm_data.cli_tools import emit
from xamm_data.plugins import load
from xamm_data.regions import (
    ProfileMeta,
    RegionProfile,
    RegionProfileError,
    category_expr,
    check_regions,
    conform_regions,
    work_from_counters,
)

#: columns of the whole-program table printed to a terminal
SHOWN = (
    "rank",
    "target",
    "relR",
    "relR_lo",
    "relR_hi",
    "p_fastest",
    "time_s",
    "time_lo_s",
    "time_hi_s",
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


def is_profile(path: Path) -> bool:
    """Whether ``path`` is an application profile (rather than a table of model features or a
    store): a Caliper file, an HPCToolkit database, or a table with a ``region`` column."""
    if path.is_dir():
        return (path / "meta.db").is_file() or (path / "experiment.xml").is_file()
    suffix = path.suffix.lower()
    if suffix in (".cali", ".json"):
        return True
    if suffix == ".csv" and path.is_file():
        with open(path, encoding="utf-8", errors="replace") as f:
            header = f.readline()
        return "region" in [c.strip().strip('"') for c in header.split(",")]
    if suffix == ".parquet" and path.is_file():
        try:
            return "region" in pl.read_parquet_schema(path)
        except Exception:  # not Parquet at all: the feature-table path names the file
            return False
    return False


def store_app_profile(app: str, machine: str, store=None) -> RegionProfile:
    """An application already in the store (``app_profiles``) as one whole-program region: the
    median runtime over its rows, its counters' work.

    Args:
        app: the application's name.
        machine: the machine it ran on.
        store: the store (None: the default one).

    Returns:
        The profile.
    """
    from xamm_data import load_dataset  # in the handler: `xamm --help` never loads data

    rows = load_dataset(machine, kind="app_profiles", store=store)
    got = rows.filter(pl.col("app") == app)
    if got.is_empty():
        have = sorted(set(rows["app"])) if rows.height else []
        raise RegionProfileError(
            f"no application {app!r} on {machine} in the store's app_profiles (it holds "
            f"{', '.join(have) or 'none'}); ingest it with xamm-ingest caliper|hpctoolkit|table"
        )
    got = got.filter(pl.col("runtime_s").is_not_null())
    if got.is_empty():
        raise RegionProfileError(f"{app} on {machine}: its profiles measured no runtime")
    devices = sorted(set(got["device"]))
    ctr = [c for c in got.columns if c.startswith("ctr_") and got[c].null_count() < got.height]
    one = got.select(
        pl.lit(app).alias("region"),
        pl.lit(app).alias("name"),
        pl.col("runtime_s").median().alias("exclusive_s"),
        pl.col("runtime_s").median().alias("inclusive_s"),
        *(pl.col(c).median() for c in ctr),
    )
    regions = conform_regions(work_from_counters(one).with_columns(category_expr("name")))
    check_regions(regions, f"{app} on {machine}")
    meta = ProfileMeta(
        path=f"store app_profiles {app}@{machine}",
        format="app_profiles",
        app=app,
        source=f"{machine}:{devices[0]}",
        source_from="the store's app_profiles",
        ranks=got["ranks"].drop_nulls().first() if "ranks" in got.columns else None,
        threads=got["threads"].drop_nulls().first() if "threads" in got.columns else None,
        time_from=f"median runtime_s over {got.height} stored profile(s)",
    )
    return RegionProfile(meta, regions)


def read_profile(args) -> RegionProfile:
    """The profile named on the command line, read by the ingest layer's reader."""
    if args.app:
        if not args.machine:
            raise RegionProfileError("--app NAME needs --machine M (where the app ran)")
        return store_app_profile(args.app, args.machine, getattr(args, "store", None))
    if args.profiles is None:
        raise RegionProfileError("no profile: pass a profile file or database, or --app NAME")
    read = load("xamm.profiles", "read", "reading application profiles")
    return read(args.profiles, time_unit=args.time_unit, clock_ghz=args.clock_ghz)


def plot_programs(programs: pl.DataFrame, title: str, path: Path) -> Path:
    """Predicted whole-program relR per target with its interval, fastest first, log scale."""
    import matplotlib  # the models extra, only for --plot

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after the backend is chosen

    p = programs.sort("rank")
    y = p["relR"].to_numpy()
    err = [y - p["relR_lo"].to_numpy(), p["relR_hi"].to_numpy() - y]
    fig, ax = plt.subplots(figsize=(7, 0.45 * p.height + 1.5), dpi=100)
    ax.errorbar(y, range(p.height), xerr=err, fmt="o", capsize=3)
    ax.axvline(1.0, color="grey", lw=0.8)
    ax.set_xscale("log")
    ax.set_yticks(range(p.height), p["target"].to_list())
    ax.invert_yaxis()
    ax.set_xlabel("relR = time there / time on the source (80% interval); < 1: faster")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return path


def _bench(args):
    if not args.target_benchmarks:
        return None
    # in the handler: `xamm --help` never loads the models
    from xamm_models.predictors.paper.pipeline import load_benchmark_runs

    return load_benchmark_runs(args.target_benchmarks)


def _write(pred, args) -> None:
    if args.out:
        pred.programs.write_parquet(args.out)
        print(f"wrote {args.out} ({pred.programs.height} targets)")
        if args.regions:
            out = args.out.with_name(f"{args.out.stem}-regions{args.out.suffix}")
            pred.regions.write_parquet(out)
            print(f"wrote {out} ({pred.regions.height} region x target rows)")
    if args.plot:
        title = f"{pred.profile.meta.app} from {pred.source}"
        print(f"wrote {plot_programs(pred.programs, title, args.plot)}")


def profile_cmd(args) -> int:
    """``xamm predict`` on an application profile (see the module docstring)."""
    # in the handler: `xamm --help` never loads the models
    from xamm_models.predictors.composed import predict_profile
    from xamm_models.zoo.registry import load_model  # in the handler, as above

    profile = read_profile(args)
    model = load_model(str(args.model or "xamm/default"), revision=args.revision)
    pred = predict_profile(
        profile,
        model,
        source=args.source,
        targets=args.target,
        target_benchmarks=_bench(args),
        config=args.config,
    )
    if args.json:
        doc = {"notes": pred.notes, "programs": pred.programs.to_dicts()}
        if args.regions:
            doc["regions"] = pred.regions.to_dicts()
        print(json.dumps(doc, indent=2, default=str))
    elif not args.out:
        title = (
            f"{pred.profile.meta.app}: predicted time per target, fastest first "
            f"(relR = time there / on {pred.source}; 80% intervals)"
        )
        emit(pred.programs.select(SHOWN), as_json=False, title=title)
        if args.regions:
            emit(pred.regions.select(REGIONS_SHOWN), as_json=False, title="per region")
        print("\n".join(f"- {n}" for n in pred.notes))
    _write(pred, args)
    return 0
