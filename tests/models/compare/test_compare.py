"""``xamm compare``: real pairs from the shared data (the H100 node against the MI300A node, dane
against quartz, two BabelStream platforms) with every ratio recomputed from the stored rows by a
plain-Python path of its own; the flags on a machine built so that one kernel is 10x off its
physics; the report, the Thicket and the command line."""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest

from xamm_data.cli.commands import main
from xamm_data.store.store import Store
from xamm_ingest import read_babelstream
from xamm_models.compare.runs.comparison import compare_runs, interval
from xamm_models.compare.runs.matching import REASONS
from xamm_models.compare.runs.report import markdown
from xamm_models.compare.runs.targets import compare
from xamm_models.studies import physics_spread

UOB_2019 = "UoB-HPC+performance-portability/benchmarking/2019/babelstream"


@pytest.fixture(scope="module")
def store(xplat_store) -> Store:
    return xplat_store


def _samples(rows: list[dict], backend: str) -> dict[tuple[str, int], tuple[float, float, float]]:
    """(kernel, size) -> (mean seconds per iteration of the fastest tuning, bytes per iteration,
    flops per iteration), from stored rows of the Base family in ``backend``, by hand."""
    per: dict[tuple, list] = defaultdict(list)
    for r in rows:
        if r["variant"] != f"Base_{backend}" and r["variant"] != f"BabelStream_{backend}":
            continue
        it = r["iterations_per_rep"] or float(r["problem_size"])
        per[(r["kernel"], r["problem_size"], r["tuning"])].append(
            (r["time_per_rep_s"] / it, r["bytes_per_rep"] / it, r["flops_per_rep"] / it)
        )
    best: dict[tuple[str, int], tuple[float, float, float]] = {}
    for (kernel, size, _), v in sorted(per.items()):
        mean = sum(t for t, _, _ in v) / len(v)
        if (kernel, size) not in best or mean < best[(kernel, size)][0]:
            best[(kernel, size)] = (mean, v[0][1], v[0][2])
    return best


def _agree(a: float, b: float) -> bool:
    return max(a, b) == 0 or (min(a, b) > 0 and max(a, b) / min(a, b) <= 1.1)


def _expected(new: dict, ref: dict, ratio: float) -> dict[tuple[str, int], tuple[int, float]]:
    """(kernel, new size) -> (the reference size it meets, relR), by the rules written out."""
    out = {}
    for (kernel, size), (t, b, f) in new.items():
        near = [
            (abs(math.log(rs / size)), rs, rt)
            for (rk, rs), (rt, rb, rf) in ref.items()
            if rk == kernel and _agree(b, rb) and _agree(f, rf)
        ]
        near = [n for n in near if n[0] <= math.log(ratio) + 1e-12]
        if near:
            _, rs, rt = min(near)
            out[(kernel, size)] = (rs, t / rt)
    return out


def _check_against_rows(c, st: Store, new: str, ref: str, ratio: float = 1.5) -> None:
    """Every pair, every kernel's geometric mean and the unmatched list, against the stored rows."""
    rows = {
        t: st.read("benchmark_runs", t.split(":")[0]).filter(pl.col("device") == t.split(":")[1])
        for t in (new, ref)
    }
    exp = _expected(
        _samples(rows[new].to_dicts(), c.backends[new]),
        _samples(rows[ref].to_dicts(), c.backends[ref]),
        ratio,
    )
    got = c.pairs.filter(pl.col("ref") == ref)
    assert got.height == len(exp) > 10
    for r in got.iter_rows(named=True):
        rs, rel = exp[(r["kernel"], r["problem_size_new"])]
        assert r["problem_size_ref"] == rs and r["relR"] == pytest.approx(rel, rel=1e-9)
    for k in c.kernels.filter(pl.col("ref") == ref).iter_rows(named=True):
        rels = [v for (kernel, _), (_, v) in exp.items() if kernel == k["kernel"]]
        geo = math.exp(sum(map(math.log, rels)) / len(rels))
        assert k["relR"] == pytest.approx(geo, rel=1e-9) and k["sizes"] == len(rels)
        assert k["relR_min"] <= k["relR"] <= k["relR_max"]
    um = c.unmatched.filter((pl.col("ref") == ref) & (pl.col("side") == "new"))
    assert set(zip(um.get_column("kernel"), um.get_column("problem_size"))).isdisjoint(exp)


