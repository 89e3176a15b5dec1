"""The ``xplat-rajaperf`` data set card: what it is built from, under which rules, and what was
refused."""

from __future__ import annotations

import polars as pl

from xamm_data.machines.targets import scenario_expr
from xamm_models.benchmark import spec as xplat
from xamm_models.features import FEATURES

CAVEATS = (
    "Kernels are not applications: they are short, regular loops. "
    "relR between a CPU and a GPU spans four "
    "orders of magnitude and moves with problem size inside one machine pair.",
    "quartz and lassen ran RAJAPerf 1.10.0 at about 1M and 2M; the "
    "H100 and MI300A nodes ran the 2026 FCR benchmark "
    "(20 kernels, size sweeps). Pairs across the two generations "
    "exist only for kernels whose definition "
    "did not change, at overlapping sizes: most labels stay within a generation.",
    "The H100 and MI300A node files carry no hostname, compiler or "
    "release: those are declared from the "
    "source's provenance (RAJAPerf-Benchmark branch v2026.04.1-RC), not read from the files.",
    "The MI300A node's CPU and GPU share memory (APU); its CPU runs "
    "4 MPI ranks of Base_Seq, as does the "
    "H100 node's host CPU, while quartz runs one rank.",
)


def _table(rows: list[list], head: list[str]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def _per_target(ds) -> str:
    s, p = ds.samples, ds.pairs
    per = (
        s.group_by("target")
        .agg(
            pl.len().alias("samples"),
            pl.col("app").n_unique().alias("kernels"),
            pl.col("problem_size").min().alias("lo"),
            pl.col("problem_size").max().alias("hi"),
        )
        .join(
            p.group_by("source").len().rename({"source": "target", "len": "as_source"}),
            on="target",
            how="left",
            maintain_order="left",
        )
        .join(
            p.group_by("target").len().rename({"len": "as_target"}),
            on="target",
            how="left",
            maintain_order="left",
        )
        .fill_null(0)
        .sort("target")
    )
    cfg = {c.target: c for c in xplat.CONFIGS}
    rows = []
    for r in per.iter_rows(named=True):
        c = cfg[r["target"]]
        rows.append(
            [
                r["target"],
                c.release,
                c.compiler or "(not recorded)",
                f"`{c.compiler_flags}`" if c.compiler_flags else "(not recorded)",
                c.variant,
                f"{c.ranks or 1} × {c.threads or 1}",
                r["samples"],
                r["kernels"],
                f"{r['lo']:,}–{r['hi']:,}",
                r["as_source"],
                r["as_target"],
            ]
        )
    return _table(
        rows,
        [
            "target",
            "release",
            "compiler",
            "flags",
            "variant",
            "ranks × threads",
            "samples",
            "kernels",
            "problem sizes",
            "pairs as source",
            "pairs as target",
        ],
    )


def _scenarios(ds) -> str:
    per = (
        ds.pairs.group_by(scenario_expr("→"))
        .agg(
            pl.len().alias("pairs"),
            pl.col("app").n_unique().alias("kernels"),
            pl.col("relR").log10().min().alias("lo"),
            pl.col("relR").log10().max().alias("hi"),
        )
        .sort("scenario")
    )
    rows = [
        [r["scenario"], r["pairs"], r["kernels"], f"{10 ** r['lo']:.3g} – {10 ** r['hi']:.3g}"]
        for r in per.iter_rows(named=True)
    ]
    return _table(rows, ["scenario", "pairs", "kernels", "relR range"])


def render(ds) -> str:
    """The card of an :class:`~xamm_models.benchmark.dataset.XplatDataset`."""
    src = "\n".join(
        f"- `{s.name}`: `../shared/data/{s.path}`"
        + (f" as machine `{s.machine}`" if s.machine else "")
        + f" ({s.origin})"
        for s in xplat.SOURCES
    )
    drops = "\n".join(
        f"- {what}: {n}" for part in ("samples", "pairs") for what, n in ds.drops[part].items()
    )
    cross = ds.pairs.filter(pl.col("release_source") != pl.col("release_target"))
    return (
        f"""# {xplat.NAME} v{xplat.SCHEMA_VERSION} (version {ds.version})

RAJAPerf kernels as applications, for cross-platform relative-performance prediction:
{ds.samples.height} samples, {ds.pairs.height} labelled (source, target) pairs, \
{ds.pairs.get_column("app").n_unique()} kernels.

## Sources (one command: `xamm eval --data-dir ../shared/data`)
{src}

## Declared configuration per target
Each target is measured in one configuration: {xplat.CONFIGS[0].policy}. Runs count only from \
files laid out as
the named sources' (`source_path` matches: \
{"; ".join(f"{c.target} `{c.path_pattern}`" for c in xplat.CONFIGS)}).

{_per_target(ds)}

## Labels
relR = seconds per iteration on the target / seconds per iteration on the source, for the same \
kernel and
size bucket (round(log2 problem size); each target keeps the size nearest the bucket centre). A \
pair is kept
only when the problem sizes agree within {xplat.SIZE_RATIO}x and bytes and flops per iteration \
agree within
{xplat.DEFINITION_RTOL:.0%} (one kernel definition). Pairs across RAJAPerf releases: {cross.height}
({cross.get_column("app").n_unique()} kernels). Features (of the source sample): \
{", ".join(FEATURES)}.

{_scenarios(ds)}

## Refused, and why
{drops}

## Caveats
"""
        + "\n".join(f"- {c}" for c in CAVEATS)
        + "\n"
    )
