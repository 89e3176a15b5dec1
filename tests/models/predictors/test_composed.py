"""Application profiles into whole-program predictions (xamm_models.predictors.composed)."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from xamm_data import load_dataset
from xamm_data.tables.regions import (
    ProfileMeta,
    RegionProfile,
    RegionProfileError,
    check_regions,
    conform_regions,
)
from xamm_models.benchmark.baselines import machine_figures
from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.errors import ProfileInputError, UnknownTargetError
from xamm_models.predictors.composed import (
    BW_ONLY,
    BW_ONLY_SPREAD_FILE,
    SPREAD_FILE,
    bandwidth_only_spread,
    predict_profile,
    time_only_spread,
)
from xamm_models.predictors.kinds import load_model
from xamm_models.studies.time_only import labelled_pairs, spread, time_only_errors

SRC, DST = "mi300a-spx:gpu", "h100-node:gpu"
V100_STREAM = "UoB-HPC+performance-portability/benchmarking/2019/babelstream/v100-isambard"


@pytest.fixture(scope="module")
def model():
    return load_model("xamm/default")


@pytest.fixture(scope="module")
def kernel_program() -> pl.DataFrame:
    """RAJAPerf kernels measured on both GPUs (embedded snapshot): one per kernel and variant
    family at its largest common size, with the source's time, work and launches, and the
    target's measured time."""
    runs = pl.concat(
        [load_dataset("mi300a-spx"), load_dataset("h100-node")], how="diagonal_relaxed"
    )
    s = samples_from_runs(runs).with_columns(
        pl.col("variant").str.split("_").list.first().alias("fam")
    )
    key = ["app", "fam", "problem_size"]
    truth = s.filter(pl.col("target") == DST).select(*key, pl.col("time_per_rep_s").alias("truth"))
    return (
        s.filter(pl.col("target") == SRC)
        .join(truth, on=key)
        .sort("problem_size")
        .group_by("app", "fam")
        .last()
        .sort("app", "fam")
    )


def _profile(rows: pl.DataFrame, *, work: bool = True) -> RegionProfile:
    regions = conform_regions(
        rows.select(
            pl.concat_str("app", pl.lit("/"), "fam").alias("region"),
            pl.col("app").alias("name"),
            pl.col("time_per_rep_s").alias("exclusive_s"),
            pl.col("kernels_per_rep").alias("calls"),
            *(
                (pl.col("bytes_per_rep").alias("bytes"), pl.col("flops_per_rep").alias("flops"))
                if work
                else ()
            ),
            pl.lit("annotations" if work else "none: time only").alias("work_from"),
            pl.lit("compute").alias("category"),
        )
    )
    check_regions(regions, "kernels")
    return RegionProfile(
        ProfileMeta(path="kernels", format="test", app="kernels", source=SRC), regions
    )


def _roofline_ratio(model, rows: pl.DataFrame, source: str, target: str) -> np.ndarray:
    """The plain roofline's ratio of each row, written out from the two machines' figures."""
    figs = {r["target"]: r for r in machine_figures(model.samples).iter_rows(named=True)}
    b, f = rows["bytes_per_rep"].to_numpy(), rows["flops_per_rep"].fill_null(0.0).to_numpy()
    n = rows["kernels_per_rep"].fill_null(1.0).to_numpy().clip(1.0)

    def seconds(t):
        return np.maximum(b / figs[t]["bw"], f / figs[t]["flops"]) + figs[t]["overhead"] * n

    return seconds(target) / seconds(source)


def test_composed_time_is_the_sum_of_regions_each_the_roofline_ratio(model, kernel_program):
    """A program of RAJAPerf kernels, MI300A GPU -> H100 GPU: the whole-program prediction is the
    sum of the regions' predicted times (and of their bounds), and each region's relR is the plain
    roofline's ratio of the two machines' figures (the default fits no label)."""
    pred = predict_profile(_profile(kernel_program), model, targets=[DST])
    prog = pred.programs.filter(pl.col("target") == DST).row(0, named=True)
    per = pred.regions.filter(pl.col("target") == DST)
    assert prog["time_s"] == pytest.approx(per["time_s"].sum(), rel=1e-12)
    assert prog["time_lo_s"] == pytest.approx(per["time_lo_s"].sum(), rel=1e-12)
    assert prog["time_hi_s"] == pytest.approx(per["time_hi_s"].sum(), rel=1e-12)
    src_total = kernel_program["time_per_rep_s"].sum()
    assert prog["time_source_s"] == pytest.approx(src_total)
    want = kernel_program.with_columns(
        pl.concat_str("app", pl.lit("/"), "fam").alias("region"),
        pl.Series("want", _roofline_ratio(model, kernel_program, SRC, DST)),
    ).join(per.select("region", "relR"), on="region")
    assert want.height == kernel_program.height
    assert want["relR"].to_numpy() == pytest.approx(want["want"].to_numpy(), rel=1e-9)


