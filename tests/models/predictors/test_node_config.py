"""``--config node``: whole nodes compared with whole nodes, and every machine whose runs cannot say
so is named with the reason."""

from __future__ import annotations

import polars as pl
import pytest

from xamm_data.regions import ProfileMeta, RegionProfile, conform_regions
from xamm_models.errors import NodeConfigurationError
from xamm_models.predictors.composed import HELD, predict_profile
from xamm_models.predictors.configurations import node_check
from xamm_models.zoo.registry import load_model

DANE = "LLNL+thicket-newer/thicket/tests/data/rajaperf/dane/clang14.0.6_8388608"


@pytest.fixture(scope="module")
def model():
    return load_model("xamm/default")


def _runs(rows: list[tuple[str, int | None, int | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "target": [r[0] for r in rows],
            "ranks": [r[1] for r in rows],
            "threads": [r[2] for r in rows],
            "variant": ["Base_Seq"] * len(rows),
        },
        schema={"target": pl.String, "ranks": pl.Int64, "threads": pl.Int64, "variant": pl.String},
    )


def test_node_check_reads_the_registry_and_the_runs():
    # quartz: 36 cores a node; mi300a-spx: 4 GPUs; h100-node: no GPU count recorded
    full = node_check("quartz:cpu", _runs([("quartz:cpu", 18, 2)]))
    assert full.whole_node and full.ranks == 18 and "36 of 36 cores" in full.reason
    part = node_check("quartz:cpu", _runs([("quartz:cpu", 4, 1)]))
    assert not part.whole_node and "4 of the node's 36 cores" in part.reason
    assert "rank count" in node_check("quartz:cpu", _runs([("quartz:cpu", None, 1)])).reason
    assert node_check("mi300a-spx:gpu", _runs([("mi300a-spx:gpu", 4, 1)])).whole_node
    assert "no GPU count" in node_check("h100-node:gpu", _runs([("h100-node:gpu", 4, 1)])).reason
    mixed = node_check("quartz:cpu", _runs([("quartz:cpu", 36, 1), ("quartz:cpu", 18, 2)]))
    assert not mixed.whole_node and "no one figure" in mixed.reason
    assert "not recorded" in node_check("quartz:cpu", _runs([])).reason


def _profile() -> RegionProfile:
    regions = conform_regions(
        pl.DataFrame(
            {
                "region": ["main", "main/stencil", "main/scan", "main/MPI_Allreduce"],
                "name": ["main", "stencil", "scan", "MPI_Allreduce"],
                "parent": [None, "main", "main", "main"],
                "exclusive_s": [0.5, 2.0, 1.0, 0.25],
                "bytes": [None, 4e9, None, None],
                "flops": [None, 1e9, None, None],
                "work_from": ["table"] * 4,
                "category": ["compute", "compute", "compute", "communication"],
            }
        )
    )
    return RegionProfile(
        ProfileMeta(path="p", format="t", app="a", source="mi300a-spx:gpu"), regions
    )


def test_node_relr_is_the_per_rank_relr_times_source_over_target_ranks(model, shared_data):
    """dane's RAJAPerf runs fill its node (112 ranks of 112 cores), as do the MI300A node's GPU
    runs (4 ranks, one per APU): only those two are compared, at 4/112 of the per-rank relR."""
    from xamm_ingest import read_rajaperf

    dane = read_rajaperf([shared_data / DANE], machine="dane", workers=1).frame
    prof = _profile()
    as_run = predict_profile(prof, model, target_benchmarks=dane)
    node = predict_profile(prof, model, target_benchmarks=dane, config="node")
    assert set(node.programs["target"]) == {"mi300a-spx:gpu", "dane:cpu"}
    key = ["region", "target"]
    both = node.regions.join(as_run.regions, on=key, suffix="_run").filter(
        pl.col("target") == "dane:cpu"
    )
    held = both["regime"] == HELD
    assert held.sum() == 1 and (both.filter(held)["relR"] == 1.0).all()
    moved = both.filter(~held)
    for c in ("relR", "relR_lo", "relR_hi", "time_s"):
        assert (moved[c] / moved[f"{c}_run"]).to_list() == pytest.approx([4 / 112] * moved.height)
    row = node.programs.filter(pl.col("target") == "dane:cpu").row(0, named=True)
    assert row["target_configuration"] == "whole node: 112 ranks x 1 thread, Base_Seq"
    left = [n for n in node.notes if "left out of the node comparison" in n]
    assert any(n.startswith("mi300a-spx:cpu") and "4 of the node's 96 cores" in n for n in left)
    assert any(n.startswith("quartz:cpu") and "rank count" in n for n in left)
    assert len(left) == len(as_run.programs) - 2


def test_node_config_refuses_a_source_or_targets_that_do_not_fill_a_node(model):
    prof = _profile()
    with pytest.raises(NodeConfigurationError, match=r"source mi300a-spx:cpu.*4 of the node's 96"):
        predict_profile(prof, model, source="mi300a-spx:cpu", config="node")
    targets = ["quartz:cpu", "lassen:gpu"]
    with pytest.raises(NodeConfigurationError, match=r"no target's benchmark runs filled a node"):
        predict_profile(prof, model, targets=targets, config="node")
    # the embedded data holds dane's runs, which filled its node: it is compared with no runs given
    assert set(predict_profile(prof, model, config="node").programs["target"]) == {
        "mi300a-spx:gpu",
        "dane:cpu",
    }
    with pytest.raises(ValueError, match="expected one of as-run, node"):
        predict_profile(prof, model, config="socket")


def test_cli_node_config_without_whole_nodes_is_one_line_exit_1(tmp_path, capsys):
    from xamm_data.cli import main as xamm

    table = tmp_path / "regions.csv"
    table.write_text("region,exclusive_s\nmain,1.0\n")
    argv = ["predict", str(table), "--source", "mi300a-spx:gpu", "--config", "node"]
    argv += ["--target", "quartz:cpu", "--target", "lassen:gpu"]
    assert xamm(argv) == 1
    out = capsys.readouterr()
    assert out.out == "" and out.err.count("\n") == 1 and "--config node: no target's" in out.err
