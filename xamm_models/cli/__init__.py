"""The model commands of ``xamm``: ``amm``, ``run``, ``predict``, ``eval``, ``zoo``, ``adapt``,
``schedule-sim``."""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
from pathlib import Path

from xamm_data.cli.tools import emit, write_table
from xamm_data.extras import install_hint
from xamm_data.store.locations import store_arg
from xamm_models import runtime as cpu_kernels
from xamm_models.cli import compare as compare_command
from xamm_models.cli import drift as drift_command
from xamm_models.cli import history as history_command

RAW = argparse.RawDescriptionHelpFormatter

EPILOG = """\
examples:
  xamm amm build                          train the shared embedder, build every machine's signature
  xamm amm build quartz --aggregation variance
  xamm amm build dane --kind physics      bandwidth curve, flop rate, launch overhead: a version
  xamm amm list                           every registry machine: latest signature or 'no \
signature yet'
  xamm amm show quartz:cpu@1
  xamm amm push --repo org/xamm-amms      publish all signatures (one file per machine@version)
  xamm amm pull --repo org/xamm-amms --revision <commit>
  xamm amm plot --out amm-tsne.png        t-SNE of the benchmark-sample embeddings
  xamm amm history dane                   every signature version, its runs and what changed
  xamm amm diff dane:cpu@1 dane:cpu@2     two versions' figures with intervals; kernels that moved
"""


def register(sub) -> dict:
    """Add the model commands to ``xamm``. Handlers that train or embed import torch first; the
    others load only what their model needs. Without a library of the models extra they say which
    extra to install."""
    add_commands(sub)
    return {}


def _needs_models(handler, needs_torch=lambda args: True):
    """``handler`` run with the models extra checked: torch imported first where
    ``needs_torch(args)`` says so (after :func:`~xamm_models.runtime.pin`), else loaded only if the
    model used needs it; a missing library of the extra is a one-line error naming it."""

    def run_handler(args):
        cpu_kernels.pin()  # before torch is imported: the same numbers on every x86-64 machine
        try:
            if needs_torch(args):
                import torch  # noqa: F401  (the models extra; checked here so `xamm --help` never imports it)
            return handler(args)
        except ModuleNotFoundError as e:  # a library of an extra not installed
            hint = install_hint(e)
            if hint is None:
                raise
            raise LookupError(f"'xamm {args.command}' {hint.removeprefix('this ')}") from None

    return run_handler


LIGHT_AMM_ACTIONS = {
    "list",
    "show",
    "push",
    "pull",
    "history",
    "diff",
}  # read or move signatures: no embedder runs


def add_commands(sub) -> None:
    """``amm`` and its actions, then ``run``, ``predict`` and ``eval``."""
    _add_amm(sub)
    _add_run_predict_eval(sub)
    _add_zoo(sub)
    _add_schedule_sim(sub)
    _add_adapt(sub)
    compare_command.add(sub)
    drift_command.add_accept(sub)


def _node_count(text: str) -> tuple[str, int]:
    machine, _, n = text.partition("=")
    if not n.isdigit() or int(n) < 1 or ":" not in machine:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected MACHINE:DEVICE=NODES, e.g. h100-node:gpu=2"
        )
    return machine, int(n)


def _add_schedule_sim(sub) -> None:
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
    s.add_argument("--jobs", type=int, default=2000)
    s.add_argument(
        "--load",
        type=float,
        default=0.8,
        help="offered load as a fraction of the cluster's best-case capacity",
    )
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--json", action="store_true")
    s.set_defaults(handler=_needs_models(schedule_sim_cmd))


def schedule_sim_cmd(args) -> int:
    import polars as pl  # in the handler, as below

    from xamm_models.benchmark.dataset import XplatDataset  # in the handler, as above

    # in the handler: `xamm --help` never loads the models
    from xamm_models.studies.scheduling_jobs import fold_predictions, make_jobs
    from xamm_models.studies.scheduling_sim import compare  # in the handler, as above

    nodes = dict(args.nodes)
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


