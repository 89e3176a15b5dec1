"""One answer: a profile read once, by one reader per format, stored as it is read, and predicted
the same through its file, the store and the API (xamm_ingest.regions,
xamm_data.stored_profiles; docs/decisions.md, "one time per profile")."""

from __future__ import annotations

import json
import random

import polars as pl
import pytest
from cali_writer import write_cali

from xamm_data.stored_profiles import StoredProfileError, stored_profile
from xamm_data.tables.regions import SCHEMA

LULESH = "LLNL+thicket-tutorial/data/lulesh"
README_PROFILE = f"{LULESH}/230906-105532_880456_M8YbWSOYgGWa.cali"
SORT = "LLNL+thicket-tutorial/data/parallel-sorting"
HPCTOOLKIT = (
    "LLNL+hatchet/hatchet/tests/data/hpctoolkit-cpi-database",
    "HPCToolkit+hpcviewer.e4/tests/resources/metadb/lmp-openmp",
    "spencer-gre+hatchet/hatchet/tests/data/hpctoolkit-gamess",
)
TIME = "sum#inclusive#sum#time.duration"


def _spec(app="app", machine=None):
    from xamm_ingest.readers.profile_common import SampleSpec

    return SampleSpec(app=app, machine=machine)


def _stored_row(fmt: str, path, machine=None) -> dict:
    from xamm_ingest import read_profiles

    rep = read_profiles(fmt, path, _spec(machine=machine), workers=1)
    assert rep.rejected == [] and rep.frame.height == 1, rep.rejected
    return rep.frame.row(0, named=True)


def _profiles(shared_data):
    """Every kind of profile in shared data: the README's LULESH file, a seeded sample of the
    sorting corpus, HPCToolkit databases old and new."""
    sort = sorted((shared_data / SORT).rglob("*.cali"))
    picked = random.Random(51).sample(sort, 12)
    cali = [shared_data / README_PROFILE, *picked]
    return [("caliper", p, "grace" if SORT in str(p) else None) for p in cali] + [
        ("hpctoolkit", shared_data / d, "somewhere") for d in HPCTOOLKIT
    ]


def test_a_profile_is_stored_exactly_as_predict_reads_it(shared_data):
    """The invariant of one reader per format: the stored runtime is the sum of the regions
    ``xamm predict`` reads from the same file, the stored regions are those regions, and the
    configuration is the same."""
    from xamm_ingest import read_regions

    for fmt, path, machine in _profiles(shared_data):
        row, prof = _stored_row(fmt, path, machine), read_regions(path)
        assert row["runtime_s"] == pytest.approx(prof.runtime_s, rel=1e-12), path
        stored = pl.DataFrame(row["regions"], schema=SCHEMA)
        assert stored.equals(prof.regions), path
        for col in ("ranks", "threads", "hosts", "gpus"):
            assert row[col] == getattr(prof.meta, col), (path, col)
        assert row["runtime_aggregation"] == prof.meta.time_from


def test_threads_ranks_and_nodes_survive_ingest(shared_data):
    row = _stored_row("caliper", shared_data / README_PROFILE)
    assert (row["ranks"], row["threads"], row["hosts"], row["machine"]) == (8, 5, 1, "quartz")


def test_two_ranks_give_their_mean_through_ingest_and_predict(tmp_path):
    """One rank 3.0 s, the other 1.0 s: the store and the prediction both take 2.0 s, the mean
    over ranks (the rule of docs/decisions.md), not the maximum."""
    from xamm_ingest import read_regions

    ranks = ((0, 3.0), (1, 1.0))
    recs = [(["main"], {"mpi.rank": r, "inclusive#sum#time.duration": t}) for r, t in ranks]
    f = write_cali(
        tmp_path / "two.cali", recs, {"cluster": "quartz"},
        units={"inclusive#sum#time.duration": "sec"},
    )  # fmt: skip
    row = _stored_row("caliper", f)
    assert row["runtime_s"] == pytest.approx(2.0) and row["ranks"] == 2
    assert read_regions(f).runtime_s == pytest.approx(2.0)
    assert "mean over ranks" in row["runtime_aggregation"]


def _relr(programs: list[dict]) -> dict[str, float]:
    return {p["target"]: p["relR"] for p in programs}


