"""The dataset registry and :func:`load_dataset`.

The registry is one table (:func:`registry_frame`): a dataset per machine of the machine registry,
each naming the Hugging Face Hub dataset repo and the pinned revision it is published under.
:func:`load_dataset` looks in the local store first and then on the Hub (``huggingface_hub``
caches the download and honours ``HF_HUB_OFFLINE``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal, overload

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from xamm_data.hub import snapshot
from xamm_data.identifiers import check_name
from xamm_data.machines import registry as machines
from xamm_data.plugins import load, plugins
from xamm_data.registry import Registry, UnknownNameError
from xamm_data.store.log import data_schema
from xamm_data.store.read import projected
from xamm_data.store.store import Store, as_store
from xamm_data.tables.schema import DATA_KINDS

DEFAULT_HUB_REPO = "xamm-hpc/xamm-datasets"


def default_hub_repo() -> str:
    """The Hub dataset repo xamm publishes to and loads from: ``$XAMM_HUB_DATASETS`` or the
    project's."""
    return os.environ.get("XAMM_HUB_DATASETS", DEFAULT_HUB_REPO)


class DatasetSpec(BaseModel):
    """A registry record: where a dataset lives on the Hub and the commit it is pinned to (None: not
    published)."""

    model_config = ConfigDict(frozen=True)

    name: str
    machine: str
    hub_repo: str
    # a commit, never a moving branch
    revision: str | None = Field(default=None, pattern=r"^[0-9a-f]{40}$")
    description: str = ""


def dataset_registry(store: Store | str | Path | None = None) -> Registry[DatasetSpec | None]:
    """Every dataset known here: one per registry machine (with its aliases; the Hub repo is read at
    call time), the derived ones (value None), and any other machine the local ``store`` holds
    (local only)."""
    reg: Registry[DatasetSpec | None] = Registry(
        "dataset", error=lambda kind, name, known: UnknownDatasetError(name, known)
    )
    repo = default_hub_repo()
    for mach in machines.MACHINES:
        reg.add(
            mach.id,
            DatasetSpec(
                name=mach.id,
                machine=mach.id,
                hub_repo=repo,
                description=f"{mach.cpu or ''}{' + ' + mach.gpu if mach.gpu else ''}".strip(" +"),
            ),
            aliases=mach.aliases,
        )
    for name in derived_datasets():
        reg.add(name, None)
    st = as_store(store)
    for kind in DATA_KINDS:
        for m in st.machines(kind):
            if m not in reg:
                reg.add(m, None)
    return reg


class UnknownDatasetError(UnknownNameError):
    """No dataset of that name; the message lists the known names and the closest one."""

    def __init__(self, name: str, known: list[str]):
        super().__init__("dataset", name, known, cutoff=0.4)


def derived_datasets() -> tuple[str, ...]:
    """Datasets built from every machine's benchmark_runs in the store, by a builder a higher layer
    registers."""
    return tuple(plugins("xamm.datasets"))


def list_datasets(pattern: str = "*", *, store: Store | str | Path | None = None) -> list[str]:
    """Names of the known datasets: the registry, derived data sets and the machines in the
    local store.

    Args:
        pattern: a shell-style pattern (``"xeon*"``).
        store: the local store (default ``$XAMM_HOME/store``).

    Returns:
        The matching names, sorted.
    """
    return dataset_registry(store).list(pattern)


def registry_frame(*, store: Store | str | Path | None = None) -> pl.DataFrame:
    """The dataset registry as one table, with what the local store holds for each.

    Row counts come from the table log's statistics; derived datasets are listed with what they
    are built from.

    Args:
        store: the local store (default ``$XAMM_HOME/store``).

    Returns:
        One row per dataset.
    """
    st = as_store(store)
    reg = dataset_registry(st)
    counts = {kind: st.row_counts(kind) for kind in DATA_KINDS}
    derived = derived_datasets()
    rows = []
    for name in reg.list():
        spec = reg.get(name)
        rows.append(
            {
                "name": name,
                "hub_repo": spec.hub_repo if spec else None,
                "revision": spec.revision if spec else None,
                "description": (
                    "derived: built from the store's benchmark_runs by load_dataset"
                    if name in derived
                    else spec.description
                    if spec
                    else "(local only)"
                ),
                **{
                    f"local_{k}_rows": None if name in derived else counts[k].get(name, 0)
                    for k in DATA_KINDS
                },
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "name": pl.String,
            "hub_repo": pl.String,
            "revision": pl.String,
            "description": pl.String,
            **{f"local_{k}_rows": pl.Int64 for k in DATA_KINDS},
        },
    )