ADAPT_EPILOG = """\
examples:
  xamm adapt labelled.parquet --model ./xamm-model --platform quartz-topdown:cpu --out \
./topdown-model
  xamm adapt labelled.parquet --model org/xamm-xamm --revision <commit> --platform \
quartz-topdown:cpu \\
      --features topdown_retiring,topdown_memory_bound,f_log_s_per_iter --unlabelled \
topdown-profiles.parquet --out m --json
  xamm predict topdown-profiles.parquet --model ./topdown-model --source quartz-topdown:cpu \
--target lassen:gpu --rank

labelled samples: one row per profile of the new platform and target it was also run on: the app's \
name
(and parameters), `target`, `relR` (runtime on target / runtime on the platform) and the \
platform's own feature
columns (default: every other numeric column). The frozen predictor is read through an alignment \
learned from them
(few-shot adaptation); see xamm_models.predictors.adapted.predictor.
"""


def _add_adapt(sub) -> None:
    s = sub.add_parser(
        "adapt",
        help="adapt a trained xamm predictor to a platform with other feature "
        "columns (few-shot adaptation)",
        epilog=ADAPT_EPILOG,
        formatter_class=RAW,
    )
    s.add_argument(
        "samples", type=Path, help="Parquet/CSV of labelled profiles of the platform (see below)"
    )
    s.add_argument("--model", required=True, help="a trained xamm predictor: folder or Hub repo id")
    s.add_argument("--revision", help="Hub revision to pin")
    s.add_argument(
        "--platform",
        required=True,
        help="the new platform's name (machine:device), the source of its profiles",
    )
    s.add_argument(
        "--features",
        help="comma-separated feature columns (default: every numeric column but the labels)",
    )
    s.add_argument(
        "--unlabelled",
        type=Path,
        help="Parquet/CSV of the platform's unlabelled profiles (features only)",
    )
    s.add_argument(
        "--as-source", help="a training source the frozen regressors treat the platform as"
    )
    s.add_argument(
        "--no-names", action="store_true", help="do not seed the alignment by names that resolve"
    )
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", type=Path, required=True, help="folder to save the adapted model to")
    s.add_argument("--json", action="store_true", help="the summary as JSON")
    s.set_defaults(handler=_needs_models(adapt_cmd))


def _read_table(path: Path):
    import polars as pl  # in the handler: `xamm --help` stays fast

    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    return pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path)


def adapt_cmd(args) -> int:
    # in the handler: `xamm --help` never loads the models
    from xamm_models.predictors.adapted.predictor import adapt

    # in the handler, likewise
    from xamm_models.predictors.paper.predictor import XammPredictor

    base = XammPredictor.from_pretrained(str(args.model), revision=args.revision)
    features = [c.strip() for c in args.features.split(",") if c.strip()] if args.features else None
    model = adapt(
        base,
        _read_table(args.samples),
        args.platform,
        features=features,
        as_source=args.as_source,
        unlabelled=_read_table(args.unlabelled) if args.unlabelled else None,
        use_names=not args.no_names,
        seed=args.seed,
    )
    model.save_pretrained(args.out)
    summary = {
        "out": str(args.out),
        "platform": args.platform,
        "features": model.config.features,
        "ridge_alpha": float(model.weights["ridge_alpha"][0]),
        **model.training,
    }
    if args.json:
        emit(summary, as_json=True)
    else:
        print(
            f"adapted {args.model} to {args.platform}: {summary['profiles']} "
            f"labelled profiles ({summary['pairs']} pairs), "
            f"{summary['unlabelled']} unlabelled, {summary['name_seeded']} "
            f"columns seeded by name; saved to {args.out}"
        )
    return 0


ZOO_EPILOG = """\
examples:
  xamm zoo list                                            the model kinds of the zoo
  xamm zoo build --data-dir ../shared/data --out zoo-out   every artefact from the public data \
(minutes)
  xamm zoo build --data-dir ../shared/data --out zoo-out --eval-results docs/eval/results.json \
--snapshot xamm_data/hub/snapshot
"""


