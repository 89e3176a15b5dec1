"""What the data commands do once parsed: ``xamm datasets``, ``xamm store`` and ``xamm schemas``
(their parsers are in :mod:`xamm_data.cli.commands`, which loads this module only to run one)."""

from __future__ import annotations

import json
import sys

import polars as pl

from xamm_data.cli.summary import summarize_benchmark_runs
from xamm_data.cli.tools import UsageError, emit
from xamm_data.hub.datasets import (
    derived_datasets,
    list_datasets,
    load_dataset,
    registry_frame,
    resolve_name,
)
from xamm_data.store.store import Store
from xamm_data.tables.schema_files import check_schema_files, write_schema_files
from xamm_data.thicket import to_thicket

__all__ = ["DATASET_ACTIONS", "datasets_command", "schemas_command", "store_command"]


def _datasets_list(args, store: Store) -> int:
    reg = registry_frame(store=store).filter(
        pl.col("name").is_in(list_datasets(args.pattern, store=store))
    )
    emit(reg, as_json=args.json, title=f"xamm datasets (store: {store.root})")
    return 0


def _datasets_show(args, store: Store) -> int:
    df = load_dataset(
        args.name, args.kind, store=store, revision=args.revision, version=args.version
    )
    if args.name in derived_datasets():  # labelled pairs, not runs: per machine pair
        summary = (
            df.group_by("source", "target")
            .agg(
                pl.len().alias("pairs"),
                pl.col("app").n_unique().alias("kernels"),
                pl.col("relR").median().alias("median_relR"),
            )
            .sort("source", "target")
        )
        emit(summary, as_json=args.json, title=f"{args.name}: {df.height} labelled pairs")
    elif args.kind == "benchmark_runs":
        emit(
            summarize_benchmark_runs(df),
            as_json=args.json,
            title=f"{args.name}: {df.height} benchmark runs",
        )
    else:
        emit(
            df.group_by("app", "machine", "device").len().sort("app"),
            as_json=args.json,
            title=f"{args.name}: app profiles",
        )
    return 0


def _datasets_history(args, store: Store) -> int:
    name = resolve_name(args.name, store=store)
    h = store.history(args.kind)
    h = h.filter(
        pl.col("xamm").str.contains(f'"{name}"', literal=True)
        | ~pl.col("xamm").str.contains('"rows"', literal=True)
        | pl.col("xamm").is_null()
    )
    if args.json:  # every commit's record as JSON objects, not strings holding JSON
        emit(
            [{**r, "xamm": json.loads(r["xamm"]) if r["xamm"] else None} for r in h.to_dicts()],
            as_json=True,
        )
        return 0
    emit(
        _history_table(h, name),
        as_json=False,
        title=f"{args.kind} versions touching {name} (store: {store.root}; --json: every source)",
    )
    return 0


def _history_table(h: pl.DataFrame, name: str) -> pl.DataFrame:
    """One line per commit: the rows it wrote for ``name``, how many sources and the first of
    them, and the xamm version that wrote it."""
    rows, sources, version = [], [], []
    for raw in h.get_column("xamm").to_list():
        rec = json.loads(raw) if raw else {}
        rows.append((rec.get("rows") or {}).get(name))
        names = rec.get("sources") or []
        n = rec.get("n_sources", len(names))
        more = f" (+{n - 1} more)" if n > 1 else ""
        sources.append(f"{n}: {names[0]}{more}" if names else (f"{n}" if n else ""))
        version.append(rec.get("xamm_version"))
    return h.select("version", "timestamp", "operation").with_columns(
        pl.Series("rows", rows, dtype=pl.Int64),
        pl.Series("sources", sources, dtype=pl.String),
        pl.Series("xamm", version, dtype=pl.String),
    )


def _datasets_verify(args, store: Store) -> int:
    problems = store.verify()
    if args.json:
        emit({"store": str(store.root), "problems": problems}, as_json=True)
        return 1 if problems else 0
    from xamm_data.cli.summary import say  # the printer: loaded when it prints

    # a line each: a problem names a file, which a table's column would fold over many lines
    say(f"verify {store.root}: " + (f"{len(problems)} problem(s)" if problems else "no problems")
        + ("; every log replays and each file it names has its checksum, size and rows"
           if not problems else ""), indent="")  # fmt: skip
    for p in problems:
        say(f"- {p}")
    return 1 if problems else 0


def _datasets_export(args, store: Store) -> int:
    df = load_dataset(args.name, store=store, version=args.version)
    tk = to_thicket(df)
    args.thicket.write_text(tk.to_json(), encoding="utf-8")
    print(
        f"wrote {args.thicket}: {len(tk.profile)} profiles, {df.height} "
        f"kernel runs of {args.name} "
        "(thicket.Thicket.from_json reads it)"
    )
    return 0


def _datasets_push(args, store: Store) -> int:
    name = resolve_name(args.name, store=store)
    # Hub client: ~0.3 s import, only when a Hub is used
    from xamm_data.hub.publish import push_dataset

    sha = push_dataset(
        name,
        args.repo,
        store=store,
        revision=args.revision,
        private=args.private,
        licenses=args.licenses,
        version=args.version,
    )
    print(f"pushed {name} to {args.repo} (dataset) at commit {sha}")
    return 0


DATASET_ACTIONS = {
    "list": _datasets_list,
    "show": _datasets_show,
    "history": _datasets_history,
    "verify": _datasets_verify,
    "export": _datasets_export,
    "push": _datasets_push,
}


def datasets_command(args) -> int:
    if args.action not in DATASET_ACTIONS:
        raise UsageError(args.action)
    return DATASET_ACTIONS[args.action](args, Store(args.store))


def store_command(args) -> int:
    store = Store(args.store)
    kinds = [args.kind] if args.kind else ["benchmark_runs", "app_profiles"]
    for kind in kinds:
        if args.action == "optimize":
            done = store.optimize(kind)
            print(
                f"{kind}: "
                + (
                    ", ".join(f"{m} {n} files -> 1" for m, n in done.items())
                    or "nothing to compact"
                )
            )
        elif args.action == "vacuum":
            gone = store.vacuum(kind, retention_hours=args.retention_hours, dry_run=args.dry_run)
            print(f"{kind}: {'would remove' if args.dry_run else 'removed'} {len(gone)} file(s)")
            for g in gone:
                print(f"  {g}")
        else:
            raise UsageError(args.action)
    return 0


def schemas_command(args) -> int:
    if args.check:
        if not args.dir.is_dir():
            # outside a checkout (a wheel's user): nothing to compare, and no traceback or file list
            print(f"xamm: error: {args.dir}: no such folder; --check compares a checkout's "
                  "schemas/ with the code (run it in the repository, or name the folder with "
                  "--dir); `xamm schemas export --dir DIR` writes the files anywhere",
                  file=sys.stderr)  # fmt: skip
            return 1
        diffs = check_schema_files(args.dir)
        for d in diffs:
            print(d, file=sys.stderr)
        if diffs:
            print("run `xamm schemas export` to update", file=sys.stderr)
        return 1 if diffs else 0
    for p in write_schema_files(args.dir):
        print(p)
    return 0
