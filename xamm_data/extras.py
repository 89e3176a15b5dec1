"""Which optional part of xamm (an extra of the distribution) brings a module, so that a command
missing one says ``pip install 'xamm[models]'`` in one line instead of a traceback."""

from __future__ import annotations

import re

__all__ = ["extra_for", "install_hint"]

# distributions whose import names differ from their names
_IMPORT_NAMES = {
    "scikit-learn": ("sklearn",),
    "llnl-hatchet": ("hatchet",),
    "llnl-thicket": ("thicket",),
    "xgboost-cpu": ("xgboost",),
    "dask": ("dask", "distributed"),
    "moto": ("moto",),
    "mkdocstrings": ("mkdocstrings",),
}
_REQ = re.compile(r"([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?.*extra\s*==\s*['\"]([\w-]+)['\"]")
# the extra a user needs when several list the module: the first that names it here
_PREFERENCE = ("models", "sign", "hatchet", "thicket", "dask", "bench", "docs", "test")


def _extras() -> dict[str, str]:
    """Import name -> the extra that brings it, from the installed distribution's metadata."""
    import importlib.metadata as md  # only when a module is missing: it costs a command's start-up

    try:
        reqs = md.requires("xamm") or []
    except md.PackageNotFoundError:
        return {}
    found: dict[str, list[str]] = {}
    for req in reqs:
        m = _REQ.match(req)
        if not m:
            continue
        dist = m.group(1).lower()
        for name in _IMPORT_NAMES.get(dist, (dist.replace("-", "_"),)):
            found.setdefault(name, []).append(m.group(2))
    rank = {e: i for i, e in enumerate(_PREFERENCE)}
    return {n: min(es, key=lambda e: rank.get(e, len(rank))) for n, es in found.items()}


def extra_for(module: str | None) -> str | None:
    """The extra whose requirements provide ``module`` (a dotted name; its top level counts).

    Parameters:
        module: the name a ``ModuleNotFoundError`` carries.

    Returns:
        The extra's name, or ``None`` when no extra brings it (then it is a broken install).
    """
    if not module:
        return None
    return _extras().get(module.split(".")[0].lower())


def install_hint(error: ModuleNotFoundError) -> str | None:
    """One line for a module an extra brings: what is missing and the command that adds it.

    Parameters:
        error: the error raised by an import.

    Returns:
        The line, or ``None`` when the module is not optional.
    """
    extra = extra_for(error.name)
    if extra is None:
        return None
    # torch named first so that pip takes the CPU build rather than a CUDA one
    torch = "torch==2.13.0 " if extra == "models" else ""
    return f"this needs {error.name!r} (the {extra} extra): pip install {torch}'xamm[{extra}]'"