def test_h100_against_mi300a_every_ratio_recomputed(store):
    c = compare("h100-node:gpu", ["mi300a-spx:gpu"], store=store.root)
    assert c.family == "Base"
    assert c.backends == {"h100-node:gpu": "CUDA", "mi300a-spx:gpu": "HIP"}
    _check_against_rows(c, store, "h100-node:gpu", "mi300a-spx:gpu")
    assert set(c.groups.get_column("group")) == set(c.kernels.get_column("group"))
    g = c.groups.filter(pl.col("kernels") >= 2)
    assert ((g["relR_lo"] <= g["relR"]) & (g["relR"] <= g["relR_hi"])).all()
    assert c.intervals == {"GPU->GPU": interval("GPU->GPU")}


def test_dane_against_quartz_every_ratio_recomputed(store):
    """dane ran 112 ranks of about 75k elements each, quartz one rank of 1M and more: no size is
    within the benchmark's 1.5x, and the comparison says so; widened, every ratio holds."""
    strict = compare("dane", ["quartz"], store=store.root)
    assert strict.new == "dane:cpu" and strict.refs == ["quartz:cpu"]
    assert strict.pairs.height == 0 and strict.kernels.height == 0
    dane = strict.unmatched.filter(pl.col("side") == "new")
    assert dane.get_column("reason").value_counts().sort("reason").rows() == [
        ("definition", 15), ("not_run", 8), ("size", 50)
    ]  # fmt: skip
    assert strict.configurations["dane:cpu"] == "112 ranks x 1 thread, Base_Seq"
    c = compare("dane", ["quartz"], store=store.root, size_ratio=16)
    assert c.backends == {"dane:cpu": "Seq", "quartz:cpu": "Seq"}  # the only back-end each ran
    _check_against_rows(c, store, "dane:cpu", "quartz:cpu", ratio=16)
    physics = c.physics()
    assert physics.columns == ["figure", "dane:cpu", "quartz:cpu"]
    assert c.missing() == {"dane:cpu": [], "quartz:cpu": []}
    assert "problem sizes matched within 16x" in markdown(c)


def _babelstream(shared_data, platform: str) -> pl.DataFrame:
    root = shared_data / UOB_2019 / platform
    return read_babelstream(root, machine=platform, workers=1).frame


def _log_averages(root: Path) -> dict[str, float]:
    """Kernel -> average seconds of the CUDA run, read from the log by a parse of its own."""
    out = {}
    for p in sorted(root.rglob("*")):
        text = p.read_text(errors="replace") if p.is_file() else ""
        if "BabelStream" not in text or "CUDA" not in text:
            continue
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 5 and parts[0] in ("Copy", "Mul", "Add", "Triad", "Dot"):
                out[parts[0]] = float(parts[4])
        if out:
            return out
    return out


def test_two_babelstream_platforms_compare_on_bandwidth_alone(shared_data, tmp_path):
    st = Store(tmp_path / "s")
    for plat in ("v100-isambard", "p100-isambard"):
        st.write(_babelstream(shared_data, plat), "benchmark_runs")
    c = compare("v100-isambard", ["p100-isambard"], store=st.root, family="BabelStream")
    assert c.backends == {"v100-isambard:gpu": "CUDA", "p100-isambard:gpu": "CUDA"}
    new = _log_averages(shared_data / UOB_2019 / "v100-isambard")
    ref = _log_averages(shared_data / UOB_2019 / "p100-isambard")
    got = {k: v for k, v in zip(c.kernels["kernel"], c.kernels["relR"], strict=True)}
    assert set(got) == {f"Stream_{k.upper()}" for k in new}
    for k in new:  # one array size each: the ratio of the logs' average times
        assert got[f"Stream_{k.upper()}"] == pytest.approx(new[k] / ref[k], rel=1e-6)
    assert c.groups.get_column("group").to_list() == ["Stream"]
    missing = c.missing()
    for t in c.backends:
        assert [m.split(":")[0] for m in missing[t]] == ["flop rate", "launch overhead"]
    phys = c.physics().filter(pl.col("figure").str.starts_with("flop rate"))
    assert phys.row(0)[1:] == (None, None)