def test_edge3d_is_predicted_slower_on_the_h100_gpu(model, kernel_program):
    """EDGE3D runs over 10x slower on the H100 GPU than on the MI300A GPU in the data; the
    predicted relR is above 1 and the H100 is not ranked first for it, and no two kernels share
    one answer."""
    edge = kernel_program.filter(pl.col("app") == "Apps_EDGE3D")
    assert (edge["truth"] / edge["time_per_rep_s"]).min() > 10
    pred = predict_profile(_profile(edge), model, targets=[DST])
    ranked = pred.programs.sort("rank")
    assert ranked["target"][0] == SRC
    assert pred.programs.filter(pl.col("target") == DST)["relR"][0] > 1
    whole = predict_profile(_profile(kernel_program), model, targets=[DST]).regions
    rel = whole.filter(pl.col("target") == DST)
    assert rel["relR"].n_unique() == rel.height


def test_time_only_regions_get_the_measured_spread(model, kernel_program):
    pred = predict_profile(_profile(kernel_program, work=False), model, targets=[DST])
    r = pred.regions.filter(pl.col("target") == DST)
    assert set(r["regime"]) == {"time-only"}
    q = time_only_spread()["GPU->GPU"]
    assert np.allclose(r["relR_lo"] / r["relR"], 10.0 ** q[0])
    assert np.allclose(r["relR_hi"] / r["relR"], 10.0 ** q[1])
    own = pred.programs.filter(pl.col("target") == SRC).row(0, named=True)
    assert (own["relR"], own["relR_lo"], own["relR_hi"]) == (1.0, 1.0, 1.0)
    assert any(n.startswith("time-only: 100%") for n in pred.notes)


def test_spread_file_is_what_the_study_measures(model):
    """The shipped time-only spread is regenerated by `python -m xamm_models.studies.time_only`."""
    fresh = spread(time_only_errors(labelled_pairs(), model))
    assert json.loads(SPREAD_FILE.read_text()) == json.loads(json.dumps(fresh))


def test_a_bandwidth_only_target_widens_regions_with_work(model, kernel_program, shared_data):
    """A target known only from BabelStream timed no flops: a region with work gets at least the
    spread measured for bandwidth-only signatures (wider still where it is compute), a target with
    a full signature does not, and the notes say which."""
    from xamm_ingest import read_babelstream

    v100 = read_babelstream(shared_data / V100_STREAM, machine="v100-isambard", workers=1).frame
    pred = predict_profile(
        _profile(kernel_program), model, targets=[DST, "v100-isambard:gpu"], target_benchmarks=v100
    )
    work = kernel_program.select(
        pl.concat_str("app", pl.lit("/"), "fam").alias("region"),
        (pl.col("flops_per_rep") >= pl.col("bytes_per_rep")).alias("dense"),
    )
    r = pred.regions.join(work, on="region")
    blind = r.filter(pl.col("target") == "v100-isambard:gpu")
    q = bandwidth_only_spread()
    assert blind["regime"].str.ends_with(BW_ONLY).all()
    for dense, cls in ((True, "compute"), (False, "memory")):
        part = blind.filter(pl.col("dense") == dense)
        assert part.height > 0
        assert (part["relR_hi"] / part["relR"] >= 10.0 ** q[cls][1] * (1 - 1e-9)).all()
        assert (part["relR_lo"] / part["relR"] <= 10.0 ** q[cls][0] * (1 + 1e-9)).all()
    full = r.filter(pl.col("target") == DST)
    assert not full["regime"].str.ends_with(BW_ONLY).any()
    assert (full["relR_hi"] / full["relR"]).median() < (blind["relR_hi"] / blind["relR"]).median()
    assert any("v100-isambard:gpu" in n and "bandwidth-only" in n for n in pred.notes)


