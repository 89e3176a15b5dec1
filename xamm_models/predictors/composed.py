"""Whole-program predictions composed from a profile's regions.

A profile (:class:`~xamm_data.tables.regions.RegionProfile`) is predicted region by region and
summed:

* each **compute** region with time is one profile row for the predictor: its exclusive time is one
  repetition (``runtime_s``; ``iterations_per_rep`` 1), its bytes and flops the work, its calls the
  launches (:func:`region_rows`). A **time-only** region (no bytes) is taken as streaming memory at
  the source's sustained bandwidth (its signature at the largest working set it measured), so
  its relR is what the two machines' bandwidths say; its interval is not the predictor's but the
  spread measured for time-only input (:func:`time_only_spread`, from
  :mod:`xamm_models.studies.time_only`);
* on a target whose runs timed no flop rate (a **bandwidth-only** signature, from BabelStream), a
  region with work keeps its prediction and its interval is widened to hold the spread measured
  for such signatures, by kernel class (:func:`bandwidth_only_spread`, from
  :mod:`xamm_models.studies.bandwidth_only`);
* **communication** regions (MPI and the like) and **I/O** regions are held constant: no
  signature measures a network or a file system, and the output says so;
* the whole program on a target is the sum over regions of predicted exclusive time; its interval
  the sum of the regions' bounds (regions' errors on one machine pair move together, so bounds are
  added, not pooled); relR = that sum / the source's. Targets are ranked with ``p_fastest``
  (:func:`~xamm_models.predictors.contract.rank`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import polars as pl

from xamm_data.machines.families import profile_family
from xamm_data.machines.targets import scenario_expr
from xamm_data.store.store import as_store
from xamm_data.tables.regions import RegionProfile
from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.errors import (
    ProfileInputError,
    UnknownSourceError,
    UnknownTargetError,
    unknown_name_message,
)
from xamm_models.machines.nodes import PER_RANK
from xamm_models.machines.physics import MIN_INTENSITY, physics_signatures
from xamm_models.predictors.configurations import SHIPPED, catalogue, variant_kind
from xamm_models.predictors.contract import rank
from xamm_models.predictors.kinds import load_model
from xamm_models.predictors.specifications import (
    SPECIFICATIONS,
    answer_from_specifications,
    is_specification,
    specification_runs,
    specification_targets,
)
from xamm_models.predictors.whole_nodes import HELD, assumption, node_view, scale_regions

#: Where the measured spread of time-only predictions is kept (written by
#: ``python -m xamm_models.studies.time_only``).
SPREAD_FILE = Path(__file__).with_name("time_only_spread.json")
#: The spread of measured times around a bandwidth-only signature's, per kernel class (written by
#: ``python -m xamm_models.studies.bandwidth_only``).
BW_ONLY_SPREAD_FILE = Path(__file__).with_name("bandwidth_only_spread.json")
BW_ONLY = "+bandwidth-only target"  # appended to the regime of a widened region
ELEMENT_BYTES = 8.0  # a region's problem size is its bytes in double-precision words
TRIAD = "Stream_TRIAD"  # the kernel whose best bandwidth the Triad ratio compares


@lru_cache(maxsize=1)
def time_only_spread() -> dict[str, list[float]]:
    """Scenario (``CPU->GPU``, ...) -> [q10, q90] of log10(true / predicted relR) for time-only
    input, as :mod:`xamm_models.studies.time_only` measured it."""
    return dict(json.loads(SPREAD_FILE.read_text())["quantiles"])


@lru_cache(maxsize=1)
def bandwidth_only_spread() -> dict[str, list[float]]:
    """Kernel class (``memory``, ``compute``) -> [q10, q90] of log10(measured / modelled time) for
    a signature built from streaming runs alone, as :mod:`xamm_models.studies.bandwidth_only`
    measured it."""
    return dict(json.loads(BW_ONLY_SPREAD_FILE.read_text())["quantiles"])


def _bandwidth_only_bounds(pred: pl.DataFrame, rows: pl.DataFrame, sigs: dict) -> pl.DataFrame:
    """Regions with work on a target whose runs timed no flop rate (bandwidth-only): the interval
    widened to hold the spread measured for such signatures, by the region's class."""
    blind = [t for t, s in sigs.items() if "flop rate" not in s.measures and s.measures]
    if not blind:
        return pred
    spread = bandwidth_only_spread()
    dense = pl.col("flops_per_rep") >= MIN_INTENSITY * pl.col("bytes_per_rep")
    cls = rows.with_row_index("row").select(
        pl.col("row").cast(pl.Int64),
        pl.when(dense).then(pl.lit("compute")).otherwise(pl.lit("memory")).alias("cls"),
    )
    pred = pred.join(cls, on="row")
    lo = pl.col("cls").replace_strict({k: v[0] for k, v in spread.items()}, return_dtype=pl.Float64)
    hi = pl.col("cls").replace_strict({k: v[1] for k, v in spread.items()}, return_dtype=pl.Float64)
    hit = (
        pl.col("target").is_in(blind)
        & ~pl.col("time_only")
        & (pl.col("target") != pl.col("source"))
    )
    return pred.with_columns(
        pl.when(hit)
        .then(pl.min_horizontal("relR_lo", pl.col("relR") * 10.0**lo))
        .otherwise("relR_lo")
        .alias("relR_lo"),
        pl.when(hit)
        .then(pl.max_horizontal("relR_hi", pl.col("relR") * 10.0**hi))
        .otherwise("relR_hi")
        .alias("relR_hi"),
        pl.when(hit).then(pl.col("regime") + BW_ONLY).otherwise("regime").alias("regime"),
    ).drop("cls")


