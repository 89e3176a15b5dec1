"""Public names of a package that load on first use (PEP 562), so importing a package costs nothing
until a name is used (``xamm --help``, ``xamm predict`` with the default predictor: no torch)."""

from __future__ import annotations

import importlib


def lazy_exports(package: str, public: dict[str, str]):
    """``(__getattr__, __dir__)`` for a package whose public names live in other modules.

    Args:
        package: the package's import name, for the error message.
        public: ``{name: "module.path"}``: each name is ``getattr(import_module(path), name)``
            on first use.

    Returns:
        The module-level ``__getattr__`` and ``__dir__``.
    """

    def __getattr__(name: str):
        if name in public:
            return getattr(importlib.import_module(public[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(public)

    return __getattr__, __dir__
