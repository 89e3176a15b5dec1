"""Publishing datasets to, and fetching them from, the Hugging Face Hub (the real
``huggingface_hub`` client).

A Hub dataset repo holds plain Parquet (``<kind>/machine=<m>/data.parquet``, each written from one
pinned version of the store's table) and a dataset card whose YAML header has a ``default`` config
(every machine's benchmark runs) and one ``configs`` entry per machine and kind, the sources'
licences, task and size categories and, under ``xamm``, each partition's rows, source files and
store version. A downloaded file whose contents contradict the request (another table, schema
version or machine) is refused.

The endpoint is read from ``HF_ENDPOINT`` at call time (not import time), and ``HF_HUB_OFFLINE``
is honoured: offline, only what ``huggingface_hub`` already cached is used.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import polars as pl
import yaml
from huggingface_hub import (
    CommitOperationAdd,
    DatasetCard,
    DatasetCardData,
    HfApi,
    hf_hub_download,
)
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from xamm_data._version import __version__
from xamm_data.errors import XammError, type_name
from xamm_data.hub.files import check_hub_etag, incomplete_download, read_verified, sha256
from xamm_data.hub.models import hub_endpoint as hub_endpoint
from xamm_data.hub.models import hub_offline as hub_offline
from xamm_data.hub.models import snapshot_dir as snapshot_dir
from xamm_data.store.files import CorruptDataError, parquet_bytes
from xamm_data.store.store import Store, as_store, read_parquet_checked
from xamm_data.tables.schema import DATA_KINDS, get_table

_PARTITION = re.compile(r"^(?P<kind>[a-z_]+)/machine=(?P<machine>[^/]+)/data\.parquet$")


class HubUnavailableError(XammError, RuntimeError):
    """The Hub could not be reached, or refused the request: the message says what failed and what
    to do."""


_NETWORK_MODULES = ("httpx", "httpx2", "httpcore", "requests", "urllib3")


@contextlib.contextmanager
def hub_errors(action: str):
    """Turn the Hub client's network and HTTP errors while doing ``action`` (e.g. "push quartz to
    org/repo") into one :class:`HubUnavailableError` line: what failed, and how to authenticate or
    retry."""
    where = hub_endpoint() or "https://huggingface.co"
    try:
        yield
    except OfflineModeIsEnabled as e:
        raise HubUnavailableError(
            f"cannot {action}: HF_HUB_OFFLINE is set, so xamm does not reach "
            "the Hub; unset it "
            "and retry"
        ) from e
    except HfHubHTTPError as e:
        status = getattr(getattr(e, "response", None), "status_code", None)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if status in (401, 403):
            raise HubUnavailableError(
                f"the Hub at {where} refused to {action} (HTTP {status}): log in "
                "with "
                "`hf auth login` or set HF_TOKEN to a token that may write to "
                "the repo, then "
                "retry"
            ) from e
        raise HubUnavailableError(
            f"the Hub at {where} could not {action} ({first}); retry later"
        ) from e
    except Exception as e:
        if type(e).__module__.split(".")[0] not in _NETWORK_MODULES and not isinstance(
            e, (ConnectionError, TimeoutError)
        ):
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise HubUnavailableError(
            f"could not reach the Hub at {where} to {action} "
            f"({type(e).__name__}: {first}). "
            "Check the network (HF_ENDPOINT) and retry; publishing also "
            "needs a token "
            "(`hf auth login` or HF_TOKEN)"
        ) from e


def api(token: str | bool | None = None) -> HfApi:
    return HfApi(endpoint=hub_endpoint(), token=token)


SPDX = re.compile(r"^[a-z0-9][a-z0-9.+-]*$")


def _size_category(n: int) -> str:
    """The Hub's ``size_categories`` bucket for ``n`` rows."""
    for hi, label in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
    ):
        if n < hi:
            return label
    return "10M<n<100M"


def _config_name(kind: str, machine: str) -> str:
    return machine if kind == "benchmark_runs" else f"{machine}-{kind}"