def _add_zoo(sub) -> None:
    p = sub.add_parser(
        "zoo",
        help="the model zoo: list its kinds, build every published artefact",
        epilog=ZOO_EPILOG,
        formatter_class=RAW,
    )
    a = p.add_subparsers(dest="action", required=True)
    a.add_parser(
        "list",
        help="the zoo's model kinds",
        epilog="examples:\n  xamm zoo list --json",
        formatter_class=RAW,
    ).add_argument("--json", action="store_true")
    b = a.add_parser(
        "build",
        help="regenerate every artefact from the public data",
        epilog=ZOO_EPILOG,
        formatter_class=RAW,
    )
    b.add_argument(
        "--data-dir", type=Path, required=True, help="the public data (../shared/data layout)"
    )
    b.add_argument("--out", type=Path, required=True, help="where the zoo is built")
    b.add_argument(
        "--eval-results",
        type=Path,
        help="an `xamm eval` results.json: the models' cards carry its metrics",
    )
    b.add_argument("--snapshot", type=Path, help="also write the package's embedded snapshot here")
    b.add_argument("--epochs", type=int, default=200, help="attention embedder epochs")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--no-vae-dnn", action="store_true", help="skip the VAE-DNN (about a minute)")
    b.add_argument("--json", action="store_true", help="the artefacts as JSON")
    u = a.add_parser(
        "push",
        help="publish a built zoo to the Hub with its cards",
        formatter_class=RAW,
        epilog="examples:\n  xamm zoo push --zoo zoo-out --org my-org     "
        "datasets, signatures, models; "
        "prints each repo's commit (pin it)",
    )
    u.add_argument("--zoo", type=Path, required=True, help="a folder `xamm zoo build` wrote")
    u.add_argument("--org", required=True, help="the Hub user or organisation")
    u.add_argument("--json", action="store_true")
    p.set_defaults(handler=_needs_models(zoo_cmd, needs_torch=lambda args: args.action == "build"))


def zoo_cmd(args) -> int:
    import polars as pl  # in the handler: `xamm --help` stays fast

    # in the handler: `xamm --help` never loads the models
    from xamm_models.predictors import kinds as zoo

    if args.action == "list":
        emit(
            pl.DataFrame(
                [
                    {
                        "kind": n,
                        "marker": zoo.MODELS.get(n).marker,
                        "what": zoo.MODELS.get(n).description,
                    }
                    for n in zoo.list_models()
                ]
            ),
            as_json=args.json,
            title="xamm model kinds",
        )
        return 0
    # in the handler, as above
    from xamm_models.zoo.build import build_zoo, push_zoo, snapshot_frame, write_snapshot

    if args.action == "push":
        done = push_zoo(args.zoo, args.org, progress=(lambda m: None) if args.json else print)
        emit(
            pl.DataFrame([{"repo": r, "commit": c} for r, c in done.items()]),
            as_json=args.json,
            title="published",
        )
        return 0
    quiet = args.json or getattr(args, "quiet", False)
    arts = build_zoo(
        args.data_dir,
        args.out,
        seed=args.seed,
        epochs=args.epochs,
        eval_results=args.eval_results,
        vae_dnn=not args.no_vae_dnn,
        progress=(lambda m: None) if quiet else (lambda m: print(m, flush=True)),
    )
    if args.snapshot:
        write_snapshot(args.out, args.snapshot)
        if not quiet:
            emit(
                snapshot_frame(args.snapshot),
                as_json=False,
                title=f"embedded snapshot {args.snapshot}",
            )
    emit(
        pl.DataFrame([a.model_dump(exclude={"metrics"}) for a in arts]),
        as_json=args.json,
        title=f"zoo {args.out}",
    )
    return 0


