"""Where xamm keeps its files: ``$XAMM_HOME``, else the user's cache directory."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_cache_dir


def xamm_home() -> Path:
    """The root of xamm's local files: ``$XAMM_HOME`` if set, else the user cache directory
    ``platformdirs`` gives for ``xamm`` (``~/.cache/xamm`` on Linux)."""
    env = os.environ.get("XAMM_HOME")
    return Path(env).expanduser() if env else Path(user_cache_dir("xamm", appauthor=False))


def default_store_root() -> Path:
    """The default dataset store: ``<xamm home>/store``."""
    return xamm_home() / "store"
