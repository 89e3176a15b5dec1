"""xamm's own input formats: their declarations in :mod:`.catalog` (light: ``xamm-ingest --help``
loads them and nothing else) and each format's work in a module of its own (``rajaperf``,
``babelstream``, ``benchpark``, ``caliper``, ``hpctoolkit``, ``table``, ``region_table``),
imported the first time the format reads.

They are registered like any other package's formats, through the ``xamm.formats`` entry points in
``pyproject.toml`` (:mod:`xamm_ingest.format`): ``rajaperf``, ``babelstream``, ``benchpark``,
``caliper``, ``hpctoolkit``, ``table`` (stored) and ``region-table`` (read for ``xamm predict``
only).
"""
