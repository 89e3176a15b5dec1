"""The code's form, checked where it is checked for everyone: ruff's formatter and linter (line
length 100, ``pyproject.toml``), mypy on the data layer and the predictor contract, and no project
history in code, CLI help or generated pages."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
HISTORY = re.compile(r"\b[Ii]ssues? \d+\b|\b[Ss]eeds? 00\d\b|[Nn]ew in this run|\bseed 003's")
GENERATED = (
    "docs/evaluation.md",
    "docs/eval/results.md",
    "docs/vae-dnn/results.md",
    "docs/reliability.md",
    "docs/reliability-rajaperf.md",
    "docs/reliability-log.md",
    "docs/reliability-hub.md",
)


def _tool(name: str) -> str:
    exe = BIN / name
    if not exe.is_file():
        pytest.skip(f"{name} is not installed (the test extra)")
    return str(exe)


def test_ruff_format_and_check_pass():
    ruff = _tool("ruff")
    fmt = subprocess.run([ruff, "format", "--check", "."], cwd=REPO, capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    lint = subprocess.run([ruff, "check", "."], cwd=REPO, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_mypy_passes_on_the_data_layer_and_the_predictor_contract():
    mypy = _tool("mypy")
    r = subprocess.run(
        [mypy, "xamm_data", "xamm_models/predictors/contract.py"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-4000:]


def _text_and_strings(path: Path) -> str:
    """The source, and every string constant whole (implicit concatenation joins split words)."""
    src = path.read_text()
    strings = [
        n.value
        for n in ast.walk(ast.parse(src))
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    ]
    return "\n".join([src, *strings])


def test_no_project_history_in_code_cli_help_or_generated_pages():
    from docs.hooks.cli_reference import cli_reference

    texts = {
        str(p.relative_to(REPO)): _text_and_strings(p)
        for root in ("xamm_data", "xamm_models", "ingest", "tests", "benchmarks", "examples")
        for p in (REPO / root).rglob("*.py")
        if p.name != "test_lint.py"
    }
    texts |= {f: (REPO / f).read_text() for f in GENERATED}
    texts["xamm --help (every command)"] = cli_reference()
    found = [f"{where}: {m.group(0)!r}" for where, t in texts.items() for m in HISTORY.finditer(t)]
    assert found == []
