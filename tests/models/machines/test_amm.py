"""Embedders, Algorithm 1, benchmark samples, the signature registry and its Hub publishing."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

torch = pytest.importorskip("torch", reason="the models extra (torch) is not installed")

from xamm_data.hashing import frame_sha256
from xamm_data.machines import registry as machines  # noqa: E402
from xamm_data.store.store import Store  # noqa: E402
from xamm_ingest import ingest_rajaperf  # noqa: E402
from xamm_models.embedders import create_embedder, list_embedders, load_embedder  # noqa: E402
from xamm_models.errors import ImmutableSignatureError
from xamm_models.machines.attention import algorithm1, build_signatures  # noqa: E402
from xamm_models.machines.samples import align_kernels, benchmark_samples  # noqa: E402
from xamm_models.machines.signatures import Signature, SignatureRegistry  # noqa: E402

EPOCHS = 60


# -- Algorithm 1 against hand-computed values ------------------------------------------------
E = np.array([[1.0, -2.0], [3.0, 0.0]])


def test_algorithm1_mean_hand_computed():
    # mean = [2, -1]; adjust -> [2, 0.01]; log1p -> [ln 3, ln 1.01]; divide by max
    assert algorithm1(E, "mean").tolist() == pytest.approx([1.0, math.log(1.01) / math.log(3)])
    assert algorithm1(E, "mean", "subtract").tolist() == pytest.approx(
        [0.0, math.log(1.01) - math.log(3)]
    )
    assert algorithm1(E, "mean", "none").tolist() == pytest.approx([math.log(3), math.log(1.01)])


def test_algorithm1_l2_and_variance_hand_computed():
    # l2 per feature: [sqrt(1 + 9), sqrt(4 + 0)] = [sqrt 10, 2]
    l2 = [math.log1p(math.sqrt(10)), math.log1p(2)]
    assert algorithm1(E, "l2").tolist() == pytest.approx([1.0, l2[1] / l2[0]])
    # variance per feature: [((1-2)^2 + (3-2)^2)/2, ((-2+1)^2 + (0+1)^2)/2] = [1, 1] -> log1p -> ln
    # 2 each
    assert algorithm1(E, "variance", "none").tolist() == pytest.approx([math.log(2), math.log(2)])
    with pytest.raises(ValueError, match="unknown aggregation"):
        algorithm1(E, "median")
    with pytest.raises(ValueError, match="unknown normalisation"):
        algorithm1(E, "mean", "softmax")


# -- real benchmark data -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bench_store(rajaperf_sets, tmp_path_factory):
    st = Store(tmp_path_factory.mktemp("amm") / "store")
    ingest_rajaperf(rajaperf_sets["thicket"], store=st, workers=2)
    ingest_rajaperf(
        [rajaperf_sets["h100_tier1"], rajaperf_sets["h100_tier2"]],
        machine="h100-node",
        store=st,
        workers=2,
    )
    ingest_rajaperf(
        [rajaperf_sets["mi300a_tier1"], rajaperf_sets["mi300a_tier2"]],
        machine="mi300a-spx",
        store=st,
        workers=2,
    )
    return st


@pytest.fixture(scope="module")
def runs(bench_store):
    return bench_store.scan("benchmark_runs").collect()


def test_kernel_alignment_rules(runs):
    inter, union = align_kernels(runs, "intersection"), align_kernels(runs, "union")
    targets = runs.select(
        pl.concat_str("machine", pl.lit(":"), "device").alias("t"), "kernel"
    ).unique()
    for t, part in targets.group_by("t"):
        assert set(inter) <= set(part.get_column("kernel")), t
    assert set(inter) < set(union) and "Basic_DAXPY" in union and "Basic_DAXPY" not in inter
    assert len(inter) >= 5
    s = benchmark_samples(runs, inter)
    assert set(s.get_column("target")) == {
        "quartz:cpu",
        "lassen:gpu",
        "h100-node:cpu",
        "h100-node:gpu",
        "mi300a-spx:cpu",
        "mi300a-spx:gpu",
    }
    # the H100 sweep: size index 0 holds each kernel's smallest problem size
    h = runs.filter(
        pl.col("machine") == "h100-node",
        pl.col("kernel") == inter[0],
        pl.col("variant") == "Base_Seq",
    )
    smallest = h.filter(pl.col("problem_size") == h.get_column("problem_size").min())
    t = (
        smallest.get_column("time_per_rep_s").min()
        / smallest.get_column("iterations_per_rep").min()
    )
    row = s.filter(
        pl.col("target") == "h100-node:cpu",
        pl.col("size_index") == 0,
        pl.col("variant") == "Base_Seq",
    )
    assert row.get_column(inter[0]).item() == pytest.approx(math.log10(t))
    assert (
        frame_sha256(s) == frame_sha256(benchmark_samples(runs, inter)) != frame_sha256(s.head(5))
    )


def test_embedders_round_trip_and_determinism(runs, tmp_path):
    ks = align_kernels(runs)
    s = benchmark_samples(runs, ks)
    y = np.arange(s.height) % 3
    assert list_embedders() == ["ae", "attention", "mlp", "vae"]
    for name in list_embedders():
        e = create_embedder(name, n_features=len(ks), feature_names=ks, embed_dim=6, seed=3)
        e.fit(s, y if name == "mlp" else None, epochs=EPOCHS)
        out = e.transform(s)
        assert out.shape == (s.height, 6) and np.isfinite(out).all()
        e.save_pretrained(tmp_path / name)
        assert (tmp_path / name / "config.json").is_file() and (
            tmp_path / name / "model.safetensors"
        ).is_file()
        back = load_embedder(str(tmp_path / name))
        assert type(back) is type(e) and back.feature_names == ks
        assert np.array_equal(back.transform(s), out)
        again = create_embedder(name, n_features=len(ks), feature_names=ks, embed_dim=6, seed=3)
        assert np.array_equal(
            again.fit(s, y if name == "mlp" else None, epochs=EPOCHS).transform(s), out
        )
    sup = create_embedder("attention", n_features=len(ks), feature_names=ks, seed=1).fit(
        s, y, epochs=EPOCHS
    )
    sup.save_pretrained(tmp_path / "sup")
    assert np.array_equal(load_embedder(str(tmp_path / "sup")).transform(s), sup.transform(s))
    masks = sup.masks(s)
    assert masks.shape == (3, s.height, len(ks)) and np.allclose(masks.sum(-1), 1.0, atol=1e-5)
    assert set(sup.feature_importance(s)) == set(ks)


def test_embedder_errors(runs):
    with pytest.raises(KeyError, match="Did you mean 'attention'"):
        create_embedder("atention", n_features=3)
    ks = align_kernels(runs)
    e = create_embedder("attention", n_features=len(ks), feature_names=ks)
    with pytest.raises(RuntimeError, match="not fitted"):
        e.transform(np.zeros((2, len(ks))))
    with pytest.raises(ValueError, match="lacks the embedder's features"):
        e.fit(pl.DataFrame({"x": [1.0, 2.0]}))
    with pytest.raises(ValueError, match="supervised"):
        create_embedder("mlp", n_features=len(ks), feature_names=ks).fit(
            benchmark_samples(runs, ks), epochs=1
        )


def test_signatures_for_every_covered_machine(bench_store, tmp_path, monkeypatch):
    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "home"))
    reg = SignatureRegistry.default()
    sigs = build_signatures(store=bench_store, registry=reg, epochs=EPOCHS)
    assert sorted(s.ref for s in sigs) == [
        "h100-node:cpu@1",
        "h100-node:gpu@1",
        "lassen:gpu@1",
        "mi300a-spx:cpu@1",
        "mi300a-spx:gpu@1",
        "quartz:cpu@1",
    ]
    q = machines.get("quartz").signature()
    assert q.ref == "quartz:cpu@1" and len(q.vector) == 8 and max(q.vector) == pytest.approx(1.0)
    assert (
        q.aggregation == "l2"
        and q.coverage == 1.0
        and q.n_samples == 5
        and len(q.data_sha256) == 64
    )
    with pytest.raises(KeyError, match="say h100-node:cpu or h100-node:gpu"):
        machines.get("h100-node").signature()
    # same inputs: same versions; another option: new versions, old ones unchanged
    assert [s.ref for s in build_signatures(store=bench_store, registry=reg, epochs=EPOCHS)] == [
        s.ref for s in sigs
    ]
    var = build_signatures(
        store=bench_store, registry=reg, epochs=EPOCHS, aggregation="variance", machines=["quartz"]
    )
    assert [s.ref for s in var] == ["quartz:cpu@2"]
    assert machines.get("quartz").signature(version=1) == q
    frame = reg.frame()
    assert (
        frame.filter(pl.col("target") == "ruby:cpu").get_column("latest").item()
        == "no signature yet"
    )
    with pytest.raises(FileNotFoundError, match="no benchmark_runs for ruby"):
        build_signatures(store=bench_store, registry=reg, machines=["ruby"], epochs=1)


def test_registry_immutability(tmp_path):
    reg = SignatureRegistry(tmp_path / "reg")
    base = dict(
        machine="m",
        device="cpu",
        vector=[0.5, 1.0],
        aggregation="l2",
        normalise="divide",
        embedder_id="e",
        embedder_revision="r1",
        data_sha256="a" * 64,
        kernels=["Basic_A", "Basic_B"],
        coverage=1.0,
        n_samples=3,
        xamm_version="0",
    )
    v1 = reg.add(Signature(**base))
    assert v1.version == 1 and reg.add(Signature(**base)).version == 1
    v2 = reg.add(Signature(**{**base, "data_sha256": "b" * 64, "vector": [1.0, 0.2]}))
    assert v2.version == 2 and reg.get("m").version == 2 and reg.get("m:cpu@1").vector == [0.5, 1.0]
    with pytest.raises(KeyError, match="versions: 1, 2"):
        reg.get("m@7")
    with pytest.raises(ImmutableSignatureError):
        reg.add(Signature(**{**base, "version": 1, "vector": [9.0, 9.0]}))
    assert reg.path("m", "cpu", 1).stat().st_mode & 0o222 == 0  # written read-only
    assert reg.get("m:cpu@1").vector == [0.5, 1.0]
    with pytest.raises(ValueError, match="bad signature reference"):
        reg.get("Not A Ref!")


def test_signatures_hub_round_trip(tmp_path, local_hub):
    from xamm_models.machines.hub import pull_signatures, push_signatures

    reg = SignatureRegistry(tmp_path / "a")
    base = dict(
        machine="m",
        device="gpu",
        vector=[0.1, 1.0],
        aggregation="l2",
        normalise="divide",
        embedder_id="e",
        embedder_revision="r",
        data_sha256="c" * 64,
        kernels=["Basic_A", "Basic_B"],
        coverage=0.5,
        n_samples=4,
        xamm_version="0",
    )
    reg.add(Signature(**base))
    reg.add(Signature(**{**base, "aggregation": "mean"}))
    push_signatures("xamm-test/amms", registry=reg)
    fresh = SignatureRegistry(tmp_path / "b")
    got = pull_signatures("xamm-test/amms", registry=fresh)
    assert sorted(s.ref for s in got) == ["m:gpu@1", "m:gpu@2"]
    assert fresh.get("m:gpu@2").model_dump() == reg.get("m:gpu@2").model_dump()
    other = SignatureRegistry(tmp_path / "c")
    other.add(Signature(**{**base, "vector": [0.9, 0.9]}))  # a different m:gpu@1
    with pytest.raises(ValueError, match="never change"):
        push_signatures("xamm-test/amms", registry=other)
    with pytest.raises(ImmutableSignatureError):
        pull_signatures("xamm-test/amms", registry=other)


def test_separation_report_on_held_out_samples(runs):
    from xamm_models.studies.separation import separation_report

    ks = align_kernels(runs)
    rep = separation_report(benchmark_samples(runs, ks), ks, "attention", epochs=EPOCHS)
    print("nearest-centroid accuracy:", rep)
    chance = 1 / rep["targets"]
    assert rep["targets"] == 6 and rep["test_samples"] > 20
    assert rep["raw_accuracy"] > 2 * chance and rep["attention_accuracy"] > 2 * chance


def test_tsne_plot_is_a_png(runs, tmp_path):
    from xamm_models.studies.plot import tsne_plot

    ks = align_kernels(runs)
    s = benchmark_samples(runs, ks)
    e = create_embedder("attention", n_features=len(ks), feature_names=ks).fit(s, epochs=10)
    import struct

    import matplotlib

    backend = matplotlib.get_backend()
    out = tsne_plot(e.transform(s), s.get_column("target").to_list(), tmp_path / "t.png")
    data = out.read_bytes()
    width, height = struct.unpack(">II", data[16:24])  # the PNG's IHDR chunk
    # 6.5 x 5 in at 120 dpi
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and (width, height) == (780, 600)
    assert matplotlib.get_backend() == backend  # no process-wide matplotlib.use


def test_embedders_leave_the_global_random_state_alone():
    """Seeding is local (a forked generator): building and fitting an embedder does not reseed the
    caller's."""
    import random

    import torch

    torch.manual_seed(1234)
    before = torch.get_rng_state().clone()
    py_before, np_before = random.getstate(), np.random.get_state()[1].copy()
    X = np.random.default_rng(0).normal(size=(40, 5))
    y = (X[:, 0] > 0).astype(float)
    for name in ("attention", "mlp", "ae", "vae"):
        create_embedder(name, n_features=5, seed=7).fit(X, y if name == "mlp" else None, epochs=2)
    assert torch.equal(torch.get_rng_state(), before)
    assert random.getstate() == py_before and (np.random.get_state()[1] == np_before).all()
    a = create_embedder("ae", n_features=5, seed=7).fit(X, epochs=3).transform(X)
    torch.manual_seed(999)  # a caller's reseeding changes nothing in a seeded embedder
    b = create_embedder("ae", n_features=5, seed=7).fit(X, epochs=3).transform(X)
    assert np.array_equal(a, b)


