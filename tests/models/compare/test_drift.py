"""Drift on runs :mod:`rajaperf_writer` writes (RAJAPerf v2024.07.0 CSV) of one simulated machine:
a planted regression of known size is found with an interval that holds it, noise alone raises
no alarm over 100 seeds, and what cannot be compared is said; the criteria file's schema."""

from __future__ import annotations

import json
import math
import warnings

import polars as pl
import pytest
from rajaperf_writer import MACHINE_KERNELS, machine_run, write_csv

from xamm_ingest import read_rajaperf
from xamm_models.compare.certificates.records import Criteria, read_criteria
from xamm_models.compare.history.drift import drift


def _runs(tmp_path, seeds, **kw) -> pl.DataFrame:
    dirs = []
    for s in seeds:
        d = tmp_path / f"run{s}"
        write_csv(machine_run(s, **kw), d, "v2024.07.0")
        dirs.append(str(d))
    return read_rajaperf(dirs, machine="sim", workers=1).frame


def test_a_planted_regression_is_found_with_its_size(tmp_path):
    before = _runs(tmp_path, (1, 2, 3))
    after = _runs(tmp_path, (4, 5, 6), slower={"Stream_TRIAD": 1.3, "Lcals": 1.15, "Apps_FIR": 0.7})
    d = drift(before, after, target="sim:cpu")
    k = {r["kernel"]: r for r in d.kernels.iter_rows(named=True)}
    assert k["Stream_TRIAD"]["verdict"] == "slower"
    assert k["Stream_TRIAD"]["lo"] < 1.3 < k["Stream_TRIAD"]["hi"]
    assert k["Apps_FIR"]["verdict"] == "faster" and k["Apps_FIR"]["lo"] < 0.7 < k["Apps_FIR"]["hi"]
    planted = {"Stream_TRIAD", "Apps_FIR"} | {n for n in k if n.startswith("Lcals")}
    assert all(r["verdict"] == "same" for n, r in k.items() if n not in planted)
    g = {r["group"]: r for r in d.groups.iter_rows(named=True)}
    assert g["Lcals"]["verdict"] == "slower" and g["Lcals"]["lo"] < 1.15 < g["Lcals"]["hi"]
    assert {n for n, r in g.items() if r["verdict"] != "same"} == {"Lcals"}
    assert d.regressions.get_column("kernel")[0] in planted
    # the ratio is the geometric mean over trials, recomputed here from the rows
    t = {s: before.filter(pl.col("kernel") == "Stream_TRIAD")["time_per_rep_s"] for s in "b"}
    t["a"] = after.filter(pl.col("kernel") == "Stream_TRIAD")["time_per_rep_s"]
    geo = {s: math.exp(sum(map(math.log, v)) / len(v)) for s, v in t.items()}
    assert k["Stream_TRIAD"]["ratio"] == pytest.approx(geo["a"] / geo["b"], rel=1e-9)


def test_noise_alone_raises_no_alarm_over_100_seeds(tmp_path):
    """Each seed: three runs against three more of the same machine. The family-wise level bounds
    the false-alarm rate at 10% without the tolerance; with it (the default) none is raised."""
    dirs = []
    for seed in range(100):
        for i in range(6):
            d = tmp_path / f"s{seed}" / f"r{i}"
            write_csv(machine_run(1000 * seed + i), d, "v2024.07.0")
        dirs.append(tmp_path / f"s{seed}")
    rows = read_rajaperf([str(tmp_path)], machine="sim", workers=1).frame
    alarms = {0.05: 0, 0.0: 0}
    for seed in range(100):
        part = rows.filter(pl.col("source_path").str.starts_with(f"s{seed}/"))
        side = pl.col("source_path").str.contains("/r[012]/")
        for tol in alarms:
            alarms[tol] += drift(part.filter(side), part.filter(~side), tolerance=tol).drifted
    assert alarms[0.05] == 0
    assert alarms[0.0] <= 10


def test_without_trials_to_measure_spread_nothing_is_flagged(tmp_path):
    before = _runs(tmp_path, (1,))
    after = _runs(tmp_path, (2,), slower={"Stream": 2.0})
    d = drift(before, after)
    assert not d.spread["known"]
    assert set(d.kernels["verdict"]) == {"unknown"}
    assert set(d.groups["verdict"]) == {"unknown"}
    stream = d.kernels.filter(pl.col("group") == "Stream")["ratio"]
    assert stream.min() > 1.8  # the ratio is still reported


