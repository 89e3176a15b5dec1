"""Pulls are verified: the local Hub server serves each tampered form of a published dataset, model
and signature, and every one is refused with a CorruptDataError naming repo, revision and file,
never read.

Each case starts from an empty Hub cache. An outcome is ``refused`` (CorruptDataError naming the
repo, the revision and the file), ``silent`` (rows or a model came back) or ``traceback`` (any other
exception). The test fails on any silent case or traceback, and checks docs/reliability-hub.md
against the campaign's tally (``python tests/test_hub_pulls.py`` regenerates it).
"""

from __future__ import annotations

import io
import random
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from conftest import FIXTURES
from hub_server import LocalHub, Tamper
from reliability_report import markdown_report

from xamm_data import load_dataset
from xamm_data.hub.publish import push_dataset
from xamm_data.store.files import CorruptDataError, parquet_bytes
from xamm_data.store.store import Store
from xamm_data.tables.schema import BENCHMARK_RUNS
from xamm_ingest import ingest_rajaperf

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "docs" / "reliability-hub.md"
SEED, DATA_FLIPS, MODEL_FLIPS, SIG_FLIPS = 0, 30, 20, 5


def flip(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    i = rng.randrange(len(b))
    b[i] ^= 1 << rng.randrange(8)
    return bytes(b)


class Campaign:
    """A published dataset (two machines, two commits), a published default predictor and published
    signatures on a local Hub; ``case`` runs one tampered pull from an empty cache."""

    def __init__(self, hub: LocalHub, tmp: Path, monkeypatch):
        import huggingface_hub.constants as c

        self.hub, self.tmp, self.mp, self.c = hub, tmp, monkeypatch, c
        self.n = 0
        st = Store(tmp / "store")
        ingest_rajaperf(FIXTURES / "rajaperf_sample", store=st, workers=1)
        rows = st.read("benchmark_runs", "example-node")
        st.write(
            rows.with_columns(pl.lit("node-b").alias("machine"), pl.col("time_per_rep_s") * 2),
            "benchmark_runs",
        )
        self.data_repo = f"xamm-pulls/data-{id(self)}"
        self.old_commit = push_dataset("example-node", self.data_repo, store=st, licenses="mit")
        # a newer example-node
        st.write(rows.with_columns(pl.col("time_per_rep_s") * 3), "benchmark_runs")
        push_dataset("example-node", self.data_repo, store=st, licenses="mit")
        self.commit = push_dataset("node-b", self.data_repo, store=st, licenses="mit")
        self.truth = st.read("benchmark_runs", "example-node")
        self.empty = Store(tmp / "empty")

    def fresh_cache(self) -> None:
        self.n += 1
        self.mp.setattr(self.c, "HF_HUB_CACHE", str(self.tmp / f"cache-{self.n}"))

    def pull(self, machine: str = "example-node") -> pl.DataFrame:
        return load_dataset(machine, revision=self.commit, store=self.empty, repo_id=self.data_repo)

    def outcome(self, fn, repo: str, revision: str, file: str | tuple[str, ...]) -> str:
        """``file``: the file the refusal must name (or one of several: a flipped manifest names the
        file whose recorded hash it changed)."""
        files = (file,) if isinstance(file, str) else file
        try:
            fn()
        except CorruptDataError as e:
            named = repo in str(e) and revision in str(e) and any(f in str(e) for f in files)
            return "refused" if named else f"traceback (unnamed: {e})"
        except Exception as e:  # noqa: BLE001 - anything else is what the campaign counts
            return f"traceback ({type(e).__name__}: {str(e)[:200]})"
        finally:
            self.hub.state.tamper = None
        return "silent"

    def card_case(self, body: bytes) -> str:
        """A pull whose card (the record of every file's SHA-256) is served as ``body``."""
        self.fresh_cache()
        self.hub.state.tamper = Tamper(
            self.data_repo, lambda p, d, r, c: body, paths=("README.md",)
        )
        return self.outcome(self.pull, self.data_repo, self.commit, "README.md")

    def data_case(self, fn, *, in_transit: bool = False, machine: str = "example-node") -> str:
        self.fresh_cache()
        path = f"benchmark_runs/machine={machine}/data.parquet"
        self.hub.state.tamper = Tamper(self.data_repo, fn, paths=(path,), in_transit=in_transit)
        return self.outcome(lambda: self.pull(machine), self.data_repo, self.commit, path)


def _reencoded(times: float = 1.0, machine: str | None = None, row_scale: int | None = None):
    def fn(path, data, repo, commit):
        df = pl.read_parquet(io.BytesIO(data))
        if row_scale is not None:
            df = df.with_columns(
                pl.when(pl.int_range(pl.len()) == row_scale)
                .then(pl.col("time_per_rep_s") * 10)
                .otherwise(pl.col("time_per_rep_s"))
                .alias("time_per_rep_s")
            )
        if machine is not None:
            df = df.with_columns(pl.lit(machine).alias("machine"))
        return parquet_bytes(df, BENCHMARK_RUNS)

    return fn


def _older_file(camp: Campaign):
    def fn(path, data, repo, commit):
        return repo.commits[camp.old_commit].files[path]

    return fn


#: cards whose metadata is no record of files: not YAML, nested past YAML's parser, or another
#: type where a mapping goes (the xamm section, its partitions, a table's, a machine's)
CARD_LIES = (
    b"---\nxamm: {partitions: [unclosed\n---\n",
    b"---\nxamm: " + b"[" * 100_000 + b"]" * 100_000 + b"\n---\n",
    b"---\n- a list\n---\n",
    b"---\nxamm: [1, 2]\n---\n",
    b"---\nxamm:\n  partitions: text\n---\n",
    b"---\nxamm:\n  partitions:\n    benchmark_runs: 3\n---\n",
    b"---\nxamm:\n  partitions:\n    benchmark_runs:\n      example-node: [a]\n---\n",
)


def dataset_cases(camp: Campaign, rng: random.Random) -> dict[str, Counter]:
    tally: dict[str, Counter] = {}

    def count(cls, outcome):
        tally.setdefault(cls, Counter())[outcome] += 1

    for _ in range(DATA_FLIPS):
        count(
            "dataset: a bit flipped in the served Parquet",
            camp.data_case(lambda p, d, r, c: flip(d, rng)),
        )
    for _ in range(5):
        count(
            "dataset: a bit flipped in transit",
            camp.data_case(lambda p, d, r, c: flip(d, rng), in_transit=True),
        )
    count(
        "dataset: truncated in transit",
        camp.data_case(lambda p, d, r, c: d[: len(d) // 2], in_transit=True),
    )
    count("dataset: re-encoded with one value x10", camp.data_case(_reencoded(row_scale=3)))
    node_b = (
        camp.hub.state.repos[("dataset", camp.data_repo)]
        .resolve(camp.commit)
        .files["benchmark_runs/machine=node-b/data.parquet"]
    )
    count(
        "dataset: another machine's rows relabelled",
        camp.data_case(lambda p, d, r, c: _reencoded(machine="example-node")(p, node_b, r, c)),
    )
    count("dataset: an older file served at a newer commit", camp.data_case(_older_file(camp)))
    count("dataset: the local cache edited after a good pull", cache_case(camp, rng))
    for body in CARD_LIES:
        count("dataset: a card whose metadata is no record of files", camp.card_case(body))
    return tally


def cache_case(camp: Campaign, rng: random.Random) -> str:
    """A good pull, then the cached blob edited: refused online and offline."""
    camp.fresh_cache()
    assert camp.pull().equals(camp.truth)
    blob = next(
        p for p in Path(camp.c.HF_HUB_CACHE).rglob("blobs/*") if p.read_bytes()[:4] == b"PAR1"
    )
    blob.write_bytes(flip(blob.read_bytes(), rng))
    path = "benchmark_runs/machine=example-node/data.parquet"
    online = camp.outcome(camp.pull, camp.data_repo, camp.commit, path)
    camp.mp.setenv("HF_HUB_OFFLINE", "1")
    try:
        offline = camp.outcome(camp.pull, camp.data_repo, camp.commit, path)
    finally:
        camp.mp.delenv("HF_HUB_OFFLINE")
    return online if online != "refused" else offline


def model_cases(camp: Campaign, rng: random.Random) -> dict[str, Counter]:
    """The embedded default predictor pushed, then served with a bit flipped in one of its files (or
    its cache)."""
    from huggingface_hub import HfApi

    from xamm_models.predictors.kinds import load_model

    repo = f"xamm-pulls/default-{id(camp)}"
    load_model("xamm/default").push_to_hub(repo)
    commit = HfApi(endpoint=camp.hub.endpoint).repo_info(repo).sha
    files = sorted(
        f
        for f in camp.hub.state.repos[("model", repo)].resolve(commit).files
        if f != ".gitattributes"
    )
    tally: dict[str, Counter] = {"model: a bit flipped in one served file": Counter()}
    for _ in range(MODEL_FLIPS):
        camp.fresh_cache()
        target = rng.choice(files)
        camp.hub.state.tamper = Tamper(repo, lambda p, d, r, c: flip(d, rng), paths=(target,))
        tally["model: a bit flipped in one served file"][
            camp.outcome(lambda: load_model(repo, revision=commit), repo, commit, tuple(files))
        ] += 1
    camp.fresh_cache()
    load_model(repo, revision=commit)  # a good pull fills the cache
    blob = max(Path(camp.c.HF_HUB_CACHE).rglob("blobs/*"), key=lambda p: p.stat().st_size)
    blob.write_bytes(flip(blob.read_bytes(), rng))
    tally["model: the local cache edited after a good pull"] = Counter(
        [camp.outcome(lambda: load_model(repo, revision=commit), repo, commit, tuple(files))]
    )
    return tally


def signature_cases(camp: Campaign, rng: random.Random, registry_dir: Path) -> dict[str, Counter]:
    from xamm_models.machines.hub import pull_signatures, push_signatures
    from xamm_models.machines.signatures import SignatureRegistry

    # read only: the published ones
    reg = SignatureRegistry(REPO / "xamm_data" / "hub" / "snapshot" / "signatures")
    repo = f"xamm-pulls/amms-{id(camp)}"
    commit = push_signatures(repo, registry=reg)
    tally = Counter()
    for i in range(SIG_FLIPS):
        camp.fresh_cache()
        camp.hub.state.tamper = Tamper(repo, lambda p, d, r, c: flip(d, rng), suffix=".json")
        tally[
            camp.outcome(
                lambda: pull_signatures(
                    repo, revision=commit, registry=SignatureRegistry(registry_dir / f"dst-{i}")
                ),
                repo,
                commit,
                "signatures/",
            )
        ] += 1
    cards = Counter()
    for i, body in enumerate(CARD_LIES):
        camp.fresh_cache()
        camp.hub.state.tamper = Tamper(repo, lambda p, d, r, c, b=body: b, paths=("README.md",))
        dst = SignatureRegistry(registry_dir / f"card-{i}")
        cards[
            camp.outcome(
                lambda: pull_signatures(repo, revision=commit, registry=dst),
                repo,
                commit,
                # a card recording no files of its own: each file is refused as unrecorded
                ("README.md", "signatures/"),
            )
        ] += 1
    return {
        "signatures: a bit flipped in a served signature": tally,
        "signatures: a card whose metadata is no record of files": cards,
    }


def campaign(hub: LocalHub, tmp: Path, monkeypatch) -> list[dict]:
    rng = random.Random(SEED)
    camp = Campaign(hub, tmp, monkeypatch)
    tally = (
        dataset_cases(camp, rng)
        | model_cases(camp, rng)
        | signature_cases(camp, rng, tmp / "signatures")
    )
    odd = {cls: [o for o in t if o not in ("refused", "silent")] for cls, t in tally.items()}
    assert not any(odd.values()), odd  # a traceback, with its message
    return [
        {
            "tampered form": cls,
            "cases": sum(t.values()),
            "silent results": t["silent"],
            "tracebacks": 0,
            "refused, naming repo, revision and file": t["refused"],
        }
        for cls, t in tally.items()
    ]


def render(rows: list[dict]) -> str:
    return markdown_report(
        "Reliability: tampered pulls from the Hub",
        "Generated by `python tests/test_hub_pulls.py` from the seeded "
        "campaign that "
        "`tests/test_hub_pulls.py::test_every_tampered_pull_is_refused_by_name` "
        "runs against the local Hub server "
        "(`tests/hub_server.py`), each case from an empty cache. A "
        "served file is altered and its headers describe "
        "the altered bytes (a consistent liar) unless the corruption is "
        "in transit. A case is refused when a "
        "`CorruptDataError` names the repo, the revision and the file; a "
        "silent result or a traceback fails the "
        "test, so both columns are 0 whenever the suite is green. How "
        "pulls are checked: "
        "`xamm_data.hub.files`.",
        rows,
    )


@pytest.fixture
def camp(local_hub, tmp_path, monkeypatch) -> Campaign:
    return Campaign(local_hub, tmp_path, monkeypatch)


def test_a_pull_is_read_only_when_it_matches_the_card_and_a_cache_edit_fails_the_hubs_own_hash(
    camp, monkeypatch
):
    camp.fresh_cache()
    assert camp.pull().equals(camp.truth)
    # a consistent liar: only the card can tell
    assert camp.data_case(_reencoded(row_scale=0)) == "refused"
    camp.fresh_cache()
    camp.pull()
    blob = next(
        p for p in Path(camp.c.HF_HUB_CACHE).rglob("blobs/*") if p.read_bytes()[:4] == b"PAR1"
    )
    blob.write_bytes(flip(blob.read_bytes(), random.Random(1)))
    for offline in ("", "1"):  # a cache hit, online and offline
        monkeypatch.setenv("HF_HUB_OFFLINE", offline)
        with pytest.raises(
            CorruptDataError,
            match=rf"{camp.data_repo}@{camp.commit} "
            r".*machine=example-node/data.parquet: "
            "its bytes do not match the SHA-256 the Hub reported",
        ):
            camp.pull()


def test_a_pushed_model_loads_as_saved_and_one_flipped_bit_never_loads(camp, tmp_path):
    from huggingface_hub import HfApi

    from xamm_data.hub.files import MANIFEST
    from xamm_models.predictors.kinds import load_model

    model = load_model("xamm/default")
    model.push_to_hub("xamm-pulls/model")
    api = HfApi(endpoint=camp.hub.endpoint)
    commit = api.repo_info("xamm-pulls/model").sha
    files = camp.hub.state.repos[("model", "xamm-pulls/model")].resolve(commit).files
    assert MANIFEST in files and "stacked_predictor.json" in files
    camp.fresh_cache()
    back = load_model("xamm-pulls/model", revision=commit)
    assert back.signatures == model.signatures and back.choice == model.choice
    assert back.samples.equals(model.samples)
    camp.fresh_cache()
    camp.hub.state.tamper = Tamper(
        "xamm-pulls/model",
        lambda p, d, r, c: flip(d, random.Random(2)),
        paths=("stacked_predictor.json",),
    )
    with pytest.raises(
        CorruptDataError,
        match=rf"xamm-pulls/model@{commit} .*stacked_predictor.json: its bytes " r"do not",
    ):
        load_model("xamm-pulls/model", revision=commit)
    camp.hub.state.tamper = None
    folder = tmp_path / "no-manifest"
    model.save_pretrained(folder)
    (folder / MANIFEST).unlink()
    api.create_repo("xamm-pulls/unverifiable", exist_ok=True)
    bare = api.upload_folder(repo_id="xamm-pulls/unverifiable", folder_path=folder).oid
    with pytest.raises(
        CorruptDataError, match=f"xamm-pulls/unverifiable@{bare} .*has no {MANIFEST}"
    ):
        load_model("xamm-pulls/unverifiable", revision=bare)


def test_every_tampered_pull_is_refused_by_name(local_hub, tmp_path, monkeypatch):
    rows = campaign(local_hub, tmp_path, monkeypatch)
    assert not [r for r in rows if r["silent results"]], rows
    assert REPORT.read_text() == render(rows), (
        "docs/reliability-hub.md is stale: run python tests/test_hub_pulls.py"
    )


if __name__ == "__main__":  # regenerate docs/reliability-hub.md
    import tempfile

    # conftest's, by hand
    with tempfile.TemporaryDirectory() as d, LocalHub() as hub, pytest.MonkeyPatch.context() as mp:
        import huggingface_hub.constants as hf_constants

        for k, v in {
            "HF_ENDPOINT": hub.endpoint,
            "HF_TOKEN": "hf_xamm_test_token",
            "HF_HUB_DISABLE_XET": "1",
            "XAMM_HOME": f"{d}/xamm_home",
            "HF_HOME": f"{d}/hf_home",
        }.items():
            mp.setenv(k, v)
        mp.delenv("HF_HUB_OFFLINE", raising=False)
        mp.setattr(hf_constants, "ENDPOINT", hub.endpoint)
        mp.setattr(
            hf_constants,
            "HUGGINGFACE_CO_URL_TEMPLATE",
            hub.endpoint + "/{repo_id}/resolve/{revision}/{filename}",
        )
        mp.setattr(hf_constants, "HF_HUB_OFFLINE", False)
        REPORT.write_text(render(campaign(hub, Path(d), mp)))
    print(REPORT.read_text())
