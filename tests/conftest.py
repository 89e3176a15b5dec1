"""Shared fixtures: the real public data in ../shared/data, an isolated XAMM_HOME, a local Hub
server."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

# pytest keeps each test module's rewritten assertions beside it unless bytecode writing is off
# (PYTHONDONTWRITEBYTECODE); rewriting every module again costs each worker seconds per run
sys.dont_write_bytecode = False

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"

sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(FIXTURES))

from s3_server import s3, s3_env  # noqa: E402, F401  (the local S3 server, for any test module)


def skip_unless_installed(package: str, reason: str) -> None:
    """Skip the calling test module unless ``package`` (a top-level name) is installed: found, not
    imported. Every worker collects every module, and only a worker running the module's tests
    should pay for loading the library."""
    if importlib.util.find_spec(package) is None:
        pytest.skip(reason, allow_module_level=True)


# The suite runs a worker per core: a torch, XGBoost or BLAS pool per worker as wide as the machine
# oversubscribes it (small models train 5x slower). One thread each, before any of them is imported;
# the commands the tests start inherit it. A variable already set is the user's choice.
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

DATA_FIXTURES = {"shared_data", "rajaperf_sets"}
SLOW_SECONDS = 1.0  # tests measured above this on the 2-core CI machine are marked slow
#: seconds per test (setup, call and teardown) of the last whole-suite run on the 2-core CI machine,
#: written by ``python benchmarks/bench_tests.py --record``: every test above SLOW_SECONDS is slow
DURATIONS = TESTS / "durations.json"
SLOW = {  # slow whatever the record says (the fast lane, pytest -m "not slow", leaves them to CI)
    "test_relR_pairing_on_real_rows",
    "test_end_to_end_run_on_store_data",
    "test_embedders_round_trip_and_determinism",
    "test_small_run_reports_baselines_and_the_verdict",
    "test_built_from_the_named_sources_with_a_stable_content_hash",
    "test_fold_machine_data_never_holds_the_test_kernels",
    "test_the_runs_do_not_depend_on_the_number_of_workers",
    # over 2 x SLOW_SECONDS in `pytest --durations` of the fast lane beside a CI run (2026-11-24;
    # the lane had grown to 7 min)
    "test_xamm_run_trains_and_tests_a_vae_dnn_and_predict_ranks_with_it",
    "test_leave_one_kernel_out_tests_every_kernel_exactly_once_and_is_added_to_the_results",
    "test_adapt_keeps_the_base_frozen_seeds_by_name_and_is_deterministic",
    "test_vector_models_read_each_test_pair_from_its_vector_and_eval_draws_their_roc",
    "test_signatures_and_the_default_predictor_answer_offline",
    "test_sigkill_at_any_moment_leaves_one_version_never_a_mix",
    "test_each_switch_changes_training",
    "test_xamm_adapt_cli_saves_a_model_xamm_predict_uses",
    # every real .cali in shared data (about 10,900 files) against caliperreader; a sample runs in
    # the fast lane
    "test_matches_caliperreader_on_every_real_file",
    # the seeded flip-and-delete campaign over the store's log (about 10 s); its targeted cases run
    # in the fast lane
    "test_log_faults_are_refused_by_name_never_silent",
    # the seeded campaign of tampered Hub pulls (about 10 s); its targeted cases run in the fast
    # lane
    "test_every_tampered_pull_is_refused_by_name",
    # every --help example in its sandbox (about 3.5 min) and the user guide's pages
    "test_every_help_example_runs_as_written",
    "test_the_page_runs_as_written",
    # the whole 10,563-file sorting corpus (about 8 s) and a killed-and-resumed ingest (about 6 s);
    # the archive's other tests run in the fast lane
    "test_the_sorting_corpus_goes_in_whole_with_its_metadata",
    "test_an_ingest_killed_midway_and_run_again_ends_with_the_uninterrupted_table",
    # three ingests as processes (1.1 s on an idle machine); the one-ingest import checks run in
    # the fast lane
    "test_a_rajaperf_ingest_loads_no_validation_library_where_no_file_asks_for_one",
}


def _record() -> dict:
    """The last recorded whole-suite run: ``seconds`` per test id and ``fixtures``' setup seconds
    (empty before the first)."""
    return json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}


def _recorded_slow(record: dict | None = None) -> set[str]:
    """The test ids the last recorded whole-suite run measured above :data:`SLOW_SECONDS`."""
    seconds = (_record() if record is None else record).get("seconds", {})
    return {nodeid for nodeid, s in seconds.items() if s > SLOW_SECONDS}


#: where ``bench_tests.py --record`` asks each worker to write its fixtures' setup seconds
FIXTURE_SECONDS_DIR = "XAMM_FIXTURE_SECONDS_DIR"
_FIXTURE_SECONDS: dict[str, float] = {}
SHARED_SCOPES = ("module", "class", "package")  # a fixture its module's tests share


def fixture_key(fixturedef) -> str:
    """A fixture as the record names it: where it is defined and its name."""
    return f"{fixturedef.baseid}::{fixturedef.argname}"


def _heavy_fixtures(record: dict | None = None) -> set[str]:
    """The shared fixtures the last recorded whole-suite run took over :data:`SLOW_SECONDS` to
    set up: a test using one is slow, although the record charged the setup to another test."""
    fixtures = (_record() if record is None else record).get("fixtures", {})
    return {k for k, s in fixtures.items() if s > SLOW_SECONDS}


def _uses_heavy_fixture(item, heavy: set[str]) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None or not heavy:
        return False
    for defs in info.name2fixturedefs.values():
        if defs and defs[-1].scope in SHARED_SCOPES and fixture_key(defs[-1]) in heavy:
            return True
    return False


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    """Time each shared fixture's setup when ``bench_tests.py --record`` asks for it."""
    if not os.environ.get(FIXTURE_SECONDS_DIR) or fixturedef.scope not in SHARED_SCOPES:
        yield
        return
    t = time.perf_counter()
    yield
    key = fixture_key(fixturedef)
    _FIXTURE_SECONDS[key] = max(_FIXTURE_SECONDS.get(key, 0.0), time.perf_counter() - t)