def _card_configs(partitions: dict[str, dict[str, dict]]) -> list[dict]:
    """The card's configs: ``default`` (every machine's benchmark runs), one per machine and
    kind."""
    configs = []
    if partitions.get("benchmark_runs"):
        configs.append(
            {
                "config_name": "default",
                "default": True,
                "data_files": [{"split": "train", "path": "benchmark_runs/machine=*/*.parquet"}],
            }
        )
    for kind in sorted(partitions):
        for machine in sorted(partitions[kind]):
            configs.append(
                {
                    "config_name": _config_name(kind, machine),
                    "data_files": [
                        {"split": "train", "path": f"{kind}/machine={machine}/*.parquet"}
                    ],
                }
            )
    return configs


def _card_body(
    repo_id: str, partitions: dict, schema_versions: dict, configs: list, licenses: list[str]
) -> list[str]:
    """The card's Markdown: what the tables are, one row per config, how to load, the licence."""
    lines = [
        f"# {repo_id}",
        "",
        "Validated, machine-partitioned Parquet tables written by "
        "[xamm](https://pypi.org/project/xamm/), each from",
        "one pinned version of the publisher's store table. Every row "
        "keeps its provenance (`source_path`,",
        "`source_sha256`, `source_format`, `reader`, `xamm_version`, "
        "`tool_versions`, `run_date`); each file's Parquet",
        "key-value metadata `xamm` holds the schema version, units and source files.",
        "",
        "| config | table | schema | rows | source files | store version |",
        "|---|---|---|---|---|---|",
    ]
    for kind in sorted(partitions):
        for machine, p in sorted(partitions[kind].items()):
            lines.append(
                f"| `{_config_name(kind, machine)}` | `{kind}` | "
                f"{schema_versions[kind]} | {p['rows']} | "
                f"{p['sources']} | {p.get('table_version')} |"
            )
    lines += [
        "",
        "## Load",
        "",
        "```python",
        "import datasets",
        f'datasets.load_dataset("{repo_id}")            # every machine\'s benchmark runs',
        "from xamm_data import load_dataset",
        f'load_dataset("{configs[-1]["config_name"] if configs else "quartz"}", '
        f'repo_id="{repo_id}", revision="<commit>")',
        "```",
        "",
        "## License",
        "",
        f"The rows derive from sources under {', '.join(licenses)}; each "
        "row names its "
        "source file.",
        "",
    ]
    return lines


def dataset_card(
    repo_id: str,
    partitions: dict[str, dict[str, dict]],
    *,
    licenses: list[str],
    source_datasets: list[str] | None = None,
) -> DatasetCard:
    """The dataset card of a repo holding ``partitions`` (kind -> machine -> {"rows", "sources",
    "table_version"}), in the Hub's conventions: a ``default`` config with every machine's benchmark
    runs, one config per machine and kind, licences as SPDX ids, task and size categories; counts
    live in the YAML header."""
    configs = _card_configs(partitions)
    schema_versions = {k: get_table(k).version for k in sorted(partitions)}
    total = sum(p["rows"] for parts in partitions.values() for p in parts.values())
    data = DatasetCardData(
        license=licenses[0] if len(licenses) == 1 else licenses,
        pretty_name="xamm cross-platform HPC performance data",
        task_categories=["tabular-regression"],
        size_categories=[_size_category(total)],
        source_datasets=source_datasets or ["original"],
        tags=["hpc", "performance", "rajaperf", "caliper", "hpctoolkit", "xamm"],
        configs=configs,
        xamm={
            "schema_versions": schema_versions,
            "xamm_version": __version__,
            "partitions": {
                k: {m: dict(v) for m, v in sorted(parts.items())}
                for k, parts in sorted(partitions.items())
            },
        },
    )
    lines = _card_body(repo_id, partitions, schema_versions, configs, licenses)
    return DatasetCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines))


def _previous_partitions(
    hub: HfApi, repo_id: str, revision: str, existing: list[str]
) -> dict[str, dict[str, dict]]:
    """What the repo's current card says about the partitions it holds (read from its YAML
    header)."""
    if "README.md" not in existing:
        return {}
    try:
        text = Path(
            hf_hub_download(
                repo_id,
                "README.md",
                repo_type="dataset",
                revision=revision,
                endpoint=hub_endpoint(),
                token=hub.token,
            )
        ).read_text(encoding="utf-8")
    # no card to read: rewritten from this push only
    except (EntryNotFoundError, RevisionNotFoundError, OSError):
        return {}
    where = f"{repo_id}@{revision}: README.md"
    parts = card_metadata(text, where, "partitions")
    return {k: dict(card_metadata(text, where, "partitions", k)) for k in parts}


