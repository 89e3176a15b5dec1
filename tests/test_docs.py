"""The documentation site: install blocks agree with the README's set-up, the site builds
strictly, and the generated pages are what their generators write from the committed results.
Every page's commands and snippets run in ``test_docs_as_written.py``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
INSTALL_STEP = re.compile(
    r"^(?:python3 -m venv \.venv|\.venv/bin/pip install(?: -q)?(?: --no-deps)? (-e )?(\S+))"
    r"\s*(?:#.*)?$"
)


def _readme_steps() -> list[str]:
    """The steps of the README's set-up-and-test command (what CI runs on a clean machine)."""
    text = (REPO / "README.md").read_text()
    line = next(s for s in text.splitlines() if s.startswith("python3 -m venv .venv && "))
    return [s.strip() for s in line.split("&&")]


def _extras(spec: str) -> set[str]:
    m = re.fullmatch(r"'?\.\[([a-z,]+)\]'?", spec)
    return set(m.group(1).split(",")) if m else set()


def is_install_block(lang: str, code: str) -> bool:
    """A block of nothing but the venv and ``pip install`` steps."""
    lines = [s for s in code.splitlines() if s.strip()]
    return lang == "bash" and bool(lines) and all(INSTALL_STEP.match(s) for s in lines)


def check_install_block(code: str) -> list[str]:
    """The steps of an install block the README's command does not run: the same venv, the same
    pinned packages, the package editable with a subset of its extras. CI runs that command on a
    clean machine before the tests, so such a block is proven there, not installed again here."""
    readme = [m for s in _readme_steps() if (m := INSTALL_STEP.match(s))]
    pinned = {m.group(2) for m in readme if m.group(2) and not m.group(1)}
    extras = set().union(*(_extras(m.group(2)) for m in readme if m.group(1)))
    missing = []
    for line in (s for s in code.splitlines() if s.strip()):
        m = INSTALL_STEP.match(line)
        if m is None or m.group(2) is None:
            continue  # the venv itself: the README's first step
        ok = _extras(m.group(2)) <= extras if m.group(1) else m.group(2) in pinned
        if not ok:
            missing.append(line)
    return missing


def test_an_install_block_is_checked_against_the_readmes_command():
    assert not check_install_block(
        "python3 -m venv .venv\n.venv/bin/pip install torch==2.13.0  # CPU\n"
        ".venv/bin/pip install -e '.[models]'\n"
    )
    assert check_install_block(".venv/bin/pip install torch==2.0.0\n") == [
        ".venv/bin/pip install torch==2.0.0"
    ]
    assert check_install_block(".venv/bin/pip install -e '.[gpu]'\n")
    assert not is_install_block("bash", "python3 -m venv .venv\nxamm --help\n")


def test_the_site_builds_strictly(tmp_path):
    """``mkdocs build --strict``: every link resolves, every API page renders from the code."""
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        if os.environ.get("CI") == "true":
            pytest.fail(
                "mkdocs is not installed; the README's test command installs the docs extra"
            )
        pytest.skip("mkdocs is not installed (the docs extra)")
    r = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()


def test_generated_pages_are_what_their_generators_write_from_the_committed_results():
    """The evaluation page's block, ``docs/eval/results.md`` and ``docs/vae-dnn/results.md`` are
    regenerated from their ``results.json`` and compared: prose never restates them by hand."""
    from xamm_models.experiments import report
    from xamm_models.studies import vae_dnn

    summary = json.loads((DOCS / "eval" / "results.json").read_text())
    page = (DOCS / "evaluation.md").read_text()
    assert report.results_block(summary) in page
    assert (DOCS / "eval" / "results.md").read_text() == report.markdown(summary)
    vae = json.loads((DOCS / "vae-dnn" / "results.json").read_text())
    assert (DOCS / "vae-dnn" / "results.md").read_text() == vae_dnn.markdown(vae)
    assert "xamm-summary:begin" in (REPO / "README.md").read_text()
    assert report.summary_block(summary) in (REPO / "README.md").read_text()


def test_every_study_table_is_what_its_results_file_renders(tmp_path):
    """Each block of :mod:`xamm_models.studies.pages` holds exactly what its results file renders;
    a results file changed after its page was written makes the check fail, and ``update`` mends
    it."""

    from xamm_models.studies import pages

    assert pages.stale() == []
    for b in pages.BLOCKS.values():
        for f in (b.page, b.results):
            (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(REPO / f, tmp_path / f)
    sched = tmp_path / pages.BLOCKS["scheduling"].results
    res = json.loads(sched.read_text())
    res["jobs"] += 1
    sched.write_text(json.dumps(res))
    assert pages.stale(tmp_path) == ["scheduling"]
    assert pages.update(tmp_path) == ["scheduling"] and pages.stale(tmp_path) == []


def test_the_readme_is_a_front_page():
    """At most 200 lines, and its results summary links the generated tables."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert "docs/evaluation.md" in readme


def test_the_archive_page_lists_the_metadata_maps_default_keys():
    from xamm_ingest.metadata_map import MetadataMap

    page = (REPO / "docs" / "ingest-archive.md").read_text()
    table = page.split("metadata-defaults:begin")[1].split("metadata-defaults:end")[0]
    rows = {
        m[0]: re.findall(r"`([^`]+)`", m[1])
        for m in re.findall(r"^\| `(\w+)` \| (.+) \|$", table, flags=re.M)
    }
    assert rows == {c: list(keys) for c, keys in MetadataMap.DEFAULTS.items()}


ITEM = re.compile(r"^([*+-]|\d+\.) \S")


def _lists_run_into_paragraphs(text: str) -> list[int]:
    """Lines where a list starts right under paragraph text: Python-Markdown (the site) then shows
    its markers as text, ``* item`` inline."""
    lines, bad, fence, in_list = text.split("\n"), [], False, False
    for i, ln in enumerate(lines):
        if ln.lstrip().startswith("```"):
            fence = not fence
        if fence or not ln.strip():
            in_list = False if not ln.strip() else in_list
            continue
        if ITEM.match(ln):
            prev = lines[i - 1] if i else ""
            if not in_list and prev.strip() and not prev.startswith(("|", "#", ">", " ")):
                bad.append(i + 1)
            in_list = True
    return bad


def test_every_page_is_in_the_nav_and_every_list_starts_its_own_block():
    """What the browser check (benchmarks/docs_in_browser.py) saw on the rendered site, kept
    without a browser: a page outside the nav cannot be found, a list under a paragraph renders
    as one line of asterisks."""
    import yaml

    sys.path.insert(0, str(REPO / "benchmarks"))
    from docs_in_browser import unlisted

    config = yaml.safe_load((REPO / "mkdocs.yml").read_text().replace("!!python", "#"))
    assert unlisted(config) == []
    bad = {
        md.relative_to(DOCS).as_posix(): lines
        for md in sorted(DOCS.rglob("*.md"))
        if (lines := _lists_run_into_paragraphs(md.read_text()))
    }
    assert bad == {}
