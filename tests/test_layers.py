"""The house's layers point one way, and ``xamm --help`` never pays for torch.

``xamm_ingest -> xamm_data <- xamm_models``: nothing in ``xamm_data`` imports the other two (also
not inside functions); ``xamm_ingest`` and ``xamm_models`` do not import each other. Data-side hooks
are filled through entry points (:mod:`xamm_data.plugins`).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

PACKAGES = {
    "xamm_data": REPO / "xamm_data",
    "xamm_ingest": REPO / "ingest" / "xamm_ingest",
    "xamm_models": REPO / "xamm_models",
}
FORBIDDEN = {
    "xamm_data": {"xamm_ingest", "xamm_models"},
    "xamm_ingest": {"xamm_models"},
    "xamm_models": {"xamm_ingest"},
}


def imports(path: Path) -> list[tuple[int, str, bool]]:
    """(line, imported module, inside a function) for every import statement of a file."""
    tree = ast.parse(path.read_text())
    inner = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        for n in ast.walk(f)
        if isinstance(n, (ast.Import, ast.ImportFrom))
    }
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            out += [(n.lineno, a.name, id(n) in inner) for a in n.names]
        elif isinstance(n, ast.ImportFrom) and n.module:
            out.append((n.lineno, n.module, id(n) in inner))
    return out


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_layers_point_one_way(package):
    bad = [
        f"{p.relative_to(REPO)}:{line} imports {mod}"
        for p in PACKAGES[package].rglob("*.py")
        for line, mod, _ in imports(p)
        if mod.split(".")[0] in FORBIDDEN[package]
    ]
    assert bad == []


def test_the_checker_sees_imports_inside_functions(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import os\ndef f():\n    from xamm_models.machines.attention import build\n")
    assert imports(f) == [(1, "os", False), (3, "xamm_models.machines.attention", True)]


# Rooms of xamm_models and the rooms each may import (lower layers never import upper ones):
# harness, studies and CLI -> predictors -> machine models and benchmark data.
BASE = ("achieved", "errors", "features", "optimizer", "profile_input", "runtime", "stored")
_LOW = {"base", "embedders", "machines", "benchmark"}
ROOM_IMPORTS = {
    "base": {"base"},
    "embedders": {"base", "embedders"},
    # never the data set, the predictors or the harness
    "machines": {"base", "embedders", "machines"},
    "benchmark": {"base", "benchmark"},
    # acceptance comparisons: runs, machine models and the benchmark's matching rules; no predictor
    "compare": {"base", "machines", "benchmark", "compare"},
    # never the harness, the studies or the zoo that builds them
    "predictors": _LOW | {"predictors"},
    # the harness
    "experiments": _LOW | {"predictors", "experiments"},
    # studies sit beside the harness: they may not import it
    "studies": _LOW | {"compare", "predictors", "studies"},
    # building and publishing the pretrained models
    "zoo": _LOW | {"predictors", "zoo"},
    # a centre's static site: what compare knows, and a profile's prediction
    "report": _LOW | {"compare", "predictors", "report"},
    "cli": _LOW | {"compare", "predictors", "experiments", "studies", "zoo", "report", "cli"},
}


def room(module: str) -> str | None:
    """The room of an ``xamm_models`` module (``None``: the package itself, whose names load
    lazily)."""
    parts = module.split(".")[1:]
    if not parts:
        return None
    if parts[0] in BASE:
        return "base"
    if parts[0] == "signature_hub":  # an alias of machines.hub kept for published cards
        return "machines"
    return parts[0]


def model_imports(path: Path) -> list[tuple[int, str]]:
    """(line, xamm_models module) imported by a file, inside functions too; ``from xamm_models.x
    import y`` counts ``xamm_models.x.y`` when that is a module."""
    out = []
    for n in ast.walk(ast.parse(path.read_text())):
        names = [a.name for a in n.names] if isinstance(n, ast.Import) else []
        if isinstance(n, ast.ImportFrom) and n.module:
            names = [n.module] + [
                f"{n.module}.{a.name}"
                for a in n.names
                if (REPO / f"{n.module}.{a.name}".replace(".", "/")).with_suffix(".py").exists()
                or (REPO / f"{n.module}.{a.name}".replace(".", "/")).is_dir()
            ]
        out += [(n.lineno, m) for m in names if m.split(".")[0] == "xamm_models"]
    return out


def _module_name(p: Path) -> str:
    parts = list(p.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_rooms_of_xamm_models_import_only_the_rooms_below():
    bad = []
    for p in (REPO / "xamm_models").rglob("*.py"):
        me = room(_module_name(p))
        for line, mod in model_imports(p):
            if me is not None and room(mod) is not None and room(mod) not in ROOM_IMPORTS[me]:
                bad.append(f"{p.relative_to(REPO)}:{line} ({me}) imports {mod} ({room(mod)})")
    assert bad == []


def test_no_import_cycle_between_xamm_models_modules():
    """Inside functions too: a cycle hidden behind a lazy import is still a cycle."""
    graph = {
        _module_name(p): {m for _, m in model_imports(p)}
        for p in (REPO / "xamm_models").rglob("*.py")
    }
    graph = {
        k: {m for m in v if m in graph and m != k and not k.startswith(m + ".")}
        for k, v in graph.items()
    }
    assert _cycles(graph) == []


def test_the_room_rules_catch_an_upward_import(tmp_path):
    assert (
        room("xamm_models.machines.physics") == "machines"
        and room("xamm_models.zoo.build") == "zoo"
    )
    assert "benchmark" not in ROOM_IMPORTS["machines"]
    assert not {"experiments", "studies", "zoo", "compare"} & ROOM_IMPORTS["predictors"]
    assert (
        "experiments" not in ROOM_IMPORTS["studies"] and "predictors" not in ROOM_IMPORTS["compare"]
    )
    assert room("xamm_models.features") == "base"


# The rooms of xamm_models.compare, in order: each imports only those before it.
COMPARE_ROOMS = ("runs", "certificates", "history", "hub")


def test_rooms_of_compare_import_only_the_rooms_before_them():
    root = REPO / "xamm_models" / "compare"
    bad = []
    for p in root.rglob("*.py"):
        mine = p.relative_to(root).with_suffix("").parts[0]
        if mine == "__init__":
            continue
        for line, mod in model_imports(p):
            parts = mod.split(".")
            if parts[:2] != ["xamm_models", "compare"] or len(parts) < 3:
                continue
            if COMPARE_ROOMS.index(parts[2]) > COMPARE_ROOMS.index(mine):
                bad.append(f"{p.relative_to(REPO)}:{line} ({mine}) imports {mod}")
    assert bad == []
    assert sorted(d.name for d in root.iterdir() if d.is_dir() and d.name != "__pycache__") == [
        "certificates",
        "history",
        "runs",
    ]


# Rooms of xamm_data, bottom up, and the rooms each may import: the shared base (the package's own
# modules), what a row is and which machine, the store, publishing, then the command and the
# use-cases over the store.
DATA_ROOM_IMPORTS = {
    "base": {"base"},
    "tables": {"base", "tables"},
    "machines": {"base", "machines"},
    "store": {"base", "tables", "store"},
    "hub": {"base", "tables", "machines", "store", "hub"},
    "uses": {"base", "tables", "machines", "store", "hub", "uses"},
    "cli": {"base", "tables", "machines", "store", "hub", "uses", "cli"},
}
DATA_USES = ("thicket", "stored_profiles")


def data_room(module: str) -> str | None:
    """The room of an ``xamm_data`` module (``None``: the package's face, whose names load
    lazily)."""
    parts = module.split(".")[1:]
    if not parts:
        return None
    if parts[0] in DATA_ROOM_IMPORTS:
        return parts[0]
    return "uses" if parts[0] in DATA_USES else "base"


def test_rooms_of_xamm_data_import_only_the_rooms_below():
    graph = _house_graph({"xamm_data": PACKAGES["xamm_data"]})
    bad = [
        f"{me} ({data_room(me)}) imports {m} ({data_room(m)})"
        for me, deps in graph.items()
        for m in deps
        if data_room(me) and data_room(m) and data_room(m) not in DATA_ROOM_IMPORTS[data_room(me)]
    ]
    assert bad == []
    flat = sorted(p.name for p in PACKAGES["xamm_data"].glob("*.py"))
    assert len(flat) <= 14, flat  # the shared base and the use-cases, not a corridor


def test_no_module_imports_a_path_xamm_data_had_before_its_rooms():
    """The old paths answer for one release (``xamm_data._moved``); the house uses the new ones."""
    from xamm_data._moved import MOVED

    old = {f"xamm_data.{m}" for m in MOVED}
    bad = [
        f"{p.relative_to(REPO)}:{line} imports {mod}"
        for root in (*PACKAGES.values(), REPO / "tests", REPO / "benchmarks", REPO / "examples")
        for p in root.rglob("*.py")
        if p.name != "test_moved_modules.py"
        for line, mod, _ in imports(p)
        if mod in old
    ]
    assert bad == []


# Rooms of xamm_ingest and what each may not import: parsers know no table, format or command line;
# the contract and the pipeline know no particular format; formats know no pipeline or command line.
INGEST_FORBIDDEN = {
    "readers": {"format", "formats", "pipeline", "cli", "api", "regions", "profiles"},
    "format": {"formats", "pipeline", "cli", "api"},
    "sniff": {"format", "formats", "pipeline", "cli", "api"},
    "pipeline": {"formats", "cli", "api", "regions"},
    "formats": {"pipeline", "cli", "api"},
    "profiles": {"formats", "pipeline", "cli", "api"},
}


def ingest_room(module: str) -> str | None:
    """The room of an ``xamm_ingest`` module: its first name under the package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "xamm_ingest" else None


