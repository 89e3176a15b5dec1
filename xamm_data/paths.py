"""Where xamm keeps its files: ``$XAMM_HOME``, else the user's cache directory.

``$XAMM_HOME`` may also be an object-store URI (``s3://bucket/prefix``): the dataset store then
lives at ``<uri>/store``, while the signature registry and embedders (small local files) stay in the
user's cache directory.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from platformdirs import user_cache_dir


def _uri(value: str) -> bool:
    return "://" in value


def xamm_home() -> Path:
    """The root of xamm's local files: ``$XAMM_HOME`` if set (and local), else the user cache
    directory ``platformdirs`` gives for ``xamm`` (``~/.cache/xamm`` on Linux). Read from the
    environment at every call (a test or a script may change it)."""
    return _home(
        os.environ.get("XAMM_HOME"), os.environ.get("HOME"), os.environ.get("XDG_CACHE_HOME")
    )


@functools.lru_cache(maxsize=16)
def _home(env: str | None, home: str | None, cache: str | None) -> Path:
    # what xamm_home answers for these variables, worked out once (an ingest asks it per file)
    return (
        Path(env).expanduser()
        if env and not _uri(env)
        else Path(user_cache_dir("xamm", appauthor=False))
    )


def default_store_root() -> Path | str:
    """The default dataset store: ``<$XAMM_HOME>/store`` (a URI when ``$XAMM_HOME`` is one)."""
    env = os.environ.get("XAMM_HOME")
    return f"{env.rstrip('/')}/store" if env and _uri(env) else xamm_home() / "store"