def region_rows(regions: pl.DataFrame, sustained_bw: float) -> pl.DataFrame:
    """The compute regions with time, as profile rows of the default predictor's contract.

    Args:
        regions: a :class:`~xamm_data.tables.regions.RegionProfile`'s regions.
        sustained_bw: the source's sustained bandwidth (bytes/s) that a time-only region is taken
            to stream at.

    Returns:
        One row per predicted region: ``region``, ``time_only`` and the contract's columns.
    """
    r = regions.filter((pl.col("category") == "compute") & (pl.col("exclusive_s") > 0))
    # no work known (no bytes, or neither bytes nor flops): the time alone, at sustained bandwidth
    time_only = pl.col("bytes").is_null() | (
        (pl.col("bytes") == 0) & (pl.col("flops").fill_null(0.0) == 0)
    )
    nbytes = _count(
        pl.when(time_only).then(pl.col("exclusive_s") * sustained_bw).otherwise("bytes")
    )
    flops = _count(pl.when(time_only).then(0.0).otherwise(pl.col("flops").fill_null(0.0)))
    return r.select(
        pl.col("region").alias("app"),
        time_only.alias("time_only"),
        pl.col("exclusive_s").alias("runtime_s"),
        nbytes.alias("bytes_per_rep"),
        flops.alias("flops_per_rep"),
        pl.lit(1.0).alias("iterations_per_rep"),
        pl.col("calls").fill_null(1.0).clip(lower_bound=1.0).alias("kernels_per_rep"),
        pl.col("exclusive_s").log10().alias("f_log_s_per_iter"),
        (flops / nbytes.clip(lower_bound=1.0)).alias("f_arith_intensity"),
        (nbytes / ELEMENT_BYTES).clip(lower_bound=1.0).log10().alias("f_log_problem_size"),
    )


def _count(x: pl.Expr) -> pl.Expr:
    """Work below one byte or flop (a tiny region's share, a counter averaged over ranks) as one:
    the contract's counts are 0 or at least 1."""
    return pl.when((x > 0) & (x < 1)).then(1.0).otherwise(x)


@dataclass
class ProgramPrediction:
    """A profile's predicted time on each target, and region by region.

    ``programs``: one row per target, fastest first (``time_s`` with ``time_lo_s``/``time_hi_s``,
    ``relR`` with its interval, ``rank``, ``p_fastest``, the share of the time that was time-only
    and held constant). ``regions``: one row per (region, target). ``notes``: what the profile
    lacks and what was assumed."""

    profile: RegionProfile
    source: str
    programs: pl.DataFrame
    regions: pl.DataFrame
    notes: list[str] = field(default_factory=list)