def test_bandwidth_only_spread_file_is_what_the_study_measures():
    """Regenerated by ``python -m xamm_models.studies.bandwidth_only --out
    docs/bandwidth-only.md``."""
    from xamm_models.studies import bandwidth_only as bo

    fresh = bo.spread(bo.embedded_samples())
    assert json.loads(BW_ONLY_SPREAD_FILE.read_text()) == json.loads(json.dumps(fresh))


def _triad(samples: pl.DataFrame) -> dict[str, float]:
    """Best Stream_TRIAD bytes/s per target, read here from the rows themselves."""
    out: dict[str, float] = {}
    for r in samples.filter(pl.col("app") == "Stream_TRIAD").iter_rows(named=True):
        bw = r["bytes_per_rep"] / r["time_per_rep_s"]
        out[r["target"]] = max(out.get(r["target"], 0.0), bw)
    return out


def test_a_time_only_profile_is_answered_beside_the_triad_ratio(model):
    """Time without bytes or flops is a bandwidth ratio, said in a note, with the Triad ratio
    beside it on the same basis: per rank the two machines' best Triad bandwidths, and a whole-node
    comparison scales it as it scaled the answer."""
    regions = conform_regions(
        pl.DataFrame(
            {
                "region": ["main", "main/a", "main/b"],
                "name": ["main", "a", "b"],
                "parent": [None, "main", "main"],
                "exclusive_s": [0.0, 3.0, 1.0],
                "work_from": ["none: time only"] * 3,
                "category": ["compute"] * 3,
            }
        )
    )
    prof = RegionProfile(ProfileMeta(path="p", format="t", app="a", source="quartz:cpu"), regions)
    triad = _triad(model.samples)
    assert {"quartz:cpu", "dane:cpu", "lassen:gpu"} <= set(triad)
    want = ["dane:cpu", "lassen:gpu", "h100-node:gpu"]
    per_rank = predict_profile(prof, model, targets=want, config="rank")
    got = dict(per_rank.programs.select("target", "triad_relR").iter_rows())
    for t in ("quartz:cpu", "dane:cpu", "lassen:gpu"):
        assert got[t] == pytest.approx(triad["quartz:cpu"] / triad[t], rel=1e-12)
    assert got["h100-node:gpu"] is None  # the H100 node's runs hold no Stream group
    assert any("the whole program the answer is a bandwidth ratio" in n for n in per_rank.notes)
    node = predict_profile(prof, model, targets=want)
    ratio = {r["target"]: r["triad_relR"] / r["relR"] for r in node.programs.iter_rows(named=True)
             if r["triad_relR"] is not None}  # fmt: skip
    for r in per_rank.programs.filter(pl.col("triad_relR").is_not_null()).iter_rows(named=True):
        assert ratio[r["target"]] == pytest.approx(r["triad_relR"] / r["relR"], rel=1e-9)


def test_a_profile_with_work_has_no_triad_ratio(model, kernel_program):
    pred = predict_profile(_profile(kernel_program), model, targets=[DST])
    assert pred.programs["triad_relR"].null_count() == pred.programs.height
    assert not any("bandwidth ratio" in n for n in pred.notes)


def _worked(variant: str | None = None) -> RegionProfile:
    """Two compute regions with bytes and flops, measured on quartz."""
    regions = conform_regions(
        pl.DataFrame(
            {
                "region": ["main", "main/a", "main/b"],
                "name": ["main", "a", "b"],
                "parent": [None, "main", "main"],
                "exclusive_s": [0.0, 2.0, 1.0],
                "bytes": [None, 4e10, 1e9],
                "flops": [None, 1e9, 5e10],
                "calls": [None, 1.0, 1.0],
                "work_from": ["annotations"] * 3,
                "category": ["compute"] * 3,
            }
        )
    )
    meta = ProfileMeta(path="p", format="t", app="a", source="quartz:cpu", variant=variant)
    return RegionProfile(meta, regions)


