"""Publishing datasets to, and fetching them from, the Hugging Face Hub (the real ``huggingface_hub`` client).

A Hub dataset repo mirrors the store layout (``<kind>/machine=<m>/data.parquet``) and carries a
dataset card whose YAML header has one ``configs`` entry per machine and kind, so the Hub viewer
and ``datasets.load_dataset(repo, name=...)`` see each machine as a configuration.

The endpoint is read from ``HF_ENDPOINT`` at call time (not import time), and ``HF_HUB_OFFLINE``
is honoured: offline, only what ``huggingface_hub`` already cached is used.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import polars as pl
from huggingface_hub import (
    CommitOperationAdd,
    DatasetCard,
    DatasetCardData,
    HfApi,
    hf_hub_download,
)
from huggingface_hub.errors import (
    EntryNotFoundError,
    LocalEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from xamm_data._version import __version__
from xamm_data.schema import DATA_KINDS, get_table
from xamm_data.store import Store, as_store, read_parquet_checked

_PARTITION = re.compile(r"^(?P<kind>[a-z_]+)/machine=(?P<machine>[^/]+)/data\.parquet$")


def hub_endpoint() -> str | None:
    """The Hub endpoint from ``HF_ENDPOINT`` (read now), or ``None`` for huggingface_hub's default."""
    return os.environ.get("HF_ENDPOINT") or None


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` is set to a true value (read now)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def api(token: str | bool | None = None) -> HfApi:
    return HfApi(endpoint=hub_endpoint(), token=token)


def dataset_card(repo_id: str, partitions: dict[str, list[str]], *, license: str = "other",
                 row_counts: dict[tuple[str, str], int] | None = None,
                 sources: dict[tuple[str, str], int] | None = None) -> DatasetCard:
    """The dataset card for a repo holding ``partitions`` (kind -> machines)."""
    configs = []
    for kind in sorted(partitions):
        for machine in sorted(partitions[kind]):
            name = machine if kind == "benchmark_runs" else f"{machine}-{kind}"
            configs.append({"config_name": name,
                            "data_files": [{"split": "train", "path": f"{kind}/machine={machine}/*.parquet"}]})
    schema_versions = {k: get_table(k).version for k in sorted(partitions)}
    data = DatasetCardData(
        license=license,
        pretty_name="xamm cross-platform HPC performance data",
        tags=["hpc", "performance", "rajaperf", "caliper", "hpctoolkit", "xamm"],
        configs=configs,
        xamm={"schema_versions": schema_versions, "xamm_version": __version__},
    )
    lines = [
        f"# {repo_id}",
        "",
        "Validated, machine-partitioned Parquet tables written by [xamm](https://pypi.org/project/xamm/).",
        "Each file keeps its provenance: every row has `source_path`, `source_sha256`, `source_format`, `reader`,",
        "`xamm_version`, `tool_versions` and `run_date`; the Parquet key-value metadata `xamm` holds the schema",
        "version, units and the list of source files.",
        "",
        "| config | table | schema | rows | source files |",
        "|---|---|---|---|---|",
    ]
    for cfg in configs:
        kind = cfg["data_files"][0]["path"].split("/")[0]
        machine = cfg["data_files"][0]["path"].split("/")[1].split("=", 1)[1]
        n = (row_counts or {}).get((kind, machine), "")
        s = (sources or {}).get((kind, machine), "")
        lines.append(f"| `{cfg['config_name']}` | `{kind}` | {schema_versions[kind]} | {n} | {s} |")
    lines += [
        "",
        "## Load",
        "",
        "```python",
        "from xamm_data import load_dataset",
        f"df = load_dataset(\"{configs[0]['config_name'] if configs else 'quartz'}\", revision=\"<commit>\")",
        "```",
        "",
        "## License",
        "",
        "Rows derive from the source files named in their provenance; each keeps its source's license.",
        "",
    ]
    return DatasetCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines))


