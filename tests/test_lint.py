"""The code's form, checked where it is checked for everyone: ruff's formatter and linter (line
length 100, ``pyproject.toml``), mypy on every package (clean where it must be, elsewhere within a
budget that only falls), and no project
history in code, CLI help or generated pages."""

from __future__ import annotations

import ast
import json
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


# the code mypy must pass clean: the data layer, the predictor contract, the ingest wing but its
# parsers (readers/) and the Thicket bridge
STRICT = re.compile(
    r"^(xamm_data/|xamm_models/predictors/contract\.py|ingest/xamm_ingest/(?!readers/|thicket\.py))"
)
ERROR = re.compile(r"^(?P<path>[^:]+\.py):\d+: error: .*\[(?P<code>[a-z-]+)\]$")
PACKAGE = {"xamm_data": "xamm_data", "xamm_models": "xamm_models", "ingest": "xamm_ingest"}


def mypy_errors(out: str) -> list[tuple[str, str]]:
    """(file, line) of every error in mypy's output."""
    return [(m["path"], line) for line in out.splitlines() if (m := ERROR.match(line))]


def test_mypy_covers_every_package_within_a_budget_that_only_falls(tmp_path):
    """mypy over all three packages (``pyproject.toml``: ``files``): no error in the strict part,
    and per package no more errors than ``tests/mypy-budget.json`` allows. A cache of its own:
    another mypy writing the checkout's cache at the same time can corrupt it."""
    mypy = _tool("mypy")
    r = subprocess.run(
        [mypy, "--cache-dir", str(tmp_path / "mypy-cache")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert "error: INTERNAL ERROR" not in r.stderr + r.stdout, r.stderr[-2000:]
    errors = mypy_errors(r.stdout)
    assert r.returncode == (1 if errors else 0), r.stdout[-2000:] + r.stderr[-2000:]
    strict = [line for path, line in errors if STRICT.match(path)]
    assert strict == [], "\n".join(strict)
    budget = json.loads((REPO / "tests" / "mypy-budget.json").read_text())
    counts = {name: 0 for name in PACKAGE.values()}
    for path, _ in errors:
        counts[PACKAGE[path.split("/")[0]]] += 1
    over = {k: (n, budget[k]) for k, n in counts.items() if n > budget[k]}
    assert over == {}, f"(errors, budget) per package over its budget: {over}"
    assert "checked" in r.stdout.splitlines()[-1] and budget["xamm_data"] == 0


def test_the_mypy_error_parser_reads_mypys_lines():
    out = (
        "ingest/xamm_ingest/pipeline/x.py:3: error: Bad thing  [arg-type]\n"
        "ingest/xamm_ingest/readers/y.py:9: error: Other  [union-attr]\n"
        "xamm_models/z.py:1: note: a note\nFound 2 errors in 2 files (checked 3 source files)"
    )
    errors = mypy_errors(out)
    assert [p for p, _ in errors] == [
        "ingest/xamm_ingest/pipeline/x.py",
        "ingest/xamm_ingest/readers/y.py",
    ]
    assert [bool(STRICT.match(p)) for p, _ in errors] == [True, False]


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
                # a copy: a model built on first use adds to its class as it builds
                for attr, member in list(vars(obj).items()):
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