def test_the_same_run_gives_the_same_answer_through_file_store_and_api(
    shared_data, tmp_path, capsys
):
    """The README's LULESH profile: ``xamm predict FILE``, the same file ingested and predicted
    with ``--app``, and ``predict_profile`` in code give the same relR on every target (within
    1%; they are the same regions, so the same numbers)."""
    from xamm_data.cli.commands import main as xamm
    from xamm_ingest import read_regions
    from xamm_ingest.cli import main as ingest
    from xamm_models.predictors.composed import predict_profile

    f = shared_data / README_PROFILE
    assert xamm(["predict", str(f), "--json"]) == 0
    by_file = _relr(json.loads(capsys.readouterr().out)["programs"])
    store = tmp_path / "store"
    argv = ["caliper", str(f), "--app", "lulesh2.0", "--store", str(store), "--no-progress"]
    assert ingest(argv) == 0
    capsys.readouterr()
    assert xamm(["predict", "--app", "lulesh2.0", "--machine", "quartz", "--store", str(store),
                 "--json"]) == 0  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    by_store = _relr(out["programs"])
    by_api = _relr(predict_profile(read_regions(f)).programs.to_dicts())
    assert set(by_file) == set(by_store) == set(by_api) and len(by_file) >= 7
    for t, r in by_file.items():
        assert by_store[t] == pytest.approx(r, rel=0.01) and by_api[t] == pytest.approx(r, rel=0.01)
    assert any("one stored run" in n for n in out["notes"])


def _lulesh_by_config(shared_data) -> dict[tuple, list]:
    import caliperreader

    out: dict[tuple, list] = {}
    for p in sorted((shared_data / LULESH).glob("*.cali")):
        r = caliperreader.CaliperReader()
        r.read(str(p))
        out.setdefault((r.globals.get("jobsize"), r.globals.get("problem_size")), []).append(p)
    return out


def test_stored_runs_of_different_configurations_are_never_one_median(shared_data, tmp_path):
    """Runs of 8 and 27 ranks are refused as one application, naming each configuration and how to
    pick; picked, the five trials of one configuration are one profile, each region the median
    over the trials, and the profile says which runs it took."""
    from xamm_data.store.store import Store
    from xamm_ingest import ingest_profiles

    by = _lulesh_by_config(shared_data)
    eight, twenty7 = by[("8", "30")], by[("27", "30")]
    assert len(eight) == 5 and len(twenty7) == 5
    store = Store(tmp_path / "store")
    rep = ingest_profiles("caliper", [*eight, *twenty7], _spec("lulesh2.0"), store=store)
    assert rep.frame.height == 10
    with pytest.raises(StoredProfileError, match=r"10 stored runs in 2 configurations.*ranks=8"):
        stored_profile("lulesh2.0", "quartz", store=store)
    prof = stored_profile("lulesh2.0", "quartz", store=store, select={"ranks": "8"})
    assert (
        prof.meta.ranks == 8
        and prof.meta.threads == 5
        and "median over 5 stored runs" in (prof.meta.time_from)
    )
    # independently: per region, the median of the five files' own exclusive times
    from xamm_ingest import read_regions

    trials = pl.concat(read_regions(p).regions.select("region", "exclusive_s") for p in eight)
    want = trials.group_by("region").agg(pl.col("exclusive_s").median())
    got = prof.regions.select("region", "exclusive_s").join(want, on="region", suffix="_want")
    assert got.height == want.height == prof.regions.height
    assert (got["exclusive_s"] - got["exclusive_s_want"]).abs().max() < 1e-12
    one = stored_profile("lulesh2.0", "quartz", store=store, select={"source_path": eight[0].name})
    assert one.runtime_s == pytest.approx(read_regions(eight[0]).runtime_s, rel=1e-12)


