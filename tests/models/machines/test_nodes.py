"""Whole nodes: how a rank of a machine's benchmark runs becomes its node, from the registry's node
facts (xamm_models.machines.nodes), and a profile predicted node against node by default
(xamm_models.predictors.whole_nodes)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from xamm_data.machines import registry as machines
from xamm_data.tables.regions import ProfileMeta, RegionProfile, conform_regions
from xamm_models.machines.nodes import NODE, PER_RANK, SCALED, RunConfig, node_scale, profile_fills
from xamm_models.machines.physics import PhysicsSignature


def _sig(target: str, bw: float) -> PhysicsSignature:
    return PhysicsSignature(target=target, overhead_s=0.0, flop_rate=1e10, bw_log2_ws=[20.0, 30.0],
                            bw=[4 * bw, bw], n_samples=10, flop_rate_from="measured")  # fmt: skip


def test_a_node_is_measured_scaled_or_per_rank_by_the_registrys_facts():
    dane = node_scale("dane:cpu", RunConfig(112, 1, None, "Base_Seq"))
    assert (dane.basis, dane.factor) == (NODE, 112.0) and "112 cores" in dane.why
    quartz = node_scale("quartz:cpu", RunConfig(1, 1, None, "Base_Seq"))
    assert (quartz.basis, quartz.factor) == (SCALED, 36.0)
    assert quartz.memory_peak == pytest.approx(153.6e9) and quartz.cache == 90 * 2**20
    lassen = node_scale("lassen:gpu", RunConfig(1, 1, 1, "Base_CUDA"))
    assert (lassen.basis, lassen.factor) == (SCALED, 4.0) and "independent devices" in lassen.why
    h100 = node_scale("h100-node:gpu", RunConfig(4, 1, 4, "Base_CUDA"))
    assert (h100.basis, h100.factor) == (NODE, 4.0)
    # what the registry does not know is per rank, with the way to tell it
    assert (
        "xamm machines add h100-node --cores-per-node"
        in node_scale("h100-node:cpu", RunConfig(4, 1, None, "Base_Seq")).why
    )
    mi = node_scale("mi300a-spx:cpu", RunConfig(4, 1, None, "Base_Seq"))
    assert mi.basis == PER_RANK and "4 of the node's 96 cores" in mi.why
    assert node_scale("quartz:cpu", RunConfig(None, 1, None, "x")).basis == PER_RANK
    assert node_scale("nowhere:cpu", RunConfig(8, 1, None, "x")).basis == PER_RANK


def test_memory_caps_a_scaled_cpu_node_beyond_its_cache_and_nothing_else():
    quartz = node_scale("quartz:cpu", RunConfig(1, 1, None, "Base_Seq"))
    sig = _sig("quartz:cpu", 12e9)
    ws = np.array([2.0**10, 2.0**30, 2.0**30, 2.0**30])
    streaming = np.array([True, True, False, True])
    k = quartz.factors(sig, ws, streaming)
    # in cache: every core streams its own; compute-bound: every core computes; in memory: the
    # node's 153.6 GB/s over one core's bandwidth at that working set
    assert k[0] == 36 and k[2] == 36
    assert k[1] == pytest.approx(153.6e9 / 12e9) and k[3] == k[1]
    # a measured node is never shown above the registry's peak either
    dane = node_scale("dane:cpu", RunConfig(112, 1, None, "Base_Seq"))
    k = dane.factors(_sig("dane:cpu", 6e9), np.array([2.0**30]), np.array([True]))
    assert k[0] == pytest.approx(614.4e9 / 6e9)


def test_a_profile_fills_its_nodes_or_says_why_not():
    assert profile_fills("quartz:cpu", 8, 5, None, 1)[0]  # LULESH: 40 threads, one node of 36
    assert not profile_fills("quartz:cpu", 4, 1, None, 1)[0]
    ok, why = profile_fills("quartz:cpu", 64, 1, None, None)
    assert not ok and "does not say on how many nodes" in why
    assert profile_fills("quartz:cpu", 36, 1, None, None)[0]
    assert profile_fills("mi300a-spx:gpu", 4, 1, 4, 1)[0]
    assert not profile_fills("h100-node:cpu", 4, 1, None, 1)[0]


def test_the_registry_takes_facts_from_the_user_without_code(tmp_path, capsys):
    from xamm_data.cli.commands import main as xamm

    argv = ["machines", "add", "newbox", "--cpu", "AMD EPYC 9654", "--cores-per-node", "192",
            "--memory-bandwidth-gbs", "921.6", "--source", "vendor specification"]  # fmt: skip
    assert xamm(argv) == 0
    capsys.readouterr()
    m = machines.get("newbox")
    assert (m.cores_per_node, m.memory_bandwidth_gbs, m.origin) == (192, 921.6, "yours")
    assert machines.user_file().is_file()
    # a fact of a shipped machine is corrected field by field; the rest stays
    assert xamm(["machines", "add", "Quartz", "--memory-gib", "256"]) == 0
    q = machines.get("quartz")
    assert (q.memory_gib, q.cores_per_node, q.origin) == (256, 36, "shipped, with your facts")
    capsys.readouterr()
    assert xamm(["machines", "add", "quartz", "--gpus-per-node", "0"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'gpus_per_node'" in err and "given 0" in err
    assert machines.get("quartz").gpus_per_node is None  # nothing half-written
    assert xamm(["machines", "show", "newbox", "--json"]) == 0
    assert '"cores_per_node": 192' in capsys.readouterr().out


def test_every_shipped_machine_has_its_public_node_facts():
    """The snapshot's machines: each device's unit count, and for a CPU compared node against
    node from part of its node, the memory bandwidth, or a note saying why it is not published."""
    from xamm_data.hub import snapshot

    for mid in snapshot.machines():
        m = machines.get(mid)
        for device in m.devices:
            known = m.units_per_node(device)
            assert known or "not stated" in m.notes, (mid, device)
        assert m.source and (m.sockets or m.gpus_per_node)
    assert machines.get("h100-node").gpus_per_node == 4


def test_xamm_toml_beside_the_runs_records_the_nodes_facts(tmp_path):
    """A [node] table in the xamm.toml beside a machine's runs goes into the user's registry once
    the runs are stored (not on a dry run; a bad fact rejects the runs it covers, by name)."""
    from rajaperf_writer import sim_run, write_caliper

    from xamm_data.store.store import Store
    from xamm_ingest import ingest_rajaperf

    runs = tmp_path / "runs"
    runs.mkdir()
    write_caliper(sim_run(1, seed=2, variants=(("Base_Seq", "default"),)), runs, "v2024.07.0",
                  cluster="newbox")  # fmt: skip
    (runs / "xamm.toml").write_text(
        'machine = "newbox"\n[node]\nsockets = 2\ncores_per_node = 192\n'
        'memory_bandwidth_gbs = 921.6\ncpu = "AMD EPYC 9654"\n'
    )
    store = Store(tmp_path / "s")
    assert ingest_rajaperf(runs, store=store, workers=1, dry_run=True).frame.height
    assert machines.canonical_id("newbox") is None
    rep = ingest_rajaperf(runs, store=store, workers=1)
    assert any("node facts of newbox" in n for n in rep.notes)
    m = machines.get("newbox")
    assert (m.cores_per_node, m.memory_bandwidth_gbs, m.cpu) == (192, 921.6, "AMD EPYC 9654")
    assert "xamm.toml" in m.source
    (runs / "xamm.toml").write_text('machine = "newbox"\n[node]\ncores_per_node = -3\n')
    rep = ingest_rajaperf(runs, store=store, workers=1, dry_run=True)
    assert rep.rejected and "cores_per_node" in rep.rejected[0].reason


def _lulesh_like() -> RegionProfile:
    regions = conform_regions(
        pl.DataFrame(
            {
                "region": ["main", "main/solve", "main/MPI_Wait"],
                "name": ["main", "solve", "MPI_Wait"],
                "parent": [None, "main", "main"],
                "exclusive_s": [0.1, 1.0, 0.2],
                "work_from": ["none: time only"] * 3,
                "category": ["compute", "compute", "communication"],
            }
        )
    )
    meta = ProfileMeta(path="p", format="t", app="a", source="quartz:cpu", ranks=8, threads=5,
                       hosts=1)  # fmt: skip
    return RegionProfile(meta, regions)


def test_a_profile_is_predicted_node_against_node_by_default():
    """8 ranks x 5 threads on one quartz node: each target's region relR is the per-rank relR x
    k(quartz) / k(target), the held region stays, per-rank targets are labelled and unranked."""
    from xamm_models.predictors.composed import predict_profile
    from xamm_models.predictors.kinds import load_model

    model = load_model("xamm/default")
    prof = _lulesh_like()
    node = predict_profile(prof, model)
    rank = predict_profile(prof, model, config="rank")
    sig = model.signatures
    ws = np.array([2.0 ** max(sig["quartz:cpu"].bw_log2_ws)])
    quartz = node_scale("quartz:cpu", RunConfig(1, 1, None, "Base_Seq"))
    dane = node_scale("dane:cpu", RunConfig(112, 1, None, "Base_Seq"))
    k = {
        "quartz": quartz.factors(sig["quartz:cpu"], ws, np.array([True]))[0],
        "dane": dane.factors(sig["dane:cpu"], ws, np.array([True]))[0],
    }
    pick = pl.col("target") == "dane:cpu"
    a = dict(node.regions.filter(pick).select("region", "relR").iter_rows())
    b = dict(rank.regions.filter(pick).select("region", "relR").iter_rows())
    for region in ("main", "main/solve"):  # time-only: streaming at quartz's sustained bandwidth
        assert a[region] == pytest.approx(b[region] * k["quartz"] / k["dane"], rel=1e-12)
    assert a["main/MPI_Wait"] == b["main/MPI_Wait"] == 1.0
    by = {r["target"]: r for r in node.programs.iter_rows(named=True)}
    assert by["dane:cpu"]["basis"] == NODE and by["quartz:cpu"]["basis"] == SCALED
    assert by["h100-node:cpu"]["basis"] == PER_RANK and by["h100-node:cpu"]["rank"] is None
    # per rank, as asked; a machine without runs says it is answered from its specifications
    assert {r["basis"] for r in rank.programs.iter_rows(named=True)} == {PER_RANK, "specifications"}
