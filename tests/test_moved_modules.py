"""xamm_data's rooms: the old flat module paths answer for one release, with a warning, as the very
module that now holds them; the four modules that became folders keep their public names."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest
from conftest import REPO

from xamm_data._moved import MOVED

_CHECK = """
import importlib, json, sys, warnings
seen = {}
for old, new in json.loads(sys.argv[1]).items():
    if "xamm_data." + old in sys.modules:  # imported by an earlier one: not a first import
        continue
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        module = importlib.import_module("xamm_data." + old)
    seen[old] = [
        module is importlib.import_module("xamm_data." + new),
        [str(x.message) for x in w if x.category is DeprecationWarning],
    ]
print(json.dumps(seen))
"""


def _first_imports(moved: dict[str, str]) -> dict[str, list]:
    """Each old path's first import in a fresh interpreter, in turn: {old: [is the new module,
    the deprecation messages]}; an old path another imported first is left out."""
    out = subprocess.run(
        [sys.executable, "-c", _CHECK, json.dumps(moved)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def first_imports() -> dict[str, list]:
    # one interpreter for all: a process each cost a second apiece
    return _first_imports(dict(sorted(MOVED.items())))


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_warns_and_is_the_new_module(old, first_imports):
    same, said = first_imports.get(old) or _first_imports({old: MOVED[old]})[old]
    assert same is True
    assert any(f"xamm_data.{old} moved to xamm_data.{MOVED[old]}" in m for m in said), said


def test_every_moved_module_exists_and_no_old_file_is_left():
    for old, new in MOVED.items():
        assert (REPO / "xamm_data" / (new.replace(".", "/") + ".py")).is_file(), new
        assert not (REPO / "xamm_data" / f"{old}.py").exists(), old


@pytest.mark.parametrize(
    ("package", "module", "names"),
    [
        ("xamm_data.store", "xamm_data.store.store", ("Store", "as_store", "CorruptDataError")),
        ("xamm_data.machines", "xamm_data.machines.registry", ("get", "Machine", "NODE_FACTS")),
        ("xamm_data.hub", "xamm_data.hub.publish", ("push_dataset", "HubUnavailableError")),
        ("xamm_data.cli", "xamm_data.cli.commands", ("main", "register")),
        ("xamm_data", "xamm_data.hub.datasets", ("load_dataset", "list_datasets")),
    ],
)
def test_a_folder_keeps_the_names_its_module_had(package, module, names):
    pkg, mod = importlib.import_module(package), importlib.import_module(module)
    assert all(getattr(pkg, n) is getattr(mod, n) for n in names)
    assert set(names) <= set(dir(pkg)) and set(names) <= set(pkg.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = pkg.nope


def test_a_name_the_machine_registry_computes_reaches_through_the_folder():
    import xamm_data.machines as machines
    from xamm_data.machines import registry

    assert machines.MACHINES == registry.MACHINES
    assert "quartz" in {m.id for m in machines.MACHINES}


def test_an_old_module_path_never_hides_the_function_of_the_same_name():
    code = (
        "import importlib, warnings\nwarnings.simplefilter('ignore')\n"
        "importlib.import_module('xamm_data.validate')\n"
        "import xamm_data\nfrom xamm_data import validate\n"
        "from xamm_data.validate import ValidationError\n"
        "print(callable(validate), type(validate).__name__, ValidationError.__name__,\n"
        "      xamm_data.validate is validate)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert out.stdout.split() == ["True", "function", "ValidationError", "True"], out.stderr


@pytest.mark.parametrize(
    "face",
    [
        "xamm_data",
        "xamm_data.store",
        "xamm_data.machines",
        "xamm_data.hub",
        "xamm_data.cli",
        "xamm_models.compare",
        "xamm_models.zoo",
    ],
)
def test_every_name_a_face_lists_resolves_and_none_is_a_room_of_its_own(face):
    pkg = importlib.import_module(face)
    root = REPO / face.replace(".", "/")
    rooms = {p.stem for p in root.glob("*.py")} | {p.name for p in root.iterdir() if p.is_dir()}
    public = [n for n in pkg.__all__ if n != "__version__"]
    assert public and not set(public) & rooms
    assert all(getattr(pkg, n) is not None for n in public)
