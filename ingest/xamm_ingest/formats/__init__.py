"""xamm's own input formats, one module each, each ending in ``FORMAT = Format(...)``.

They are registered like any other package's formats, through the ``xamm.formats`` entry points
in ``pyproject.toml`` (:mod:`xamm_ingest.format`): ``rajaperf``, ``babelstream``, ``caliper``,
``hpctoolkit``, ``table`` (stored) and ``region-table`` (read for ``xamm predict`` only).
"""