def card_metadata(text: bytes | str, where: str, *path: str) -> dict:
    """The mapping at ``xamm.<path>`` of a repo card's YAML metadata ({} where a key is absent):
    a card whose metadata is no YAML, nests past YAML's parser, or holds anything but a mapping
    on the way is refused naming the card (what is pulled is read, never trusted).

    Args:
        text: the card (``README.md``) as served.
        where: how a refusal names it (repo, revision and file).
        *path: the keys under ``xamm`` (``partitions``, a table, a machine).

    Raises:
        CorruptDataError: the card cannot be read so.
    """
    try:
        raw = text if isinstance(text, str) else text.decode("utf-8", "replace")
        value = DatasetCard(raw).data.to_dict()
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as e:
        raise CorruptDataError(
            f"{where}: its metadata is not the YAML mapping a card holds "
            f"({type(e).__name__}); refused"
        ) from None
    keys = ("xamm", *path)
    for i, key in enumerate(keys):
        if not isinstance(value, dict):
            raise _not_a_mapping(where, keys[:i], value)
        value = value.get(key)
        if value is None:
            return {}
    if not isinstance(value, dict):
        raise _not_a_mapping(where, keys, value)
    return value


def _not_a_mapping(where: str, keys: tuple[str, ...], value: object) -> CorruptDataError:
    at = ".".join(keys) if keys else "its metadata"
    return CorruptDataError(
        f"{where}: {at} is {type_name(value, article=True)}, not a mapping; refused"
    )


def push_dataset(
    machine: str,
    repo_id: str,
    *,
    licenses: list[str] | str,
    store: Store | str | Path | None = None,
    kinds: tuple[str, ...] | None = None,
    version: int | None = None,
    revision: str = "main",
    token: str | bool | None = None,
    private: bool = False,
    source_datasets: list[str] | None = None,
    commit_message: str | None = None,
) -> str:
    """Publish a machine's tables, as plain Parquet written from one pinned store version (the
    latest unless ``version``), to a Hub dataset repo; return the commit id. ``licenses``: the SPDX
    ids of the sources' licences (e.g. ``["mit", "bsd-3-clause"]``). One commit adds the files and
    rewrites the card for every machine held."""
    licenses = [licenses] if isinstance(licenses, str) else list(licenses)
    bad = [x for x in licenses if not SPDX.match(x) or x == "other"]
    if not licenses or bad:
        raise ValueError(
            "give the sources' licences as SPDX ids (e.g. mit, bsd-3-clause, "
            "cdla-permissive-2.0), not "
            f"{bad or 'nothing'}: a dataset card says what its rows may be used for"
        )
    st = as_store(store)
    kinds = kinds or tuple(k for k in DATA_KINDS if st.has(k, machine))
    if not kinds:
        raise FileNotFoundError(
            f"nothing to push: the store {st.root} has no tables for machine {machine!r}"
        )
    with hub_errors(f"push {machine} to {repo_id}"):
        return _push(
            st,
            machine,
            repo_id,
            kinds,
            version=version,
            revision=revision,
            token=token,
            private=private,
            licenses=licenses,
            source_datasets=source_datasets,
            commit_message=commit_message,
        )


