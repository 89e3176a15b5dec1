"""The house's layers point one way, and ``xamm --help`` never pays for torch.

``xamm_ingest -> xamm_data <- xamm_models``: nothing in ``xamm_data`` imports the other two (also not
inside functions); ``xamm_ingest`` and ``xamm_models`` do not import each other. Data-side hooks are
filled through entry points (:mod:`xamm_data.plugins`).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

PACKAGES = {"xamm_data": REPO / "xamm_data", "xamm_ingest": REPO / "ingest", "xamm_models": REPO / "xamm_models"}
FORBIDDEN = {"xamm_data": {"xamm_ingest", "xamm_models"}, "xamm_ingest": {"xamm_models"}, "xamm_models": {"xamm_ingest"}}


def imports(path: Path) -> list[tuple[int, str, bool]]:
    """(line, imported module, inside a function) for every import statement of a file."""
    tree = ast.parse(path.read_text())
    inner = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
             for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out += [(n.lineno, a.name, id(n) in inner) for a in n.names]
        elif isinstance(n, ast.ImportFrom) and n.module:
            out.append((n.lineno, n.module, id(n) in inner))
    return out


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_layers_point_one_way(package):
    bad = [f"{p.relative_to(REPO)}:{line} imports {mod}"
           for p in PACKAGES[package].rglob("*.py") for line, mod, _ in imports(p)
           if mod.split(".")[0] in FORBIDDEN[package]]
    assert bad == []


def test_the_checker_sees_imports_inside_functions(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import os\ndef f():\n    from xamm_models.amm import build\n")
    assert imports(f) == [(1, "os", False), (3, "xamm_models.amm", True)]


def test_help_version_and_datasets_list_never_import_torch(tmp_path):
    code = ("import sys\nfrom xamm_data.cli import main\n"
            "for argv in (['--help'], ['--version'], ['datasets', 'list', '--store', sys.argv[1]]):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH')\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "store")], capture_output=True, text=True,
                         cwd=REPO, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "NO-TORCH", out.stderr[-2000:]


def test_model_commands_say_which_extra_when_torch_is_missing(hide_module, capsys):
    from xamm_data.cli import main

    hide_module("torch")
    assert main(["amm", "list"]) == 1
    assert "needs the models extra: pip install torch==2.13.0 'xamm[models]'" in capsys.readouterr().err


HEAVY = ("torch", "deltalake", "catboost", "xgboost", "sklearn", "skops", "matplotlib", "safetensors", "hatchet", "thicket", "pandas", "rich", "tqdm", "xamm_data.hub", "pyarrow",
         "huggingface_hub", "fcntl", "xamm_models.embedders", "xamm_models.predictor", "xamm_models.vae_dnn",
         "xamm_models.adapted_predictor")


def test_function_level_imports_are_only_heavy_optional_dependencies_with_a_reason():
    """No hidden cycles behind imports inside functions: those left load heavy optional dependencies (or, in a
    CLI module, what only a handler needs, so start-up stays fast), each with a one-line reason on its line."""
    bad = []
    for package, root in PACKAGES.items():
        for p in root.rglob("*.py"):
            lines = p.read_text().splitlines()
            for line, mod, inside in imports(p):
                if not inside:
                    continue
                heavy = any(mod == h or mod.startswith(h + ".") for h in HEAVY) or p.name == "cli.py"  # start-up
                if not heavy or "#" not in lines[line - 1]:
                    bad.append(f"{p.relative_to(REPO)}:{line} {mod}")
    assert bad == []


def test_no_function_over_60_lines():
    long = [f"{p.relative_to(REPO)}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)"
            for root in PACKAGES.values() for p in root.rglob("*.py") for n in ast.walk(ast.parse(p.read_text()))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > 60]
    assert long == []


def test_no_silent_default_to_xamm_home_deep_inside():
    """Signature registries and the store are passed in; only entry points ask for the $XAMM_HOME ones."""
    import inspect

    pytest.importorskip("torch")
    from xamm_models.amm import build_signatures
    from xamm_models.signatures import SignatureRegistry

    with pytest.raises(TypeError):
        SignatureRegistry()  # no root, no registry
    params = inspect.signature(build_signatures).parameters
    assert params["store"].default is inspect.Parameter.empty and params["registry"].default is inspect.Parameter.empty
    reg = SignatureRegistry(REPO / "nowhere" / "signatures")
    assert reg.embedders_dir == REPO / "nowhere" / "embedders"