def pytest_sessionfinish(session):
    """Write this worker's fixture seconds where ``bench_tests.py --record`` collects them."""
    where = os.environ.get(FIXTURE_SECONDS_DIR)
    if where and _FIXTURE_SECONDS:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        (Path(where) / f"{worker}.json").write_text(json.dumps(_FIXTURE_SECONDS))


def _longest_modules_first(items: list, seconds: dict[str, float]) -> None:
    """Order the modules by their recorded ``seconds``, longest first, each module's tests kept
    together and in order: the workers split the queue in halves and idle ones steal from the
    tail, so a long module queued last would run alone at the end (its module fixtures still
    build once)."""
    per_module: dict[str, float] = {}
    for nodeid, s in seconds.items():
        module = nodeid.split("::")[0]
        per_module[module] = per_module.get(module, 0.0) + s
    first = {}
    for i, item in enumerate(items):
        first.setdefault(item.nodeid.split("::")[0], i)
    items.sort(key=lambda it: (-per_module.get(m := it.nodeid.split("::")[0], 0.0), first[m]))


def pytest_collection_modifyitems(config, items):
    """Mark tests that read ../shared/data ``data`` and the long ones ``slow`` (long themselves,
    or using a shared fixture that is), so the markers select; the longest modules first."""
    record = _record()
    _longest_modules_first(items, record.get("seconds", {}))
    recorded, heavy = _recorded_slow(record), _heavy_fixtures(record)
    for item in items:
        if DATA_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.data)
        if item.originalname in SLOW or item.nodeid in recorded or _uses_heavy_fixture(item, heavy):
            item.add_marker(pytest.mark.slow)
    # a whole-suite collection (every test module): every name in SLOW must still be a test
    if {item.path for item in items} >= set(TESTS.rglob("test_*.py")):
        stale = SLOW - {item.originalname for item in items}
        if stale:
            raise pytest.UsageError(f"tests/conftest.py SLOW names no test: {sorted(stale)}")


def shared_data_dir() -> Path:
    """``$XAMM_SHARED_DATA`` or ``../shared/data`` beside the checkout."""
    return Path(os.environ.get("XAMM_SHARED_DATA", REPO.parent / "shared" / "data")).resolve()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real public data; skips when absent, except under CI (CI=true), where absence fails."""
    d = shared_data_dir()
    if not (d / "MANIFEST.md").is_file():
        msg = (
            f"real public data not found at {d} (set XAMM_SHARED_DATA or "
            "place shared/data beside the checkout)"
        )
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI=true but {msg}")
        pytest.skip(msg)
    return d


@pytest.fixture(autouse=True)
def no_machine_names_left_over():
    """Each test starts with no machine names gathered for an ingest's notes: a name a module
    resolved when it was collected (a ``SampleSpec`` of a machine the registry does not know) is
    not the note of whichever ingest a worker runs next."""
    from xamm_ingest.machine_names import take_aliases, take_unknown

    take_unknown()
    take_aliases()


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """Every test gets its own XAMM_HOME and Hugging Face cache; no test touches the user's."""
    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "xamm_home"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("XAMM_HUB_DATASETS", raising=False)
    # No test may reach the real Hub: point at a closed local port unless a test starts a server.
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    return tmp_path / "xamm_home"