def _time_only_bounds(pred: pl.DataFrame) -> pl.DataFrame:
    """Time-only rows' intervals: the measured spread of time-only input, per scenario; the
    source itself is what the profile measured (relR 1, no interval)."""
    spread = time_only_spread()
    lo = pl.col("scenario").replace_strict(
        {k: v[0] for k, v in spread.items()}, default=None, return_dtype=pl.Float64
    )
    hi = pl.col("scenario").replace_strict(
        {k: v[1] for k, v in spread.items()}, default=None, return_dtype=pl.Float64
    )
    own = pl.col("source") == pl.col("target")
    only = pl.col("time_only") & ~own
    return pred.with_columns(
        pl.when(own).then(1.0).otherwise("relR").alias("relR"),
        pl.when(own)
        .then(1.0)
        .when(only)
        .then(pl.col("relR") * 10.0**lo)
        .otherwise("relR_lo")
        .alias("relR_lo"),
        pl.when(own)
        .then(1.0)
        .when(only)
        .then(pl.col("relR") * 10.0**hi)
        .otherwise("relR_hi")
        .alias("relR_hi"),
        pl.when(own)
        .then(pl.lit("measured"))
        .when(only)
        .then(pl.lit("time-only"))
        .otherwise("regime")
        .alias("regime"),
    )


PREDICTED = {
    "region": pl.String,
    "target": pl.String,
    "relR": pl.Float64,
    "relR_lo": pl.Float64,
    "relR_hi": pl.Float64,
    "regime": pl.String,
}


def _predicted(model, rows: pl.DataFrame, source: str, targets: list[str], sigs: dict, kw: dict):
    """Per (predicted region, target): relR, its interval and the regime (:data:`PREDICTED`);
    targets from specifications answered by the roofline from their peaks."""
    if not rows.height:  # all of the time is communication: every region is held
        return pl.DataFrame(schema=PREDICTED)
    specced = [t for t in targets if is_specification(sigs[t])]
    measured = [t for t in targets if t not in specced]
    pred = model.predict(rows.drop("time_only"), source, measured, **kw)
    pred = pred.join(
        rows.with_row_index("row").select(pl.col("row").cast(pl.Int64), "time_only"), on="row"
    ).with_columns(scenario_expr())
    pred = _bandwidth_only_bounds(_time_only_bounds(pred), rows, sigs).select(
        pl.col("app").alias("region"), *list(PREDICTED)[1:]
    )
    if specced:
        figs = model.figures(kw.get("target_benchmarks"))
        spec = answer_from_specifications(rows, source, specced, figs)
        pred = pl.concat([pred, spec], how="vertical_relaxed")
    return pred


def predict_regions(
    model, profile: RegionProfile, source: str, targets: list[str], sigs: dict, **kw
) -> pl.DataFrame:
    """Per (region, target): predicted relR with its interval and regime; communication, I/O and
    untimed regions held constant.

    Args:
        model: a predictor of the contract (its ``predict``).
        profile: the profile.
        source: ``machine:device`` it was measured on.
        targets: where to predict.
        sigs: physics signatures by target (the source's is needed for time-only regions).
        **kw: passed to ``model.predict`` (``target_benchmarks``).

    Returns:
        ``region, category, work_from, exclusive_s, target, relR, relR_lo, relR_hi, regime,
        time_s, time_lo_s, time_hi_s``.
    """
    rows = region_rows(profile.regions, sigs[source].sustained_bandwidth)
    pred = _predicted(model, rows, source, targets, sigs, kw)
    held = profile.regions.join(pred.select("region").unique(), on="region", how="anti")
    held = held.join(pl.DataFrame({"target": targets}), how="cross").with_columns(
        pl.lit(1.0).alias("relR"),
        pl.lit(1.0).alias("relR_lo"),
        pl.lit(1.0).alias("relR_hi"),
        pl.lit(HELD).alias("regime"),
    )
    base = profile.regions.select("region", "category", "work_from", "exclusive_s")
    out = pl.concat(
        [base.join(pred, on="region"), held.select(base.columns + pred.columns[1:])],
        how="vertical_relaxed",
    )
    t = pl.col("exclusive_s")
    return out.with_columns(
        (t * pl.col("relR")).alias("time_s"),
        (t * pl.col("relR_lo")).alias("time_lo_s"),
        (t * pl.col("relR_hi")).alias("time_hi_s"),
    ).sort("target", "region")