def resolve_name(name: str, *, store: Store | None = None, registry: Registry | None = None) -> str:
    """Map a dataset name or machine alias to its dataset name; raise
    :class:`UnknownDatasetError`."""
    reg = registry or dataset_registry(store)
    found = reg.canonical(name)
    if found is None:
        reg.get(name)  # raises, listing the known names and the closest
        raise AssertionError("unreachable: Registry.get raised")
    return found


@overload
def load_dataset(
    name: str,
    kind: str = ...,
    *,
    lazy: Literal[False] = ...,
    revision: str | None = ...,
    store: Store | str | Path | None = ...,
    repo_id: str | None = ...,
    token: str | bool | None = ...,
    version: int | None = ...,
    as_of: datetime | None = ...,
    columns: Sequence[str] | None = ...,
) -> pl.DataFrame: ...


@overload
def load_dataset(
    name: str,
    kind: str = ...,
    *,
    lazy: Literal[True],
    revision: str | None = ...,
    store: Store | str | Path | None = ...,
    repo_id: str | None = ...,
    token: str | bool | None = ...,
    version: int | None = ...,
    as_of: datetime | None = ...,
    columns: Sequence[str] | None = ...,
) -> pl.LazyFrame: ...


@overload
def load_dataset(
    name: str,
    kind: str = ...,
    *,
    lazy: bool,
    revision: str | None = ...,
    store: Store | str | Path | None = ...,
    repo_id: str | None = ...,
    token: str | bool | None = ...,
    version: int | None = ...,
    as_of: datetime | None = ...,
    columns: Sequence[str] | None = ...,
) -> pl.DataFrame | pl.LazyFrame: ...


def load_dataset(
    name: str,
    kind: str = "benchmark_runs",
    *,
    lazy: bool = False,
    revision: str | None = None,
    store: Store | str | Path | None = None,
    repo_id: str | None = None,
    token: str | bool | None = None,
    version: int | None = None,
    as_of: datetime | None = None,
    columns: Sequence[str] | None = None,
) -> pl.DataFrame | pl.LazyFrame:
    """Load a machine's dataset as a polars frame: from the local store, else the Hub at a pinned
    revision, else the embedded snapshot (:mod:`xamm_data.hub.snapshot`, the derived public
    runs shipped in the package).

    Args:
        name: dataset name (a machine id such as ``"quartz"``, or an alias such as ``"Quartz"``).
        kind: ``"benchmark_runs"`` (default) or ``"app_profiles"``.
        lazy: return a ``LazyFrame``. From the local store it is a lazy scan of the machine's
            partition: its files are verified when this returns and held, compressed, until the
            frame is dropped; a filter (``.filter(pl.col("app") == "sort")``) or a column
            selection on it is pushed down to the Parquet reader, so one application of a large
            table is read without the rest.
        revision: a Hub revision (branch, tag or commit) to pin. When given, the Hub copy at that
            revision is loaded even if the local store has the machine.
        store: the local store (a :class:`Store` or its root); default ``$XAMM_HOME/store``.
        repo_id: the Hub dataset repo; default from the registry (``$XAMM_HUB_DATASETS``).
        token: Hub token, passed to ``huggingface_hub``.
        version: the local store table's version to read (time travel; see ``xamm datasets
            history``).
        as_of: read the local store as it was at this time (the latest version committed by
            then).
        columns: only these columns, in this order (the local store never parses the others).

    Returns:
        The rows (a ``LazyFrame`` with ``lazy``).

    Raises:
        UnknownDatasetError: ``name`` is not known; the message lists the known names.
        FileNotFoundError: the dataset is neither in the local store nor reachable on the Hub.
    """
    st = as_store(store)
    if name in derived_datasets():
        df = _derived(name, st, version, as_of)
    else:
        if kind not in DATA_KINDS:
            raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(DATA_KINDS)}")
        if columns is not None:
            projected(data_schema(kind), columns)  # an unknown column is refused, naming the known
        reg = dataset_registry(st)
        dname = _dataset_name(name, reg, repo_id)
        if version is not None or as_of is not None or (revision is None and st.has(kind, dname)):
            # lazily: the partition's files verified now, parsed by each query as it needs
            return st.read(kind, dname, lazy=lazy, version=version, as_of=as_of, columns=columns)
        df = _published(st, reg, kind, dname, revision, repo_id, token)
    df = df if columns is None else df.select(columns)
    return df.lazy() if lazy else df


