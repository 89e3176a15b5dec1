"""Deprecated module paths of ``xamm_data`` (``xamm_data.schema`` for ``xamm_data.tables.schema``),
importable for one release with a :class:`DeprecationWarning`.

One finder answers every old path with the new module itself (the same object, so a name patched
through either path is patched in both); nothing else in the house imports an old path
(``tests/test_layers.py``).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
import warnings

#: old ``xamm_data.<name>`` -> its module now (the four that became folders keep their names:
#: ``xamm_data.machines``, ``.store``, ``.hub`` and ``.cli`` export their former public names)
MOVED = {
    "bounds": "tables.bounds",
    "cli_machines": "cli.machines",
    "cli_tools": "cli.tools",
    "counters": "tables.counters",
    "datasets": "hub.datasets",
    "delta_log": "store.delta_log",
    "families": "machines.families",
    "features": "tables.features",
    "hub_files": "hub.files",
    "locations": "store.locations",
    "regions": "tables.regions",
    "schema": "tables.schema",
    "schema_files": "tables.schema_files",
    "snapshot": "hub.snapshot",
    "store_append": "store.append",
    "store_counts": "store.counts",
    "store_log": "store.log",
    "store_read": "store.read",
    "store_rows": "store.rows",
    "store_verify": "store.verify",
    "store_write": "store.write",
    "summary": "cli.summary",
    "table_files": "store.files",
    "targets": "machines.targets",
    "units": "tables.units",
    "validate": "tables.validate",
    "workflow": "tables.workflow",
    "write_reports": "store.reports",
}

__all__ = ["MOVED", "MovedModules", "install"]


class MovedModules:
    """Finds ``xamm_data.<old name>`` and loads it as the module that now holds it: a meta path
    finder and its loader by their methods (the import system calls nothing else), without the
    abstract classes of ``importlib.abc``, whose import is most of ``import xamm_data``'s."""

    def find_spec(self, fullname, path=None, target=None):
        """A spec for an old path of :data:`MOVED` (``None`` for every other name).

        Args:
            fullname: the dotted name being imported.
            path: the parent package's search path (unused).
            target: the module being reloaded (unused).
        """
        package, _, leaf = fullname.rpartition(".")
        if package != "xamm_data" or leaf not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        """The new module itself, after a warning that names it."""
        new = f"xamm_data.{MOVED[spec.name.rpartition('.')[2]]}"
        warnings.warn(
            f"{spec.name} moved to {new}; the old path goes in the next release",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(new)

    def exec_module(self, module):
        """Nothing to run: the new module ran when it was imported."""


class _Face(types.ModuleType):
    """The package keeps its public names: importing an old module path that shares one
    (``xamm_data.validate``, the module, beside ``validate``, the function) binds the module in
    ``sys.modules`` only: the package's name stays the function."""

    _public: frozenset[str] = frozenset()

    def __setattr__(self, name: str, value) -> None:
        if name in self._public and name in MOVED and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


def install(package: types.ModuleType, public: set[str]) -> None:
    """Put the finder on :data:`sys.meta_path` once, and keep ``package``'s ``public`` names from
    being hidden by the old module paths of the same names.

    Args:
        package: ``xamm_data`` itself.
        public: the names its face exports.
    """
    if not any(isinstance(f, MovedModules) for f in sys.meta_path):
        sys.meta_path.append(MovedModules())
    face = type("XammDataFace", (_Face,), {"_public": frozenset(public)})
    package.__class__ = face