def triad_bandwidths(samples: pl.DataFrame | None) -> dict[str, float]:
    """Each target's best Stream_TRIAD bandwidth (bytes/s) among ``samples``, as its runs ran.

    Args:
        samples: benchmark samples (``target``, ``app``, ``bytes_per_rep``, ``time_per_rep_s``).

    Returns:
        Target -> bytes/s, for the targets that ran Triad.
    """
    if samples is None or not {"target", "app"} <= set(samples.columns):
        return {}
    bw = pl.col("bytes_per_rep") / pl.col("time_per_rep_s")
    got = (
        samples.filter((pl.col("app") == TRIAD) & bw.is_finite() & (bw > 0))
        .group_by("target")
        .agg(bw.max().alias("bw"))
    )
    return dict(got.iter_rows())


def with_triad_ratio(
    programs: pl.DataFrame, source: str, triad: dict[str, float], scaled: dict[str, float]
) -> pl.DataFrame:
    """``programs`` with ``triad_relR``: the Triad ratio (the source's best Triad bandwidth / the
    target's) times the scaling the comparison gave the target's time-only time, the simplest
    answer for time without bytes or flops; set where the profile has such time and both ends
    ran Triad.

    Args:
        programs: one row per target (``target``, ``time_only_share``).
        source: the profile's machine.
        triad: :func:`triad_bandwidths` of the source and the targets.
        scaled: per target, how a whole-node comparison scaled its time-only time (absent: 1).
    """
    mine = triad.get(source)
    if not mine or not programs.select(pl.col("time_only_share").max() > 0).item():
        return programs.with_columns(pl.lit(None, pl.Float64).alias("triad_relR"))
    ratio = {t: mine / bw * scaled.get(t, 1.0) for t, bw in triad.items()}
    return programs.with_columns(
        pl.col("target").replace_strict(ratio, default=None, return_dtype=pl.Float64)
        .alias("triad_relR")
    )  # fmt: skip


def time_only_scaling(per_rank: pl.DataFrame, compared: pl.DataFrame) -> dict[str, float]:
    """Per target: the factor a comparison applied to its time-only regions' time (1 per rank).

    Args:
        per_rank: :func:`predict_regions`' answer.
        compared: the same after :func:`~xamm_models.predictors.whole_nodes.scale_regions`.
    """
    only = pl.col("regime") == "time-only"
    a = per_rank.filter(only).group_by("target").agg(pl.col("time_s").sum().alias("a"))
    b = compared.filter(only).group_by("target").agg(pl.col("time_s").sum().alias("b"))
    return {t: y / x for t, x, y in a.join(b, on="target").iter_rows() if x > 0}


def _whole_programs(regions: pl.DataFrame, source: str) -> pl.DataFrame:
    """Per target: the summed region times, relR against the source's time, and the shares of the
    source's time predicted from time alone and held as measured."""
    total = float(regions.filter(pl.col("target") == regions["target"][0])["exclusive_s"].sum())
    prog = regions.group_by("target", maintain_order=True).agg(
        pl.col("time_s", "time_lo_s", "time_hi_s").sum(),
        *(
            (pl.col("exclusive_s").filter(pl.col("regime") == regime).sum() / total).alias(name)
            for regime, name in (("time-only", "time_only_share"), (HELD, "held_share"))
        ),
    )
    return prog.with_columns(
        pl.lit(0, pl.Int64).alias("row"),
        pl.lit(source).alias("source"),
        pl.lit(total).alias("time_source_s"),
        (pl.col("time_s") / total).alias("relR"),
        (pl.col("time_lo_s") / total).alias("relR_lo"),
        (pl.col("time_hi_s") / total).alias("relR_hi"),
    )