def _twin(rows: pl.DataFrame, kernel: str, factor: float) -> pl.DataFrame:
    """``rows`` as another machine, with ``kernel`` ``factor`` times slower."""
    slow = pl.col("kernel") == kernel
    return rows.with_columns(
        pl.lit("twin").alias("machine"),
        pl.when(slow).then(pl.col("time_per_rep_s") * factor).otherwise(pl.col("time_per_rep_s")),
    )


def test_a_kernel_ten_times_off_its_physics_is_the_one_flagged(store):
    quartz = store.read("benchmark_runs", "quartz")
    c = compare_runs(
        {"twin:cpu": _twin(quartz, "Basic_DAXPY", 10.0), "quartz:cpu": quartz},
        "twin:cpu",
        ["quartz:cpu"],
    )
    assert c.flags.get_column("kernel").to_list() == ["Basic_DAXPY"]
    flag = c.flags.row(0, named=True)
    assert flag["relR"] == pytest.approx(10.0, rel=1e-9) and flag["slower_than_predicted"]
    assert flag["departure"] == pytest.approx(10.0, rel=0.1)  # the twin's signature barely moves
    others = c.kernels.filter(pl.col("kernel") != "Basic_DAXPY")
    assert others.height > 50 and not others.get_column("flagged").any()
    # ten times faster is flagged too, after every kernel slower than predicted
    c2 = compare_runs(
        {
            "twin:cpu": _twin(_twin(quartz, "Basic_DAXPY", 10.0), "Stream_TRIAD", 0.1),
            "quartz:cpu": quartz,
        },
        "twin:cpu",
        ["quartz:cpu"],
    )
    assert c2.flags.get_column("kernel").to_list() == ["Basic_DAXPY", "Stream_TRIAD"]


def _runs(machine: str, rows: list[tuple[str, int, float, float]]) -> pl.DataFrame:
    """Minimal benchmark rows: (kernel, size, seconds per rep, bytes per rep)."""
    return pl.DataFrame(
        {
            "machine": machine, "device": "cpu", "kernel": [r[0] for r in rows],
            "group": [r[0].split("_")[0] for r in rows], "variant": "Base_Seq", "backend": "Seq",
            "tuning": "default", "problem_size": [r[1] for r in rows],
            "iterations_per_rep": [float(r[1]) for r in rows],
            "time_per_rep_s": [r[2] for r in rows], "bytes_per_rep": [r[3] for r in rows],
            "flops_per_rep": 0.0, "kernels_per_rep": 1.0,
        }
    )  # fmt: skip


def test_what_is_not_matched_says_why():
    new = _runs("a", [("Basic_A", 1000, 1.0, 8e3), ("Basic_B", 1000, 1.0, 8e3),
                      ("Basic_C", 1000, 1.0, 16e3), ("Basic_D", 1000, 1.0, 8e3)])  # fmt: skip
    ref = _runs("b", [("Basic_A", 1100, 2.0, 8.8e3), ("Basic_C", 1000, 1.0, 8e3),
                      ("Basic_D", 4000, 1.0, 32e3), ("Basic_E", 10, 1.0, 80.0)])  # fmt: skip
    c = compare_runs({"a:cpu": new, "b:cpu": ref}, "a:cpu", ["b:cpu"])
    assert c.pairs.select("kernel", "relR").rows() == [("Basic_A", pytest.approx(0.5 * 1.1))]
    why = {(r["side"], r["kernel"]): r["reason"] for r in c.unmatched.iter_rows(named=True)}
    assert why == {
        ("new", "Basic_B"): "not_run",
        ("new", "Basic_C"): "definition",
        ("new", "Basic_D"): "size",
        ("ref", "Basic_C"): "definition",
        ("ref", "Basic_D"): "size",
        ("ref", "Basic_E"): "not_run",
    }
    assert set(c.unmatched.get_column("why")) <= set(REASONS.values())