def test_the_command_line_refuses_a_mix_in_one_line(shared_data, tmp_path, capsys):
    from xamm_data.cli.commands import main as xamm
    from xamm_data.store.store import Store
    from xamm_ingest import ingest_profiles

    by = _lulesh_by_config(shared_data)
    files = by[("8", "30")][:2] + by[("8", "40")][:1]
    ingest_profiles("caliper", files, _spec("lulesh2.0"), store=Store(tmp_path / "s"))
    argv = ["predict", "--app", "lulesh2.0", "--machine", "quartz", "--store", str(tmp_path / "s")]
    assert xamm(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--select input_size=" in err
    assert xamm([*argv, "--select", "input_size=40", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {p["source_configuration"] for p in doc["programs"]} == {"8 ranks x 5 threads on 1 node"}


def test_rank_and_p_fastest_agree_where_intervals_overlap():
    """The issue's case: rank 1 (relR 0.0784) had a lower P(fastest) than rank 2 (0.0788), the
    intervals read as symmetric from their upper bounds. The contenders (intervals below the
    lowest upper bound) are ranked by P(fastest), read as split normals; the rest by relR."""
    from xamm_models.predictors.contract import rank

    answer = pl.DataFrame(
        {
            "row": [0] * 4,
            "target": ["a", "b", "c", "d"],
            "relR": [0.0784, 0.0788, 0.09, 2.0],
            "relR_lo": [0.0754, 0.0756, 0.081, 1.1],
            "relR_hi": [0.124, 0.127, 0.227, 5.0],
        }
    )
    out = rank(answer, 0.8, seed=0)
    first = out.filter(pl.col("target") != "d")
    assert first["rank"].to_list() == [1, 2, 3]
    assert (first["p_fastest"].diff().drop_nulls() <= 0).all()
    assert out.filter(pl.col("target") == "d")["rank"][0] == 4
    assert out["p_fastest"].sum() == pytest.approx(1.0)
    # a long upper tail buys no chance of being fastest: only the lower bound reaches down
    tail = answer.with_columns(
        pl.when(pl.col("target") == "a").then(10.0).otherwise(pl.col("relR_hi")).alias("relR_hi")
    )
    p_a = dict(rank(tail, 0.8, seed=0).select("target", "p_fastest").iter_rows())["a"]
    p_a0 = dict(out.select("target", "p_fastest").iter_rows())["a"]
    assert p_a <= p_a0 + 0.02


def test_a_thread_count_of_zero_is_unknown_and_said(shared_data):
    """A sorting team wrote num_threads=0 (the issue's '32 ranks x 0 threads'): no thread count,
    with a note that keeps the value, in the profile and the store alike."""
    from xamm_ingest import read_regions

    f = shared_data / SORT / "team14/14-peas-in-a-pod-master/bubble_sort/1024-16.cali"
    prof = read_regions(f)
    assert prof.meta.threads is None and prof.meta.configuration == "16 ranks x ? threads"
    assert any("num_threads='0'" in n for n in prof.notes)
    row = _stored_row("caliper", f, "grace")
    assert row["threads"] is None and row["ranks"] == 16
    assert {"name": "num_threads", "value": "0"} in row["extra_metadata"]


def test_the_machines_of_your_store_are_targets_by_default(shared_data, tmp_path, capsys):
    """A centre ingests a new machine's RAJAPerf run into its store: `xamm predict` answers for it
    beside the shipped machines, named as from your store; --no-store-targets leaves it out."""
    from rajaperf_writer import sim_run, write_caliper

    from xamm_data.cli.commands import main as xamm
    from xamm_data.store.store import Store
    from xamm_ingest import ingest_rajaperf

    runs = tmp_path / "runs"
    runs.mkdir()
    write_caliper(sim_run(1, seed=9, variants=(("Base_Seq", "default"),), ranks=None), runs,
                  "v2024.07.0", cluster="newbox")  # fmt: skip
    ingest_rajaperf(runs, store=Store(None), workers=1)  # the default store: $XAMM_HOME/store
    f = shared_data / README_PROFILE
    assert xamm(["predict", str(f), "--json"]) == 0
    progs = {p["target"]: p for p in json.loads(capsys.readouterr().out)["programs"]}
    assert progs["newbox:cpu"]["target_from"] == "your store"
    assert progs["dane:cpu"]["target_from"] == "shipped"
    assert progs["newbox:cpu"]["target_configuration"] == "? ranks x 1 thread, Base_Seq"
    assert xamm(["predict", str(f), "--json", "--no-store-targets"]) == 0
    left = json.loads(capsys.readouterr().out)["programs"]
    assert "newbox:cpu" not in {p["target"] for p in left}


def test_a_profile_reads_the_same_rows_in_the_same_order_every_time(shared_data):
    """Region order is the profile's tree order, never a hash table's, and names never depend on
    hatchet's node ids, which change from one read to the next."""
    from xamm_ingest import read_regions

    for d in HPCTOOLKIT:
        first = read_regions(shared_data / d).regions
        for _ in range(4):
            assert read_regions(shared_data / d).regions.equals(first), d