@pytest.fixture(scope="session")
def _hub_server():
    from hub_server import LocalHub

    with LocalHub() as hub:
        yield hub


@pytest.fixture
def local_hub(_hub_server, monkeypatch):
    """The local Hub-protocol server on 127.0.0.1, with HF_ENDPOINT pointing at it."""
    import huggingface_hub.constants as hf_constants

    monkeypatch.setenv("HF_ENDPOINT", _hub_server.endpoint)
    # the client reads these at import time
    monkeypatch.setattr(hf_constants, "ENDPOINT", _hub_server.endpoint)
    monkeypatch.setattr(
        hf_constants,
        "HUGGINGFACE_CO_URL_TEMPLATE",
        _hub_server.endpoint + "/{repo_id}/resolve/{revision}/{filename}",
    )
    # online, whatever HF_HUB_OFFLINE was when the client was first imported (an offline test may
    # have been first)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", "hf_xamm_test_token")
    return _hub_server


@pytest.fixture(scope="session")
def xplat_store(shared_data, tmp_path_factory):
    """A store holding the benchmark's named public sources (``xplat.ingest_sources``), built once
    per run and shared by every worker: the first to ask builds it under a lock, the others wait
    and read it. Tests only read it (a test that writes builds its own, or copies its folder:
    the table logs name their files relative to the table)."""
    from xamm_data.atomic import locked
    from xamm_data.store.store import Store
    from xamm_models.benchmark import dataset as xplat

    run = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        run = run.parent  # the run's folder, which the workers' folders share
    root, done = run / "xplat" / "store", run / "xplat" / "built"
    with locked(run / "xplat.lock"):
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)  # a build a killed worker left half done
            xplat.ingest_sources(shared_data, Store(root))
            done.touch()
    versions = _versions(Store(root))
    yield Store(root)
    # every worker reads this one store: a test that wrote into it would change the others' data
    assert _versions(Store(root)) == versions, f"a test wrote into the shared store {root}"


def _versions(store) -> dict[str, int | None]:
    """The latest version of each of ``store``'s data tables."""
    from xamm_data.tables.schema import DATA_KINDS

    return {kind: store.version(kind) for kind in DATA_KINDS}


@pytest.fixture(scope="session")
def xplat_dataset(xplat_store):
    """``xplat-rajaperf`` read from :func:`xplat_store` (its frames are never modified in place)."""
    from xamm_models.benchmark import dataset as xplat

    return xplat.XplatDataset.from_store(xplat_store)


@pytest.fixture(scope="session")
def rajaperf_sets(shared_data) -> dict[str, Path]:
    """The real RAJAPerf data sets, by name."""
    b = shared_data / "llnl+RAJAPerf-Benchmark" / "2026-FCR" / "data"
    return {
        "thicket": shared_data / "LLNL+thicket" / "thicket" / "tests" / "data" / "rajaperf",
        "tutorial_quartz": shared_data / "LLNL+thicket-tutorial" / "data" / "quartz",
        "tutorial_lassen": shared_data / "LLNL+thicket-tutorial" / "data" / "lassen",
        "h100": b,  # use with the H100 sub-directories
        "h100_tier1": b / "RPBenchmark_H100_tier1",
        "h100_tier2": b / "RPBenchmark_H100_tier2",
        "mi300a_tier1": b / "RPBenchmark_MI300A_tier1-SPX",
        "mi300a_tier2": b / "RPBenchmark_MI300A_tier2-SPX",
    }


@pytest.fixture
def hide_module(monkeypatch):
    """``hide_module("torch")``: make importing that package (and its submodules) fail, as if not
    installed."""
    import builtins

    real = builtins.__import__

    def hide(package: str) -> None:
        def fake_import(name, *args, **kwargs):
            if name == package or name.startswith(package + "."):
                raise ModuleNotFoundError(f"No module named {package!r}", name=package)
            return real(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", fake_import)

    return hide