def test_rooms_of_xamm_ingest_point_one_way():
    root = PACKAGES["xamm_ingest"]
    bad = []
    for p in root.rglob("*.py"):
        me = ingest_room("xamm_ingest." + ".".join(p.relative_to(root).with_suffix("").parts))
        for line, mod, _ in imports(p):
            if ingest_room(mod) in INGEST_FORBIDDEN.get(me, ()):
                bad.append(f"{p.relative_to(REPO)}:{line} ({me}) imports {mod}")
    assert bad == []
    assert ingest_room("xamm_ingest.readers.cali_format") == "readers"


def _data_files() -> list[Path]:
    """Files shipped inside the packages that code reads at run time (not code, not markers)."""
    return sorted(
        f
        for root in PACKAGES.values()
        for f in root.rglob("*")
        if f.is_file()
        and f.suffix not in (".py", ".pyc")
        and f.name != "py.typed"
        and "__pycache__" not in f.parts
    )


def _literals(p: Path) -> set[str]:
    return {
        n.value
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


def test_run_time_data_files_are_declared_beside_the_code_that_reads_them():
    """Each data file is named by a module of its own folder (a folder of data, such as the
    snapshot, by a module beside that folder), and no module builds a path from its own location
    to a data file of another folder: a room that needs another room's data imports the constant
    that declares it, so the room rules above see the dependency."""
    files = _data_files()
    assert any(f.name == "physics_spread.json" for f in files)
    modules = {p: _literals(p) for root in PACKAGES.values() for p in root.rglob("*.py")}
    undeclared, reached = [], []
    for f in files:
        owners = [
            p
            for p, lits in modules.items()
            if (p.parent == f.parent and f.name in lits)
            or (f.parent.parent == p.parent and f.parent.name in lits)
            or (p.parent in f.parents and f.relative_to(p.parent).parts[0] in lits)
        ]
        if not owners:
            undeclared.append(str(f.relative_to(REPO)))
        reached += [  # a path built from a module's own location into another folder's data
            f"{p.relative_to(REPO)} reaches {f.relative_to(REPO)}"
            for p, lits in modules.items()
            if f.name in lits
            and "__file__" in p.read_text()
            and p.parent != f.parent
            and p.parent not in f.parents
        ]
    assert undeclared == [] and reached == []


def _private_calls_across_modules() -> list[str]:
    """``obj._method(...)`` where ``obj`` is not ``self``/``cls`` and ``_method`` is a private
    method defined only in other modules' classes."""
    files = [p for root in PACKAGES.values() for p in root.rglob("*.py")]
    trees = {p: ast.parse(p.read_text()) for p in files}
    owners: dict[str, set[Path]] = {}
    for p, tree in trees.items():
        for c in ast.walk(tree):
            if isinstance(c, ast.ClassDef):
                for f in c.body:
                    if isinstance(f, ast.FunctionDef) and f.name.startswith("_"):
                        if not f.name.startswith("__"):
                            owners.setdefault(f.name, set()).add(p)
    bad = []
    for p, tree in trees.items():
        for n in ast.walk(tree):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)):
                continue
            name, obj = n.func.attr, n.func.value
            if not name.startswith("_") or name.startswith("__"):
                continue
            if isinstance(obj, ast.Name) and obj.id in ("self", "cls"):
                continue
            if p not in owners.get(name, {p}):
                bad.append(f"{p.relative_to(REPO)}:{n.lineno} {ast.unparse(n.func)}")
    return bad


