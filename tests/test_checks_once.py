"""Each check runs once, at its boundary: an ingest checks every source once in its stages and the
store only what its merge changes; each file is parsed once; a model folder is resolved and
verified once per load; a prediction measures the targets' benchmark runs once and hands them down.
Counted, not timed."""

from __future__ import annotations

import dataclasses
import json

import polars as pl
import pytest
from call_counts import counting
from rajaperf_writer import sim_run, write_caliper, write_csv

from xamm_data.hub.datasets import load_dataset
from xamm_data.store.store import Store

CHECKS = (
    "xamm_data.tables.validate:validate",
    "xamm_data.tables.validate:conform",
    "xamm_data.store.rows:renumber_trials",
    "xamm_data.store.rows:dedupe_sources",
)
PARSE = "xamm_ingest.readers.cali_format:parse_cali"


def _runs(d, seed=3):
    """A RAJAPerf run's CSV files and its two ``.cali`` files in one directory (the cluster, in
    the Caliper files, names the machine)."""
    run = sim_run(2, seed=seed)
    write_csv(run, d, "v2024.07.0")
    return write_caliper(run, d, "v2024.07.0")


def _ingest(argv):
    from xamm_ingest.cli import main  # loaded first: every module the count wraps is imported

    with counting(*CHECKS, PARSE) as calls:
        rc = main(argv)
    return rc, calls


@pytest.fixture(autouse=True)
def _loaded():
    """Import what the counts wrap before counting (a module imported inside the count would keep
    the originals)."""
    import xamm_data.store.append  # noqa: F401
    import xamm_data.store.write  # noqa: F401
    import xamm_ingest.formats.rajaperf  # noqa: F401
    import xamm_ingest.pipeline.commit  # noqa: F401
    import xamm_ingest.readers.caliper_files  # noqa: F401
    import xamm_ingest.readers.rajaperf_caliper  # noqa: F401


def test_a_rajaperf_ingest_checks_once_and_parses_each_cali_once(tmp_path):
    cali = _runs(tmp_path / "runs")
    argv = ["rajaperf", str(tmp_path / "runs"), "--store", str(tmp_path / "st"), "--quiet"]
    rc, calls = _ingest(argv)
    assert rc == 0
    # the .cali beside the CSV files names the machine without a parse of its own
    assert calls[PARSE] == len(cali) == 2
    assert {c: calls[c] for c in CHECKS} == dict.fromkeys(CHECKS, 1)
    rows = Store(tmp_path / "st").scan("benchmark_runs").collect()
    assert set(rows.get_column("machine")) == {"sim-node"} and rows.height == 8


def test_a_second_ingest_into_the_store_checks_only_its_own_rows(tmp_path):
    _runs(tmp_path / "a", seed=3)
    _runs(tmp_path / "b", seed=4)
    st = str(tmp_path / "st")
    assert _ingest(["rajaperf", str(tmp_path / "a"), "--store", st, "--quiet"])[0] == 0
    before = Store(st).scan("benchmark_runs").collect()
    rc, calls = _ingest(["rajaperf", str(tmp_path / "b"), "--store", st, "--quiet"])
    assert rc == 0 and calls["xamm_data.tables.validate:validate"] == 1
    # the merge numbers again only the configurations both runs hold: as a whole renumbering would
    after = Store(st).scan("benchmark_runs").collect()
    assert after.height == 2 * before.height
    key = ["kernel", "variant", "tuning", "problem_size"]
    trials = after.group_by(key).agg(pl.col("trial").sort()).get_column("trial").to_list()
    assert all(t == list(range(len(t))) for t in trials) and max(map(len, trials)) == 2


def test_an_archive_ingest_checks_each_batch_once(tmp_path):
    _runs(tmp_path / "runs")
    argv = ["rajaperf", str(tmp_path / "runs"), "--store", str(tmp_path / "st"), "--quiet"]
    rc, calls = _ingest([*argv, "--batch-files", "100"])
    assert rc == 0 and calls[PARSE] == 2
    assert calls["xamm_data.tables.validate:validate"] == 1
    assert calls["xamm_data.tables.validate:conform"] == 1


def test_a_csv_run_beside_caliper_files_naming_no_cluster_is_refused_saying_so(tmp_path, capsys):
    cali = _runs(tmp_path / "runs")
    for f in cali:
        f.write_text(f.read_text().replace("sim-node", ""))
    rc, calls = _ingest(["rajaperf", str(tmp_path / "runs"), "--dry-run", "--json"])
    assert calls[PARSE] == 2
    out = json.loads(capsys.readouterr().out)
    (csv,) = [r for r in out["rejected_files"] if r["path"].endswith(".csv")]
    assert "none of the 2 Caliper file(s) beside them names a cluster" in csv["reason"]


def test_hashing_a_task_keeps_every_other_field(tmp_path):
    from xamm_ingest.pipeline.stages import hashed
    from xamm_ingest.sources import Task

    (tmp_path / "x.cali").write_text("x")
    t = Task("rajaperf", tmp_path / "x.cali", tmp_path, None, None, (("a", 1),), "why",
             machine_beside=True)  # fmt: skip
    h = hashed(t)
    assert h.sha256 and h.link is False  # the open that hashed it found no link
    assert dataclasses.replace(h, sha256=None, link=None) == t


def test_load_model_resolves_and_verifies_a_folder_once(tmp_path):
    from xamm_models.predictors.kinds import load_model

    targets = (
        "xamm_data.hub.models:snapshot_dir",
        "xamm_data.hub.files:verify_folder",
        "xamm_data.hub.snapshot:model_dir",
    )
    import xamm_models.predictors.contract  # noqa: F401  (imported before the count)

    with counting(*targets) as calls:
        model = load_model("xamm/default")
    assert calls == {targets[0]: 1, targets[2]: 1}
    model.save_pretrained(tmp_path / "m")
    with counting(*targets) as calls:
        type(model).from_pretrained(str(tmp_path / "m"))
        load_model(str(tmp_path / "m"))
    assert calls == {targets[0]: 2, targets[1]: 2}  # one each per load


def test_a_prediction_measures_the_target_runs_once():
    from xamm_data.tables.regions import RegionProfile
    from xamm_models.predictors.composed import predict_profile
    from xamm_models.predictors.kinds import load_model

    model = load_model("xamm/default")
    runs = load_dataset("quartz").with_columns(pl.lit("newbox").alias("machine"))
    runs = runs.filter(pl.col("variant") == runs.get_column("variant")[0])
    profile = RegionProfile.from_runtime("app", 12.0, source="quartz:cpu")
    measure = (
        "xamm_models.benchmark.dataset:samples_from_runs",
        "xamm_models.machines.physics:physics_signatures",
    )
    with counting(*measure) as calls:
        pred = predict_profile(profile, model, target_benchmarks=runs, store=False)
    assert "newbox:cpu" in set(pred.programs.get_column("target"))
    assert calls == dict.fromkeys(measure, 1)
    pairs_profiles = pl.DataFrame(
        {"app": ["a"], "runtime_s": [1e-3], "bytes_per_rep": [8e6], "flops_per_rep": [1e6],
         "iterations_per_rep": [1e6], "f_log_s_per_iter": [-9.0], "f_arith_intensity": [0.125],
         "f_log_problem_size": [6.0]}
    )  # fmt: skip
    with counting(*measure) as calls:
        got = model.predict(pairs_profiles, "quartz:cpu", ["newbox:cpu"], target_benchmarks=runs)
    assert got.height == 1 and calls == dict.fromkeys(measure, 1)
