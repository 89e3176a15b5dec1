"""The pipeline's choices a command line offers (where sources are read, how many commit at once),
kept apart from the pipeline so that ``--help`` names them without loading it."""

from __future__ import annotations

__all__ = ["ALIASES", "DEFAULT_BATCH_FILES", "EXECUTORS", "canonical_executor"]

EXECUTORS = ("serial", "processes", "dask")
ALIASES = {"local": "processes"}  # a synonym scripts may use
DEFAULT_BATCH_FILES = 1000  # sources per commit


def canonical_executor(name: str) -> str:
    """The executor ``name`` stands for; a ``ValueError`` lists the valid ones.

    Args:
        name: an executor's name or alias.
    """
    name = ALIASES.get(name, name)
    if name not in EXECUTORS:
        raise ValueError(f"unknown executor {name!r}; expected one of {', '.join(EXECUTORS)}")
    return name
