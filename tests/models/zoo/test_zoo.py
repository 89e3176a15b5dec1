"""The embedded snapshot and ``xamm zoo build``: offline answers from the package, checked against
the public data.

The snapshot's numbers are checked against an independent ingest of ``../shared/data``; its default
predictor against a fresh fit on that data; ``xamm zoo build`` is re-run and must give the same data
files as the committed snapshot, byte for byte, and the same fitted files up to the rounding of the
CPU they were fitted on (tolerances stated in ``tests/floats.py``).
"""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from conftest import skip_unless_installed
from floats import (
    ELEMENTWISE_RTOL,
    FITTED_RTOL,
    assert_frames_close,
    assert_json_close,
    assert_text_close,
)
from polars.testing import assert_frame_equal

from xamm_data.hashing import file_sha256
from xamm_data.hub import snapshot
from xamm_data.hub.datasets import load_dataset
from xamm_data.store.files import CorruptDataError, footer_metadata
from xamm_data.store.store import Store

skip_unless_installed("xgboost", "the models extra is not installed")

from xamm_models.benchmark import dataset as xplat  # noqa: E402

MANIFEST = snapshot.manifest()
needs_snapshot = pytest.mark.skipif(
    MANIFEST is None, reason="this checkout carries no embedded snapshot"
)


@pytest.fixture(scope="module")
def public_store(xplat_store):
    return xplat_store


@pytest.fixture
def offline(monkeypatch):
    """No Hub at all: offline mode, an endpoint nothing listens on, and any download attempt is a
    failure."""
    import huggingface_hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")

    # binds hf_hub_download at import: imported (and patched) here,
    from xamm_models.machines import hub as signature_hub
    # so a first import inside this test cannot keep the refusing stand-in for the tests after it

    def refuse(*a, **k):
        raise AssertionError("the Hub was asked")

    for name in ("snapshot_download", "hf_hub_download"):
        monkeypatch.setattr(huggingface_hub, name, refuse)
    monkeypatch.setattr(signature_hub, "hf_hub_download", refuse)


@needs_snapshot
def test_the_manifest_lists_sources_licences_checksums_and_fits_the_size_budget():
    assert {s.license for s in MANIFEST.sources} == {"MIT", "BSD-3-Clause"}
    assert {s.name for s in MANIFEST.sources} == {s.name for s in xplat.SOURCES}
    total = 0
    for f in MANIFEST.files:
        p = snapshot.ROOT / f.path
        assert file_sha256(p) == f.sha256, f.path
        total += p.stat().st_size
    # the budget: the wheel grows by at most this (it compresses further)
    assert total <= 10 * 2**20
    # about 0.5 MB: the runs, the signatures (those from specifications too) and the default with
    # its benchmark samples
    assert 0.47e6 < total < 0.53e6
    # one label-free model: no learned model saved, a half-width per device scenario
    info = json.loads((snapshot.ROOT / "models" / "default" / "stacked_predictor.json").read_text())
    assert info["format"] == {"kind": "stacked", "version": 3}
    assert set(info["choice"]["model"].values()) == {"roofline"}
    assert set(info["choice"]["factor"]) == {
        "CPU->CPU",
        "CPU->GPU",
        "GPU->CPU",
        "GPU->GPU",
        "all",
    }
    assert not list((snapshot.ROOT / "models" / "default").glob("*.ubj"))
    assert set(snapshot.machines()) == {
        "quartz",
        "lassen",
        "h100-node",
        "mi300a-spx",
        "dane",
        "ruby",
        "mi300a-cpx",
        "vm",
    } and MANIFEST.models == ["default"]


@needs_snapshot
def test_load_dataset_offline_with_nothing_local_is_the_public_data(
    offline, public_store, tmp_path
):
    for m in ("quartz", "lassen", "h100-node", "mi300a-spx", "dane"):
        got = load_dataset(m, store=tmp_path / "empty-store")
        # the same rows as an independent ingest
        assert got.equals(public_store.read("benchmark_runs", m)), m
    assert (
        load_dataset("Quartz", store=tmp_path / "empty-store", lazy=True)
        .collect()
        .equals(public_store.read("benchmark_runs", "quartz"))
    )  # aliases and lazy frames too


