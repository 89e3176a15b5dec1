"""What a prediction compares: how each machine's benchmark runs ran (ranks x threads, variant), and
whether they filled a node.

A signature is measured in the configuration its runs used, per rank: RAJAPerf runs the same kernel
on every rank and reports one rank's problem size and bytes, timed between barriers, so the total
across ranks is ranks x the reported size (RAJAPerf's user guide, "Running with MPI"). A
``4 ranks x 1 thread, Base_Seq`` signature on a 96-core node measures what one rank gets while 3
others run; nothing in it scales to 96 ranks, because memory bandwidth does not grow with the core
count.

A node-to-node comparison (``--config node``) therefore keeps only the machines whose runs used the
whole node (all its cores, or one rank per GPU for all its GPUs, as the registry in
:mod:`xamm_data.machines` counts them) and says why each other machine is left out. For those, a
node does ranks x one rank's work at one rank's pace, so a whole-node relR is the per-rank relR x
(source ranks / target ranks).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from xamm_data import load_dataset
from xamm_data.machines import UnknownMachineError
from xamm_data.machines import get as get_machine
from xamm_data.targets import Target

CONFIGS = ("as-run", "node")

__all__ = [
    "CONFIGS",
    "NodeCheck",
    "describe",
    "node_check",
    "run_configurations",
    "target_runs",
]


def _count(col: str, unit: str) -> pl.Expr:
    """``1 rank``, ``4 ranks``, ``? ranks`` where the runs do not record it."""
    n = pl.col(col)
    word = pl.when(n == 1).then(pl.lit(unit)).otherwise(pl.lit(unit + "s"))
    return pl.format("{} {}", n.cast(pl.String).fill_null("?"), word)


def _configs(runs: pl.DataFrame) -> pl.DataFrame:
    """One row per (target, ranks, threads, variant) of ``benchmark_runs`` rows."""
    c = runs.group_by("machine", "device", "ranks", "threads", "variant").len()
    return c.with_columns(Target.expr().alias("target")).select(
        "target", "ranks", "threads", "variant"
    )


def run_configurations(runs: pl.DataFrame) -> dict[str, str]:
    """``machine:device`` -> how its benchmark runs ran (``4 ranks x 1 thread, Base_Seq``; ``?``
    where the runs do not record it).

    Args:
        runs: ``benchmark_runs`` rows.

    Returns:
        One description per target; more than one configuration are joined with ``;``.
    """
    return _describe(_configs(runs))


def _describe(c: pl.DataFrame) -> dict[str, str]:
    text = pl.format("{} x {}, {}", _count("ranks", "rank"), _count("threads", "thread"), "variant")
    c = c.with_columns(text.alias("how")).sort("target", "how")
    return {
        t: "; ".join(g["how"].unique(maintain_order=True))
        for (t,), g in c.group_by(["target"], maintain_order=True)
    }


def target_runs(targets: list[str], target_benchmarks: pl.DataFrame | None) -> pl.DataFrame:
    """The configurations of each target's benchmark runs, from ``target_benchmarks`` or the data
    sets of its machine (the store, else the embedded snapshot).

    Args:
        targets: ``machine:device`` ids.
        target_benchmarks: ``benchmark_runs`` given with the prediction, or None.

    Returns:
        ``target, ranks, threads, variant``; a target whose runs neither has is absent.
    """
    parts = [_configs(target_benchmarks)] if target_benchmarks is not None else []
    have = set(parts[0]["target"]) if parts else set()
    for machine in sorted({Target.parse(t).machine for t in targets if t not in have}):
        try:
            parts.append(_configs(load_dataset(machine)))
        except (KeyError, FileNotFoundError, ValueError):
            continue
    if not parts:
        return pl.DataFrame(
            schema={
                "target": pl.String,
                "ranks": pl.Int64,
                "threads": pl.Int64,
                "variant": pl.String,
            }
        )
    out = pl.concat([p.cast({"ranks": pl.Int64, "threads": pl.Int64}) for p in parts])
    return out.filter(pl.col("target").is_in(targets)).unique(
        subset=["target", "ranks", "threads", "variant"], keep="first", maintain_order=True
    )


def describe(targets: list[str], runs: pl.DataFrame) -> dict[str, str]:
    """``target -> "4 ranks x 1 thread, Base_Seq"``, or ``not recorded``."""
    got = _describe(runs) if runs.height else {}
    return {t: got.get(t, "not recorded") for t in targets}


@dataclass(frozen=True)
class NodeCheck:
    """Whether a target's runs filled a node, and the sentence saying so."""

    target: str
    whole_node: bool
    reason: str
    ranks: int | None = None  # the runs' one rank count, where they fill the node


def node_check(target: str, runs: pl.DataFrame) -> NodeCheck:
    """Did ``target``'s benchmark runs use its whole node?

    A CPU target's runs fill a node when ranks x threads is the registry's ``cores_per_node``; a GPU
    target's when its ranks (one GPU each, as RAJAPerf's GPU variants run) are ``gpus_per_node``.

    Args:
        target: ``machine:device``.
        runs: :func:`target_runs`' answer (any targets).

    Returns:
        The verdict with its reason.
    """
    t = Target.parse(target)
    mine = runs.filter(pl.col("target") == target)
    gpu = t.device == "gpu"
    unit = "GPUs" if gpu else "cores"
    try:
        m = get_machine(t.machine)
        need = m.gpus_per_node if gpu else m.cores_per_node
    except UnknownMachineError:
        need = None
    if mine.height == 0:
        return NodeCheck(target, False, "its benchmark runs are not recorded")
    used = mine.get_column("ranks") if gpu else mine["ranks"] * mine["threads"].fill_null(1)
    if used.null_count():
        return NodeCheck(target, False, "its runs do not record their rank count")
    if need is None:
        return NodeCheck(
            target, False, f"the machine registry has no {unit[:-1]} count for its node"
        )
    counts = sorted(set(used.to_list()))
    ranks = sorted(set(mine.get_column("ranks").to_list()))
    if counts == [need] and len(ranks) == 1:
        return NodeCheck(target, True, f"a whole node: {need} of {need} {unit}", ranks[0])
    if counts == [need]:
        return NodeCheck(target, False, f"its runs fill the node with {ranks} ranks: no one figure")
    return NodeCheck(
        target,
        False,
        f"its runs used {' or '.join(map(str, counts))} of the node's {need} {unit}; a signature "
        "measured on part of a node is not scaled to the whole (memory bandwidth does not grow "
        "with the core count)",
    )
