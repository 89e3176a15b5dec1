"""``xamm amm``: build, list, show, push, pull and plot machine signatures (``history`` and
``diff`` in :mod:`~xamm_models.cli.history`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from xamm_data.cli.tools import emit, path_arg, store_arg
from xamm_models.cli import history as history_command
from xamm_models.cli.common import EPOCHS, RAW, needs_models

EPILOG = """\
examples:
  xamm amm build                          train the shared embedder, build every machine's signature
  xamm amm build quartz --aggregation variance
  xamm amm build dane --kind physics      bandwidth curve, flop rate, launch overhead: a version
  xamm amm build epyc-7742 --kind specifications   no runs: its registry peaks x measured \
efficiencies
  xamm amm list                           every registry machine: latest signature or 'no \
signature yet'
  xamm amm show quartz:cpu@1
  xamm amm push --repo org/xamm-amms      publish all signatures (one file per machine@version)
  xamm amm pull --repo org/xamm-amms --revision <commit>
  xamm amm plot --out amm-tsne.png        t-SNE of the benchmark-sample embeddings
  xamm amm history dane                   every signature version, its runs and what changed
  xamm amm diff dane:cpu@1 dane:cpu@2     two versions' figures with intervals; kernels that moved
"""


LIGHT_AMM_ACTIONS = {
    "list",
    "show",
    "push",
    "pull",
    "history",
    "diff",
}  # read or move signatures: no embedder runs


def _add_amm_build(a) -> None:
    """``xamm amm build`` and its options."""
    b = a.add_parser(
        "build",
        help="build signatures from the store's benchmark runs",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    b.add_argument(
        "machines",
        nargs="*",
        help="machine ids (default: all with benchmark data; with --kind specifications, all "
        "with peaks recorded)",
    )
    b.add_argument(
        "--kind",
        choices=["attention", "physics", "specifications"],
        default="attention",
        help="attention: the paper's AMM (Algorithm 1); physics: bandwidth "
        "curve, flop rate, launch overhead; specifications: a physics signature from the "
        "registry's peaks, for machines without one from runs (runs supersede it)",
    )
    b.add_argument("--aggregation", choices=["mean", "l2", "variance"], default="l2")
    b.add_argument("--normalise", choices=["divide", "subtract", "none"], default="divide")
    b.add_argument(
        "--embedder",
        help="a saved embedder folder or Hub repo (default: train one on all machines)",
    )
    b.add_argument("--alignment", choices=["intersection", "union"], default="intersection")
    b.add_argument("--epochs", type=EPOCHS, default=200, help="embedder epochs (default 200)")
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
            q.add_argument("--public-key", type=path_arg, help="every certificate must be signed "
                           "by this Ed25519 public key (PEM; xamm accept --sign-key)")  # fmt: skip
    pl_ = a.add_parser(
        "plot",
        help="t-SNE PNG of benchmark-sample embeddings by target",
        formatter_class=RAW,
        epilog="examples:\n  xamm amm plot --out amm-tsne.png",
    )
    pl_.add_argument("--out", type=path_arg, default=Path("amm-tsne.png"))
    pl_.add_argument(
        "--embedder", help="a saved embedder (default: the newest under $XAMM_HOME/embedders)"
    )
    pl_.add_argument("--store", type=store_arg, default=None)


def add(sub) -> None:
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
    p.set_defaults(handler=needs_models(run, needs_torch=_needs_torch))


def _needs_torch(args) -> bool:
    """Whether an ``amm`` action needs the models extra: not the light ones, nor a physics build
    (numpy and polars only: the core install measures its machines)."""
    physics = args.action == "build" and getattr(args, "kind", None) in (
        "physics",
        "specifications",
    )
    return args.action not in LIGHT_AMM_ACTIONS and not physics


def _amm_build_physics(args, reg) -> int:
    # in the handler: `xamm --help` never loads the models
    from xamm_data.store.store import as_store

    # in the handler, likewise
    from xamm_models.zoo.physics import build_physics_signatures

    for s in build_physics_signatures(
        store=as_store(args.store), registry=reg, machines=args.machines or None
    ):
        p = s.physics
        assert p is not None  # a physics signature always holds its figures
        print(
            f"{s.ref}: {s.n_samples} samples, bandwidth up to {max(p.bw):.3g} "
            f"B/s, flop rate {p.flop_rate:.3g} "
            f"flop/s ({p.flop_rate_from}), launch overhead {p.overhead_s:.3g} s"
            + (f"; from {s.configuration}" if s.configuration else "")
        )
    return 0


def _amm_build_specifications(args, reg) -> int:
    # in the handler: `xamm --help` never loads the models
    from xamm_models.zoo.physics import build_specification_signatures

    built = build_specification_signatures(registry=reg, machines=args.machines or None)
    for s in built:
        p = s.physics
        assert p is not None  # a physics signature always holds its figures
        print(
            f"{s.ref}: bandwidth {p.bw[0]:.3g} B/s, flop rate {p.flop_rate:.3g} flop/s, launch "
            f"overhead {p.overhead_s:.3g} s; {s.configuration}"
        )
    # in the handler, likewise
    from xamm_data.machines import canonical_id

    done = {s.machine for s in built}
    for m in [m for m in args.machines if canonical_id(m) not in done]:
        print(
            f"{m}: none built: it has a physics signature from runs (which supersedes one from "
            "specifications), or the registry records no peak memory bandwidth and flop rate "
            f"of it (xamm machines show {m}; add them with xamm machines add)",
            file=sys.stderr,
        )
    return 0 if built or not args.machines else 1


def _amm_build(args, reg) -> int:
    if args.kind == "physics":
        return _amm_build_physics(args, reg)
    if args.kind == "specifications":
        return _amm_build_specifications(args, reg)
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
    st = Store(args.store)
    runs = st.scan("benchmark_runs").collect() if st.version("benchmark_runs") is not None else None
    samples = benchmark_samples(runs, emb.feature_names) if runs is not None else None
    if samples is None or samples.height < 3:
        raise ValueError(f"the store at {st.root} holds {0 if samples is None else samples.height} "
                         f"benchmark samples of the embedder's kernels; a t-SNE needs 3 or more "
                         "(ingest runs, or --store STORE)")  # fmt: skip
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
