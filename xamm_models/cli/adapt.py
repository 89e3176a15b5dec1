"""``xamm adapt``: few-shot adaptation of a pretrained predictor to another tool's columns."""

from __future__ import annotations

from pathlib import Path

from xamm_data.cli.tools import UsageError, emit, path_arg
from xamm_data.identifiers import first_repeated
from xamm_models.cli.common import RAW, needs_models

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


def add(sub) -> None:
    s = sub.add_parser(
        "adapt",
        help="adapt a trained xamm predictor to a platform with other feature "
        "columns (few-shot adaptation)",
        epilog=ADAPT_EPILOG,
        formatter_class=RAW,
    )
    s.add_argument(
        "samples",
        type=path_arg,
        help="Parquet/CSV of labelled profiles of the platform (see below)",
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
        type=path_arg,
        help="Parquet/CSV of the platform's unlabelled profiles (features only)",
    )
    s.add_argument(
        "--as-source", help="a training source the frozen regressors treat the platform as"
    )
    s.add_argument(
        "--no-names", action="store_true", help="do not seed the alignment by names that resolve"
    )
    s.add_argument("--seed", type=int, default=0)
    s.add_argument(
        "--out", type=path_arg, required=True, help="folder to save the adapted model to"
    )
    s.add_argument("--json", action="store_true", help="the summary as JSON")
    s.set_defaults(handler=needs_models(adapt_cmd))


def _read_table(path: Path):
    import polars as pl  # in the handler: `xamm --help` stays fast

    from xamm_data.store.parquet_depth import read_parquet  # polars, as above

    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    return read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path)


def adapt_cmd(args) -> int:
    # in the handler: `xamm --help` never loads the models
    from xamm_models.predictors.adapted.predictor import adapt

    # in the handler, likewise
    from xamm_models.predictors.paper.predictor import XammPredictor

    features = _features(args.features)
    base = XammPredictor.from_pretrained(str(args.model), revision=args.revision)
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


def _features(text: str | None) -> list[str] | None:
    """``--features a,b,c`` as columns; None when not given. A list naming no column (``,,``) or
    one twice is a usage error: the first would read as "every numeric column"."""
    if text is None:
        return None
    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        raise UsageError(f"--features {text!r} names no column")
    if (twice := first_repeated(names)) is not None:
        raise UsageError(f"--features names {twice!r} twice")
    return names
