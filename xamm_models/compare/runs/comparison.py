"""``compare(new, refs)``: a new machine against the ones a centre knows, kernel by kernel.

For each reference the runs are matched like for like (:mod:`xamm_models.compare.runs.matching`) and
each matched kernel gets:

* ``relR``: seconds per iteration on the new target / on the reference, the geometric mean over
  the sizes matched, and ``relR_min`` .. ``relR_max``, its range over sizes and trials (every
  trial on one side against every trial on the other);
* ``predicted``: the ratio the two targets' physics signatures predict
  (:func:`~xamm_models.machines.physics.modelled_time`, each signature measured from its own
  target's compared runs), and ``departure`` = relR / predicted;
* ``flagged``: the departure lies outside the interval measured for exactly this computation on
  the benchmark's machines (:func:`interval`, from :mod:`xamm_models.studies.physics_spread`).

Per kernel group the geometric mean of the kernels' relR comes with a 90% bootstrap interval over
kernels. The physics figures of every target stand side by side, with what they could not measure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import polars as pl

from xamm_data.machines.registry import UnknownMachineError
from xamm_data.machines.registry import get as get_machine
from xamm_data.machines.targets import Target
from xamm_models.benchmark.spec import MAX_SIZE_RATIO, SIZE_RATIO
from xamm_models.compare.runs.figures import comparison_thicket, missing_figures, physics_table
from xamm_models.compare.runs.matching import REASONS, families, match, samples_of, select_runs
from xamm_models.machines.nodes import PER_RANK, NodeScale, fullest, node_scale
from xamm_models.machines.physics import (
    MIN_INTENSITY,
    PhysicsSignature,
    modelled_time,
    physics_signatures,
)

__all__ = ["SPREAD_FILE", "Comparison", "compare_runs", "interval"]

#: The interval of log10(measured / predicted relR) the physics spread study measured, per scenario
#: (written by ``python -m xamm_models.studies.physics_spread``).
SPREAD_FILE = Path(__file__).with_name("physics_spread.json")
BOOTSTRAP = 2000
LEVEL = 0.90
SEED = 0


@lru_cache(maxsize=1)
def _spread() -> dict:
    return json.loads(SPREAD_FILE.read_text())


def interval(scenario: str) -> tuple[float, float] | None:
    """The [lo, hi] of log10(measured / predicted relR) holding 90% of the benchmark's kernels for
    ``scenario`` (``CPU->GPU``, ...); None where the study saw no pair of that scenario."""
    q = _spread()["quantiles"].get(scenario)
    return None if q is None else (float(q[0]), float(q[1]))


@dataclass
class Comparison:
    """What :func:`compare_runs` found (see the module docstring). Frames carry a ``ref`` column."""

    new: str
    refs: list[str]
    family: str
    backends: dict[str, str]
    pairs: pl.DataFrame
    kernels: pl.DataFrame
    groups: pl.DataFrame
    flags: pl.DataFrame
    unmatched: pl.DataFrame
    signatures: dict[str, PhysicsSignature]
    intervals: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    configurations: dict[str, str] = field(default_factory=dict)
    size_ratio: float = SIZE_RATIO
    scales: dict[str, NodeScale] = field(default_factory=dict)

    @property
    def node_view(self) -> bool:
        """Whether every target's node is known (measured or scaled): ``relR_node`` is then a
        whole node against a whole node."""
        return bool(self.scales) and all(s.basis != PER_RANK for s in self.scales.values())

    def physics(self) -> pl.DataFrame:
        """The targets' physics figures side by side: one row per figure, one column per target
        (null where a target's runs did not measure it), a node's where it is known."""
        return physics_table(self.signatures, self.scales)

    def missing(self) -> dict[str, list[str]]:
        """Per target, the physics figures its runs did not measure, each with why."""
        return {t: missing_figures(s) for t, s in self.signatures.items()}

    def to_dict(self) -> dict:
        """Everything, JSON-ready (what ``xamm compare --json`` prints)."""
        return {
            "new": self.new,
            "refs": self.refs,
            "family": self.family,
            "backends": self.backends,
            "configurations": self.configurations,
            "bases": {t: {"basis": v.basis, "why": v.why} for t, v in self.scales.items()},
            "node_view": self.node_view,
            "size_ratio": self.size_ratio,
            "intervals": {k: list(v) if v else None for k, v in self.intervals.items()},
            "physics": self.physics().to_dicts(),
            "missing": self.missing(),
            "groups": self.groups.to_dicts(),
            "kernels": self.kernels.to_dicts(),
            "flags": self.flags.to_dicts(),
            "pairs": self.pairs.drop(
                "trial_min_s_per_iter_new",
                "trial_max_s_per_iter_new",
                "trial_min_s_per_iter_ref",
                "trial_max_s_per_iter_ref",
            ).to_dicts(),
            "unmatched": self.unmatched.to_dicts(),
        }

    def to_thicket(self):
        """The compared kernels as a Thicket: one profile per target, one node per kernel under
        its group, metrics ``s_per_iter`` and, on the new target's profile, ``relR`` and
        ``predicted`` against each reference (``relR@<ref>``)."""
        return comparison_thicket(self)


def _signatures(samples: dict[str, pl.DataFrame]) -> dict[str, PhysicsSignature]:
    frame = pl.concat(
        s.select(
            pl.lit(t).alias("target"),
            "time_per_rep_s",
            "bytes_per_rep",
            "flops_per_rep",
            "kernels_per_rep",
            "variant",  # a sequential run launches no kernel: no overhead (physics)
        )
        for t, s in samples.items()
    )
    return physics_signatures(frame)


def _predicted(pairs: pl.DataFrame, new: PhysicsSignature, ref: PhysicsSignature) -> np.ndarray:
    def per_iter(sig: PhysicsSignature, side: str) -> np.ndarray:
        rows = pairs.select(
            pl.col(f"{c}_{side}").alias(c)
            for c in ("bytes_per_rep", "flops_per_rep", "kernels_per_rep")
        )
        return modelled_time(sig, rows) / pairs.get_column(f"iterations_per_rep_{side}").to_numpy()

    with np.errstate(divide="ignore", invalid="ignore"):
        r = per_iter(new, "new") / per_iter(ref, "ref")
    return np.where(np.isfinite(r) & (r > 0), r, np.nan)


def _trial_range(pairs: pl.DataFrame) -> pl.DataFrame:
    """Each pair's relR over every trial on one side against every trial on the other."""
    return pairs.with_columns(
        (pl.col("trial_min_s_per_iter_new") / pl.col("trial_max_s_per_iter_ref")).alias("relR_min"),
        (pl.col("trial_max_s_per_iter_new") / pl.col("trial_min_s_per_iter_ref")).alias("relR_max"),
    )


def _kernels(pairs: pl.DataFrame, band: tuple[float, float] | None) -> pl.DataFrame:
    geo = lambda c: pl.col(c).log().mean().exp()  # noqa: E731
    k = (
        pairs.group_by("ref", "group", "kernel")
        .agg(
            geo("relR").alias("relR"),
            pl.col("relR_min").min(),
            pl.col("relR_max").max(),
            geo("relR_node").alias("relR_node"),
            pl.len().alias("sizes"),
            pl.col("trials_new").min(),
            pl.col("trials_ref").min(),
            geo("predicted").alias("predicted"),
            pl.when((pl.col("regime_new") == "unknown") | (pl.col("regime_ref") == "unknown"))
            .then(pl.lit("unknown"))
            .when(pl.col("regime_new") != pl.col("regime_ref"))
            .then(pl.concat_str("regime_new", pl.lit(" vs "), "regime_ref"))
            .otherwise(pl.lit("same"))
            .sort_by(pl.col("regime_new") == pl.col("regime_ref"))
            .first()
            .alias("regime"),
        )
        # a kernel whose work the signatures cannot model (no bytes, flops or measured overhead)
        # has no prediction, and so no flag
        .with_columns(
            (pl.col("relR") / pl.col("predicted")).fill_nan(None).alias("departure"),
            pl.col("predicted").fill_nan(None),
            pl.col("relR_node").fill_nan(None),
        )
    )
    dev = pl.col("departure").log10()
    if band is None:
        return k.with_columns(
            pl.lit(False).alias("flagged"), pl.lit(None, pl.Float64).alias("excess")
        ).sort("ref", "group", "kernel")
    lo, hi = band
    excess = pl.when(dev > hi).then(dev - hi).when(dev < lo).then(lo - dev).otherwise(0.0)
    return (
        k.with_columns(excess.alias("excess"))
        .with_columns((pl.col("excess") > 0).fill_null(False).alias("flagged"))
        .sort("ref", "group", "kernel")
    )


def _bootstrap(values: np.ndarray, rng: np.random.Generator) -> tuple[float, float] | None:
    """The 90% percentile bootstrap interval of the geometric mean over ``values``' kernels."""
    if len(values) < 2:
        return None
    logs = np.log(values)
    means = logs[rng.integers(0, len(logs), size=(BOOTSTRAP, len(logs)))].mean(axis=1)
    a = (1 - LEVEL) / 2
    return float(np.exp(np.quantile(means, a))), float(np.exp(np.quantile(means, 1 - a)))


def _geo_ci(v: np.ndarray, rng: np.random.Generator, prefix: str) -> dict:
    """``{prefix: geometric mean, prefix_lo, prefix_hi: its 90% bootstrap interval}`` (None where
    ``v`` is empty or has one kernel)."""
    v = v[np.isfinite(v) & (v > 0)]
    ci = _bootstrap(v, rng)
    return {
        prefix: float(np.exp(np.log(v).mean())) if len(v) else None,
        f"{prefix}_lo": ci[0] if ci else None,
        f"{prefix}_hi": ci[1] if ci else None,
    }


def _groups(kernels: pl.DataFrame) -> pl.DataFrame:
    rng = np.random.default_rng(SEED)
    rows = []
    for (ref, group), part in kernels.sort("ref", "group", "kernel").group_by(
        ["ref", "group"], maintain_order=True
    ):
        node = part.get_column("relR_node").cast(pl.Float64).fill_null(np.nan).to_numpy()
        rows.append(
            {
                "ref": ref,
                "group": group,
                "kernels": part.height,
                **_geo_ci(part.get_column("relR").to_numpy(), rng, "relR"),
                **_geo_ci(node, rng, "relR_node"),
                "flagged": int(part.get_column("flagged").sum()),
                **_group_regime(part, ref),
            }
        )
    schema = {"ref": pl.String, "group": pl.String, "kernels": pl.Int64}
    schema |= {c: pl.Float64 for c in ("relR", "relR_lo", "relR_hi")}
    schema |= {c: pl.Float64 for c in ("relR_node", "relR_node_lo", "relR_node_hi")}
    schema |= {"flagged": pl.Int64, "regime": pl.String, "regime_why": pl.String}
    return pl.DataFrame(rows, schema=schema)


def _group_regime(part: pl.DataFrame, ref: str) -> dict:
    """``same`` when every kernel's matched sizes sit in the same cache level on both sides
    (within the node's last-level cache, or beyond it), ``across`` when one does not (the sentence
    names it), ``unknown`` when a side's cache or rank count is not recorded."""
    regime = part.get_column("regime") if "regime" in part.columns else pl.Series([None])
    if regime.is_null().any() or (regime == "unknown").any():
        return {"regime": "unknown", "regime_why": "a node's cache or rank count is not recorded"}
    across = part.filter(pl.col("regime") != "same")
    if across.is_empty():
        return {"regime": "same", "regime_why": None}
    k = across.row(0, named=True)
    new, old = k["regime"].split(" vs ")
    why = (f"{across.height} of {part.height} kernels compare sizes in different cache levels "
           f"(e.g. {k['kernel']}: in {new} on the new machine's node, in {old} on {ref}'s); "
           "match sizes more closely (size_ratio) or compare per rank")  # fmt: skip
    return {"regime": "across", "regime_why": why}


def _regimes(pairs: pl.DataFrame, target: str, run, scale: NodeScale, side: str) -> pl.Series:
    """Where each pair's working set sits on ``target``'s node: ``cache`` (within its last-level
    cache), ``memory`` (beyond it), ``unknown`` (the registry records no cache, or the runs no rank
    count). A CPU node's working set is a rank's bytes a launch times the ranks a node runs (or
    would run, when the node is scaled from part of it: :mod:`~xamm_models.machines.nodes`); a
    GPU's is one rank's."""
    device = Target.parse(target).device or "cpu"
    try:
        cache = get_machine(Target.parse(target).machine).cache_bytes(device)
    except UnknownMachineError:
        cache = None
    ranks = run.ranks if run is not None else None
    if device == "cpu" and scale.basis != PER_RANK:
        ranks = scale.factor
    if device == "gpu":
        ranks = 1
    if cache is None or ranks is None:
        return pl.Series(f"regime_{side}", ["unknown"] * pairs.height, dtype=pl.String)
    n = pairs.get_column(f"kernels_per_rep_{side}").fill_null(1.0).clip(lower_bound=1.0)
    ws = pairs.get_column(f"bytes_per_rep_{side}").fill_null(0.0) / n * ranks
    return pl.Series(f"regime_{side}", np.where(ws.to_numpy() <= cache, "cache", "memory"),
                     dtype=pl.String)  # fmt: skip


def _node_relr(pairs: pl.DataFrame, sigs: dict, scales: dict, new: str, ref: str) -> np.ndarray:
    """Each pair's relR, a whole node of ``new`` against one of ``ref`` (NaN where either is
    known only per rank): relR x k(ref) / k(new)."""
    if scales[new].basis == PER_RANK or scales[ref].basis == PER_RANK:
        return np.full(pairs.height, np.nan)
    k = {}
    for side, t in (("new", new), ("ref", ref)):
        b = pairs.get_column(f"bytes_per_rep_{side}").fill_null(0.0).to_numpy()
        f = pairs.get_column(f"flops_per_rep_{side}").fill_null(0.0).to_numpy()
        n = np.clip(pairs.get_column(f"kernels_per_rep_{side}").fill_null(1.0).to_numpy(), 1, None)
        k[side] = scales[t].factors(sigs[t], b / n, f < MIN_INTENSITY * b)
    return pairs.get_column("relR").to_numpy() * k["ref"] / k["new"]


def _flags(kernels: pl.DataFrame) -> pl.DataFrame:
    """The flagged kernels: slower than the physics promises first (what goes to the vendor), each
    side by how far beyond the interval."""
    return (
        kernels.filter(pl.col("flagged"))
        .with_columns((pl.col("departure") > 1).alias("slower_than_predicted"))
        .sort(["slower_than_predicted", "excess"], descending=[True, True])
    )


def choose_family(runs: Mapping[str, pl.DataFrame | pl.LazyFrame], family: str | None) -> str:
    """The variant family every target ran (the first in order), or ``family`` checked."""
    have = {t: families(r) for t, r in runs.items()}
    common = [f for f in next(iter(have.values())) if all(f in h for h in have.values())]
    if family is not None:
        missing = [t for t, h in have.items() if family not in h]
        if missing:
            raise ValueError(
                f"no {family} runs for {', '.join(missing)}; "
                + "; ".join(f"{t} ran {', '.join(h) or 'none'}" for t, h in have.items())
            )
        return family
    if not common:
        raise ValueError(
            "no variant family all targets ran: "
            + "; ".join(f"{t} ran {', '.join(h) or 'none'}" for t, h in have.items())
        )
    return common[0]


def _check_size_ratio(size_ratio: float) -> None:
    if not 1 <= size_ratio <= MAX_SIZE_RATIO:  # nan fails too
        raise ValueError(
            f"size_ratio must be a number from 1 to {MAX_SIZE_RATIO:g} (how far apart matched "
            f"problem sizes may be), not {size_ratio}"
        )


def compare_runs(
    runs: Mapping[str, pl.DataFrame | pl.LazyFrame],
    new: str,
    refs: list[str],
    *,
    family: str | None = None,
    size_ratio: float = SIZE_RATIO,
) -> Comparison:
    """Compare ``new`` with each of ``refs`` from their ``benchmark_runs`` rows.

    Args:
        runs: ``machine:device`` -> that target's rows (one machine, one device; eager or lazy).
        new: the new target.
        refs: the reference targets.
        family: the variant family to compare (default: the first all of them ran).
        size_ratio: how far apart matched problem sizes may be (default: the benchmark's).

    Returns:
        The comparison.
    """
    _check_size_ratio(size_ratio)
    fam = choose_family(runs, family)
    samples, backends, configs = _selected(runs, fam)
    sigs = _signatures(samples)
    scales = {t: node_scale(t, run) for t, run in configs.items()}
    pairs, kernels, unmatched, intervals = [], [], [], {}
    for ref in refs:
        p, u = match(samples[new], samples[ref], size_ratio)
        p = _trial_range(p.with_columns(pl.lit(ref).alias("ref")))
        p = p.with_columns(
            pl.Series("predicted", _predicted(p, sigs[new], sigs[ref])),
            pl.Series("relR_node", _node_relr(p, sigs, scales, new, ref)),
            _regimes(p, new, configs.get(new), scales[new], "new"),
            _regimes(p, ref, configs.get(ref), scales[ref], "ref"),
        )
        scenario = f"{ref.rsplit(':', 1)[-1].upper()}->{new.rsplit(':', 1)[-1].upper()}"
        intervals[scenario] = interval(scenario)
        pairs.append(p)
        kernels.append(_kernels(p, intervals[scenario]))
        unmatched.append(u.with_columns(pl.lit(ref).alias("ref")))
    k = pl.concat(kernels, how="diagonal_relaxed")
    um = pl.concat(unmatched).with_columns(
        pl.col("reason").replace_strict(REASONS, return_dtype=pl.String).alias("why")
    )
    return Comparison(
        new=new,
        refs=list(refs),
        family=fam,
        backends=backends,
        pairs=pl.concat(pairs, how="diagonal_relaxed"),
        kernels=k,
        groups=_groups(k),
        flags=_flags(k),
        unmatched=um.select(*UNMATCHED_COLUMNS),
        signatures=sigs,
        intervals=intervals,
        configurations={t: run.describe() for t, run in configs.items()},
        size_ratio=size_ratio,
        scales=scales,
    )


#: The columns of a target's runs its samples and configuration are made of.
SAMPLED = (
    "kernel", "group", "variant", "backend", "tuning", "problem_size", "time_per_rep_s",
    "iterations_per_rep", "bytes_per_rep", "flops_per_rep", "kernels_per_rep", "checksum_status",
    "ranks", "threads", "gpus",
)  # fmt: skip
UNMATCHED_COLUMNS = ("ref", "side", "kernel", "problem_size", "bytes_per_iter", "reason", "why")


def _selected(runs: Mapping[str, pl.DataFrame | pl.LazyFrame], family: str):
    """Per target: its samples in ``family``, its preferred back-end and fullest configuration;
    the back-end; the configuration."""
    samples, backends, configs = {}, {}, {}
    for t, r in runs.items():
        _, device = t.rsplit(":", 1)
        # what is matched and the node configuration, read by each query below as it needs
        r = r.lazy()
        r = r.select(c for c in r.collect_schema().names() if c in SAMPLED)
        rows, backends[t] = select_runs(r, family, device)
        rows, configs[t] = fullest(rows)
        samples[t] = samples_of(rows)
    return samples, backends, configs
