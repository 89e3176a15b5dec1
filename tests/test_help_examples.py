"""Every example in every ``--help`` runs, as written.

The examples are read from the parsers themselves (every command and subcommand of ``xamm`` and
``xamm-ingest``), so a new example is run as soon as it is written. They run in order, in one
sandbox holding what a user would have there: RAJAPerf runs (``./runs``: the public quartz Caliper
files), application profiles, the public data as ``../shared/data``, a store, a local Hub server for
the ``push``/``pull`` examples, a fresh ``$XAMM_HOME``. One command runs through its console
script's entry point in this process; pipes, lists and Hub commands run in bash (``as_written``).
``<commit>`` is the commit the example's preceding push printed. The few examples that take
minutes each (the whole evaluation, the zoo build and push) are listed in ``LONG`` with the test
that runs their code at a reduced size; they are parsed here, not run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import as_written
import polars as pl
import pytest

pytest.importorskip("torch", reason="the models extra (torch) is not installed")

REPO = Path(__file__).resolve().parents[1]
TIMES: dict[str, float] = {}  # seconds per example, for `pytest -s` and the durations report
BIN = Path(sys.executable).parent

LONG = {
    "xamm eval --data-dir ../shared/data --out eval-out": "the whole evaluation (minutes); "
    "tests/models/benchmark/test_evaluation.py runs the harness with fewer entries",
    "xamm eval --experiment 3 --store ./store --json": "experiment 3 on every fold (minutes); "
    "tests/models/benchmark/test_evaluation.py runs a small run",
    "xamm zoo build --data-dir ../shared/data --out zoo-out": "every artefact (minutes); "
    "tests/models/zoo/test_zoo.py builds the zoo with 3 epochs",
    "xamm zoo build --data-dir ../shared/data --out zoo-out --eval-results "
    "docs/eval/results.json --snapshot xamm_data/hub/snapshot": "as above, and it rewrites the "
    "package's snapshot; tests/models/zoo/test_zoo.py checks the rebuilt snapshot byte for byte",
    "xamm zoo push --zoo zoo-out --org my-org": "needs a built zoo; "
    "tests/models/zoo/test_zoo.py pushes one to the local Hub and pulls every artefact back",
    "xamm eval --seed 1 --no-lomo --no-loko --data-dir ../shared/data --out seed1": "the "
    "kernel-group folds with every torch entry (minutes); tests/models/benchmark/test_seeds.py "
    "merges runs of several seeds",
    "xamm eval --data-dir ../shared/data --quick --out q": "about a minute, over the suite's "
    "time budget; tests/models/benchmark/test_evaluation.py runs the harness small",
}

# The order examples run in: each may use what an earlier one made.
ORDER = [
    "xamm schemas export",
    "xamm schemas export --check",
    "xamm machines list",
    "xamm machines list 'mi*' --json",
    "xamm machines show dane",
    "xamm machines add newbox --cpu 'AMD EPYC 9654' --sockets 2 --cores-per-node 192 "
    "--memory-bandwidth-gbs 921.6 --source 'vendor specification'",
    "xamm datasets list 'xeon*'",
    "xamm-ingest rajaperf ./runs",
    "xamm-ingest rajaperf ./runs --machine quartz",
    "xamm-ingest rajaperf ./runs --dry-run --json",
    "xamm-ingest rajaperf ./runs --strict",
    "xamm-ingest rajaperf ./runs --bound max_time_per_rep_s=1e6",
    "xamm-ingest rajaperf ./h100-runs --machine h100-node",
    "xamm-ingest babelstream ./stream-runs --machine v100-isambard --dry-run",
    "xamm-ingest babelstream ./uob --path-pattern 'babelstream-(?P<machine>[a-z0-9]+)_' --dry-run",
    "xamm-ingest hpctoolkit ./hpctoolkit-lulesh-database --app LULESH --machine quartz "
    "--param size=30 --ranks 8",
    "xamm-ingest caliper ./profiles --app Laghos --machine ruby --time-unit usec",
    "xamm-ingest caliper ./profiles --app Laghos --machine ruby --time-unit usec --map "
    "variant=implementation --batch-files 500",
    "xamm-ingest table samples.csv --mapping mapping.toml",
    "xamm datasets list",
    "xamm datasets list 'h100*' --json",
    "xamm datasets show quartz",
    "xamm datasets show lassen --kind benchmark_runs",
    "xamm datasets show quartz --kind app_profiles --json",
    "xamm datasets history quartz",
    "xamm datasets show quartz --version 1",
    "xamm datasets verify",
    "xamm datasets verify --json",
    "xamm datasets export quartz --thicket quartz.json",
    "xamm-ingest rajaperf quartz.json",
    "xamm-ingest rajaperf tk.json",
    "xamm datasets push quartz --repo org/xamm-data --license mit",
    "xamm datasets push h100-node --repo org/xamm-data --license bsd-3-clause --version 1",
    "xamm amm build",
    "xamm amm build quartz --aggregation variance",
    "xamm amm list",
    "xamm amm list --json",
    "xamm amm show quartz:cpu",
    "xamm amm show quartz:cpu@1",
    "xamm amm show h100-node:gpu@1 | head",
    "xamm amm show h100-node:gpu --kind physics",
    "xamm compare h100-node:gpu mi300a-spx:gpu",
    "xamm compare dane quartz --size-ratio 16 --json",
    "xamm compare h100-node:gpu mi300a-spx:gpu lassen --out acceptance/",
    "xamm compare h100-node:gpu lassen --thicket compare.json",
    "xamm-ingest rajaperf ./dane-accepted --machine dane",
    "xamm amm build dane --kind physics",
    "xamm accept dane --against quartz --criteria criteria.toml --out acceptance/",
    "xamm-ingest rajaperf ./dane-update --machine dane",
    "xamm amm build dane --kind physics",
    "xamm amm history dane",
    "xamm amm history dane:cpu --wide",
    "xamm amm history dane:cpu --json",
    "xamm amm diff dane:cpu@1 dane:cpu@2",
    "xamm amm build epyc-7742 --kind specifications",
    "xamm amm diff dane:cpu@1 dane:cpu@2 --json",
    "xamm compare dane:cpu@now dane:cpu@accepted",
    "xamm compare dane:cpu@now dane:cpu@accepted --out drift/",
    "xamm compare dane:cpu --since 2025-05-14T15:42 --tolerance 0.1 --json",
    "xamm accept dane --against quartz --criteria criteria.toml --no-record --json",
    "xamm accept verify dane",
    "xamm report --out site/ --machine dane",
    "xamm report --out site/ --machine dane --profile lulesh.cali --json",
    "xamm amm push --repo org/xamm-amms",
    "xamm amm pull --repo org/xamm-amms --revision <commit>",
    "xamm amm plot --out amm-tsne.png",
    "xamm zoo list",
    "xamm zoo list --json",
    "xamm predict lulesh.cali",
    "xamm predict lulesh.cali --regions --plot lulesh.png --target lassen:gpu",
    "xamm predict regions.csv --source quartz:cpu",
    "xamm predict ./hpctoolkit-lulesh-database --source quartz:cpu --json",
    "xamm predict ./cycles-only-database --source quartz:cpu --clock-ghz 2.1",
    "xamm predict --app LULESH --machine quartz",
    "xamm predict regions.csv --source mi300a-spx:gpu --config rank --target-benchmarks "
    "./dane-store",
    "xamm predict --app LULESH --machine quartz --select ranks=8",
    "xamm predict profiles.parquet --source quartz:cpu --target lassen:gpu --target "
    "h100-node:gpu --model xamm/default",
    "xamm predict profiles.parquet --source quartz:cpu --target newbox:gpu --model xamm/default "
    "--target-benchmarks ./newbox-store --family gpu",
    "xamm predict ./store --source quartz:cpu --target lassen:gpu --target h100-node:gpu "
    "--model xamm/default --rank --json",
    "xamm run config.yml",
    "xamm adapt labelled.parquet --model ./xamm-model --platform quartz-topdown:cpu --out "
    "./topdown-model",
    "xamm adapt labelled.parquet --model org/xamm-xamm --revision <commit> --platform "
    "quartz-topdown:cpu --features topdown_retiring,topdown_memory_bound,f_log_s_per_iter "
    "--unlabelled topdown-profiles.parquet --out m --json",
    "xamm predict topdown-profiles.parquet --model ./topdown-model --source quartz-topdown:cpu "
    "--target lassen:gpu --rank",
    "xamm schedule-sim --store ./store --nodes h100-node:gpu=2 --nodes lassen:gpu=4 --nodes "
    "quartz:cpu=8",
    "xamm schedule-sim --store ./store --source mi300a-spx:cpu --nodes h100-node:gpu=2 --nodes "
    "quartz:cpu=8 --jobs 500 --load 0.5 --json",
    "xamm eval --page docs/evaluation.md --summary README.md --out docs/eval",
    "xamm store optimize",
    "xamm store optimize --kind benchmark_runs",
    "xamm store vacuum --dry-run",
    "xamm store vacuum --retention-hours 168 --dry-run",
    "xamm store optimize; xamm store vacuum",
    "xamm store vacuum --retention-hours 0",
    "xamm-ingest benchpark ./benchpark-root --dry-run --json",
    "xamm-ingest benchpark ./benchpark-root --machine dane",
]


def _parsers():
    from xamm_data.cli.commands import build_parser
    from xamm_ingest.cli import build_parser as ingest_parser

    def walk(p):
        yield p
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for sp in a.choices.values():
                    yield from walk(sp)

    yield from walk(build_parser()[0])
    yield from walk(ingest_parser())


def help_examples() -> set[str]:
    """Every example command in every epilog (continuation lines joined, comments dropped)."""
    found = set()
    for p in _parsers():
        text = re.sub(r"\\\n\s*", "", p.epilog or "")
        for line in text.splitlines():
            m = re.match(r"\s+((?:xamm|xamm-ingest)\s.*?)(?:\s{2,}\S.*)?$", line)
            if m:
                found.add(m.group(1).strip())
    return found


def test_every_help_example_is_run_here_or_named_long():
    found = help_examples()
    assert found == set(ORDER) | set(LONG), {
        "not run here": sorted(found - set(ORDER) - set(LONG)),
        "no longer an example": sorted((set(ORDER) | set(LONG)) - found),
    }


def test_the_long_examples_parse():
    from xamm_data.cli.commands import build_parser

    parser = build_parser()[0]
    for ex in LONG:
        parser.parse_args(ex.split()[1:])  # SystemExit(2) on a usage error


def _labelled(work: Path, shared: Path, store: Path) -> None:
    """The few-shot platform's labelled profiles and its unlabelled ones (the public stand-in)."""
    from xamm_ingest import read_rajaperf
    from xamm_models.benchmark import dataset as xplat
    from xamm_models.predictors.adapted.standin import platform_pairs

    ds = xplat.XplatDataset.from_store(store)
    runs = read_rajaperf(shared / "LLNL+thicket-tutorial" / "data" / "quartz", workers=2).frame
    pairs = platform_pairs(runs, ds)
    kernels = sorted(set(pairs.get_column("app")))
    pairs.filter(pl.col("app").is_in(kernels[::6])).write_parquet(work / "labelled.parquet")
    rest = pairs.filter(~pl.col("app").is_in(kernels[::6]))
    rest.unique("sample", maintain_order=True).head(6).write_parquet(
        work / "topdown-profiles.parquet"
    )