@pytest.mark.data
def test_a_full_run_answers_as_its_variant_of_the_profiles_kind(model, shared_data):
    """ruby's full RAJAPerf run (Base, Lambda and RAJA, sequential and OpenMP) answers as its
    Base_Seq file alone for a profile naming no variant, and as RAJA_Seq for a RAJA profile: one
    variant kind per answer, the others said left out."""
    from xamm_ingest import read_rajaperf

    runs = read_rajaperf(shared_data / "LLNL+RAJAPerf/test/caliper-baselines", workers=1).frame
    assert runs["variant"].n_unique() == 6

    def ruby(profile, given):
        pred = predict_profile(profile, model, targets=["ruby:cpu"], target_benchmarks=given,
                               store=False)  # fmt: skip
        return pred.programs.filter(pl.col("target") == "ruby:cpu").row(0, named=True)

    for variant, kind in ((None, "Base"), ("RAJA_Seq", "RAJA")):
        full = ruby(_worked(variant), runs)
        alone = ruby(_worked(variant), runs.filter(pl.col("variant") == f"{kind}_Seq"))
        assert (full["relR"], full["relR_lo"], full["relR_hi"]) == (
            alone["relR"], alone["relR_lo"], alone["relR_hi"],
        )  # fmt: skip
        assert full["target_configuration"].endswith(f"{kind}_Seq")
        left = sorted({"Base", "Lambda", "RAJA"} - {kind})
        assert f"its {', '.join(left)} variants are not used" in full["runs_left_out"]
    raja = ruby(_worked("RAJA_Seq"), runs)
    assert "(the profile's: RAJA)" in raja["runs_left_out"]
    base = ruby(_worked(), runs)
    assert "(the profile names none; the baseline's: Base)" in base["runs_left_out"]
    assert raja["relR"] != base["relR"]


def test_communication_is_held_and_the_share_reported(model):
    regions = conform_regions(
        pl.DataFrame(
            {
                "region": ["main", "main/work", "main/MPI_Allreduce"],
                "name": ["main", "work", "MPI_Allreduce"],
                "parent": [None, "main", "main"],
                "exclusive_s": [0.0, 3.0, 1.0],
                "work_from": ["none: time only"] * 3,
                "category": ["compute", "compute", "communication"],
            }
        )
    )
    prof = RegionProfile(ProfileMeta(path="p", format="t", app="a", source="quartz:cpu"), regions)
    pred = predict_profile(prof, model, targets=["lassen:gpu"])
    comm = pred.regions.filter(pl.col("region") == "main/MPI_Allreduce")
    assert set(comm["regime"]) == {"held constant"} and (comm["time_s"] == 1.0).all()
    row = pred.programs.filter(pl.col("target") == "lassen:gpu").row(0, named=True)
    assert row["held_share"] == pytest.approx(0.25)
    assert row["time_s"] >= 1.0 and row["time_lo_s"] >= 1.0
    assert any(n.startswith("communication: 25%") for n in pred.notes)


def test_a_profile_that_is_all_communication_ranks_nothing(model):
    """An MPI program whose time is all in MPI (Hatchet's cpi database spends it in MPI_Finalize):
    nothing is predicted, every target keeps the source's time and none is called fastest."""
    regions = conform_regions(
        pl.DataFrame(
            {
                "region": ["main", "main/MPI_Finalize", "main/MPI_Finalize/MPID_Finalize"],
                "name": ["main", "MPI_Finalize", "MPID_Finalize"],
                "parent": [None, "main", "main/MPI_Finalize"],
                "exclusive_s": [0.0, 0.1, 0.9],
                "work_from": ["none: time only"] * 3,
                "category": ["compute", "communication", "communication"],
            }
        )
    )
    prof = RegionProfile(ProfileMeta(path="p", format="t", app="a", source="quartz:cpu"), regions)
    pred = predict_profile(prof, model, targets=["lassen:gpu", "quartz:cpu"])
    assert (pred.programs["relR"] == 1.0).all() and pred.programs["p_fastest"].null_count() == 2
    assert any(n.startswith("nothing predicted") for n in pred.notes)


def test_bad_profiles_are_named(model, kernel_program):
    prof = _profile(kernel_program.head(2))
    anonymous = RegionProfile(prof.meta.model_copy(update={"source": None}), prof.regions)
    with pytest.raises(ProfileInputError, match="--source MACHINE:DEVICE"):
        predict_profile(anonymous, model)
    with pytest.raises(UnknownTargetError, match="Did you mean 'lassen:gpu'.*xamm-ingest"):
        predict_profile(prof, model, targets=["lasen:gpu"])
    bad = prof.regions.with_columns(
        pl.lit(2.0).alias("inclusive_s"), pl.lit(3.0).alias("exclusive_s")
    )
    with pytest.raises(
        RegionProfileError, match=r"kernels: region .* breaks \[exclusive_s <= inclusive_s\]"
    ):
        check_regions(bad, "kernels")
    nested = conform_regions(
        pl.DataFrame(
            {
                "region": ["main", "main/a"],
                "name": ["main", "a"],
                "parent": [None, "main"],
                "inclusive_s": [1.0, 3.0],
                "exclusive_s": [0.0, 3.0],
                "work_from": ["none: time only"] * 2,
                "category": ["compute"] * 2,
            }
        )
    )
    with pytest.raises(RegionProfileError, match="region 'main' lasts 1 s .* do not nest"):
        check_regions(nested, "kernels")
    with pytest.raises(RegionProfileError, match="no regions"):
        check_regions(prof.regions.head(0), "kernels")