def test_no_module_calls_another_modules_private_methods():
    """The store's concerns (log, reading, writing, appending, checking) and every other split
    meet through public methods: a private method is called only in the module defining it."""
    assert _private_calls_across_modules() == []


def test_help_version_and_datasets_list_never_import_torch(tmp_path):
    code = (
        "import sys\nfrom xamm_data.cli.commands import main\n"
        "for argv in (['--help'], ['--version'], ['datasets', 'list', "
        "'--store', sys.argv[1]]):\n"
        "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
        "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert out.stdout.strip().splitlines()[-1] == "NO-TORCH", out.stderr[-2000:]


def test_the_default_predictor_and_the_listing_commands_never_import_torch(tmp_path):
    """Importing the default predictor, ``xamm predict`` with it, ``zoo list``, ``amm list|show``
    (which read the embedded signatures when nothing was built here): no torch."""
    import polars as pl

    prof = tmp_path / "p.parquet"
    pl.DataFrame(
        {
            "app": ["a"],
            "runtime_s": [1e-3],
            "bytes_per_rep": [8e6],
            "flops_per_rep": [1e6],
            "iterations_per_rep": [1e6],
            "f_log_s_per_iter": [-9.0],
            "f_arith_intensity": [0.125],
            "f_log_problem_size": [6.0],
        }
    ).write_parquet(prof)
    code = (
        "import sys, os\nos.environ['XAMM_HOME'] = sys.argv[2]\n"
        "import xamm_models.predictors.default.model\nfrom xamm_models "
        "import StackedPredictor, load_model\n"
        "from xamm_data.cli.commands import main\ncodes = []\n"
        "for argv in (['zoo', 'list', '--json'], ['amm', 'list', "
        "'--json'], ['amm', 'show', 'quartz:cpu'],\n"
        "             ['amm', 'show', 'lassen:gpu', '--kind', 'physics'],\n"
        "             ['predict', sys.argv[1], '--model', "
        "'xamm/default', '--source', 'quartz:cpu', '--target', "
        "'lassen:gpu', '--json']):\n"
        "    codes.append(main(argv))\n"
        "print(codes, 'TORCH' if 'torch' in sys.modules else 'NO-TORCH')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(prof), str(tmp_path / "home")],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert out.stdout.strip().splitlines()[-1] == "[0, 0, 0, 0, 0] NO-TORCH", out.stderr[-2000:]
    # the embedded signatures are listed
    assert '"latest": "quartz:cpu@1"' in out.stdout.replace('":"', '": "')


def test_model_commands_say_which_extra_when_torch_is_missing(hide_module, capsys):
    from xamm_data.cli.commands import main

    hide_module("torch")
    assert main(["amm", "build", "quartz"]) == 1
    assert (
        "'xamm amm' needs 'torch' (the models extra): pip install torch==2.13.0 'xamm[models]'"
    ) in capsys.readouterr().err
    assert main(["amm", "list", "--json"]) == 0  # reading signatures needs no torch


# modules of a command line outside a cli/ folder: what only a handler needs loads in the handler
CLI_MODULES = ("cli.py", "xamm_command.py")
HEAVY = (
    "torch",
    "dask",
    "deltalake",
    "catboost",
    "xgboost",
    "sklearn",
    "skops",
    "matplotlib",
    "safetensors",
    "hatchet",
    "thicket",
    "pandas",
    "rich",
    "tqdm",
    "xamm_data.hub.publish",
    "pyarrow",
    "arro3",
    "huggingface_hub",
    "fcntl",
    "filelock",  # locks: only for commands that write a shared file (the registry, file hashes)
    "xamm_models.embedders",
    "xamm_models.optimizer",  # torch
    "xamm_models.predictors.paper.predictor",
    "xamm_models.predictors.paper.regressors",  # torch
    "xamm_models.predictors.vae_dnn",
    "xamm_models.predictors.adapted.predictor",
    "cryptography",  # the sign extra: a centre's keys
    "numpy",  # a fifth of an ingest's start-up: where arrays are searched
    "importlib.metadata",  # a scan of the installed distributions: when a module is missing
    "concurrent.futures",  # a process pool's modules: when sources are read on local processes
    # polars and pydantic: a format's table and profile types, resolved when a format reads
    "xamm_data.tables.schema",
    "xamm_data.tables.regions",
    # pydantic: a run directory's xamm.toml and the user's machine registry, checked where found
    "xamm_ingest.run_config",
    "xamm_data.machines.registry",
)


def test_function_level_imports_are_only_heavy_optional_dependencies_with_a_reason():
    """No hidden cycles behind imports inside functions: those left load heavy optional dependencies
    (or, in a CLI module, what only a handler needs, so start-up stays fast), each with a reason
    on its line or in the comment just above it."""
    bad = []
    for root in PACKAGES.values():
        for p in root.rglob("*.py"):
            lines = p.read_text().splitlines()
            for line, mod, inside in imports(p):
                if not inside:
                    continue
                # start-up
                heavy = (
                    any(mod == h or mod.startswith(h + ".") for h in HEAVY)
                    or p.name in CLI_MODULES
                    or p.parent.name == "cli"
                )
                reason = "#" in lines[line - 1] or lines[line - 2].strip().startswith("#")
                if not heavy or not reason:
                    bad.append(f"{p.relative_to(REPO)}:{line} {mod}")
    assert bad == []


def test_no_function_over_60_lines():
    long = [
        f"{p.relative_to(REPO)}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)"
        for root in PACKAGES.values()
        for p in root.rglob("*.py")
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and n.end_lineno - n.lineno + 1 > 60
    ]
    assert long == []


def test_no_silent_default_to_xamm_home_deep_inside():
    """Signature registries and the store are passed in; only entry points ask for the $XAMM_HOME
    ones."""
    import inspect

    pytest.importorskip("torch")
    from xamm_models.machines.attention import build_signatures
    from xamm_models.machines.signatures import SignatureRegistry

    with pytest.raises(TypeError):
        SignatureRegistry()  # no root, no registry
    params = inspect.signature(build_signatures).parameters
    assert (
        params["store"].default is inspect.Parameter.empty
        and params["registry"].default is inspect.Parameter.empty
    )
    reg = SignatureRegistry(REPO / "nowhere" / "signatures")
    assert reg.embedders_dir == REPO / "nowhere" / "embedders"


def test_a_missing_optional_package_names_the_extra_that_brings_it():
    """The extra is read from the installed distribution's metadata, so it follows pyproject."""
    from xamm_data.extras import extra_for, install_hint

    want = {"torch": "models", "sklearn": "models", "xgboost": "models", "torch.nn": "models"}
    want |= {"hatchet": "hatchet", "thicket": "thicket", "distributed": "dask", "dask": "dask"}
    assert {m: extra_for(m) for m in want} == want
    # core dependencies and xamm itself are never "optional": a broken install, not an extra
    assert [extra_for(m) for m in ("numpy", "polars", "xamm_data", None)] == [None] * 4
    hint = install_hint(ModuleNotFoundError("No module named 'hatchet'", name="hatchet"))
    assert hint == "this needs 'hatchet' (the hatchet extra): pip install 'xamm[hatchet]'"


def _house_graph(roots: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the house's modules it imports, anywhere in the file (inside functions and under
    ``if TYPE_CHECKING:`` too); ``from a import b`` counts ``a.b`` when that is a module."""
    names = {}
    for root in roots.values():
        for p in root.rglob("*.py"):
            parts = list(p.relative_to(root.parent).with_suffix("").parts)
            names[p] = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    known = set(names.values())
    graph = {}
    for p, me in names.items():
        out = set()
        for n in ast.walk(ast.parse(p.read_text())):
            mods = [a.name for a in n.names] if isinstance(n, ast.Import) else []
            if isinstance(n, ast.ImportFrom) and n.module:
                subs = [f"{n.module}.{a.name}" for a in n.names]
                mods = [s for s in subs if s in known] or [n.module]
            out |= {m for m in mods if m in known and m != me and not me.startswith(m + ".")}
        graph[me] = out
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    found = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                found.append(" -> ".join(path[path.index(nxt) :] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_no_import_cycle_anywhere_in_the_house():
    """xamm_data, xamm_ingest and xamm_models: no circle, not even one hidden behind a lazy import
    or ``TYPE_CHECKING``."""
    assert _cycles(_house_graph(PACKAGES)) == []


def test_a_type_checking_import_back_is_a_cycle(tmp_path):
    pkg = tmp_path / "house"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "log.py").write_text("from house.append import Counts\n")
    (pkg / "append.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from house.log import Log\n"
    )
    assert _cycles(_house_graph({"house": pkg})) == ["house.append -> house.log -> house.append"]
    (pkg / "append.py").write_text("class Counts: ...\n")
    assert _cycles(_house_graph({"house": pkg})) == []


def _defined(p: Path) -> set[str]:
    return {
        n.name
        for n in ast.parse(p.read_text()).body
        if isinstance(n, (ast.FunctionDef, ast.ClassDef))
    }


def test_the_models_cli_is_one_module_per_command_and_packages_faces_do_no_work():
    cli = REPO / "xamm_models" / "cli"
    assert _defined(cli / "__init__.py") == {"register", "add_commands"}
    registered = {
        n.func.value.id
        for n in ast.walk(ast.parse((cli / "__init__.py").read_text()))
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name)
    }
    assert registered >= {"amm", "run", "predict", "evaluate", "zoo", "schedule", "adapt"}
    assert all((cli / f"{m}.py").is_file() for m in registered)
    assert max(len((p).read_text().splitlines()) for p in cli.glob("*.py")) < 400
    faces = [
        REPO / "xamm_models" / "compare" / "__init__.py",
        *(
            REPO / "xamm_data" / r / "__init__.py"
            for r in DATA_ROOM_IMPORTS
            if r not in ("base", "uses")
        ),
        REPO / "xamm_data" / "__init__.py",
    ]
    assert {str(f.relative_to(REPO)): _defined(f) for f in faces if _defined(f)} == {}


def test_the_layout_page_and_picture_say_what_the_imports_say():
    sys.path.insert(0, str(REPO / "docs"))
    try:
        import layout_rooms
    finally:
        sys.path.remove(str(REPO / "docs"))
    page = (REPO / "docs" / "layout.md").read_text()
    assert layout_rooms.page_with(page, layout_rooms.markdown()) == page
    # the page's own command, as written
    check = subprocess.run(
        [sys.executable, "docs/layout_rooms.py", "--check"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert check.returncode == 0 and "up to date" in check.stdout
    svg = layout_rooms.PICTURE.read_text()
    for package in layout_rooms.ROOTS:
        members, arrows = layout_rooms.rooms(package)
        assert all(f">{r}<" in svg for r in arrows if r != "(face)"), package
    # an upward import would lift a room or close a circle, and the page would change
    with pytest.raises(ValueError, match="circle"):
        layout_rooms.floors({"store": {"tables"}, "tables": {"store"}})
    assert layout_rooms.floors({"hub": {"store"}, "store": {"tables"}, "tables": set()}) == {
        "hub": 2,
        "store": 1,
        "tables": 0,
    }