def test_what_cannot_be_compared_is_listed_with_why(tmp_path):
    before = _runs(tmp_path, (1, 2))
    after = _runs(tmp_path, (3, 4))
    after = after.with_columns(
        pl.when(pl.col("kernel") == "Basic_DAXPY").then(pl.col("problem_size") * 2)
        .otherwise(pl.col("problem_size")).alias("problem_size")
    ).filter(pl.col("kernel") != "Apps_VOL3D")  # fmt: skip
    d = drift(before, after)
    why = {(r["side"], r["kernel"]): r["reason"] for r in d.unmatched.iter_rows(named=True)}
    assert why == {
        ("before", "Basic_DAXPY"): "configuration",
        ("after", "Basic_DAXPY"): "configuration",
        ("before", "Apps_VOL3D"): "not_run",
    }
    assert d.kernels.height == len(MACHINE_KERNELS) - 2
    with pytest.raises(ValueError, match="no kernel was measured alike"):
        drift(before, after.with_columns(pl.col("problem_size") + 1))


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('schema_version = 1\n[[criterion]]\nid = "a"\nkind = "throughput"\n', "at_least"),
        (
            'schema_version = 2\n[[criterion]]\nid = "a"\nkind = "slowdown"\nat_most = 0.1\n',
            "schema_version",
        ),
        ('[[criterion]]\nid = "a"\nkind = "slowdown"\nat_most = 0.1\nspeed = 3\n', "speed"),
        (
            '[[criterion]]\nid = "a"\nkind = "slowdown"\nat_most = 0.1\n'
            '[[criterion]]\nid = "a"\nkind = "slowdown"\nat_most = 0.2\n',
            "repeat",
        ),
        ("name = [", "not TOML"),
    ],
)
def test_a_bad_criteria_file_names_the_file_and_the_field(tmp_path, text, where):
    p = tmp_path / "criteria.toml"
    p.write_text(text)
    with pytest.raises(ValueError, match=where) as e:
        read_criteria(p)
    assert str(p) in str(e.value)


def test_criteria_limits():
    c = Criteria.model_validate(
        {
            "criterion": [
                {"id": "bw", "kind": "throughput", "at_least": 0.8, "groups": ["Stream"]},
                {"id": "slow", "kind": "slowdown", "at_most": 0.1},
            ]
        }  # fmt: skip
    )
    assert [x.limit for x in c.criterion] == pytest.approx([1.25, 1.1])
    assert c.size_ratio == 1.5