@needs_snapshot
def test_a_changed_snapshot_byte_is_refused(tmp_path):
    import shutil

    root = tmp_path / "snap"
    shutil.copytree(snapshot.ROOT, root)
    f = next(x for x in MANIFEST.files if x.machine == "quartz" and x.kind == "benchmark_runs")
    raw = bytearray((root / f.path).read_bytes())
    raw[len(raw) // 2] ^= 0x01
    (root / f.path).write_bytes(bytes(raw))
    with pytest.raises(CorruptDataError, match="do not match the snapshot manifest"):
        snapshot.read("benchmark_runs", "quartz", root)


@needs_snapshot
def test_signatures_and_the_default_predictor_answer_offline(offline, public_store):
    from xamm_data.machines import registry as machines
    from xamm_models.errors import WrongKindError
    from xamm_models.predictors.default.model import StackedPredictor
    from xamm_models.predictors.kinds import load_model
    from xamm_models.predictors.paper.predictor import XammPredictor

    sig = machines.get("h100-node").signature(device="gpu")
    assert sig.target == "h100-node:gpu" and sig.data_version == MANIFEST.store_version
    ds = xplat.XplatDataset.from_store(public_store)
    rows = ds.pairs.head(300)
    with pytest.raises(WrongKindError, match="holds a 'stacked' predictor"):
        XammPredictor.from_pretrained("xamm/default")
    for m in (StackedPredictor.from_pretrained("xamm/default"), load_model("xamm/default")):
        assert type(m) is StackedPredictor and m.training["dataset"] == f"{xplat.NAME}@{ds.version}"
    # the same data and seed: the same model, up to the rounding of the CPU it was fitted on
    fresh = StackedPredictor(seed=0).fit(ds.pairs, ds.samples)
    got, want = m.predict_pairs(rows), fresh.predict_pairs(rows)
    assert got["regime"].to_list() == want["regime"].to_list()
    assert_frames_close(got.select("relR"), want.select("relR"), rtol=ELEMENTWISE_RTOL)
    assert_frames_close(got, want, rtol=FITTED_RTOL)
    y = rows["relR"].to_numpy()
    # sane on its own data
    assert np.median(np.abs(np.log10(m.predict_pairs(rows)["relR"].to_numpy() / y))) < 1.0


#: fields that record when a file was written, not what it holds: never compared (the snapshot is
#: rebuilt on a later day than the one it shipped on)
WALL_CLOCK = frozenset({"created"})


def without_clock(doc):
    """``doc`` without its :data:`WALL_CLOCK` fields, at any depth."""
    if isinstance(doc, dict):
        return {k: without_clock(v) for k, v in doc.items() if k not in WALL_CLOCK}
    if isinstance(doc, list):
        return [without_clock(v) for v in doc]
    return doc


def test_a_rebuilt_snapshot_is_compared_without_the_day_it_was_built():
    shipped = next(f for f in MANIFEST.files if ".physics@" in f.path)
    doc = json.loads((snapshot.ROOT / shipped.path).read_text())
    later = {**doc, "created": "2999-12-31"}
    assert later != doc and without_clock(later) == without_clock(doc)
    assert_json_close(without_clock(later), without_clock(doc), FITTED_RTOL, shipped.path)
    with pytest.raises(AssertionError):  # anything else that differs still fails
        assert_json_close(without_clock({**later, "machine": "x"}), without_clock(doc),
                          FITTED_RTOL, shipped.path)  # fmt: skip


def _writer(path) -> str:
    """The library and version a Parquet file names as its writer (``created_by``)."""
    return pq.ParquetFile(path).metadata.created_by


def _assert_same_snapshot(rebuilt, root) -> None:
    """Data files byte for byte (parsed from text: the same on every CPU; by value and metadata
    where another polars release wrote them, as a new install may); fitted files (models,
    signatures) by content, floats within ``FITTED_RTOL``, printed figures to their last digit."""
    assert {f.path for f in rebuilt.files} == {f.path for f in MANIFEST.files}
    shipped = snapshot.ROOT
    # the attention signatures (cpu@1.json) depend on the epochs the test trains for: left out
    for f in (f for f in MANIFEST.files if f.kind != "signature" or ".physics@" in f.path):
        got, want = root / f.path, shipped / f.path
        if f.kind == "benchmark_runs" and _writer(got) == _writer(want):
            assert file_sha256(got) == f.sha256, f.path
        elif f.kind == "benchmark_runs":  # another polars release writes other bytes for them
            assert_frame_equal(pl.read_parquet(got), pl.read_parquet(want), check_exact=True)
            assert footer_metadata(got) == footer_metadata(want), f.path
        elif got.name == "xamm-files.json":  # checksums of the files beside it, whatever bytes
            listed = json.loads(got.read_text())["files"]
            assert listed.keys() == json.loads(want.read_text())["files"].keys(), f.path
            assert all(file_sha256(got.parent / n) == h for n, h in listed.items()), f.path
        elif got.suffix == ".json":
            g, w = json.loads(got.read_text()), json.loads(want.read_text())
            assert_json_close(without_clock(g), without_clock(w), FITTED_RTOL, f.path)
        elif got.suffix == ".parquet":  # the default's benchmark samples: data, by value
            assert_frame_equal(pl.read_parquet(got), pl.read_parquet(want), rel_tol=FITTED_RTOL)
        else:
            assert_text_close(got.read_text(), want.read_text(), f.path)


@pytest.mark.data
def test_zoo_build_refuses_the_figures_of_another_data_version(shared_data, tmp_path, capsys):
    """The cards would cite figures of other pairs than the models were trained on."""
    from xamm_data.cli.commands import main as xamm

    other = tmp_path / "results.json"
    other.write_text(json.dumps({"dataset": {"version": "0adfe2b57619d3b7"}, "results": {}}))
    argv = ["zoo", "build", "--data-dir", str(shared_data), "--out", str(tmp_path / "zoo"),
            "--no-vae-dnn", "--eval-results", str(other)]  # fmt: skip
    assert xamm(argv) == 1
    err = capsys.readouterr().err
    assert "xplat-rajaperf@0adfe2b57619d3b7" in err and "Traceback" not in err
    assert not (tmp_path / "zoo" / "zoo.json").exists()


@pytest.fixture(scope="module")
def built_zoo(shared_data, tmp_path_factory):
    """``xamm zoo build`` at 3 epochs without the VAE-DNN, its cards citing the committed
    evaluation, a snapshot written beside: (the zoo, the snapshot, the artefacts it printed). One
    build for the module: the build test checks it, the push test publishes it."""
    from conftest import REPO

    from xamm_data.cli.commands import main as xamm

    root = tmp_path_factory.mktemp("built-zoo")
    out, snap, printed = root / "zoo", root / "snap", io.StringIO()
    argv = ["zoo", "build", "--data-dir", str(shared_data), "--out", str(out), "--epochs", "3",
            "--no-vae-dnn", "--eval-results", str(REPO / "docs" / "eval" / "results.json"),
            "--snapshot", str(snap), "--json"]  # fmt: skip
    with contextlib.redirect_stdout(printed):
        assert xamm(argv) == 0
    return out, snap, json.loads(printed.getvalue())


@pytest.mark.slow
@needs_snapshot
def test_zoo_build_regenerates_the_snapshot_on_any_cpu(built_zoo):
    from xamm_models.zoo.build import eval_metrics

    out, snap, arts = built_zoo
    assert eval_metrics(None, "stacked/default") == {}  # a build given no evaluation cites none
    assert {a["kind"] for a in arts} == {"dataset", "signature", "model"}
    assert all(a["data_version"] == MANIFEST.store_version for a in arts)
    _assert_same_snapshot(snapshot.manifest(snap), snap)
    from huggingface_hub import ModelCard

    card = ModelCard.load(out / "models" / "default" / "README.md").data.to_dict()
    assert card["pipeline_tag"] == "tabular-regression" and card["datasets"] == ["xplat-rajaperf"]
    assert card["license"] == "bsd-3-clause" and card["library_name"] == "xamm"
    phys = pl.DataFrame(arts).filter(
        pl.col("kind") == "signature", pl.col("name").str.contains("physics")
    )
    # every target with benchmark runs, dane:cpu and vm:cpu included, and the four registry
    # targets with peaks and no runs, from their specifications
    measured = phys.filter(~pl.col("name").str.contains("from specifications"))
    assert measured.height == 11 and phys.height == 15


@pytest.mark.slow
def test_zoo_push_publishes_everything_and_a_fresh_cache_pulls_it_by_revision(
    built_zoo, local_hub, tmp_path, monkeypatch
):
    from huggingface_hub import ModelCard, hf_hub_download

    from xamm_models.machines.hub import pull_signatures
    from xamm_models.machines.signatures import SignatureRegistry
    from xamm_models.predictors.kinds import load_model
    from xamm_models.zoo.build import push_zoo

    zoo = built_zoo[0]
    done = push_zoo(zoo, "xamm-test", token="hf_xamm_test_token", progress=lambda *_: None)
    assert set(done) == {
        "xamm-test/xamm-datasets",
        "xamm-test/xamm-amms",
        "xamm-test/xamm-default",
        *(f"xamm-test/xamm-baseline-{m}" for m in ("pair-median", "roofline", "knn")),
        "xamm-test/xamm-xamm",
        "xamm-test/xamm-adapted-quartz-topdown",
    }
    assert json.loads((zoo / "published.json").read_text()) == done
    monkeypatch.setenv("HF_HOME", str(tmp_path / "fresh"))  # nothing cached
    local = load_model(str(zoo / "models" / "default"))
    pulled = load_model("xamm-test/xamm-default", revision=done["xamm-test/xamm-default"])
    rows = xplat.XplatDataset.from_store(zoo / "store").pairs.head(200)
    assert pulled.predict_pairs(rows).equals(local.predict_pairs(rows))
    knn = load_model("xamm-test/xamm-baseline-knn", revision=done["xamm-test/xamm-baseline-knn"])
    assert knn.predict_pairs(rows).equals(
        load_model(str(zoo / "models" / "baseline-knn")).predict_pairs(rows)
    )
    # the few-shot adapted model, its frozen base inside
    repo = "xamm-test/xamm-adapted-quartz-topdown"
    adapted = load_model(repo, revision=done[repo])
    assert (
        type(adapted).__name__ == "AdaptedPredictor"
        and adapted.config.platform == "quartz-topdown:cpu"
    )
    own = json.loads((zoo / "models" / "adapted-quartz-topdown" / "adapted.json").read_text())
    assert adapted.config.model_dump() == own["config"]
    profiles = pl.DataFrame({c: [0.1, 0.5] for c in adapted.config.features}).with_columns(
        pl.lit("Stream_TRIAD").alias("app")
    )
    assert adapted.predict(profiles, None, ["lassen:gpu"]).equals(
        load_model(str(zoo / "models" / "adapted-quartz-topdown")).predict(
            profiles, None, ["lassen:gpu"]
        )
    )
    acard = ModelCard.load(hf_hub_download(repo, "README.md", revision=done[repo])).data
    assert (
        acard.pipeline_tag == "tabular-regression"
        and acard.license == "bsd-3-clause"
        and acard.datasets == ["xplat-rajaperf"]
    )
    store = Store(zoo / "store")
    for m in store.machines("benchmark_runs"):
        got = load_dataset(
            m,
            repo_id="xamm-test/xamm-datasets",
            revision=done["xamm-test/xamm-datasets"],
            store=tmp_path / "empty",
        )
        assert got.equals(store.read("benchmark_runs", m)), m
    reg = SignatureRegistry(tmp_path / "pulled-sigs")
    sigs = pull_signatures(
        "xamm-test/xamm-amms", revision=done["xamm-test/xamm-amms"], registry=reg
    )
    assert {s.ref for s in sigs} == {s.ref for s in SignatureRegistry(zoo / "signatures").all()}

    card = ModelCard.load(
        hf_hub_download(
            "xamm-test/xamm-default", "README.md", revision=done["xamm-test/xamm-default"]
        )
    )
    assert card.data.pipeline_tag == "tabular-regression" and card.data.library_name == "xamm"
    assert card.data.datasets == ["xplat-rajaperf"] and card.data.license == "bsd-3-clause"


@pytest.mark.slow
@needs_snapshot
def test_the_wheel_carries_the_snapshot_within_the_budget(tmp_path):
    import subprocess
    import sys
    import zipfile

    from conftest import REPO

    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            str(REPO),
            "-w",
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("xamm-*.whl")
    inside = [i for i in zipfile.ZipFile(wheel).infolist() if "/snapshot/" in i.filename]
    assert {i.filename.split("xamm_data/hub/snapshot/", 1)[1] for i in inside} == {
        f.path for f in MANIFEST.files
    } | {"MANIFEST.json"}
    # wheel growth at most 10 MB
    assert sum(i.compress_size for i in inside) <= 10 * 2**20


@pytest.mark.parametrize("scheme", ["kernel-group", "machine"])
def test_the_baseline_artefacts_answer_as_the_eval_scores_them(public_store, tmp_path, scheme):
    """Each saved baseline, fitted on a fold's training data, predicts that fold's test pairs
    exactly as the eval's baseline function does (after save and load); an unknown target is
    refused; the ranking is by relR."""
    from xamm_models.benchmark import baselines as B
    from xamm_models.features import FEATURES
    from xamm_models.predictors.baseline import METHODS, BaselinePredictor
    from xamm_models.predictors.kinds import load_model
    from xamm_models.predictors.paper.predictor import UnknownTargetError

    ds = xplat.XplatDataset.from_store(public_store)
    fold = ds.get_idx_split(scheme)[0]
    train, test = fold.frames(ds.pairs)
    samples = ds.samples.filter(~pl.col("app").is_in(list(fold.machine_exclude)))
    funcs = {"pair-median": B.pair_median, "roofline": B.roofline, "knn": B.knn}
    for m in METHODS:
        BaselinePredictor(method=m).fit(train, samples).save_pretrained(tmp_path / m)
        got = load_model(str(tmp_path / m))
        assert type(got) is BaselinePredictor and got.config.method == m
        want = funcs[m](train, test, samples=samples, features=list(FEATURES))
        np.testing.assert_array_equal(got.predict_pairs(test)["relR"].to_numpy(), want)
    with pytest.raises(UnknownTargetError, match="lasen"):
        got.predict_pairs(test.head(1).with_columns(pl.lit("lasen:gpu").alias("target")))
    src = test.get_column("source")[0]
    targets = sorted(set(test.filter(pl.col("source") == src).get_column("target")))
    ranked = got.rank_targets(test.filter(pl.col("source") == src).head(2), src, targets)
    assert ranked.filter(pl.col("row") == 0).get_column("relR").is_sorted()


def test_xamm_predict_takes_a_baseline(public_store, tmp_path, capsys):
    from xamm_data.cli.commands import main as xamm
    from xamm_models.predictors.baseline import BaselinePredictor

    ds = xplat.XplatDataset.from_store(public_store)
    BaselinePredictor(method="roofline").fit(ds.pairs, ds.samples).save_pretrained(
        tmp_path / "roofline"
    )
    assert (
        xamm(
            [
                "predict",
                str(public_store.root),
                "--source",
                "quartz:cpu",
                "--target",
                "lassen:gpu",
                "--target",
                "h100-node:gpu",
                "--model",
                str(tmp_path / "roofline"),
                "--rank",
                "--json",
            ]
        )
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert {r["target"] for r in rows} == {"lassen:gpu", "h100-node:gpu"} and {
        r["rank"] for r in rows
    } == {1, 2}
    assert all(r["p_fastest"] is None and r["relR"] > 0 for r in rows)


@needs_snapshot
def test_the_public_benchmark_loads_in_a_fresh_home_and_beside_the_users_own_runs(
    tmp_path, monkeypatch
):
    """``load_dataset("xplat-rajaperf")`` is the same public benchmark in a fresh home and in a
    store that holds only the user's own runs (its machines come from the snapshot); nothing at
    all is a named error, never zero rows."""
    from xamm_data.hub import datasets

    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "home"))
    fresh = load_dataset("xplat-rajaperf")
    assert f"{xplat.NAME}@{xplat.version(fresh)}" == MANIFEST.dataset
    own = Store(tmp_path / "own")
    mine = snapshot.read("benchmark_runs", "quartz").with_columns(machine=pl.lit("newbox"))
    own.write(mine, "benchmark_runs")
    assert load_dataset("xplat-rajaperf", store=own).equals(fresh)
    monkeypatch.setattr(datasets.snapshot, "machines", lambda kind="benchmark_runs": [])
    with pytest.raises(FileNotFoundError, match="neither .* nor the embedded snapshot"):
        load_dataset("xplat-rajaperf", store=tmp_path / "empty")


def test_zoo_list_describes_the_default_as_what_it_answers_with(capsys):
    """The default answers with the plain roofline (no point prediction fitted to labels), as the
    README says; ``zoo list`` says the same."""
    from xamm_data.cli.commands import main as xamm

    assert xamm(["zoo", "list", "--json"]) == 0
    kinds = {k["kind"]: k["what"] for k in json.loads(capsys.readouterr().out)}
    assert "plain roofline" in kinds["stacked"] and "residual" not in kinds["stacked"]
