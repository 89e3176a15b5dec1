"""One module per source format; each exposes a ``read_*`` function returning a ReadResult."""
