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


API_PACKAGES = (
    "xamm_data",
    "xamm_ingest",
    "xamm_models.machines",
    "xamm_models.embedders",
    "xamm_models.benchmark",
    "xamm_models.predictors",
    "xamm_models.predictors.default",
    "xamm_models.predictors.paper",
    "xamm_models.predictors.adapted",
    "xamm_models.zoo",
    "xamm_models.experiments",
    "xamm_models.studies",
)


def _public_api():
    """Every function and public method of what the packages export (``__all__``)."""
    import importlib
    import inspect

    found = {}
    for pkg in API_PACKAGES:
        mod = importlib.import_module(pkg)
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
            elif inspect.isclass(obj) and obj.__module__.startswith("xamm"):
                for attr, member in vars(obj).items():
                    fn = getattr(member, "__func__", member)
                    if inspect.isfunction(fn) and not attr.startswith("_"):
                        found[f"{obj.__module__}.{obj.__qualname__}.{attr}"] = fn
    return found


def _returns_a_value(fn) -> bool:
    import inspect
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError):
        return False
    body = tree.body[0]
    return any(
        isinstance(n, ast.Return) and n.value is not None
        for n in ast.walk(body)
        if not (isinstance(n, ast.FunctionDef | ast.Lambda) and n is not body)
    )


def test_the_public_api_is_documented_with_its_arguments_and_returns():
    """Google style: an ``Args:`` section naming every parameter and a ``Returns:`` section for
    whatever returns a value (``Args`` may describe ``*args``/``**kwargs`` by their names)."""
    import inspect

    bad = []
    for where, fn in sorted(_public_api().items()):
        doc = inspect.getdoc(fn) or ""
        params = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.name not in ("self", "cls")
        ]
        if not doc:
            bad.append(f"{where}: no docstring")
            continue
        missing = [p for p in params if not re.search(rf"^\s+\**{p}( \(.*\))?:", doc, re.M)]
        if missing:
            bad.append(f"{where}: Args lacks {missing}")
        if _returns_a_value(fn) and "Returns:" not in doc:
            bad.append(f"{where}: no Returns")
    assert bad == [], "\n".join(bad)
