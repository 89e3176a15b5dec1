"""Drift: a machine against itself at an earlier state, kernel by kernel.

``drift(before, after)`` takes one target's ``benchmark_runs`` rows at two states (what was accepted
and the runs since an update) and asks which kernels got slower or faster beyond the spread of
their own trials.

* **Like for like.** A kernel is the same measurement on both sides when its kernel, variant,
  tuning, problem size and run configuration (ranks, threads, GPUs, block size) agree: the
  compiler and its flags may differ, since a compiler update is one of the changes drift is for.
  Everything unmatched is listed with its reason.
* **Per kernel.** Every row is one trial. The change is ``ratio`` = exp(mean log time after - mean
  log time before). Its spread comes from the trials: each kernel's pooled variance of log time,
  shrunk toward the median over kernels (``PRIOR_DF`` pseudo-trials; a kernel with two trials a
  side has little spread of its own to go on). The interval is a parametric bootstrap of that
  t-distributed error at level ``1 - (1 - level) / K`` per kernel over ``K`` kernels (Bonferroni):
  with ``level`` 0.90, a run with only noise raises a false alarm in at most 10% of comparisons,
  whatever the number of kernels. A bootstrap resampling the trials themselves is not used: with
  two to five trials a side it has too few distinct resamples to reach such quantiles.
* **Flags.** A kernel regressed when its whole interval lies above ``1 + tolerance``, improved when
  below ``1 / (1 + tolerance)``: the tolerance (default 5%) is the change a centre cares about,
  and it absorbs what trials of one job do not see (a node, a day, a thermal state).
* **Per group** (variant and kernel group): the geometric mean of its kernels' ratios with a
  bootstrap interval over its kernels and their trials (kernels resampled, each with a draw of its
  own error), Bonferroni over groups, flagged by the same rule. The row ``all`` is every kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from xamm_models.benchmark.spec import MAX_TOLERANCE
from xamm_models.compare.runs.targets import describe_runs

__all__ = [
    "CONFIG_COLUMNS",
    "Drift",
    "LEVEL",
    "PRIOR_DF",
    "TOLERANCE",
    "drift",
]

LEVEL = 0.90
TOLERANCE = 0.05
PRIOR_DF = 4  # pseudo-trials of the median spread each kernel's own spread is shrunk toward
DRAWS = 20_000  # parametric-bootstrap draws per kernel (reach the Bonferroni quantiles)
GROUP_DRAWS = 4_000
SEED = 0
#: What identifies one measurement besides the kernel (each column used when both sides have it).
CONFIG_COLUMNS = ("ranks", "threads", "gpus", "omp_max_threads", "block_size")
KEY = ("variant", "group", "kernel", "tuning", "problem_size")
UNMATCHED_WHY = {
    "not_run": "kernel, variant and tuning not run on the other side",
    "configuration": "problem size or run configuration differs on the other side",
}


@dataclass
class Drift:
    """What :func:`drift` found (see the module docstring)."""

    target: str
    before: str
    after: str
    kernels: pl.DataFrame
    groups: pl.DataFrame
    unmatched: pl.DataFrame
    tolerance: float = TOLERANCE
    level: float = LEVEL
    spread: dict = field(default_factory=dict)
    sides: dict = field(default_factory=dict)

    @property
    def regressions(self) -> pl.DataFrame:
        """The kernels that got slower beyond the tolerance and the trials' spread, worst first."""
        return self.kernels.filter(pl.col("verdict") == "slower").sort("lo", descending=True)

    @property
    def drifted(self) -> bool:
        """Whether any kernel or group moved beyond the tolerance and the spread."""
        moved = ["slower", "faster"]
        return bool(
            self.kernels.get_column("verdict").is_in(moved).any()
            or self.groups.get_column("verdict").is_in(moved).any()
        )

    def to_dict(self) -> dict:
        """Everything, JSON-ready (what ``xamm compare M@now M@accepted --json`` prints)."""
        return {
            "target": self.target,
            "before": self.before,
            "after": self.after,
            "tolerance": self.tolerance,
            "level": self.level,
            "drifted": self.drifted,
            "spread": self.spread,
            "sides": self.sides,
            "groups": self.groups.to_dicts(),
            "kernels": self.kernels.to_dicts(),
            "unmatched": self.unmatched.to_dicts(),
        }


def _key(before: pl.DataFrame, after: pl.DataFrame) -> list[str]:
    config = [
        c
        for c in CONFIG_COLUMNS
        if c in before.columns
        and c in after.columns
        and (before[c].null_count() < before.height or after[c].null_count() < after.height)
    ]
    return [*KEY, *config]


