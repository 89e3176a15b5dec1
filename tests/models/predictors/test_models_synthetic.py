"""The model code end to end without ../shared/data: a small synthetic benchmark made here.

Three made-up machines run 12 made-up kernels (RAJAPerf's own CSV layout, written by
:mod:`rajaperf_writer`) under a roofline law; xamm ingests them, builds every target's AMM, trains a
predictor and predicts. Synthetic data tests code paths only: nothing here is a claim about accuracy
(those come from the real data, see the README). Runs in seconds.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

torch = pytest.importorskip("torch")

from rajaperf_writer import SimKernel, SimRun, write_csv  # noqa: E402

from xamm_data.store.store import Store  # noqa: E402
from xamm_ingest import ingest_rajaperf  # noqa: E402
from xamm_models.features import FEATURES, kernel_app_samples  # noqa: E402
from xamm_models.machines.attention import build_signatures  # noqa: E402
from xamm_models.machines.signatures import SignatureRegistry  # noqa: E402
from xamm_models.predictors.paper.predictor import XammPredictor  # noqa: E402

# machine: {variant: (bandwidth B/s, flop rate flop/s, per-rep overhead s)}
MACHINES = {
    "sim-a": {"Base_Seq": (2e10, 5e10, 2e-6), "Base_CUDA": (8e11, 5e12, 8e-6)},
    "sim-b": {"Base_Seq": (5e10, 1e11, 1e-6), "Base_CUDA": (2e12, 2e13, 5e-6)},
    "sim-c": {"Base_Seq": (1e10, 2e10, 3e-6)},
}
GROUPS = ("Basic", "Stream", "Apps")


def _kernels(size: int, rng: np.random.Generator) -> list[SimKernel]:
    out = []
    for i in range(12):
        bpi, fpi = float(rng.choice([8, 16, 24, 48])), float(rng.choice([0, 1, 2, 8, 32]))
        out.append(
            SimKernel(f"{GROUPS[i % 3]}_K{i:02d}", size, 50, int(bpi * size), int(fpi * size))
        )
    return out


def _write_machine(d, machine: str, sizes=(2**16, 2**20)) -> None:
    rng = np.random.default_rng(sum(map(ord, machine)))  # seeded per machine: 1% timing noise
    for size in sizes:
        kernels = _kernels(size, np.random.default_rng(size))  # the same kernels on every machine
        variants = [(v, "default" if v == "Base_Seq" else "block_256") for v in MACHINES[machine]]
        for k in kernels:
            for v, t in variants:
                bw, fr, over = MACHINES[machine][v]
                per_rep = max(k.bytes / bw, k.flops / fr) + over
                k.times[(v, t)] = [round(per_rep * k.reps * (1 + 0.01 * rng.random()), 6)]
        run_dir = d / machine / f"size{size}"
        write_csv(SimRun(kernels, variants, npasses=1), run_dir, "v2026.04")
    (d / machine / "xamm.toml").write_text(f'machine = "{machine}"\n')


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    d = tmp_path_factory.mktemp("synthetic")
    for m in MACHINES:
        _write_machine(d / "runs", m)
    store = Store(d / "store")
    rep = ingest_rajaperf(d / "runs", store=store, workers=1)
    assert rep.rejected == [] and rep.dropped == []
    return {
        "store": store,
        "registry": SignatureRegistry(d / "home" / "signatures"),
        "runs": store.scan("benchmark_runs").collect(),
    }


def test_ingest_and_amms_for_every_target(synthetic):
    runs = synthetic["runs"]
    assert runs.height == 2 * 12 * 5 and sorted(runs.get_column("machine").unique()) == [
        "sim-a",
        "sim-b",
        "sim-c",
    ]
    sigs = build_signatures(store=synthetic["store"], registry=synthetic["registry"], epochs=5)
    assert sorted(s.ref.split("@")[0] for s in sigs) == [
        "sim-a:cpu",
        "sim-a:gpu",
        "sim-b:cpu",
        "sim-b:gpu",
        "sim-c:cpu",
    ]
    assert {len(s.vector) for s in sigs} == {8} and all(math.isclose(s.coverage, 1.0) for s in sigs)
    again = build_signatures(store=synthetic["store"], registry=synthetic["registry"], epochs=5)
    # same data, same embedder: the same versions
    assert [s.ref for s in again] == [s.ref for s in sigs]


def test_predictor_end_to_end_is_deterministic_and_round_trips(synthetic, tmp_path):
    sigs = build_signatures(store=synthetic["store"], registry=synthetic["registry"], epochs=5)
    samples = kernel_app_samples(synthetic["runs"])
    assert set(FEATURES) <= set(samples.columns) and samples.height > 0
    train = samples.filter(~pl.col("app").str.starts_with("Apps_"))
    test = samples.filter(
        pl.col("app").str.starts_with("Apps_"),
        pl.col("machine") == "sim-a",
        pl.col("device") == "cpu",
    )

    def fit(seed):
        return XammPredictor(
            feature_columns=list(FEATURES), regressor="xgboost", epochs=5, seed=seed
        ).fit(train, sigs)

    a, b = fit(0), fit(0)
    targets = ["sim-b:cpu", "sim-b:gpu", "sim-c:cpu"]
    pa = a.predict(test, "sim-a:cpu", targets)
    assert pa.height == test.height * len(targets) and pa.equals(
        b.predict(test, "sim-a:cpu", targets)
    )
    assert not pa.equals(fit(1).predict(test, "sim-a:cpu", targets))  # the seed is used
    a.save_pretrained(tmp_path / "model")
    back = XammPredictor.from_pretrained(str(tmp_path / "model"))
    assert back.predict(test, "sim-a:cpu", targets).equals(pa)
    ranked = a.rank_targets(test.head(1), "sim-a:cpu", targets)
    assert sorted(ranked.get_column("target").to_list()) == sorted(targets)
