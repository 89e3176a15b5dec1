"""``xamm zoo``: list, build and publish the pretrained models."""

from __future__ import annotations

from xamm_data.cli.tools import emit, path_arg
from xamm_models.cli.common import EPOCHS, RAW, needs_models

ZOO_EPILOG = """\
examples:
  xamm zoo list                                            the model kinds of the zoo
  xamm zoo build --data-dir ../shared/data --out zoo-out   every artefact from the public data \
(minutes)
  xamm zoo build --data-dir ../shared/data --out zoo-out --eval-results docs/eval/results.json \
--snapshot xamm_data/hub/snapshot
"""


def add(sub) -> None:
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
        "--data-dir", type=path_arg, required=True, help="the public data (../shared/data layout)"
    )
    b.add_argument("--out", type=path_arg, required=True, help="where the zoo is built")
    b.add_argument(
        "--eval-results",
        type=path_arg,
        help="an `xamm eval` results.json: the models' cards carry its metrics",
    )
    b.add_argument(
        "--snapshot", type=path_arg, help="also write the package's embedded snapshot here"
    )
    b.add_argument("--epochs", type=EPOCHS, default=200, help="attention embedder epochs")
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
    u.add_argument("--zoo", type=path_arg, required=True, help="a folder `xamm zoo build` wrote")
    u.add_argument("--org", required=True, help="the Hub user or organisation")
    u.add_argument("--json", action="store_true")
    p.set_defaults(handler=needs_models(zoo_cmd, needs_torch=lambda args: args.action == "build"))


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