def compose(
    regions: pl.DataFrame, source: str, coverage: float | None, seed: int, view=None
) -> pl.DataFrame:
    """Whole-program rows per target from :func:`predict_regions`' answer, ranked.

    Targets are ranked by ``p_fastest`` (then by predicted relR): rank 1 is the one most likely
    fastest given the intervals. In a node view a target compared per rank (its row says so) is
    not a node against a node: it gets no rank and no ``p_fastest``.

    Args:
        regions: :func:`predict_regions`' answer.
        source: the profile's machine.
        coverage: the intervals' coverage (for ``p_fastest``).
        seed: the ranking's Monte Carlo seed.
        view: the comparison (:class:`~xamm_models.predictors.whole_nodes.View`; None: all
            targets ranked together).

    Returns:
        One row per target, fastest first.
    """
    prog = _whole_programs(regions, source)
    apart = (
        []
        if view is None or view.kind == "rank"
        else [t for t in prog["target"] if view.basis(t) == PER_RANK]
    )
    ranked = rank(prog.filter(~pl.col("target").is_in(apart)), coverage, seed)
    if apart:
        rest = prog.filter(pl.col("target").is_in(apart)).with_columns(
            pl.lit(None, pl.Float64).alias("p_fastest"), pl.lit(None, pl.Int64).alias("rank")
        )
        ranked = pl.concat([ranked, rest.select(ranked.columns)], how="vertical_relaxed")
    if (ranked["held_share"] >= 1.0).all():  # nothing predicted: no target is faster
        ranked = ranked.with_columns(pl.lit(None, pl.Float64).alias("p_fastest"))
    return ranked.drop("row").select(
        "rank",
        "target",
        "relR",
        "relR_lo",
        "relR_hi",
        "p_fastest",
        "time_source_s",
        "time_s",
        "time_lo_s",
        "time_hi_s",
        "time_only_share",
        "held_share",
        "source",
    )


def _store_runs(store) -> pl.DataFrame | None:
    """The ``benchmark_runs`` of the user's store (None when it holds none)."""
    st = as_store(store)
    if st.version("benchmark_runs") is None:
        return None
    runs = st.scan("benchmark_runs").collect()
    return runs if runs.height else None


def _catalogue(
    model, profile: RegionProfile, target_benchmarks, store, kind: str | None
) -> tuple[dict, str, str]:
    """(every target's runs, the profile's family, why)."""
    if not hasattr(model, "signatures"):
        raise ProfileInputError(
            f"a {type(model).__name__} has no physics signatures; a profile's regions are "
            "predicted by a physics-first predictor (the default: --model xamm/default)"
        )
    m = profile.meta
    device = m.source.rsplit(":", 1)[-1] if m.source else None
    family, why = profile_family(m.programming_model, m.threads, m.gpus, device)
    store_runs = _store_runs(store) if store is not False else None
    cat = catalogue(
        model.signatures, family, store_runs=store_runs, given=target_benchmarks,
        kind=kind or variant_kind(m.variant),
    )  # fmt: skip
    return cat, family, why


def _signatures(model, cat: dict) -> tuple[dict, object]:
    """The predictor's signatures and those measured from the targets' selected runs, and what the
    predictor is handed as ``target_benchmarks``: the runs measured once where it can take them
    so (:meth:`~xamm_models.predictors.default.model.StackedPredictor.measure`), else the runs."""
    rows = [tr.rows for tr in cat.values() if tr.rows is not None]
    bench = pl.concat(rows, how="diagonal_relaxed") if rows else None
    sigs = dict(model.signatures)
    if bench is None:
        return sigs, None
    if hasattr(model, "measure"):
        measured = model.measure(bench)
        sigs.update(measured.signatures)
        return sigs, measured
    sigs.update(physics_signatures(samples_from_runs(bench), reference=sigs))
    return sigs, bench


def _triad(model, bench) -> dict[str, float]:
    """The best Triad bandwidth of every target the predictor and the given runs know (the runs'
    own where both do)."""
    known = triad_bandwidths(getattr(model, "samples", None))
    if bench is None:
        return known
    samples = getattr(bench, "samples", None)
    return known | triad_bandwidths(samples if samples is not None else samples_from_runs(bench))


def _resolve_ends(
    profile: RegionProfile, source: str | None, targets: list[str] | None, known: list[str]
) -> tuple[str, list[str]]:
    src = source or profile.meta.source
    if src is None:
        raise ProfileInputError(
            f"{profile.meta.path}: the profile does not say which machine it was measured on "
            f"({profile.meta.source_from}); pass --source MACHINE:DEVICE, one of "
            f"{', '.join(known)}"
        )
    if src not in known:
        raise UnknownSourceError(f"{unknown_name_message('source', src, known)}; {ADD}")
    want = list(targets) if targets else known
    for t in want:
        if t not in known:
            raise UnknownTargetError(f"{unknown_name_message('target', t, known)}; {ADD}")
    return src, list(dict.fromkeys([src, *want]))


