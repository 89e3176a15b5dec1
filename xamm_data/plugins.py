"""Hooks the other layers fill through entry points, so that ``xamm_data`` never imports them.

Layers point one way (``xamm_ingest -> xamm_data <- xamm_models``); where data-side code offers
something only a higher layer can do, it asks an entry-point group (declared in ``pyproject.toml``):

* ``xamm.commands``: ``register(subparsers)`` adds a package's commands to ``xamm``;
* ``xamm.datasets``: ``build(runs) -> DataFrame`` makes a derived dataset (``xplat-rajaperf``) from
  the store's ``benchmark_runs``;
* ``xamm.ingest``: ``rajaperf(paths, machine=, store=, ...)`` ingests RAJAPerf outputs (used by the
  models layer to build ``xplat-rajaperf`` from its named sources, without importing the ingest
  layer);
* ``xamm.profiles``: ``read(path, time_unit=, clock_ghz=)`` reads an application profile region by
  region (:class:`xamm_data.tables.regions.RegionProfile`), for ``xamm predict``;
* ``xamm.signatures``: ``lookup(ref, version, registry)`` returns a machine's AMM signature;
* ``xamm.schemas``: a function returning ``{file name: text}`` of further JSON Schemas for
  ``schemas/`` (the models layer's acceptance criteria and certificates).
"""

from __future__ import annotations

import functools
import sys
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from xamm_data.extras import install_hint

MODELS_EXTRA = "pip install torch==2.13.0 'xamm[models]'"


@functools.cache
def _installed(path: tuple[str, ...]) -> Any:
    # one scan of every installed distribution's metadata per import path (a scan is ~30 ms, and a
    # command asks several groups); selectable by group on every Python xamm supports
    return entry_points()


def plugins(group: str) -> dict[str, EntryPoint]:
    """The entry points of ``group``, by name (sorted).

    Args:
        group: the entry-point group (``xamm.formats``, ``xamm.commands``, ...).

    Returns:
        Its entry points by name.
    """
    found = _installed(tuple(sys.path)).select(group=group)
    return {ep.name: ep for ep in sorted(found, key=lambda ep: ep.name)}


def load(group: str, name: str, what: str):
    """The object entry point ``name`` of ``group`` names; a ``LookupError`` says what provides
    it."""
    eps = plugins(group)
    if name not in eps:
        raise LookupError(
            f"{what} comes from an installed xamm package that registers "
            f"{group}:{name}; "
            "reinstall xamm (pip install -e .) so its entry points are known"
        )
    try:
        return eps[name].load()
    except ModuleNotFoundError as e:
        hint = install_hint(e)
        if hint is None:
            raise
        raise LookupError(f"{what}: {hint}") from None
