"""What a prediction compares: every target, where its benchmark runs come from, the
programming-model family and configuration they ran in, and how one of its ranks becomes a node.

Targets come from three places, later ones winning for the same ``machine:device``:

* **shipped**: the predictor's own signatures, each measured in the one configuration
  ``xplat-rajaperf`` declares for it (:data:`~xamm_models.benchmark.spec.CONFIGS`);
* **your store**: every machine whose ``benchmark_runs`` the user's store holds (a centre's new
  machine is a target as soon as it is ingested);
* **given**: ``target_benchmarks`` passed with the prediction.

A target's runs may hold several families (``Base_Seq`` beside ``Base_OpenMP``) and configurations
(1 rank, 112 ranks). A signature is measured from one of each (:func:`select_runs`): the family the
profile was built in where the target ran it, within it the configuration that fills the most
of a node, and one RAJAPerf variant kind (Base, Lambda, RAJA: the profile's, else Base); what was
left out is said (``TargetRuns.note``). Never the fastest variant across
families: a 112-thread OpenMP run beside a sequential one is two different machines' worth of
figures.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from xamm_data.machines.families import family_expr, family_of
from xamm_data.machines.targets import Target
from xamm_models.benchmark.spec import CONFIGS as DECLARED
from xamm_models.machines.nodes import RunConfig, configurations, node_use, run_of

SHIPPED, STORE, GIVEN = "shipped", "your store", "given"

__all__ = [
    "GIVEN",
    "SHIPPED",
    "STORE",
    "DEFAULT_KIND",
    "TargetRuns",
    "catalogue",
    "mixed_runs",
    "one_family",
    "select_runs",
    "shipped_targets",
    "variant_kind",
]


@dataclass(frozen=True)
class TargetRuns:
    """One target as a prediction sees it."""

    target: str
    origin: str  # SHIPPED, STORE or GIVEN
    family: str
    run: RunConfig | None
    rows: pl.DataFrame | None = None  # the runs its signature is measured from (None: shipped)
    note: str = ""  # what of its runs was left out, and why


def shipped_targets(signatures: dict) -> dict[str, TargetRuns]:
    """The predictor's own targets, each in its declared configuration (unknown where the
    benchmark declares none).

    Args:
        signatures: the predictor's signatures by target.

    Returns:
        Target -> :class:`TargetRuns`.
    """
    declared = {c.target: c for c in DECLARED}
    out = {}
    for t in signatures:
        c = declared.get(t)
        device = Target.parse(t).device
        if c is None:
            out[t] = TargetRuns(t, SHIPPED, "gpu" if device == "gpu" else "sequential", None)
            continue
        backend = c.variant.split("_", 1)[1]
        run = RunConfig(c.ranks, c.threads, c.ranks if device == "gpu" else None, c.variant)
        out[t] = TargetRuns(t, SHIPPED, family_of(backend, device), run)
    return out


#: the variant kind a target's runs are read in when the profile names none: the hand-written
#: baseline every RAJAPerf release and back-end has
DEFAULT_KIND = "Base"


def variant_kind(variant: str | None) -> str | None:
    """The kind of a RAJAPerf variant (``Base``, ``Lambda``, ``RAJA``), or None.

    Args:
        variant: a variant name (``RAJA_Seq``) or a kind (``RAJA``).
    """
    return str(variant).split("_", 1)[0] if variant else None


def _one_kind(rows: pl.DataFrame, kind: str | None) -> tuple[pl.DataFrame, str]:
    """The rows of one variant kind: ``kind`` where the runs hold it, else :data:`DEFAULT_KIND`,
    else the first; and what was left out."""
    kinds = pl.col("variant").str.split("_").list.first()
    have = sorted(set(rows.select(kinds).to_series().drop_nulls()))
    if len(have) <= 1:
        return rows, ""
    keep = next(k for k in (kind, DEFAULT_KIND, have[0]) if k in have)
    if keep == kind:
        why = "the profile's"
    else:
        why = "the profile names none" if kind is None else f"no {kind} variant ran"
        why += "; the baseline's" if keep == DEFAULT_KIND else "; the first"
    left = ", ".join(k for k in have if k != keep)
    note = f"its {left} variants are not used ({why}: {keep})"
    return rows.filter(kinds == keep), note


def _one_target(
    rows: pl.DataFrame, target: str, origin: str, want: str, kind: str | None = None
) -> TargetRuns:
    """The rows of one target its signature is measured from: family ``want`` where it ran it,
    else the family that used the most of its node; within it, the fullest configuration, and one
    variant kind (``kind`` where it ran it: :func:`_one_kind`)."""
    rows = rows.with_columns(family_expr())
    by_family = {f: configurations(g) for (f,), g in rows.group_by(["family"], maintain_order=True)}
    family = (
        want
        if want in by_family
        else max(sorted(by_family), key=lambda f: node_use(by_family[f][0]))
    )
    chosen, *others = by_family[family]
    chosen, kind_note = _one_kind(chosen, kind)
    run = run_of(chosen)
    notes = [kind_note] if kind_note else []
    if left := sorted(set(by_family) - {family}):
        notes.append(f"its {', '.join(left)} runs are not used (another programming model)")
    if others:
        shapes = "; ".join(
            RunConfig(g["ranks"][0], g["threads"][0], None, "").shape() for g in others
        )
        notes.append(f"its runs at {shapes} are not used (another configuration)")
    return TargetRuns(target, origin, family, run, chosen.drop("family"), "; ".join(notes))


def select_runs(
    runs: pl.DataFrame, origin: str, family: str, kind: str | None = None
) -> dict[str, TargetRuns]:
    """Per target of ``benchmark_runs`` rows: the rows its signature is measured from (see the
    module docstring).

    Args:
        runs: ``benchmark_runs`` rows of any targets.
        origin: where they come from (:data:`STORE` or :data:`GIVEN`).
        family: the profile's family (``sequential``, ``threaded``, ``gpu``); a CPU target that
            did not run it uses its other CPU family, a GPU target its GPU runs.
        kind: the profile's variant kind (``Base``, ``Lambda``, ``RAJA``; None: ``Base``).

    Returns:
        Target -> :class:`TargetRuns`.
    """
    if runs.is_empty():
        return {}
    out = {}
    # rows read from a store older than benchmark_runs 1.4.0 have no GPU count
    missing = [c for c in ("ranks", "threads", "gpus") if c not in runs.columns]
    runs = runs.with_columns(pl.lit(None, pl.Int64).alias(c) for c in missing)
    framed = runs.with_columns(Target.expr().alias("_target"))
    for (t,), part in framed.group_by(["_target"], maintain_order=True):
        device = Target.parse(t).device
        # a CPU profile's family on a CPU, any GPU runs on a GPU; else the fullest family
        want = "gpu" if device == "gpu" else family
        out[t] = _one_target(part.drop("_target"), t, origin, want, kind)
    return out


def catalogue(
    signatures: dict,
    family: str,
    *,
    store_runs: pl.DataFrame | None = None,
    given: pl.DataFrame | None = None,
    kind: str | None = None,
) -> dict[str, TargetRuns]:
    """Every target a prediction can answer for, later sources winning (see the module
    docstring).

    Args:
        signatures: the predictor's own signatures by target.
        family: the profile's programming-model family.
        store_runs: ``benchmark_runs`` of the user's store (None: none).
        given: ``benchmark_runs`` passed with the prediction (None: none).
        kind: the profile's variant kind (:func:`select_runs`).

    Returns:
        Target -> :class:`TargetRuns`.
    """
    out = shipped_targets(signatures)
    for runs, origin in ((store_runs, STORE), (given, GIVEN)):
        if runs is not None:
            out.update(select_runs(runs, origin, family, kind))
    return out


def one_family(runs: pl.DataFrame, family: str, kind: str | None = None) -> pl.DataFrame:
    """The rows of ``runs`` a signature may be measured from: per target, its runs of ``family``
    (on a GPU, its GPU runs; a CPU target without it, the CPU family that used the most of its
    node) in the configuration that used the most of a node, of one variant kind.

    Args:
        runs: ``benchmark_runs`` rows of any targets (a full RAJAPerf run with every variant).
        family: ``sequential``, ``threaded`` or ``gpu``.
        kind: ``Base``, ``Lambda`` or ``RAJA`` (None: ``Base`` where the runs hold several).

    Returns:
        The rows kept.
    """
    picked = select_runs(runs, GIVEN, family, kind)
    rows = [tr.rows for tr in picked.values() if tr.rows is not None]
    return pl.concat(rows, how="diagonal_relaxed") if rows else runs.head(0)


def mixed_runs(runs: pl.DataFrame) -> list[str]:
    """Per target whose ``benchmark_runs`` rows hold more than one family or configuration, a
    sentence naming them (empty when every target's rows are one of each).

    Args:
        runs: ``benchmark_runs`` rows.

    Returns:
        The sentences.
    """
    need = {"machine", "device", "backend", "variant", "ranks", "threads"}
    if not need <= set(runs.columns) or runs.is_empty():
        return []
    shapes = (
        runs.with_columns(family_expr(), Target.expr().alias("_t"))
        .group_by("_t", "family", "ranks", "threads", maintain_order=True)
        .agg(pl.col("variant").unique().sort())
    )
    out = []
    for (t,), g in shapes.group_by(["_t"], maintain_order=True):
        if g.height > 1:
            parts = "; ".join(
                f"{r['family']} ({', '.join(r['variant'])}: "
                f"{RunConfig(r['ranks'], r['threads'], None, '').shape()})"
                for r in g.sort("family", "ranks").iter_rows(named=True)
            )
            out.append(f"{t}'s runs hold {parts}")
    return out