ADD = (
    "add a machine from its benchmark runs: xamm-ingest rajaperf RUNS --machine NAME (or "
    "xamm-ingest babelstream) into your store; its machines are targets"
)


def _notes(profile: RegionProfile, source: str, sigs: dict, view, family_why: str) -> list[str]:
    r = profile.regions
    total = float(r["exclusive_s"].sum())
    timed = r.filter((pl.col("category") == "compute") & (pl.col("exclusive_s") > 0))
    only = float(timed.filter(pl.col("bytes").is_null())["exclusive_s"].sum())
    given = profile.meta.source != source
    notes = [
        f"profile: {profile.meta.app} on {source} "
        f"({'given' if given else profile.meta.source_from}), {profile.meta.configuration}, "
        f"{family_why}; times: {profile.meta.time_from}",
        f"compared: {view.source_why}; each target's basis, configuration and what it assumes "
        "are in its row",
        f"work: {', '.join(sorted(set(timed['work_from']))) or 'no timed compute region'}",
    ]
    if only > 0:
        notes.append(
            f"time-only: {only / total:.0%} of the time has no bytes or flops; predicted as "
            "streaming at the source's sustained bandwidth, with the interval measured for "
            f"time-only input: for {'the whole program' if only >= total else 'that time'} the "
            "answer is a bandwidth ratio. Beside it, triad_relR: the Triad ratio (the source's "
            "best Stream_TRIAD bandwidth / the target's, scaled as the answer is), where both ran "
            "Triad"
        )
    for cat, what in (("communication", "no signature measures a network"),
                      ("io", "no signature measures a file system")):  # fmt: skip
        share = float(r.filter(pl.col("category") == cat)["exclusive_s"].sum()) / total
        if share > 0:
            notes.append(f"{cat}: {share:.0%} of the time, held constant ({what})")
    if timed.height == 0:
        notes.append(
            "nothing predicted: the profile has no timed compute region, so every target gets "
            "relR 1 and none is ranked faster (p_fastest empty)"
        )
    return notes + _signature_notes(profile, list(view.scales), sigs)


def _signature_notes(profile: RegionProfile, targets: list[str], sigs: dict) -> list[str]:
    out = []
    for t in targets:
        if is_specification(sigs[t]):  # no runs at all: its row's basis says so
            continue
        missing = {"bandwidth", "flop rate", "launch overhead"} - set(sigs[t].measures)
        if missing:
            widened = (
                "; regions with bytes or flops get the spread measured for such signatures "
                "(docs/bandwidth-only.md)"
                if "flop rate" in missing and profile.work_known != "none"
                else ""
            )
            out.append(f"{t}: its runs measured no {' or '.join(sorted(missing))}{widened}")
    return out


SPEC_WHY = (
    "no runs: its registry peaks times the efficiencies its kind's measured machines sustain, "
    "with the wider interval measured by leaving each of them out"
)


def _describe_targets(programs, view, cat: dict, family: str, source: str) -> pl.DataFrame:
    """Each target's basis and why, what it assumes, where its runs come from and how they ran
    (and what of them was left out)."""
    rows = []
    for t in programs.get_column("target"):
        tr = cat.get(t)
        basis = view.basis(t)
        conf = tr.run.describe() if tr is not None and tr.run is not None else "not recorded"
        why = view.scales[t].why if view.kind == "node" else view.source_why
        # what it assumes follows its place in the view (a core, per rank, is one core)
        assumes = assumption(family, source, t, tr, basis)
        if tr is not None and tr.origin == SPECIFICATIONS:
            basis, why = SPECIFICATIONS, f"{SPEC_WHY}; {basis}: {why}"
        rows.append(
            {
                "target": t,
                "basis": basis,
                "basis_why": why,
                "assumes": assumes,
                "target_from": tr.origin if tr is not None else SHIPPED,
                "target_configuration": conf,
                "runs_left_out": (tr.note or None) if tr is not None else None,
            }
        )
    return pl.DataFrame(rows, schema_overrides={"runs_left_out": pl.String})