def test_physics_signatures_are_built_versioned_and_shown_by_the_amm_commands(
    bench_store, tmp_path, monkeypatch, capsys
):
    import json

    from xamm_data.cli.commands import main as xamm
    from xamm_models.machines.physics import OVERHEAD_QUANTILE

    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "home"))
    assert (
        xamm(["amm", "build", "--kind", "physics", "h100-node", "--store", str(bench_store.root)])
        == 0
    )
    assert "h100-node:gpu@1 (physics)" in capsys.readouterr().out
    # same data
    assert (
        xamm(["amm", "build", "--kind", "physics", "h100-node", "--store", str(bench_store.root)])
        == 0
    )
    assert "h100-node:gpu@1 (physics)" in capsys.readouterr().out  # the same version, not a new one
    reg = SignatureRegistry.default()
    assert (
        reg.versions("h100-node", "gpu", "physics") == [1]
        and reg.versions("h100-node", "gpu") == []
    )
    assert xamm(["amm", "show", "h100-node:gpu", "--kind", "physics"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["kind"] == "physics" and shown["version"] == 1
    # the overhead, independently: the fastest tuning of each kernel and size, time per launch, 5th
    # percentile
    r = (runs := bench_store.scan("benchmark_runs").collect()).filter(
        (pl.col("machine") == "h100-node") & (pl.col("device") == "gpu")
    )
    per = (
        r.group_by("kernel", "problem_size", "variant", "tuning")
        .agg(pl.col("time_per_rep_s", "kernels_per_rep", "bytes_per_rep").mean())
        .sort("time_per_rep_s")
        .group_by("kernel", "problem_size")
        .first()
    )
    per = (
        per.with_columns(pl.col("problem_size").cast(pl.Float64).log(2).round().alias("b"))
        .sort((pl.col("problem_size").cast(pl.Float64).log(2) - pl.col("b")).abs())
        .group_by("kernel", "b")
        .first()
    )
    launches = per["kernels_per_rep"].fill_null(1.0).clip(1.0)
    t = (per["time_per_rep_s"] / launches).to_numpy()
    # among the quarter of launches that move the fewest bytes
    ws = (per["bytes_per_rep"].fill_null(0.0) / launches).to_numpy()
    small = ws <= np.quantile(ws, 0.25)
    assert shown["physics"]["overhead_s"] == pytest.approx(
        float(np.quantile(t[small], OVERHEAD_QUANTILE)), rel=1e-9
    )
    assert shown["physics"]["n_samples"] == per.height
    # no attention AMM was built here: the package's own (the embedded snapshot's) answers
    from xamm_data.hub import snapshot

    assert len(runs) and xamm(["amm", "show", "h100-node:gpu"]) == 0
    embedded = SignatureRegistry(snapshot.signatures_root()).get("h100-node:gpu")
    assert json.loads(capsys.readouterr().out) == json.loads(embedded.model_dump_json())
    # a machine that has neither: a clear error
    assert xamm(["amm", "show", "corona:cpu"]) == 1
    assert "no attention signature" in capsys.readouterr().err


def test_signatures_record_the_table_version_they_read_and_can_reload_it(rajaperf_sets, tmp_path):
    """A signature names the benchmark_runs version it was built from; after more ingests that
    version still gives exactly the same samples (the same data hash)."""
    from xamm_data import load_dataset
    from xamm_models.benchmark.dataset import samples_from_runs
    from xamm_models.machines.signatures import physics_record
    from xamm_models.zoo.build import build_physics_signatures
    from xamm_models.zoo.physics import signature_runs

    st = Store(tmp_path / "store")
    ingest_rajaperf([rajaperf_sets["h100_tier1"]], machine="h100-node", store=st, workers=2)
    reg = SignatureRegistry(tmp_path / "reg")
    sig = {s.target: s for s in build_physics_signatures(store=st, registry=reg)}["h100-node:gpu"]
    assert sig.data_version == 0
    # version 1
    ingest_rajaperf([rajaperf_sets["h100_tier2"]], machine="h100-node", store=st, workers=2)
    assert st.version("benchmark_runs") == 1
    then = load_dataset("h100-node", store=st, version=sig.data_version)
    rows, configuration = signature_runs(then)["h100-node:gpu"]
    assert configuration.startswith("declared configuration: Base_CUDA, 4 rank(s)")
    assert sig.configuration == configuration
    again = physics_record("h100-node:gpu", samples_from_runs(rows))
    assert again.data_sha256 == sig.data_sha256
    now = physics_record(
        "h100-node:gpu",
        samples_from_runs(signature_runs(load_dataset("h100-node", store=st))["h100-node:gpu"][0]),
    )
    assert now.data_sha256 != sig.data_sha256  # the later version is different data
    newer = {s.target: s for s in build_physics_signatures(store=st, registry=reg)}["h100-node:gpu"]
    assert newer.version == 2 and newer.data_version == 1


def test_a_physics_build_runs_on_the_core_install(rajaperf_sets, tmp_path):
    """``xamm amm build --kind physics`` measures a machine without the models extra (torch,
    XGBoost, CatBoost and scikit-learn made unimportable in the command's process)."""
    import os
    import subprocess
    import sys

    st = tmp_path / "store"
    ingest_rajaperf([rajaperf_sets["h100_tier1"]], machine="h100-node", store=st, workers=1)
    code = (
        "import sys\n"
        "for m in ('torch', 'xgboost', 'catboost', 'sklearn'):\n"
        "    sys.modules[m] = None\n"
        "from xamm_data.cli.commands import main\n"
        f"sys.exit(main(['amm', 'build', '--kind', 'physics', '--store', {str(st)!r}]))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "XAMM_HOME": str(tmp_path / "home")},
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert "h100-node:gpu" in r.stdout and "bandwidth up to" in r.stdout
    assert (tmp_path / "home" / "signatures").is_dir()


def test_the_tsne_plot_of_a_store_without_runs_says_so(runs, tmp_path, monkeypatch, capsys):
    """`xamm amm plot` on a store that holds no runs of the embedder's kernels: one line naming
    the store and what a t-SNE needs, exit 1, never scikit-learn's perplexity error."""
    from xamm_data.cli.commands import main

    ks = align_kernels(runs)
    e = create_embedder("attention", n_features=len(ks), feature_names=ks, seed=0)
    e.fit(benchmark_samples(runs, ks), epochs=EPOCHS).save_pretrained(tmp_path / "emb")
    empty = tmp_path / "empty-store"
    argv = ["amm", "plot", "--embedder", str(tmp_path / "emb"), "--store", str(empty),
            "--out", str(tmp_path / "t.png")]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("xamm: error: the store at ") and "holds 0 benchmark samples" in err
    assert "needs 3 or more" in err and not (tmp_path / "t.png").exists()


@pytest.mark.data
def test_a_full_rajaperf_run_gives_a_signature_of_one_family_and_kind(shared_data, tmp_path):
    """ruby's baselines hold Base, Lambda and RAJA variants, sequential and OpenMP: its signature
    is measured from its declared configuration (Base_Seq, one rank) and says so, never from the
    fastest variant of each kernel (the OpenMP node); a machine with no declared configuration
    takes its sequential Base runs, as ``xamm predict`` does."""
    from xamm_models.zoo.build import build_physics_signatures
    from xamm_models.zoo.physics import signature_runs

    st = Store(tmp_path / "store")
    src = shared_data / "LLNL+RAJAPerf" / "test" / "caliper-baselines"
    ingest_rajaperf([src], machine="ruby", store=st, workers=1)
    runs = st.scan("benchmark_runs").collect()
    assert {"Base_OpenMP", "Base_Seq", "RAJA_Seq"} <= set(runs["variant"])
    (sig,) = build_physics_signatures(store=st, registry=SignatureRegistry(tmp_path / "r"))
    seq = runs.filter(pl.col("variant") == "Base_Seq")
    assert sig.n_samples == seq.select("kernel", "problem_size").unique().height
    assert sig.configuration == "declared configuration: Base_Seq, 1 rank(s), 1 thread(s)"
    (rows, configuration), *_ = signature_runs(runs.with_columns(machine=pl.lit("newbox"))).values()
    assert set(rows["variant"]) == {"Base_Seq"} and configuration.startswith("sequential: Base_Seq")
    assert "Lambda, RAJA variants are not used" in configuration


def test_a_signature_from_specifications_is_superseded_by_one_from_runs(rajaperf_sets, tmp_path):
    """A new machine with its peaks recorded gets a signature from specifications (version 1);
    once its runs are ingested, the signature from runs is version 2 and the one read; a later
    specifications build adds nothing over it."""
    from xamm_models.zoo.physics import build_physics_signatures, build_specification_signatures

    machines.add_facts("newbox", gpu="NVIDIA H100", gpus_per_node=4, source="test",
                       gpu_memory_bandwidth_gbs=3350.0, gpu_peak_gflops=67000.0)  # fmt: skip
    reg = SignatureRegistry(tmp_path / "reg")
    (spec,) = build_specification_signatures(registry=reg, machines=["newbox"])
    assert (spec.ref, spec.basis, spec.n_samples) == (
        "newbox:gpu@1 (physics, from specifications)",
        "specifications",
        0,
    )
    st = Store(tmp_path / "store")
    ingest_rajaperf([rajaperf_sets["h100_tier1"]], machine="newbox", store=st, workers=2)
    built = {s.target: s for s in build_physics_signatures(store=st, registry=reg)}
    assert built["newbox:gpu"].version == 2 and built["newbox:gpu"].basis == "runs"
    latest = reg.get("newbox:gpu", kind="physics")
    assert latest.version == 2 and latest.physics.flop_rate_from == "measured"
    assert build_specification_signatures(registry=reg, machines=["newbox"]) == []
    assert reg.versions("newbox", "gpu", "physics") == [1, 2]
    assert reg.get("newbox:gpu@1", kind="physics").basis == "specifications"  # history kept


@pytest.mark.parametrize(
    "text", ["{not json", "[1]", '{"other": 1}', "[" * 100_000 + "]" * 100_000]
)
def test_an_embedder_folder_whose_config_names_no_embedder_is_refused_by_name(tmp_path, text):
    """``xamm_embedder.json`` that is not JSON, not an object or names no embedder: refused naming
    the folder and the file, never the parser's bare message."""
    from xamm_models.errors import SavedFormatError

    (tmp_path / "xamm_embedder.json").write_text(text)
    with pytest.raises(SavedFormatError, match=r"xamm_embedder\.json names no embedder"):
        load_embedder(str(tmp_path))
