"""``xamm schedule-sim``: what predictions buy a scheduler, a simulated job queue."""

from __future__ import annotations

import argparse

from xamm_data.cli.tools import UsageError, emit, store_arg
from xamm_data.identifiers import first_repeated
from xamm_models.cli.common import bounded, needs_models, whole

MAX_JOBS = 1_000_000  # a simulated queue, not a centre's year


def _node_count(text: str) -> tuple[str, int]:
    machine, _, n = text.partition("=")
    if not n.isdigit() or int(n) < 1 or ":" not in machine:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected MACHINE:DEVICE=NODES, e.g. h100-node:gpu=2"
        )
    return machine, int(n)


def add(sub) -> None:
    s = sub.add_parser(
        "schedule-sim",
        help="what predictions buy a scheduler: a simulated job queue over the machines",
        epilog="examples:\n  xamm schedule-sim --store ./store --nodes "
        "h100-node:gpu=2 --nodes lassen:gpu=4 "
        "--nodes quartz:cpu=8\n  xamm schedule-sim --store ./store "
        "--source mi300a-spx:cpu "
        "--nodes h100-node:gpu=2 --nodes quartz:cpu=8 --jobs 500 --load "
        "0.5 --json\n\n"
        "policies: oracle (true durations), predicted (the default "
        "predictor), roofline (the plain roofline), device-kind (the training pairs' median relR "
        "of the device scenario: CPU or GPU is all it knows), adapted (few-shot adaptation, 5% of "
        "target samples), least-loaded, random; see "
        "xamm_models.studies.scheduling_sim",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument(
        "--store", type=store_arg, required=True, help="store holding the benchmark's runs"
    )
    s.add_argument(
        "--source", default="mi300a-spx:cpu", help="the submit machine the jobs were profiled on"
    )
    s.add_argument(
        "--nodes",
        type=_node_count,
        action="append",
        required=True,
        metavar="MACHINE:DEVICE=N",
        help="a machine of the cluster and its node count (repeatable)",
    )
    s.add_argument(
        "--jobs",
        type=whole(1, MAX_JOBS, "jobs to simulate"),
        default=2000,
        help="jobs to simulate (default 2000)",
    )
    s.add_argument(
        "--load",
        type=bounded(0.01, 10, "a fraction of the cluster's capacity"),
        default=0.8,
        help="offered load as a fraction of the cluster's best-case capacity (default 0.8)",
    )
    s.add_argument("--seed", type=int, default=0, help="the simulation's seed (default 0)")
    s.add_argument("--json", action="store_true", help="print the policies' figures as JSON")
    s.set_defaults(handler=needs_models(schedule_sim_cmd))


def schedule_sim_cmd(args) -> int:
    import polars as pl  # in the handler, as below

    from xamm_models.benchmark.dataset import XplatDataset  # in the handler, as above

    # in the handler: `xamm --help` never loads the models
    from xamm_models.studies.scheduling_jobs import fold_predictions, make_jobs
    from xamm_models.studies.scheduling_sim import compare  # in the handler, as above

    nodes = dict(args.nodes)
    if len(nodes) < len(args.nodes):  # the last count would win unseen
        twice = first_repeated(m for m, _ in args.nodes)
        raise UsageError(f"--nodes names {twice} twice; give each machine once")
    ds = XplatDataset.from_store(args.store)
    known = set(ds.samples.get_column("target"))
    for m in sorted(set(nodes) - known):
        raise LookupError(
            f"no benchmark runs for {m!r} in {args.store}; known: {', '.join(sorted(known))}"
        )
    jobs = make_jobs(
        fold_predictions(ds, args.source, seed=args.seed),
        nodes,
        n_jobs=args.jobs,
        load=args.load,
        seed=args.seed,
    )
    rows = pl.DataFrame(compare(jobs, nodes, seed=args.seed))
    base = {
        p: rows.filter(pl.col("policy") == p).get_column("mean_turnaround_s").item()
        for p in ("least-loaded", "random")
    }
    rows = rows.with_columns(
        *[
            (1 - pl.col("mean_turnaround_s") / v).alias(f"turnaround_cut_vs_{p}")
            for p, v in base.items()
        ]
    )
    emit(
        rows,
        as_json=args.json,
        title=f"{args.jobs} jobs from held-out kernels profiled on {args.source}, load {args.load}",
    )
    return 0