def _add_amm_build(a) -> None:
    """``xamm amm build`` and its options."""
    b = a.add_parser(
        "build",
        help="build signatures from the store's benchmark runs",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    b.add_argument("machines", nargs="*", help="machine ids (default: all with benchmark data)")
    b.add_argument(
        "--kind",
        choices=["attention", "physics"],
        default="attention",
        help="attention: the paper's AMM (Algorithm 1); physics: bandwidth "
        "curve, flop rate, launch overhead",
    )
    b.add_argument("--aggregation", choices=["mean", "l2", "variance"], default="l2")
    b.add_argument("--normalise", choices=["divide", "subtract", "none"], default="divide")
    b.add_argument(
        "--embedder",
        help="a saved embedder folder or Hub repo (default: train one on all machines)",
    )
    b.add_argument("--alignment", choices=["intersection", "union"], default="intersection")
    b.add_argument("--epochs", type=int, default=200)
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--store", type=store_arg, default=None)


def _add_amm_hub_and_plot(a) -> None:
    """``xamm amm push|pull|plot``."""
    for name, helptext in (
        ("push", "publish signatures, certificates and histories to a Hub repo"),
        ("pull", "fetch signatures, certificates and histories from a Hub repo (verified)"),
    ):
        q = a.add_parser(
            name,
            help=helptext,
            formatter_class=RAW,
            epilog=f"examples:\n  xamm amm {name} --repo org/xamm-amms"
            + (" --revision <commit>" if name == "pull" else ""),
        )
        q.add_argument("--repo", required=True)
        q.add_argument("--revision", default="main")
        if name == "pull":
            q.add_argument("--public-key", type=Path, help="every certificate must be signed by "
                           "this Ed25519 public key (PEM; xamm accept --sign-key)")  # fmt: skip
    pl_ = a.add_parser(
        "plot",
        help="t-SNE PNG of benchmark-sample embeddings by target",
        formatter_class=RAW,
        epilog="examples:\n  xamm amm plot --out amm-tsne.png",
    )
    pl_.add_argument("--out", type=Path, default=Path("amm-tsne.png"))
    pl_.add_argument(
        "--embedder", help="a saved embedder (default: the newest under $XAMM_HOME/embedders)"
    )
    pl_.add_argument("--store", type=store_arg, default=None)


def _add_amm(sub) -> None:
    p = sub.add_parser(
        "amm",
        help="Abstract Machine Model signatures",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a = p.add_subparsers(dest="action", metavar="ACTION")
    a.required = True
    _add_amm_build(a)
    ls = a.add_parser(
        "list",
        help="list signatures and machines without one",
        formatter_class=RAW,
        epilog="examples:\n  xamm amm list\n  xamm amm list --json",
    )
    ls.add_argument("--json", action="store_true", help="print the listing as JSON")
    s = a.add_parser(
        "show",
        help="show one signature as JSON",
        formatter_class=RAW,
        epilog="examples:\n  xamm amm show quartz:cpu\n  xamm amm show "
        "h100-node:gpu@1 | head\n"
        "  xamm amm show h100-node:gpu --kind physics",
    )
    s.add_argument("ref", help="MACHINE[:cpu|:gpu][@VERSION]")
    s.add_argument("--kind", choices=["attention", "physics"], default="attention")
    history_command.add(a, RAW)
    _add_amm_hub_and_plot(a)
    p.set_defaults(
        handler=_needs_models(run, needs_torch=lambda args: args.action not in LIGHT_AMM_ACTIONS)
    )


def _add_eval(sub) -> None:
    """``xamm eval`` and its options."""
    e = sub.add_parser(
        "eval",
        help="every entry of the xplat-rajaperf benchmark on its official folds",
        epilog="examples:\n"
        "  xamm eval --data-dir ../shared/data --out eval-out     build "
        "the data set from its "
        "named sources, run everything (the longest: minutes; benchmarks/bench_eval.py times it)\n"
        "  xamm eval --data-dir ../shared/data --quick --out q   fewer "
        "epochs and entries\n"
        "  xamm eval --experiment 3 --store ./store --json\n"
        "  xamm eval --seed 1 --no-lomo --no-loko --data-dir ../shared/data --out seed1   "
        "the paper's experiments at another seed\n"
        "  xamm eval --page docs/evaluation.md --summary README.md --out docs/eval\n"
        "      rewrite the page's results block, the README's summary and results.md from the "
        "JSON (no run)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    e.add_argument("--experiment", default="all", choices=["1", "2", "3", "4", "all"])
    e.add_argument("--out", type=Path, default=Path("eval-out"))
    e.add_argument(
        "--store", type=store_arg, default=None, help="store holding the sources' benchmark_runs"
    )
    e.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="ingest the data set's named sources from this folder first "
        "(into --store, else a temporary one)",
    )
    e.add_argument(
        "--epochs", type=int, default=None, help="embedder epochs (default 50; 5 with --quick)"
    )
    e.add_argument("--seed", type=int, default=0)
    e.add_argument(
        "--no-lomo", action="store_true", help="skip leave-one-machine-out (every machine in turn)"
    )
    e.add_argument("--no-loko", action="store_true", help="skip leave-one-kernel-out")
    e.add_argument(
        "--quick",
        action="store_true",
        help="5 epochs, baselines and the XGBoost and stacked entries only, "
        "no leave-one-kernel-out",
    )
    _add_eval_page_options(e)
    e.add_argument("--json", action="store_true", help="print the summary as JSON")
    e.set_defaults(handler=_needs_models(eval_cmd))


def _add_eval_page_options(e) -> None:
    """``xamm eval``'s options that rewrite the pages from a results file, with no run."""
    e.add_argument(
        "--page",
        type=Path,
        help="no run: rewrite this page's results block and OUT/results.md from OUT/results.json",
    )
    e.add_argument(
        "--summary",
        type=Path,
        help="with --page: also rewrite this file's results summary (the README's)",
    )
    e.add_argument(
        "--seed-results",
        type=Path,
        nargs="+",
        metavar="RESULTS_JSON",
        help="with --page: record these runs' (other seeds') experiment comparisons in "
        "OUT/results.json first; the page then gives each verdict over every seed",
    )


def _add_run_predict_eval(sub) -> None:
    r = sub.add_parser(
        "run",
        help="the config-driven pipeline (paper Listing 1): func amm|train|test",
        epilog=(
            "examples:\n  xamm run config.yml\n\nfields: see xamm_models.predictors.paper.pipeline"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("config", type=Path)
    r.set_defaults(handler=_needs_models(run_config))
    _add_predict(sub)
    _add_eval(sub)


PREDICT_EPILOG = """\
examples:
  xamm predict lulesh.cali                      where a Caliper profile runs best, every machine
  xamm predict lulesh.cali --regions --plot lulesh.png --target lassen:gpu
  xamm predict regions.csv --source quartz:cpu  a table: region, exclusive_s[, bytes, flops, calls]
  xamm predict ./hpctoolkit-lulesh-database --source quartz:cpu --json
  xamm predict ./cycles-only-database --source quartz:cpu --clock-ghz 2.1
  xamm predict --app LULESH --machine quartz    an application already in the store
  xamm predict --app LULESH --machine quartz --select ranks=8
  xamm predict regions.csv --source mi300a-spx:gpu --config rank --target-benchmarks ./dane-store
  xamm predict profiles.parquet --source quartz:cpu --target lassen:gpu --target h100-node:gpu \
--model xamm/default
  xamm predict profiles.parquet --source quartz:cpu --target newbox:gpu --model xamm/default \
--target-benchmarks ./newbox-store --family gpu
  xamm predict ./store --source quartz:cpu --target lassen:gpu --target h100-node:gpu \
--model xamm/default --rank --json

A profile (Caliper .cali/.json, an HPCToolkit database, a table with a region column) is predicted
region by region and summed: one row per target with predicted time and relR, 80% intervals,
p_fastest and the rank it gives; whole node against whole node where the facts allow it (column
basis), with what each target assumes (a port to a GPU, another programming model) and where its
runs come from. The source machine comes from the profile (Caliper's cluster) or --source; targets
default to every machine with a signature and every machine of your store. A table of the model's
feature columns (or a store's RAJAPerf kernels) is predicted row by row, with --source and
--target.
"""


def _add_predict(sub) -> None:
    q = sub.add_parser(
        "predict",
        help="predict where an application profile runs best, and how long it takes",
        epilog=PREDICT_EPILOG,
        formatter_class=RAW,
    )
    q.add_argument(
        "profiles",
        type=Path,
        nargs="?",
        help="a Caliper file, an HPCToolkit database, a table of regions, or a table of the "
        "model's feature columns (or a store of RAJAPerf runs)",
    )
    q.add_argument("--source", help="machine:device the profile was measured on")
    q.add_argument("--target", action="append", help="machine:device to predict for (repeatable)")
    q.add_argument("--model", help="predictor folder or Hub repo id (default: xamm/default)")
    q.add_argument("--revision", help="Hub revision to pin")
    q.add_argument(
        "--target-benchmarks",
        type=Path,
        help="benchmark data (store root or Parquet) of machines the model has no signature of",
    )
    q.add_argument("--app", help="an application in the store's app_profiles (with --machine)")
    q.add_argument("--machine", help="with --app: the machine it ran on")
    q.add_argument("--store", type=store_arg, help="with --app: the store (default: the usual)")
    q.add_argument("--time-unit", help="Caliper time unit where the file records none")
    q.add_argument(
        "--clock-ghz",
        type=_clock_ghz,
        help="HPCToolkit databases that counted cycles but no time: the cores' clock rate",
    )
    _add_predict_configuration(q)
    q.add_argument("--regions", action="store_true", help="also the prediction per region")
    q.add_argument("--plot", type=Path, help="draw the targets' relR with intervals to a PNG")
    q.add_argument("--rank", action="store_true", help="feature tables: rank targets per row")
    q.add_argument(
        "--out",
        type=Path,
        help="also write the predictions to a file: .parquet (the default), .csv or .json",
    )
    q.add_argument("--json", action="store_true", help="every prediction as JSON on stdout")
    # the model loads what it needs
    q.set_defaults(handler=_needs_models(predict_cmd, needs_torch=lambda args: False))


def _add_predict_configuration(q) -> None:
    """``xamm predict``'s options on what is compared: the configuration, the stored runs, the
    variant family and the targets."""
    q.add_argument(
        "--config",
        choices=("node", "rank"),
        default="node",
        help="node (default): a whole node against a whole node where the profile and the "
        "machines' facts allow it, per rank elsewhere, said in each row; rank: one rank against "
        "one rank of each machine's benchmark runs",
    )
    q.add_argument(
        "--select",
        action="append",
        metavar="KEY=VALUE",
        help="with --app: the stored runs to predict, by configuration (ranks=8, input_size=30, "
        "source_path=...; repeatable)",
    )
    q.add_argument(
        "--family",
        choices=("sequential", "threaded", "gpu"),
        help="feature tables with --target-benchmarks: the programming-model family of the "
        "profiles; each target's signature is measured from its runs of that family only "
        "(a profile file's family comes from its metadata)",
    )
    q.add_argument(
        "--no-store-targets",
        action="store_true",
        help="leave the machines of your store out of the targets (they are in by default)",
    )


def _clock_ghz(text: str) -> float:
    """A clock rate in GHz: a positive number."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of GHz") from None
    if not (0 < v < 100):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a clock rate in GHz, e.g. 2.1")
    return v


def eval_cmd(args) -> int:
    # in the handler: `xamm --help` never loads the models
    from xamm_models.experiments import report as eval_report

    # in the handler, as above
    from xamm_models.experiments.run import EvalSettings, run_experiments

    if args.page:
        if args.seed_results:
            # in the handler, as above
            from xamm_models.experiments.seeds import merge_seeds

            merge_seeds(args.out / "results.json", args.seed_results)
        eval_report.update_page(args.page, args.out / "results.json")
        if args.summary:
            eval_report.update_summary(args.summary, args.out / "results.json")
        print(
            f"rewrote the results block of {args.page} and "
            f"{args.out / 'results.md'} from {args.out / 'results.json'}"
        )
        return 0
    exps = (1, 2, 3, 4) if args.experiment == "all" else (int(args.experiment),)
    kw = {
        "seed": args.seed,
        "lomo": not args.no_lomo,
        **({"epochs": args.epochs} if args.epochs else {}),
    }
    settings = (
        EvalSettings.for_quick(**kw) if args.quick else EvalSettings(loko=not args.no_loko, **kw)
    )
    quiet = args.json or getattr(args, "quiet", False)
    with _eval_store(args) as store:
        s = run_experiments(
            store,
            experiments=exps,
            out_dir=args.out,
            settings=settings,
            progress=(lambda m: None) if quiet else (lambda m: print(m, flush=True)),
        )
    if args.json:
        emit(json.loads((args.out / "results.json").read_text()), as_json=True)
    else:
        print((Path(args.out) / "results.md").read_text())
        print(f"wrote {args.out}/results.json, results.md and dataset-card.md ({s['seconds']} s)")
    return 0


def _eval_store(args):
    """The store to evaluate from: --store, filled from --data-dir's named sources first when
    given."""
    # in the handler: `xamm --help` never loads the models
    from xamm_models.benchmark import dataset as xplat

    @contextlib.contextmanager
    def cm():
        if args.data_dir is None:
            yield args.store
            return
        with tempfile.TemporaryDirectory(prefix="xamm-eval-") as tmp:
            root = args.store or Path(tmp) / "store"
            xplat.ingest_sources(args.data_dir, root)
            yield root

    return cm()


def run_config(args) -> int:
    # in the handler: `xamm --help` never loads the models
    from xamm_models.predictors.paper.pipeline import load_config

    # in the handler, as above
    from xamm_models.predictors.paper.pipeline import run as run_pipeline

    run_pipeline(load_config(args.config))
    return 0


def predict_cmd(args) -> int:
    # in the handler: `xamm --help` never loads the models
    from xamm_models.cli.predict_profile import is_profile, profile_cmd

    # in the handler: `xamm --help` never loads the models
    from xamm_models.predictors.default.model import load_predictor

    # in the handler: `xamm --help` never loads the models
    from xamm_models.predictors.inputs import load_profiles

    # in the handler: `xamm --help` never loads the models
    from xamm_models.predictors.paper.pipeline import load_benchmark_runs

    # in the handler: `xamm --help` never loads the models
    from xamm_models.profile_input import ProfileInputError

    if args.profiles is not None and not args.profiles.exists():
        raise ProfileInputError(f"{args.profiles}: no such file or directory")
    if args.app or (args.profiles is not None and is_profile(args.profiles)):
        return profile_cmd(args)
    if args.profiles is None or not args.source or not args.target:
        raise ProfileInputError(
            "a table of model features needs a file, --source and --target; an application "
            "profile (.cali, .json, HPCToolkit database, table with a region column) needs only "
            "the file"
        )
    model = load_predictor(str(args.model or "xamm/default"), revision=args.revision)
    profiles = load_profiles(model, args.profiles, args.source)
    bench = load_benchmark_runs(args.target_benchmarks) if args.target_benchmarks else None
    if bench is not None and args.family:
        from xamm_models.predictors.configurations import one_family  # as above

        bench = one_family(bench, args.family)
    fn = model.rank_targets if args.rank else model.predict
    try:
        out = fn(profiles, args.source, args.target, target_benchmarks=bench)
    except ProfileInputError as e:  # the rows are the file's: say which file
        raise ProfileInputError(f"{args.profiles}: {e}") from None
    if args.out:
        print(f"wrote {write_table(out, args.out)} ({out.height} rows)")
    if not args.out or not args.json:
        emit(
            out if args.json else out.head(SHOWN),
            as_json=args.json,
            title=f"relR = runtime on target / runtime on {args.source} (> 1: slower)",
        )
        if not args.json and out.height > SHOWN and not args.out:
            print(
                f"showing {SHOWN} of {out.height} rows ({out.height - SHOWN} left "
                "out): --out FILE.parquet or --json "
                "for all of them"
            )
    return 0


SHOWN = 50  # rows of a prediction table printed to a terminal


def _amm_build_physics(args, reg) -> int:
    # in the handler: `xamm --help` never loads the models
    from xamm_data.store.store import as_store

    # in the handler, likewise
    from xamm_models.zoo.build import build_physics_signatures

    for s in build_physics_signatures(
        store=as_store(args.store), registry=reg, machines=args.machines or None
    ):
        p = s.physics
        print(
            f"{s.ref}: {s.n_samples} samples, bandwidth up to {max(p.bw):.3g} "
            f"B/s, flop rate {p.flop_rate:.3g} "
            f"flop/s ({p.flop_rate_from}), launch overhead {p.overhead_s:.3g} s"
        )
    return 0


def _amm_build(args, reg) -> int:
    if args.kind == "physics":
        return _amm_build_physics(args, reg)
    # in the handler: `xamm --help` never loads the models
    from xamm_data.store.store import as_store

    # in the handler, likewise
    from xamm_models.machines.attention import build_signatures

    sigs = build_signatures(
        store=as_store(args.store),
        registry=reg,
        machines=args.machines or None,
        embedder=args.embedder,
        aggregation=args.aggregation,
        normalise=args.normalise,
        alignment=args.alignment,
        epochs=args.epochs,
        seed=args.seed,
    )
    for s in sigs:
        print(
            f"{s.ref}: {len(s.kernels)} kernels, coverage {s.coverage:.2f}, "
            f"{s.n_samples} samples, "
            f"embedder {s.embedder_id}@{s.embedder_revision}"
        )
    return 0


def _amm_read(args, reg) -> int:
    # in the handler: `xamm --help` never loads the models
    from xamm_models.machines.signatures import SignatureRegistry

    # nothing built under $XAMM_HOME: the embedded snapshot's
    read = SignatureRegistry.for_reading()
    if args.action == "list":
        emit(read.frame(), as_json=args.json, title=f"AMM signatures ({read.root})")
    else:
        print(json.dumps(read.get(args.ref, kind=args.kind).model_dump(), indent=2))
    return 0


def _amm_push(args, reg) -> int:
    # in the handler: `xamm --help` never loads the models
    from xamm_models.compare.hub import push_records

    commit = push_records(args.repo, revision=args.revision, registry=reg)
    print(f"pushed to {args.repo} at commit {commit}")
    return 0


def _amm_pull(args, reg) -> int:
    # in the handler: `xamm --help` never loads the models
    from xamm_models.compare.certificates.evidence import load_public_key  # likewise

    # in the handler, as above
    from xamm_models.compare.hub import pull_records

    key = load_public_key(args.public_key) if args.public_key else None
    got = pull_records(args.repo, revision=args.revision, registry=reg, public_key=key)
    for s in got.signatures:
        print(f"have {s.ref}")
    for c in got.certificates:
        print(f"have certificate {c.number} of {c.new} ({c.verdict})")
    for machine, path in got.histories.items():
        print(f"have the history of {machine} ({path})")
    return 0


def _amm_plot(args, reg) -> int:
    from xamm_data.store.store import Store  # in the handler: `xamm --help` never loads the models

    # in the handler, likewise (torch)
    from xamm_models.embedders import load_embedder

    # in the handler, likewise
    from xamm_models.machines.samples import benchmark_samples

    # in the handler, likewise (matplotlib)
    from xamm_models.studies.plot import tsne_plot

    path = args.embedder or str(reg.newest_embedder())
    emb = load_embedder(path)
    samples = benchmark_samples(
        Store(args.store).scan("benchmark_runs").collect(), emb.feature_names
    )
    out = tsne_plot(
        emb.transform(samples),
        samples.get_column("target").to_list(),
        args.out,
        title=f"{Path(path).name}: benchmark-sample embeddings",
    )
    print(f"wrote {out}")
    return 0


AMM_ACTIONS = {
    "build": _amm_build,
    "list": _amm_read,
    "show": _amm_read,
    "push": _amm_push,
    "pull": _amm_pull,
    "plot": _amm_plot,
    "history": history_command.history_cmd,
    "diff": history_command.diff_cmd,
}


def run(args) -> int:
    """``xamm amm ACTION``: each action's handler with the command line's signature registry."""
    # in the handler: `xamm --help` never loads the models
    from xamm_models.machines.signatures import SignatureRegistry

    reg = SignatureRegistry.default()  # the command line's registry, under $XAMM_HOME
    return AMM_ACTIONS[args.action](args, reg)
