"""Same silicon: the registry says which machines share a processor (the nearest-machine rule
taking it first: tests/models/machines/test_similarity.py); a left-out machine is answered from
its measured sibling's ratios times the configuration scale, checked against an independent
composition of the same figures."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from xamm_data.machines import same_silicon, silicon_key


def test_the_registry_names_the_same_silicon_per_device_kind():
    ends = [
        "mi300a-spx:cpu",
        "mi300a-spx:gpu",
        "mi300a-cpx:cpu",
        "mi300a-cpx:gpu",
        "tuolumne:gpu",
        "lassen:gpu",
        "quartz:cpu",
        "mi300a-spx#1:gpu",  # not a registry name: shares nothing
    ]
    assert same_silicon("mi300a-cpx:gpu", ends) == ["mi300a-spx:gpu", "tuolumne:gpu"]
    # an APU's cores and its GPU share a name, not a device
    assert same_silicon("mi300a-cpx:cpu", ends) == ["mi300a-spx:cpu"]
    assert same_silicon("quartz:cpu", ends) == [] == same_silicon("mi300a-spx#1:gpu", ends)
    assert same_silicon("nosuch:gpu", ends) == []
    cpx, plain = silicon_key("AMD MI300A (CDNA 3, CPX mode)"), silicon_key("AMD  mi300a")
    assert cpx == plain == "amd mi300a"
    # written differently, not claimed the same
    assert silicon_key("NVIDIA Tesla V100") != silicon_key("NVIDIA V100 (SXM2, 16 GB)")


@pytest.mark.data
def test_a_left_out_partition_mode_is_answered_from_its_measured_sibling(xplat_dataset):
    from xamm_models.benchmark import dataset as xplat
    from xamm_models.predictors.same_silicon import sibling_answers

    ds = xplat_dataset
    fold = next(f for f in ds.get_idx_split("machine") if f.name == "Basic to mi300a-cpx")
    _, test = fold.frames(ds.pairs)
    samples = ds.samples.filter(~pl.col("app").is_in(list(fold.machine_exclude)))
    measured = ds.pairs.filter(
        ~pl.col("source").str.starts_with("mi300a-cpx:")
        & ~pl.col("target").str.starts_with("mi300a-cpx:")
    )
    y, sib = sibling_answers(test.drop("relR"), measured, samples)
    assert set(sib) == {"mi300a-spx:cpu", "mi300a-spx:gpu"}
    assert set(zip(test["target"], sib, strict=True)) == {
        ("mi300a-cpx:cpu", "mi300a-spx:cpu"),
        ("mi300a-cpx:gpu", "mi300a-spx:gpu"),
    }
    # independently: SPX's measured ratio for the sample times the median of CPX/SPX times per
    # iteration over the like-for-like samples of the kernels the fold may see
    runs = samples.filter(pl.col("target").str.starts_with("mi300a-"))
    ratios, _ = xplat.pairs(runs)
    assert not set(ratios["app"]) & set(fold.machine_exclude)
    checked = 0
    for i, row in enumerate(test.iter_rows(named=True)):
        m = sib[i]
        lfl = ratios.filter(pl.col("source") == m, pl.col("target") == row["target"])["relR"]
        scale = float(np.exp(np.median(np.log(lfl.to_numpy()))))
        if row["source"] == m:
            want = scale
        else:
            got = measured.filter(
                pl.col("sample") == row["sample"],
                pl.col("source") == row["source"],
                pl.col("target") == m,
            )["relR"]
            if got.len() == 0:
                continue
            want = got[0] * scale
        assert y[i] == pytest.approx(want, rel=1e-9)
        checked += 1
    assert checked > 0.5 * test.height
    # the sibling's answer never reads a label of the machine left out
    assert not measured.filter(pl.col("target").str.starts_with("mi300a-cpx")).height


@pytest.mark.data
def test_tuolumne_shares_no_kernel_with_the_mi300a_node(xplat_dataset, shared_data, tmp_path):
    """Why "tuolumne from the MI300A node" is not measured (docs/decisions.md, same silicon): its
    RAJA_HIP kernels are none of those the MI300A node ran in either partition mode, though the
    registry names them the same silicon."""
    from xamm_data.store.store import Store
    from xamm_ingest import ingest_rajaperf

    st = Store(tmp_path / "store")
    src = shared_data / "LLNL+thicket-newer" / "thicket" / "tests" / "data"
    ingest_rajaperf([src / "rajaperf-comp-static-data" / "tuolumne"], store=st, workers=1)
    tuolumne = set(st.scan("benchmark_runs").collect()["kernel"])
    node = xplat_dataset.samples.filter(pl.col("machine").str.starts_with("mi300a-"))
    assert len(tuolumne) == 4 and node.height
    assert not tuolumne & set(node["kernel"])
    assert same_silicon("tuolumne:gpu", ["mi300a-spx:gpu", "mi300a-cpx:gpu"]) == [
        "mi300a-spx:gpu",
        "mi300a-cpx:gpu",
    ]
