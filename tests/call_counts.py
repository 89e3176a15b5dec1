"""Count calls of named functions wherever the house looks them up (the defining module and every
module that imported the name), for tests that say how often a check or a parse runs."""

from __future__ import annotations

import collections
import contextlib
import functools
import importlib
import sys


@contextlib.contextmanager
def counting(*targets: str):
    """Wrap each ``"module:function"`` for the duration; yields a :class:`collections.Counter`
    keyed by the target strings.

    A name bound elsewhere under the same object (``from m import f``) is wrapped there too, so a
    call through any module counts; the originals are restored afterwards.
    """
    calls: collections.Counter = collections.Counter()
    patched = []
    for target in targets:
        mod_name, _, attr = target.partition(":")
        original = getattr(importlib.import_module(mod_name), attr)

        def wrap(fn, key):
            @functools.wraps(fn)
            def counted(*a, **k):
                calls[key] += 1
                return fn(*a, **k)

            return counted

        wrapped = wrap(original, target)
        for mod in list(sys.modules.values()):
            name = getattr(mod, "__name__", "") or ""
            if not name.startswith(("xamm_data", "xamm_ingest", "xamm_models")):
                continue
            for k, v in list(vars(mod).items()):
                if v is original:
                    setattr(mod, k, wrapped)
                    patched.append((mod, k, original))
    try:
        yield calls
    finally:
        for mod, k, original in patched:
            setattr(mod, k, original)