def _inputs(work: Path, shared: Path) -> None:
    """What the examples name: runs, profiles, a table and its mapping, a config, the docs."""
    shutil.copytree(
        shared / "LLNL+thicket" / "thicket" / "tests" / "data" / "rajaperf" / "quartz",
        work / "runs",
    )
    b = shared / "llnl+RAJAPerf-Benchmark" / "2026-FCR" / "data"
    (work / "h100-runs").symlink_to(b / "RPBenchmark_H100_tier1")
    uob = shared / "UoB-HPC+performance-portability" / "benchmarking"
    (work / "stream-runs").symlink_to(uob / "2019" / "babelstream" / "v100-isambard")
    (work / "uob").symlink_to(uob / "2022" / "babelstream")
    hatchet = shared / "LLNL+hatchet" / "hatchet" / "tests" / "data"
    (work / "hpctoolkit-lulesh-database").symlink_to(hatchet / "hpctoolkit-cpi-database")
    metadb = shared / "HPCToolkit+hpcviewer.e4" / "tests" / "resources" / "metadb"
    (work / "cycles-only-database").symlink_to(metadb / "loop-fork-cycles")
    (work / "profiles").mkdir()
    lulesh = sorted((shared / "LLNL+thicket-tutorial" / "data" / "lulesh").glob("*.cali"))
    shutil.copy(lulesh[0], work / "lulesh.cali")
    (work / "regions.csv").write_text(
        "region,exclusive_s,bytes,flops,calls\nmain,0.5,,,\nmain/stencil,2.0,4e9,1e9,100\n"
        "main/MPI_Allreduce,0.25,,,\n"
    )
    for f in sorted((shared / "LLNL+thicket-tutorial" / "data" / "lulesh").glob("*.cali"))[:3]:
        shutil.copy(f, work / "profiles" / f.name)
    (work / "samples.csv").write_text(
        "application,system,time_ms,nthreads,size,notes,br\n"
        "Laghos,ruby,1520.5,36,16,first,1.2e9\nLaghos,ruby,2930.1,36,32,second,2.3e9\n"
    )
    shutil.copy(REPO / "examples" / "table-mapping.toml", work / "mapping.toml")
    shutil.copy(REPO / "examples" / "criteria.toml", work / "criteria.toml")
    dane = shared / "LLNL+thicket-newer/thicket/tests/data/rajaperf/dane/clang14.0.6_8388608/O3"
    from ramble_writer import write_workspace  # a Benchpark workspace around dane's runs

    write_workspace(work / "benchpark-root", sorted(dane.glob("*/*.cali"))[:2])
    for run in ("1", "2", "3", "4", "5"):  # accepted, then the runs after an update
        shutil.copytree(dane / run, work / ("dane-accepted" if run < "3" else "dane-update") / run)
    (work / "config.yml").write_text(
        "func: train\nmachine_data_path: store\napp_train_data_path: store\n"
        "output: xamm-model\nregressor: catboost\nepochs: 5\nseed: 0\n"
    )
    (work / "docs" / "eval").mkdir(parents=True)
    shutil.copy(REPO / "docs" / "evaluation.md", work / "docs" / "evaluation.md")
    shutil.copy(REPO / "docs" / "eval" / "results.json", work / "docs" / "eval" / "results.json")
    shutil.copy(REPO / "README.md", work / "README.md")