def test_no_common_family_or_an_ambiguous_machine_is_a_clear_error():
    new = _runs("a", [("Basic_A", 1000, 1.0, 8e3)])
    ref = _runs("b", [("Basic_A", 1000, 1.0, 8e3)]).with_columns(
        pl.lit("RAJA_Seq").alias("variant")
    )
    with pytest.raises(ValueError, match=r"no variant family all targets ran: a:cpu ran Base; "):
        compare_runs({"a:cpu": new, "b:cpu": ref}, "a:cpu", ["b:cpu"])
    with pytest.raises(ValueError, match=r"h100-node has runs on cpu and gpu; name one"):
        compare("h100-node", ["lassen"])


def test_the_spread_file_is_what_the_study_measures():
    """Regenerated by ``python -m xamm_models.studies.physics_spread``."""
    fresh = physics_spread.spread(physics_spread.departures(physics_spread.embedded_runs()))
    stored = json.loads(physics_spread.SPREAD_FILE.read_text())
    assert stored == json.loads(json.dumps(fresh))
    for lo, hi in stored["quantiles"].values():
        assert lo < 0 < hi  # machines that behave as modelled are inside
    page = (Path(__file__).resolve().parents[3] / "docs" / "compare.md").read_text()
    assert physics_spread.page_block(stored) in page


def test_json_report_and_thicket_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "report"
    argv = ["compare", "h100-node:gpu", "mi300a-spx:gpu", "lassen", "--out", str(out),
            "--thicket", str(tmp_path / "tk.json"), "--json"]  # fmt: skip
    assert main(argv) == 0
    got = json.loads(capsys.readouterr().out)
    c = compare("h100-node:gpu", ["mi300a-spx:gpu", "lassen"])
    assert got["kernels"] == json.loads(json.dumps(c.kernels.to_dicts()))
    assert got["groups"] == json.loads(json.dumps(c.groups.to_dicts()))
    assert [f["kernel"] for f in got["flags"]] == c.flags.get_column("kernel").to_list()
    for png in ("ratios.png", "bandwidth.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (out / "report.md").read_text()
    assert md == markdown(c)
    for r in c.groups.iter_rows(named=True):  # each group's row, as the table prints it
        assert re.search(
            rf"\| {r['ref']} \| {r['group']} \| {r['kernels']} \| {r['relR']:.3g} \|", md
        )
    import thicket

    tk = thicket.Thicket.from_json((tmp_path / "tk.json").read_text())
    assert list(tk.metadata["target"]) == ["h100-node:gpu", "mi300a-spx:gpu", "lassen:gpu"]
    new = tk.dataframe.xs(0, level="profile")
    relr = dict(zip(new["name"], new["relR@lassen:gpu"], strict=True))
    for r in c.kernels.filter(pl.col("ref") == "lassen:gpu").iter_rows(named=True):
        assert relr[r["kernel"]] == pytest.approx(r["relR"], rel=1e-12)


def test_command_line_errors_exit_1_or_2(capsys):
    assert main(["compare", "h100-nod:gpu", "lassen"]) == 1
    assert "Did you mean 'h100-node'" in capsys.readouterr().err
    assert main(["compare", "mi300a-spx", "lassen"]) == 1
    assert "name one: mi300a-spx:cpu, mi300a-spx:gpu" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["compare", "lassen"])
    assert e.value.code == 2


def test_both_views_a_node_of_each_where_the_registry_knows_both(store):
    """relR is one rank against one rank as the runs ran; relR_node a whole node against a whole
    node: x k(ref) / k(new), k the ranks of a node measured whole. The H100 and MI300A nodes'
    GPU runs both fill their 4 GPUs (one rank each), so their node relR is their rank relR."""
    c = compare("h100-node:gpu", ["mi300a-spx:gpu"], store=store.root)
    assert c.node_view and {s.basis for s in c.scales.values()} == {"node"}
    got = c.pairs.select("relR", "relR_node")
    assert (got["relR_node"] / got["relR"] - 1).abs().max() < 1e-12
    assert c.groups["relR_node"].to_list() == pytest.approx(c.groups["relR"].to_list())


