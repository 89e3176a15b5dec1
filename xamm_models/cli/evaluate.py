"""``xamm eval``: the benchmark's experiments, scored, and their page."""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
from pathlib import Path

from xamm_data.cli.tools import emit, path_arg, store_arg
from xamm_models.cli.common import EPOCHS, needs_models


def add(sub) -> None:
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
    e.add_argument("--out", type=path_arg, default=Path("eval-out"))
    e.add_argument(
        "--store", type=store_arg, default=None, help="store holding the sources' benchmark_runs"
    )
    e.add_argument(
        "--data-dir",
        type=path_arg,
        default=None,
        help="ingest the data set's named sources from this folder first "
        "(into --store, else a temporary one)",
    )
    e.add_argument(
        "--epochs", type=EPOCHS, default=None, help="embedder epochs (default 50; 5 with --quick)"
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
    e.set_defaults(handler=needs_models(eval_cmd))


def _add_eval_page_options(e) -> None:
    """``xamm eval``'s options that rewrite the pages from a results file, with no run."""
    e.add_argument(
        "--page",
        type=path_arg,
        help="no run: rewrite this page's results block and OUT/results.md from OUT/results.json",
    )
    e.add_argument(
        "--summary",
        type=path_arg,
        help="with --page: also rewrite this file's results summary (the README's)",
    )
    e.add_argument(
        "--seed-results",
        type=path_arg,
        nargs="+",
        metavar="RESULTS_JSON",
        help="with --page: record these runs' (other seeds') experiment comparisons in "
        "OUT/results.json first; the page then gives each verdict over every seed",
    )


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
        **({"epochs": args.epochs} if args.epochs is not None else {}),
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