def _push(
    st: Store,
    machine: str,
    repo_id: str,
    kinds: tuple[str, ...],
    *,
    version,
    revision,
    token,
    private,
    licenses,
    source_datasets,
    commit_message,
) -> str:
    hub = api(token)
    hub.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    existing = hub.list_repo_files(repo_id, repo_type="dataset", revision=revision)
    partitions = _previous_partitions(hub, repo_id, revision, existing)
    for f in existing:  # files the card does not describe still count as configs
        if (m := _PARTITION.match(f)) and m["machine"] not in partitions.get(m["kind"], {}):
            partitions.setdefault(m["kind"], {})[m["machine"]] = {
                "rows": None,
                "sources": None,
                "table_version": None,
            }
    ops = []
    for kind in kinds:
        v = st.version(kind) if version is None else version
        rows = st.read(kind, machine, version=v)
        data = parquet_bytes(rows, get_table(kind))
        ops.append(
            CommitOperationAdd(
                path_in_repo=f"{kind}/machine={machine}/data.parquet", path_or_fileobj=data
            )
        )
        partitions.setdefault(kind, {})[machine] = {
            "rows": rows.height,
            "table_version": v,
            "sha256": sha256(data),
            "sources": rows.get_column("source_sha256").n_unique(),
        }
    card = dataset_card(repo_id, partitions, licenses=licenses, source_datasets=source_datasets)
    ops.append(
        CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=io.BytesIO(str(card).encode()))
    )
    info = hub.create_commit(
        repo_id,
        ops,
        repo_type="dataset",
        revision=revision,
        commit_message=commit_message
        or f"xamm {__version__}: publish {', '.join(kinds)} for {machine}",
    )
    return info.oid


def download_partition(
    repo_id: str,
    kind: str,
    machine: str,
    *,
    revision: str = "main",
    token: str | bool | None = None,
) -> pl.DataFrame:
    """Fetch (through the huggingface_hub cache) and validate one machine's table from a Hub dataset
    repo. Its bytes must match the SHA-256 the repo's card (at the same commit) recorded at push,
    and the hash the Hub reported; :class:`~xamm_data.store.files.CorruptDataError` otherwise, on a
    first pull and on every cache hit alike."""
    filename = f"{kind}/machine={machine}/data.parquet"
    local, commit = _download(repo_id, filename, revision, token, what=f"{kind} for {machine!r}")
    card, card_commit = _download(
        repo_id, "README.md", revision, token, what=f"the card of {repo_id}"
    )
    where = f"{repo_id}@{revision} (commit {commit}): {filename}"
    if card_commit != commit:
        raise CorruptDataError(
            f"{where}: the file and the card came from different commits "
            f"({commit} and "
            f"{card_commit}); refused. Load at a commit (revision=<sha>), not "
            "a moving branch"
        )
    text = Path(card).read_bytes()
    # the record itself, as served
    check_hub_etag(card, text, f"{repo_id}@{revision} (commit {commit}): README.md")
    card_where = f"{repo_id}@{revision} (commit {commit}): README.md"
    recorded = card_metadata(text, card_where, "partitions", kind, machine).get("sha256")
    data = read_verified(local, recorded, where)
    df = read_parquet_checked(data, kind, name=where)
    others = sorted(set(df.get_column("machine")) - {machine})
    if others:  # the file's rows must be what was asked for, whatever its path says
        raise ValueError(
            f"{where} holds rows of {', '.join(others)}, not only {machine!r}; refused"
        )
    return df


def _download(repo_id: str, filename: str, revision: str, token, *, what: str) -> tuple[str, str]:
    """(local path, commit) of one file of a dataset repo through the huggingface_hub cache."""
    where = f"{repo_id}@{revision}"
    try:
        local = hf_hub_download(
            repo_id,
            filename,
            repo_type="dataset",
            revision=revision,
            endpoint=hub_endpoint(),
            token=token,
            local_files_only=hub_offline(),
        )
    except LocalEntryNotFoundError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise FileNotFoundError(
            f"{what} is not in the local store and not in the Hub cache for {where}"
            + (
                " (HF_HUB_OFFLINE is set)"
                if hub_offline()
                else "; the Hub did not answer (without a network, HF_HUB_OFFLINE=1 "
                "reads the cache without retries)"
            )
            + f": {first}"
        ) from e
    except (EntryNotFoundError, RevisionNotFoundError, RepositoryNotFoundError) as e:
        raise FileNotFoundError(
            f"{what} is not in the local store, and {where} has no {filename}: {type(e).__name__}"
        ) from e
    except OSError as e:
        corrupt = incomplete_download(e, f"{where}: {filename}")
        if corrupt is None:
            raise
        raise corrupt from e
    # .../snapshots/<commit>/<filename>
    return local, Path(local).parents[len(Path(filename).parts) - 1].name