def _per_side(rows: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    """One row per measurement: trials, mean and sum of squares of log time per rep."""
    bad = rows.filter(~(pl.col("time_per_rep_s") > 0))
    if bad.height:
        raise ValueError(
            f"{bad.height} rows without a positive time_per_rep_s (first: kernel "
            f"{bad['kernel'][0]}, source {bad['source_path'][0] if 'source_path' in bad else '?'})"
        )
    lt = pl.col("time_per_rep_s").log()
    return rows.group_by(key).agg(
        pl.len().alias("trials"),
        lt.mean().alias("mean"),
        ((lt - lt.mean()) ** 2).sum().alias("ss"),
    )


def _unmatched(b: pl.DataFrame, a: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    """Measurements on one side only, with why."""
    kvt = ["variant", "kernel", "tuning"]
    out = []
    for side, mine, other in (("before", b, a), ("after", a, b)):
        alone = mine.join(other, on=key, how="anti", nulls_equal=True)
        ran = alone.join(other.select(kvt).unique(), on=kvt, how="semi", nulls_equal=True)
        out.append(
            alone.select(*KEY).with_columns(
                pl.lit(side).alias("side"),
                pl.when(pl.struct(kvt).is_in(ran.select(pl.struct(kvt)).to_series().implode()))
                .then(pl.lit("configuration"))
                .otherwise(pl.lit("not_run"))
                .alias("reason"),
            )
        )
    u = pl.concat(out)
    return u.with_columns(pl.col("reason").replace_strict(UNMATCHED_WHY).alias("why")).sort(
        "side", *KEY
    )


def _prior(ss: np.ndarray, df: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """The median per-kernel variance of log time, made unbiased for the mean of a chi-square
    (the median of chi2(df)/df is below 1), and the df it came from; (nan, 0) with no trials."""
    have = df > 0
    if not have.any():
        return float("nan"), 0.0
    v = ss[have] / df[have]
    typical = float(np.median(df[have]))
    ratio = float(np.median(rng.chisquare(typical, 200_000) / typical))
    return float(np.median(v)) / ratio, typical


def _kernel_intervals(m: pl.DataFrame, level: float, rng: np.random.Generator) -> pl.DataFrame:
    """``m`` with ``se``, ``df``, ``lo`` and ``hi`` (Bonferroni over its kernels)."""
    ss = m.get_column("ss").to_numpy()
    df = (m.get_column("trials_before") + m.get_column("trials_after") - 2).to_numpy()
    s0, _ = _prior(ss, df.astype(float), rng)
    if not np.isfinite(s0):
        return m.with_columns(pl.lit(None, pl.Float64).alias(c) for c in ("se", "df", "lo", "hi"))
    var = (PRIOR_DF * s0 + ss) / (PRIOR_DF + df)
    inv = 1 / m.get_column("trials_before").to_numpy() + 1 / m.get_column("trials_after").to_numpy()
    se = np.sqrt(var * inv)
    dof = (PRIOR_DF + df).astype(float)
    a = (1 - level) / max(m.height, 1) / 2
    lo_t, hi_t = np.empty(m.height), np.empty(m.height)
    for v in np.unique(dof):  # kernels share a few trial counts: one set of draws per count
        q = np.quantile(rng.standard_t(v, size=DRAWS), [a, 1 - a])
        lo_t[dof == v], hi_t[dof == v] = q
    d = m.get_column("log_ratio").to_numpy()
    return m.with_columns(
        pl.Series("se", se),
        pl.Series("df", dof),
        pl.Series("lo", np.exp(d + lo_t * se)),
        pl.Series("hi", np.exp(d + hi_t * se)),
    )


def _verdict(tolerance: float) -> pl.Expr:
    up = 1 + tolerance
    return (
        pl.when(pl.col("lo").is_null() | pl.col("hi").is_null())
        .then(pl.lit("unknown"))
        .when(pl.col("lo") > up)
        .then(pl.lit("slower"))
        .when(pl.col("hi") < 1 / up)
        .then(pl.lit("faster"))
        .otherwise(pl.lit("same"))
        .alias("verdict")
    )


def _group_rows(k: pl.DataFrame, level: float, rng: np.random.Generator) -> list[dict]:
    parts = [("all", "all", k)] + [
        (v, g, part)
        for (v, g), part in k.sort("variant", "group", "kernel").group_by(
            ["variant", "group"], maintain_order=True
        )
    ]
    a = (1 - level) / len(parts) / 2
    rows = []
    for variant, group, part in parts:
        d = part.get_column("log_ratio").to_numpy()
        se = part.get_column("se").fill_null(0.0).to_numpy()
        dof = part.get_column("df").fill_null(np.inf).to_numpy()
        idx = rng.integers(0, len(d), size=(GROUP_DRAWS, len(d)))
        noise = rng.standard_t(np.where(np.isfinite(dof), dof, 1e6)[idx]) * se[idx]
        means = (d[idx] + noise).mean(axis=1)
        known = part.get_column("se").null_count() == 0
        rows.append(
            {
                "variant": variant,
                "group": group,
                "kernels": len(d),
                "ratio": float(np.exp(d.mean())),
                "lo": float(np.exp(np.quantile(means, a))) if known else None,
                "hi": float(np.exp(np.quantile(means, 1 - a))) if known else None,
                "slower": int((part.get_column("verdict") == "slower").sum()),
                "faster": int((part.get_column("verdict") == "faster").sum()),
            }
        )
    return rows


def _groups(k: pl.DataFrame, level: float, tolerance: float, rng) -> pl.DataFrame:
    schema = {"variant": pl.String, "group": pl.String, "kernels": pl.Int64}
    schema |= {c: pl.Float64 for c in ("ratio", "lo", "hi")}
    schema |= {"slower": pl.Int64, "faster": pl.Int64}
    rows = _group_rows(k, level, rng) if k.height else []
    return pl.DataFrame(rows, schema=schema).with_columns(_verdict(tolerance))


def _matched(b: pl.DataFrame, a: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    """The measurements on both sides, with the change in mean log time and the pooled sum of
    squares."""
    m = b.join(a, on=key, how="inner", suffix="_after", nulls_equal=True).rename(
        {"trials": "trials_before", "mean": "mean_before", "ss": "ss_before"}
    )
    return m.with_columns(
        (pl.col("mean_after") - pl.col("mean_before")).alias("log_ratio"),
        (pl.col("ss_before") + pl.col("ss_after")).alias("ss"),
    ).sort(key, nulls_last=True)


def _spread(k: pl.DataFrame) -> dict:
    """The typical trial counts and standard error of the kernels' log ratios."""
    sd = k.get_column("se").to_numpy() if k.get_column("se").null_count() == 0 else None
    return {
        "trials_before": int(np.median(k.get_column("trials_before").to_numpy())),
        "trials_after": int(np.median(k.get_column("trials_after").to_numpy())),
        "median_se_log": float(np.median(sd)) if sd is not None else None,
        "known": sd is not None,
    }


def drift(
    before: pl.DataFrame,
    after: pl.DataFrame,
    *,
    target: str = "",
    labels: tuple[str, str] = ("before", "after"),
    tolerance: float = TOLERANCE,
    level: float = LEVEL,
    seed: int = SEED,
) -> Drift:
    """Which kernels of one target moved between two sets of its runs.

    Args:
        before: the earlier runs (``benchmark_runs`` rows of one machine and device).
        after: the later runs.
        target: ``machine:device`` (for the record).
        labels: what the two sides are called (``quartz:cpu@accepted``, ...).
        tolerance: the relative change below which nothing is flagged (0.05: 5%).
        level: the family-wise level of the kernels' and groups' intervals.
        seed: the bootstrap's seed.

    Returns:
        The :class:`Drift`.

    Raises:
        ValueError: no measurement in common, or a row without a positive time.
    """
    if not 0 < level < 1 or not 0 <= tolerance <= MAX_TOLERANCE:  # nan fails both: refused
        raise ValueError(
            f"level must be in (0, 1) and tolerance a fraction in [0, "
            f"{MAX_TOLERANCE:g}] (0.05 for 5%), not {level}, {tolerance}"
        )
    rng = np.random.default_rng(seed)
    key = _key(before, after)
    b, a = _per_side(before, key), _per_side(after, key)
    m = _matched(b, a, key)
    if m.is_empty():
        raise ValueError(
            f"{target or 'the target'}: no kernel was measured alike at {labels[0]} and "
            f"{labels[1]} (same kernel, variant, tuning, problem size and configuration)"
        )
    k = _kernel_intervals(m, level, rng)
    k = k.with_columns(pl.col("log_ratio").exp().alias("ratio"), _verdict(tolerance))
    cols = [*key, "trials_before", "trials_after", "ratio", "lo", "hi", "verdict"]
    kernels = k.select(cols)
    return Drift(
        target=target,
        before=labels[0],
        after=labels[1],
        kernels=kernels,
        groups=_groups(k, level, tolerance, rng),
        unmatched=_unmatched(b, a, key),
        tolerance=tolerance,
        level=level,
        spread=_spread(k),
        sides={labels[0]: describe_runs(before), labels[1]: describe_runs(after)},
    )