def test_the_drift_alarms_page_is_what_its_results_render():
    """docs/bench/drift.md is generated from docs/bench/drift.json (benchmarks/drift_alarms.py)."""
    import importlib.util
    import json
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    spec = importlib.util.spec_from_file_location(
        "drift_alarms", repo / "benchmarks" / "drift_alarms.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    results = json.loads((repo / "docs" / "bench" / "drift.json").read_text())
    assert (repo / "docs" / "bench" / "drift.md").read_text() == mod.page(results)
    noise = [r for r in results["simulated"] if r["case"] == "noise only"]
    assert {r["tolerance"]: r["flagged"] for r in noise}[0.0] <= 0.10  # the family-wise bound


def test_a_rerun_certificate_names_the_verdicts_an_update_changed(tmp_path, monkeypatch, capsys):
    """Two simulated machines alike; after an update one kernel group of the new one is 1.5x
    slower: the rerun's certificate fails that group, lists the change, judges only the runs
    added since, and the drift against the accepted state finds it."""
    from xamm_data.cli.commands import main
    from xamm_ingest.api import ingest_sources

    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "home"))
    store = tmp_path / "home" / "store"
    crit = tmp_path / "criteria.toml"
    crit.write_text('[[criterion]]\nid = "slow"\nkind = "slowdown"\nat_most = 0.2\n')
    accept = ["accept", "simnew", "--against", "simref", "--criteria", str(crit)]
    for machine, seeds, slower in (("simref", (1, 2, 3), None), ("simnew", (4, 5, 6), None),
                                   ("simnew", (7, 8, 9), {"Stream": 1.5})):  # fmt: skip
        if slower:
            assert main(accept) == 0  # certificate 1, before the update
        dirs = []
        for s in seeds:
            write_csv(machine_run(s, slower=slower), tmp_path / machine / f"r{s}", "v2024.07.0")
            dirs.append(tmp_path / machine / f"r{s}")
        ingest_sources("rajaperf", dirs, store=store, machine=machine, workers=1)
    capsys.readouterr()
    assert main([*accept, "--json", "--strict"]) == 1
    cert = json.loads(capsys.readouterr().out)
    assert (cert["number"], cert["previous"], cert["verdict"]) == (2, 1, "fail")
    assert cert["grounds"][0]["judged"] == "runs added since certificate 1"
    assert cert["grounds"][0]["sources"] == 3
    stream = next(r for r in cert["results"] if r["group"] == "Stream")
    assert (stream["before"], stream["verdict"], stream["basis"]) == (
        "pass", "fail", "rank (node unknown)")  # fmt: skip
    assert 1.3 < stream["relR"] < 1.7
    assert [line.split(": ")[0] for line in cert["changed"]] == ["slow / simref:cpu / Stream"]
    assert main(["compare", "simnew@now", "simnew@accepted", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {g["group"] for g in d["groups"] if g["verdict"] == "slower"} >= {"Stream"}


def test_a_node_s_cpu_and_gpu_are_accepted_apart(tmp_path):
    """Certificates are kept per machine; the previous one and the accepted state are the same
    target's, and a registered certificate never changes."""
    from xamm_models.compare.certificates.records import Certificate, CertificateRegistry, Ground

    crit = Criteria.model_validate({"criterion": [{"id": "s", "kind": "slowdown", "at_most": 0.1}]})
    ground = Ground(target="x", data_version=1, signature=None, data_sha256=None,
                    runs_sha256="0" * 64, sources=1, rows=1)  # fmt: skip

    def cert(target: str, verdict: str) -> Certificate:
        return Certificate(
            machine="newbox",
            new=target,
            refs=["ref:gpu"],
            family="Base",
            verdict=verdict,
            criteria=crit,
            criteria_sha256="0" * 64,
            grounds=[ground.model_copy(update={"target": target})],
            results=[],
        )

    reg = CertificateRegistry(tmp_path)
    for target, verdict in (("newbox:gpu", "pass"), ("newbox:cpu", "pass"), ("newbox:gpu", "fail")):
        reg.add(cert(target, verdict))
    assert reg.numbers("newbox") == [1, 2, 3]
    assert reg.latest("newbox", "newbox:cpu").number == 2
    assert reg.latest("newbox", "newbox:gpu").number == 3
    assert reg.accepted("newbox", "newbox:gpu").number == 1  # the failed one is not accepted
    assert reg.latest("newbox", "newbox:none") is None
    with pytest.raises(ValueError, match="never change"):
        reg.add(cert("newbox:cpu", "fail").model_copy(update={"number": 2}))
    assert reg.path("newbox", 1).stat().st_mode & 0o222 == 0  # written read-only


def test_the_diffs_bootstrap_is_each_draw_measured_on_its_own(tmp_path, monkeypatch):
    """``xamm amm diff``'s intervals make every draw's samples in one pass; each draw measured from
    its own concatenated runs gives the same figures."""
    import numpy as np

    from xamm_models.compare.history import versions

    monkeypatch.setattr(versions, "DRAWS", 25)
    runs = _runs(tmp_path, (1, 2, 3, 4))
    target = "sim:cpu"
    got = versions.figure_intervals(target, runs, seed=7)
    by_source = runs.partition_by("source_sha256", as_dict=True)
    sources = sorted(k[0] for k in by_source)
    rng = np.random.default_rng(7)
    draws = []
    for _ in range(25):
        pick = rng.choice(sources, size=len(sources), replace=True).tolist()
        part = pl.concat([by_source[(s,)] for s in pick])
        draws.append(versions._figures(target, part).get_column(target).to_numpy().astype(float))
    with warnings.catch_warnings():  # a figure no draw measured
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanquantile(np.array(draws), [0.05, 0.95], axis=0)
    measured = ~np.isnan(lo)
    assert measured.sum() >= 3  # bandwidths, flop rate: figures with a spread to compare
    assert np.allclose(got["lo"].to_numpy()[measured], lo[measured], rtol=1e-12)
    assert np.allclose(got["hi"].to_numpy()[measured], hi[measured], rtol=1e-12)
    assert (got["lo"] <= got["hi"]).all() and not np.allclose(lo[measured], hi[measured])


def test_a_diff_says_which_kernels_only_one_version_ran():
    from types import SimpleNamespace

    from xamm_models.compare.history.versions import SignatureDiff, _kernels_only

    def state(label, kernels):
        return SimpleNamespace(label=label, rows=pl.DataFrame({"kernel": kernels}))

    old = state("dane:cpu@1", ["Stream_TRIAD", "Basic_DAXPY", "Apps_FIR"])
    new = state("dane:cpu@2", ["Stream_TRIAD", "Basic_DAXPY", "Lcals_HYDRO_1D", "Lcals_EOS"])
    only = _kernels_only(old, new)
    assert only == {"dane:cpu@1": ["Apps_FIR"], "dane:cpu@2": ["Lcals_EOS", "Lcals_HYDRO_1D"]}
    said = SignatureDiff(old, new, pl.DataFrame(), None, "", only).kernels_said()
    assert said.splitlines() == [
        "kernels only in dane:cpu@1's runs (1): Apps_FIR",
        "kernels only in dane:cpu@2's runs (2): Lcals_EOS, Lcals_HYDRO_1D",
    ]
    same = _kernels_only(old, old)
    assert SignatureDiff(old, old, pl.DataFrame(), None, "", same).kernels_said() == ""