def test_a_partition_mode_with_six_times_the_ranks_is_six_times_the_node(store):
    """An MI300A node in CPX mode runs 24 ranks, one per GPU partition, where SPX runs 4: per rank
    the same kernel takes as long, so per rank CPX looks no faster, while its node does 6x the
    work (the issue's '3.9x slower' per rank with no node view). Built from the SPX runs with each
    rank's time kept, ranks and GPUs 24, and the mode's facts added to the registry."""
    from xamm_data.machines import registry as machines

    spx = store.read("benchmark_runs", "mi300a-spx").filter(pl.col("device") == "gpu")
    cpx = spx.with_columns(
        pl.lit("mi300a-cpx").alias("machine"), pl.lit(24).alias("ranks"), pl.lit(24).alias("gpus")
    )
    machines.add_facts("mi300a-cpx", gpu="AMD MI300A (CDNA 3, CPX mode)", gpus_per_node=24,
                       cores_per_node=96, source="test: SPX's node in CPX mode")  # fmt: skip
    c = compare_runs({"mi300a-cpx:gpu": cpx, "mi300a-spx:gpu": spx}, "mi300a-cpx:gpu",
                     ["mi300a-spx:gpu"])  # fmt: skip
    assert c.scales["mi300a-cpx:gpu"].factor == 24 and c.scales["mi300a-spx:gpu"].factor == 4
    assert (c.pairs["relR"] - 1).abs().max() < 1e-12
    node = c.pairs["relR_node"].to_numpy()
    assert node == pytest.approx([4 / 24] * len(node))
    assert "24 ranks on all 24 GPUs: the node measured" in c.scales["mi300a-cpx:gpu"].why


def test_dane_against_quartz_a_node_recomputed_from_the_facts(store):
    """dane's runs fill its 112 cores; quartz's use one of 36, so its node is scaled: each core
    computes and streams from cache on its own, but beyond the node's 90 MiB of cache the node
    streams at most its 153.6 GB/s peak. Every pair's node relR, recomputed from those facts and
    the two signatures."""
    c = compare("dane", ["quartz"], store=store.root, size_ratio=16)
    sigs = c.signatures
    assert c.scales["dane:cpu"].factor == 112 and c.scales["quartz:cpu"].factor == 36
    for r in c.pairs.iter_rows(named=True):
        k = {}
        for side, t, cores, cache, peak in (("new", "dane:cpu", 112, 210, 614.4e9),
                                            ("ref", "quartz:cpu", 36, 90, 153.6e9)):  # fmt: skip
            ws = r[f"bytes_per_rep_{side}"] / max(r[f"kernels_per_rep_{side}"] or 1, 1)
            streaming = r[f"flops_per_rep_{side}"] < r[f"bytes_per_rep_{side}"]
            k[side] = cores
            if streaming and ws * cores > cache * 2**20:
                k[side] = min(cores, peak / float(sigs[t].bandwidth([ws])[0]))
        assert r["relR_node"] == pytest.approx(r["relR"] * k["ref"] / k["new"], rel=1e-9)


def test_the_ratios_plot_names_every_marker_in_its_legend_once():
    """ratios.png: a series per reference, the physics' prediction (grey hollow circles) and the
    flags (red circles) each named once in the legend, whatever the number of references."""
    from xamm_models.compare.runs.report import ratios_figure

    c = compare("h100-node:gpu", ["mi300a-spx:gpu", "lassen"])
    labels = [t.get_text() for t in ratios_figure(c).axes[0].get_legend().get_texts()]
    want = [f"vs {r}" for r in c.refs] + ["predicted by the physics"]
    want += ["flagged"] if c.flags.height else []
    assert sorted(labels) == sorted(want)


def test_a_bare_machine_with_a_gpu_and_its_host_is_accepted_on_the_references_device():
    """A GPU run's host rows (Base_Seq) give the machine runs on both devices: accepted against a
    GPU reference, the GPU is judged; against references of two devices it must be named."""
    from xamm_models.compare.certificates.acceptance import accept

    crit = Path(__file__).resolve().parents[3] / "examples" / "criteria.toml"
    cert = accept("h100-node", ["lassen:gpu"], crit, record=False)
    assert cert.new == "h100-node:gpu" and cert.refs == ["lassen:gpu"]
    assert cert.ground().target == "h100-node:gpu"
    with pytest.raises(ValueError, match=r"h100-node has runs on cpu and gpu; name one"):
        accept("h100-node", ["lassen:gpu", "quartz:cpu"], crit, record=False)