def _target_notes(programs: pl.DataFrame, view) -> list[str]:
    """How the targets were ranked; then per target its basis and why (in a node view), and what
    of its runs was left out."""
    ranked = programs.filter(pl.col("rank").is_not_null() & pl.col("p_fastest").is_not_null())
    lo, hi = ranked["relR_lo"], ranked["relR_hi"]
    first = ranked.filter(lo <= hi.min())["target"].to_list() if ranked.height else []
    out = []
    if first:
        out.append(
            f"rank: first the targets whose intervals reach below the lowest upper bound "
            f"({', '.join(first)}), by P(fastest); then the others by predicted relR (their "
            "P(fastest), the chance of a draw beyond their interval, orders nothing)"
        )
    for r in programs.iter_rows(named=True):
        left = f"; {r['runs_left_out']}" if r["runs_left_out"] else ""
        if view.kind == "node" or left:
            why = f"{r['basis']}: {r['basis_why']}" if view.kind == "node" else r["basis"]
            out.append(f"{r['target']} ({r['target_from']}): {why}{left}")
    return out


def predict_profile(
    profile: RegionProfile,
    model=None,
    *,
    source: str | None = None,
    targets: list[str] | None = None,
    target_benchmarks: pl.DataFrame | None = None,
    config: str = "node",
    store=None,
    kind: str | None = None,
) -> ProgramPrediction:
    """Where a profiled application runs best, and how long it takes there.

    Args:
        profile: the application's regions (``xamm_data.tables.regions``; read by
            ``xamm_ingest.read_regions`` or the ``xamm.profiles`` entry point).
        model: a physics-first predictor (None: the embedded default, ``xamm/default``).
        source: ``machine:device`` the profile was measured on (None: the profile's own).
        targets: where to predict (None: every target: the predictor's machines, the user's
            store's and ``target_benchmarks``'); the source is always among them.
        target_benchmarks: ``benchmark_runs`` of more machines (or newer runs of known ones).
        config: ``node`` compares a whole node with a whole node where the profile and the facts
            allow it, per rank elsewhere (said in each row); ``rank`` compares per rank, as the
            benchmark runs ran.
        store: the store whose machines are targets (None: the default one; False: none).
        kind: the RAJAPerf variant kind (``Base``, ``Lambda``, ``RAJA``) each target's runs are
            read in where they hold several (None: the profile's own, else ``Base``).

    Returns:
        The whole-program prediction per target, ranked, and per region, with notes.
    """
    if model is None:
        model = load_model("xamm/default")
    cat, family, family_why = _catalogue(model, profile, target_benchmarks, store, kind)
    sigs, bench = _signatures(model, cat)
    if hasattr(model, "figures"):  # a physics-first predictor: the roofline answers from peaks
        spec = specification_targets(cat)
        sigs.update(spec)
        cat.update({t: specification_runs(t) for t in spec})
    src, want = _resolve_ends(profile, source, targets, sorted(cat))
    if cat[src].origin == SPECIFICATIONS:
        raise UnknownSourceError(
            f"source {src}: the registry has its specifications, not its runs; a profile's "
            f"source needs benchmark runs; {ADD}"
        )
    view = node_view(profile, src, want, cat, config)
    kw = {} if bench is None else {"target_benchmarks": bench}
    per_rank = predict_regions(model, profile, src, want, sigs, **kw)
    rows = region_rows(profile.regions, sigs[src].sustained_bandwidth)
    regions = scale_regions(per_rank, rows, src, sigs, view)
    programs = compose(regions, src, model.interval_coverage, model.rank_seed, view)
    scaled = time_only_scaling(per_rank, regions)
    programs = with_triad_ratio(programs, src, _triad(model, bench), scaled)
    programs = programs.join(_describe_targets(programs, view, cat, family, src), on="target")
    programs = programs.with_columns(
        pl.lit(profile.meta.app).alias("app"),
        pl.lit(profile.meta.configuration).alias("source_configuration"),
    ).sort("rank", "relR", nulls_last=True)
    notes = _notes(profile, src, sigs, view, family_why) + _target_notes(programs, view)
    return ProgramPrediction(profile, src, programs, regions, notes)