def test_cli_predicts_a_lulesh_profile_and_refuses_bad_input(shared_data, tmp_path, capsys):
    """``xamm predict lulesh.cali --json``: every machine with a signature ranked, the source
    (quartz:cpu, from the file) among them at relR 1; bad input exits 1 with one line."""
    from xamm_data.cli.commands import main as xamm

    f = sorted((shared_data / "LLNL+thicket-tutorial/data/lulesh").glob("*.cali"))[0]
    assert xamm(["predict", str(f), "--json", "--regions", "--plot", str(tmp_path / "p.png")]) == 0
    doc = json.loads(capsys.readouterr().out.split("\nwrote ")[0])
    progs = doc["programs"]
    # whole nodes: the targets compared node against node are ranked; those known only per rank
    # are labelled so in their row, and not ranked among nodes
    ranked = [p for p in progs if p["rank"] is not None]
    assert sorted(p["rank"] for p in ranked) == list(range(1, len(ranked) + 1))
    assert {p["basis"] for p in ranked} <= {"node", "node, scaled", "specifications"}
    assert len(ranked) >= 5
    assert all(p["p_fastest"] is None for p in progs if p["basis"] == "per rank")
    # every machine with a signature, and every registry machine with peaks but no runs, answered
    # from its specifications: ranked among nodes only where the registry knows its node
    spec = {p["target"]: p for p in progs if p["basis"] == "specifications"}
    assert {p["target"] for p in progs} == set(load_model("xamm/default").signatures) | set(spec)
    assert set(spec) == {"corona:gpu", "epyc-7742:cpu", "xeon-e5-2695-v2:cpu",
                         "xeon-gold-6140:cpu"}  # fmt: skip
    assert spec["corona:gpu"]["rank"] is not None and spec["epyc-7742:cpu"]["rank"] is None
    assert all(p["target_from"] == "specifications" for p in spec.values())
    own = next(p for p in progs if p["target"] == "quartz:cpu")
    assert own["relR"] == 1.0 and own["source_configuration"] == "8 ranks x 5 threads on 1 node"
    assert sum(p["p_fastest"] for p in ranked) == pytest.approx(1.0, abs=1e-9)
    assert (tmp_path / "p.png").stat().st_size > 1000 and doc["regions"]
    table = tmp_path / "r.csv"
    table.write_text("region,exclusive_s\nmain,1.0\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "two").mkdir()
    for name in ("a.cali", "b.cali"):
        (tmp_path / "two" / name).write_bytes(f.read_bytes())
    (tmp_path / "notes.txt").write_text("not a profile\n")
    # another program's JSON beside the profiles: neither counted nor offered as one
    (tmp_path / "two" / "0-settings.json").write_text('{"threads": 8}\n')
    for argv, message in (
        ([str(table)], "does not say which machine"),
        ([str(table), "--source", "quartz:cpu", "--target", "lasen:gpu"], "Did you mean"),
        ([str(tmp_path / "none.cali")], "no such file"),
        # what the path is, named: a folder of profiles (one is read at a time), an empty folder,
        # a file no format reads as a profile
        (
            [str(tmp_path / "two")],
            f"{tmp_path / 'two'}: a folder of 2 profiles; xamm predict reads one profile at a "
            f"time: name one, e.g. {tmp_path / 'two' / 'a.cali'}",
        ),
        ([str(tmp_path / "empty")], f"{tmp_path / 'empty'}: an empty folder"),
        ([str(tmp_path / "notes.txt")], f"{tmp_path / 'notes.txt'}: not an application profile"),
        (
            [str(tmp_path / "two" / "0-settings.json")],
            f"{tmp_path / 'two' / '0-settings.json'}: not an application profile",
        ),
    ):
        assert xamm(["predict", *argv]) == 1
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_an_application_in_the_store_is_one_configuration_of_it(tmp_path, capsys):
    """``--app NAME --machine M``: the stored rows of one configuration; rows that differ in
    parameters are refused as one answer (a median over them is no answer), and picked with
    ``--select`` one is its runtime, as one region (a table stores no regions), measured on the
    machine and device it was stored with; an application the store lacks is named."""
    from xamm_data.cli.commands import main as xamm
    from xamm_data.store.store import Store
    from xamm_ingest import ingest_profiles

    (tmp_path / "t.csv").write_text(
        "app,machine,runtime_s,size\nA,quartz,1.0,1\nA,quartz,3.0,2\nA,quartz,2.0,3\n"
    )
    (tmp_path / "m.toml").write_text(
        'params = ["size"]\n[columns]\napp = "app"\nmachine = "machine"\nruntime_s = "runtime_s"\n'
    )
    store = tmp_path / "store"
    rep = ingest_profiles(
        "table", tmp_path / "t.csv", mapping=tmp_path / "m.toml", store=Store(store)
    )
    assert rep.frame.height == 3
    argv = ["predict", "--app", "A", "--machine", "quartz", "--store", str(store), "--json"]
    assert xamm([*argv, "--target", "lassen:gpu"]) == 1
    assert "3 configurations" in capsys.readouterr().err
    pick = ["--select", 'app_params={"size":2}']
    assert xamm([*argv, *pick, "--target", "lassen:gpu"]) == 0
    doc = json.loads(capsys.readouterr().out)
    progs = doc["programs"]
    assert {p["source"] for p in progs} == {"quartz:cpu"}
    assert {p["time_source_s"] for p in progs} == {3.0}
    assert any("no regions stored" in n for n in doc["notes"])
    assert xamm(["predict", "--app", "B", "--machine", "quartz", "--store", str(store)]) == 1
    assert "no application 'B' on quartz" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("select", "said"),
    [
        (["=8"], "--select '=8': expected KEY=VALUE"),
        (["ranks"], "--select 'ranks': expected KEY=VALUE"),
        (["ranks=4", "ranks=8"], "--select 'ranks=8': ranks is given twice"),
    ],
)
def test_a_malformed_or_repeated_select_is_a_usage_error(select, said, tmp_path, capsys):
    """``--select`` is how the command line is written: exit 2 naming the item (one configuration
    has one value of each key)."""
    from xamm_data.cli.commands import main as xamm

    argv = ["predict", "--app", "A", "--machine", "quartz", "--store", str(tmp_path / "none")]
    with pytest.raises(SystemExit) as e:
        xamm([*argv, *(x for s in select for x in ("--select", s))])
    assert e.value.code == 2 and said in capsys.readouterr().err