def _stores(work: Path, shared: Path, xplat_store) -> None:
    """``./store`` (the benchmark's named public sources: a copy of the suite's, which the examples
    may change), ``./newbox-store`` (a machine the default predictor never saw) and
    ``profiles.parquet`` (quartz's kernels as profiles)."""
    from xamm_data.store.store import Store
    from xamm_ingest import ingest_rajaperf
    from xamm_models.benchmark import dataset as xplat

    shutil.copytree(xplat_store.root, work / "store", symlinks=True)
    store = Store(work / "store")
    b = shared / "llnl+RAJAPerf-Benchmark" / "2026-FCR" / "data" / "RPBenchmark_H100_tier1"
    ingest_rajaperf(b, store=Store(work / "newbox-store"), machine="newbox", workers=2)
    dane = shared / "LLNL+thicket-newer/thicket/tests/data/rajaperf/dane/clang14.0.6_8388608"
    ingest_rajaperf(dane, store=Store(work / "dane-store"), machine="dane", workers=1)
    samples = xplat.samples_from_runs(store.read("benchmark_runs", "quartz"))
    samples.filter(pl.col("target") == "quartz:cpu").head(5).write_parquet(
        work / "profiles.parquet"
    )
    _labelled(work, shared, work / "store")


@pytest.fixture(scope="module")
def sandbox(shared_data, tmp_path_factory, _hub_server, xplat_store):
    root = tmp_path_factory.mktemp("help-examples")
    (root / "shared").mkdir()
    (root / "shared" / "data").symlink_to(shared_data)  # ../shared/data, as in the examples
    work = root / "work"
    work.mkdir()
    _inputs(work, shared_data)
    _stores(work, shared_data, xplat_store)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HF_HUB_OFFLINE")},
        "XAMM_HOME": str(root / "home"),
        "HF_ENDPOINT": _hub_server.endpoint,
        "HF_TOKEN": "hf_xamm_test_token",
        "HF_HUB_DISABLE_XET": "1",
        "HF_HOME": str(root / "hf"),
        "MPLBACKEND": "Agg",
        "PATH": str(BIN) + os.pathsep + os.environ.get("PATH", ""),
    }
    return work, env


