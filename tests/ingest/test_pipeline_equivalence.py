"""Every stored value of the shared data is what the ingest wing stored before it became one
pipeline: the code of the last commit with two engines (``dispatch.py`` and ``archive.py``) is taken
from this checkout's history, and both build a store from the same real inputs and command lines
(``benchmarks/compare_pipelines.py``, without its 10^4-file corpus: its page has that run too)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import tarfile

import pytest
from conftest import REPO

# the last commit of the two engines
OLD = "3184302e8e4fa3df9a3253bbf55da7514ccd199f"

pytestmark = pytest.mark.slow


def _old_checkout(tmp_path):
    git = shutil.which("git")
    if git is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the old code comes from its history")
    known = subprocess.run([git, "-C", str(REPO), "cat-file", "-e", f"{OLD}^{{commit}}"])
    if known.returncode != 0:
        pytest.skip(f"commit {OLD[:7]} is not in this checkout's history (a shallow clone)")
    archive = tmp_path / "old.tar"
    subprocess.run([git, "-C", str(REPO), "archive", "-o", str(archive), OLD], check=True)
    old = tmp_path / "old"
    with tarfile.open(archive) as tar:
        tar.extractall(old, filter="data")
    return old


def test_the_one_pipeline_stores_what_the_two_engines_stored(tmp_path, shared_data):
    old = _old_checkout(tmp_path)
    assert (old / "ingest" / "xamm_ingest" / "dispatch.py").is_file()
    spec = importlib.util.spec_from_file_location(
        "compare_pipelines", REPO / "benchmarks" / "compare_pipelines.py"
    )
    cmp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cmp)
    page = tmp_path / "equivalence.md"
    code = cmp.main(["--old", str(old), "--data", str(shared_data), "--quick", "--out", str(page)])
    text = page.read_text()
    assert code == 0, text
    assert "| benchmark_runs |" in text and "| app_profiles |" in text and " NO " not in text


def test_the_comparison_sees_one_changed_value():
    import polars as pl

    spec = importlib.util.spec_from_file_location(
        "compare_pipelines", REPO / "benchmarks" / "compare_pipelines.py"
    )
    cmp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cmp)
    a = pl.DataFrame(
        {"source_sha256": ["x", "y"], "runtime_s": [1.0, 2.0], "regions": [[{"s": 1.0}], []]}
    )
    assert cmp.compare_table(a, a.reverse())["differ"] == []
    assert cmp.compare_table(a, a.with_columns(pl.Series("runtime_s", [1.0, 2.0 + 1e-9])))[
        "differ"
    ] == ["runtime_s"]
    nested = a.with_columns(pl.Series("regions", [[{"s": 1.5}], []]))
    assert cmp.compare_table(a, nested)["differ"] == ["regions"]
    assert cmp.compare_table(a, a.head(1))["rows_new"] == 1