def test_the_select_hint_picks_one_configuration_whole(tmp_path, capsys):
    """Runs that differ in two columns (a parameter and the ranks): the error's example selects
    every column that differs, and run as given it picks one configuration, not several."""
    import shlex

    from xamm_data.cli.commands import main as xamm
    from xamm_data.store.store import Store
    from xamm_ingest import ingest_profiles

    (tmp_path / "t.csv").write_text(
        "app,machine,runtime_s,size,ranks\n"
        "A,quartz,1.0,1,4\nA,quartz,2.0,1,8\nA,quartz,3.0,2,4\nA,quartz,4.0,2,8\n"
    )
    (tmp_path / "m.toml").write_text(
        'params = ["size"]\n[columns]\napp = "app"\nmachine = "machine"\n'
        'runtime_s = "runtime_s"\nranks = "ranks"\n'
    )
    store = tmp_path / "store"
    ingest_profiles("table", tmp_path / "t.csv", mapping=tmp_path / "m.toml", store=Store(store))
    argv = ["predict", "--app", "A", "--machine", "quartz", "--store", str(store)]
    assert xamm([*argv, "--target", "lassen:gpu"]) == 1
    err = capsys.readouterr().err
    assert "4 configurations" in err and "app_params=..., ranks=..." in err
    hint = shlex.split(err.rsplit("e.g. ", 1)[1])
    assert hint.count("--select") == 2
    assert xamm([*argv, *hint, "--target", "lassen:gpu", "--json"]) == 0
    progs = json.loads(capsys.readouterr().out)["programs"]
    assert len({p["time_source_s"] for p in progs}) == 1  # one configuration's runtime