def _push_xamm_model(work: Path, env: dict) -> str:
    """Publish ``./xamm-model`` as ``org/xamm-xamm`` (what the Hub example pulls); its commit."""
    code = (
        "from xamm_models.zoo import load_model\n"
        "print(load_model('xamm-model').push_to_hub('org/xamm-xamm').oid)"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.split()[-1]


@pytest.mark.data
def test_every_help_example_runs_as_written(sandbox):
    work, env = sandbox
    commit = None
    for ex in ORDER:
        t0 = time.perf_counter()
        r = as_written.run(ex.replace("<commit>", commit or "main"), work, env)
        assert r.returncode == 0, (
            f"{ex}\nexit {r.returncode} ({r.where})\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
        )
        if ex.startswith("xamm datasets export"):
            shutil.copy(work / "quartz.json", work / "tk.json")  # a Thicket file by another name
        if ex == "xamm run config.yml":
            commit = _push_xamm_model(work, env)
        m = re.search(r"at commit ([0-9a-f]{40})", r.stdout)
        if m:
            commit = m.group(1)
        TIMES[ex] = time.perf_counter() - t0


def teardown_module():
    if os.environ.get("XAMM_EXAMPLE_TIMES"):
        for ex, s in sorted(TIMES.items(), key=lambda kv: -kv[1])[:25]:
            print(f"{s:7.1f} s  {ex}")