def push_dataset(
    machine: str,
    repo_id: str,
    *,
    store: Store | str | Path | None = None,
    kinds: tuple[str, ...] | None = None,
    revision: str = "main",
    token: str | bool | None = None,
    private: bool = False,
    license: str = "other",
    commit_message: str | None = None,
) -> str:
    """Publish a machine's tables from the local store to a Hub dataset repo; return the commit id.

    One commit adds the machine's Parquet files and rewrites the card (``README.md``) to list every
    machine the repo then holds.
    """
    st = as_store(store)
    kinds = kinds or tuple(k for k in DATA_KINDS if st.has(k, machine))
    if not kinds:
        raise FileNotFoundError(f"nothing to push: the store {st.root} has no tables for machine {machine!r}")
    hub = api(token)
    hub.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    existing = hub.list_repo_files(repo_id, repo_type="dataset", revision=revision)
    partitions: dict[str, set[str]] = {}
    for f in existing:
        m = _PARTITION.match(f)
        if m:
            partitions.setdefault(m["kind"], set()).add(m["machine"])
    ops = []
    counts, nsources = _previous_card_counts(hub, repo_id, revision, existing)
    for kind in kinds:
        path = st.partition_path(kind, machine)
        if not path.is_file():
            raise FileNotFoundError(f"the store {st.root} has no {kind} for machine {machine!r}")
        partitions.setdefault(kind, set()).add(machine)
        ops.append(CommitOperationAdd(path_in_repo=f"{kind}/machine={machine}/data.parquet",
                                      path_or_fileobj=path.read_bytes()))
        counts[(kind, machine)] = st.read(kind, machine, lazy=True).select(pl.len()).collect().item()
        nsources[(kind, machine)] = len(st.metadata(kind, machine)["sources"])
    card = dataset_card(repo_id, {k: sorted(v) for k, v in partitions.items()}, license=license,
                        row_counts=counts, sources=nsources)
    ops.append(CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=io.BytesIO(str(card).encode())))
    info = hub.create_commit(
        repo_id, ops, repo_type="dataset", revision=revision,
        commit_message=commit_message or f"xamm {__version__}: publish {', '.join(kinds)} for {machine}",
    )
    return info.oid


_CARD_ROW = re.compile(r"^\| `[^`]+` \| `(?P<kind>[a-z_]+)` \| [^|]+ \| (?P<rows>\d+) \| (?P<sources>\d+) \|$")
_CARD_CFG = re.compile(r"machine=(?P<machine>[^/]+)/")


def _previous_card_counts(hub: HfApi, repo_id: str, revision: str, existing: list[str]):
    """Row and source counts the current card states for machines this push does not touch."""
    counts: dict[tuple[str, str], int] = {}
    sources: dict[tuple[str, str], int] = {}
    if "README.md" not in existing:
        return counts, sources
    try:
        text = Path(hf_hub_download(repo_id, "README.md", repo_type="dataset", revision=revision,
                                    endpoint=hub_endpoint(), token=hub.token)).read_text(encoding="utf-8")
    except Exception:  # a card we cannot read is rewritten without the old counts
        return counts, sources
    card = DatasetCard(text)
    cfgs = {c["config_name"]: c["data_files"][0]["path"] for c in (card.data.to_dict().get("configs") or [])}
    for line in text.splitlines():
        m = _CARD_ROW.match(line.strip())
        name = line.split("`")[1] if m else None
        if m and name in cfgs and (mm := _CARD_CFG.search(cfgs[name])):
            key = (m["kind"], mm["machine"])
            counts[key], sources[key] = int(m["rows"]), int(m["sources"])
    return counts, sources


def download_partition(repo_id: str, kind: str, machine: str, *, revision: str = "main",
                       token: str | bool | None = None) -> pl.DataFrame:
    """Fetch (through the huggingface_hub cache) and validate one machine's table from a Hub dataset repo."""
    filename = f"{kind}/machine={machine}/data.parquet"
    where = f"{repo_id}@{revision}"
    try:
        local = hf_hub_download(repo_id, filename, repo_type="dataset", revision=revision,
                                endpoint=hub_endpoint(), token=token, local_files_only=hub_offline())
    except LocalEntryNotFoundError as e:
        raise FileNotFoundError(
            f"{kind} for {machine!r} is not in the local store and not in the Hub cache for {where}"
            f"{' (HF_HUB_OFFLINE is set)' if hub_offline() else ''}: {e}") from e
    except (EntryNotFoundError, RevisionNotFoundError, RepositoryNotFoundError) as e:
        raise FileNotFoundError(f"{kind} for {machine!r} is not in the local store, and {where} has no "
                                f"{filename}: {type(e).__name__}") from e
    return read_parquet_checked(local, kind)