def test_a_target_without_runs_is_the_roofline_from_its_peaks_with_the_measured_spread(model):
    """A registry machine with peaks and no runs: relR is the roofline with its figures from peaks
    x its kind's shipped efficiencies over the source's figures from its runs, composed here by
    hand; the interval is the spread measured by leaving measured machines out."""
    from xamm_models.machines.specifications import peaks, shipped_calibration
    from xamm_models.predictors.specifications import answer_from_specifications

    rows = pl.DataFrame(
        {
            "app": ["stream", "dense"],
            "bytes_per_rep": [1e9, 1e6],
            "flops_per_rep": [1e8, 1e10],
            "kernels_per_rep": [1.0, 4.0],
            "iterations_per_rep": [1.0, 2.0],
        }
    )
    got = answer_from_specifications(
        rows, "quartz:cpu", ["epyc-7742:cpu", "corona:gpu", "xeon-gold:cpu"], model.figures()
    )
    assert set(got["target"]) == {"epyc-7742:cpu", "corona:gpu"}  # xeon-gold has no peaks
    cal = shipped_calibration()
    src = model.figures().filter(pl.col("target") == "quartz:cpu").row(0, named=True)
    for r in got.iter_rows(named=True):
        i = rows.get_column("app").to_list().index(r["region"])
        b, f, n = rows["bytes_per_rep"][i], rows["flops_per_rep"][i], rows["kernels_per_rep"][i]
        kind = r["target"].split(":")[1]
        e, p = cal.efficiencies[kind], peaks(r["target"])
        t = max(b / (p["bandwidth"] * e.bandwidth), f / (p["flop_rate"] * e.flop_rate))
        t += e.overhead_s * n
        s = max(b / src["bw"], f / src["flops"]) + src["overhead"] * n
        assert r["relR"] == pytest.approx(t / s, rel=1e-9)
        lo, hi = cal.spread[kind]
        assert (r["relR_lo"], r["relR_hi"]) == pytest.approx((t / s * 10**lo, t / s * 10**hi))
        assert r["regime"] == "specifications"


def test_a_profiles_source_needs_runs_not_specifications(tmp_path, capsys):
    from xamm_data.cli.commands import main as xamm

    table = tmp_path / "r.csv"
    table.write_text("region,exclusive_s,bytes,flops\nmain,1.0,1e9,1e8\n")
    assert xamm(["predict", str(table), "--source", "epyc-7742:cpu"]) == 1
    err = capsys.readouterr().err
    assert "specifications, not its runs" in err and "Traceback" not in err
    assert xamm(["predict", str(table), "--source", "quartz:cpu", "--target", "epyc-7742:cpu",
                 "--json"]) == 0  # fmt: skip
    progs = json.loads(capsys.readouterr().out)["programs"]
    spec = next(p for p in progs if p["target"] == "epyc-7742:cpu")
    assert spec["basis"] == "specifications" and spec["target_from"] == "specifications"
    assert spec["relR_lo"] < spec["relR"] < spec["relR_hi"]


def test_runs_of_a_machine_supersede_its_specifications(tmp_path, capsys):
    """corona has peaks and no runs: answered from specifications; given runs of it (here the
    H100 node's, relabelled), it is a measured target and its specifications are not read."""
    from xamm_data.cli.commands import main as xamm

    table = tmp_path / "r.csv"
    table.write_text("region,exclusive_s,bytes,flops\nmain,1.0,1e9,1e8\n")
    base = ["predict", str(table), "--source", "quartz:cpu", "--target", "corona:gpu", "--json"]
    assert xamm(base) == 0
    before = next(
        p for p in json.loads(capsys.readouterr().out)["programs"] if p["target"] == "corona:gpu"
    )
    runs = load_dataset("h100-node").with_columns(pl.lit("corona").alias("machine"))
    runs.write_parquet(tmp_path / "corona.parquet")
    assert xamm([*base, "--target-benchmarks", str(tmp_path / "corona.parquet")]) == 0
    after = next(
        p for p in json.loads(capsys.readouterr().out)["programs"] if p["target"] == "corona:gpu"
    )
    assert before["basis"] == "specifications" and after["basis"] != "specifications"
    assert after["target_from"] == "given" and after["relR"] != pytest.approx(before["relR"])
