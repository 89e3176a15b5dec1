"""Where xamm keeps its files: ``$XAMM_HOME``, else the user's cache directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def xamm_home() -> Path:
    """The root of xamm's local files: ``$XAMM_HOME`` if set, else ``<user cache dir>/xamm``."""
    env = os.environ.get("XAMM_HOME")
    if env:
        return Path(env).expanduser()
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "xamm"


def default_store_root() -> Path:
    """The default dataset store: ``<xamm home>/store``."""
    return xamm_home() / "store"