def _published(st: Store, reg: Registry, kind: str, dname: str, revision, repo_id, token):
    """A machine the local store does not hold: the package's own copy when nothing is pinned on
    the Hub (without asking it), else the Hub copy at the pinned revision."""
    spec = reg.get(dname) if dname in reg else None
    pinned = revision or (spec.revision if spec else None)
    if pinned is None and repo_id is None and snapshot.has(kind, dname):
        return snapshot.read(kind, dname)
    return _from_hub(st, reg, kind, dname, revision, repo_id, token)


def _dataset_name(name: str, reg: Registry, repo_id: str | None) -> str:
    """The registered name of ``name``; an explicit repo may hold machines the registry does not
    know, so with ``repo_id`` an unknown name is taken as it is."""
    try:
        return resolve_name(name, registry=reg)
    except UnknownDatasetError:
        if repo_id is None:
            raise
        return check_name(name, "dataset")  # it becomes a path in the repo


def _derived(name: str, st: Store, version: int | None, as_of: datetime | None) -> pl.DataFrame:
    """A derived dataset from the store's ``benchmark_runs``; the named public machines the store
    does not hold come from the embedded snapshot, so a fresh home or a store of the user's own
    runs gives the same public benchmark. Empty after that is an error, never zero rows."""
    build = load("xamm.datasets", name, f"the derived dataset {name!r}")
    runs = st.scan("benchmark_runs", version=version, as_of=as_of).collect()
    held = set(runs["machine"].unique().to_list()) if runs.height else set()
    shipped = [
        snapshot.read("benchmark_runs", m)
        for m in snapshot.machines("benchmark_runs")
        if m not in held
    ]
    if shipped:
        runs = (
            pl.concat([runs, *shipped], how="diagonal_relaxed")
            if runs.height
            else (pl.concat(shipped, how="diagonal_relaxed"))
        )
    out = build(runs) if runs.height else pl.DataFrame()
    if out.is_empty():
        raise FileNotFoundError(
            f"{name} is built from the public RAJAPerf runs it names, and neither {st.root} nor "
            "the embedded snapshot holds them; ingest them (xamm-ingest rajaperf) or pull the "
            f"dataset from the Hub"
        )
    return out


def _from_hub(st: Store, reg, kind: str, dname: str, revision, repo_id, token) -> pl.DataFrame:
    """The Hub copy at ``revision``, else at the registry's pinned commit; never at a moving
    branch."""
    spec = reg.get(dname) if dname in reg else None
    repo = repo_id or (spec.hub_repo if spec else default_hub_repo())
    rev = revision or (spec.revision if spec else None)
    if rev is None:
        how = (
            f"xamm-ingest caliper DIR --app APP --machine {dname} (or hpctoolkit, table)"
            if kind == "app_profiles"
            else f"xamm-ingest rajaperf DIR --machine {dname}"
        )
        raise FileNotFoundError(
            f"{kind} for {dname!r} is not in the local store {st.root}, and no published "
            f"revision of it is pinned; ingest them ({how}), or load a Hub copy with "
            f"revision=<commit> (repo {repo}; offline, set HF_HUB_OFFLINE=1 to read the Hub "
            "cache without retries)"
        )
    # Hub client: ~0.3 s import, only when a Hub is used
    from xamm_data.hub.publish import download_partition

    return download_partition(repo, kind, dname, revision=rev, token=token)
