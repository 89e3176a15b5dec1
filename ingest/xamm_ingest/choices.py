"""The pipeline's choices a command line offers (where sources are read, how many commit at once,
the facts a path pattern may supply), kept apart from the pipeline so that ``--help`` names them
without loading it."""

from __future__ import annotations

import re

from xamm_data.errors import type_name

__all__ = [
    "ALIASES",
    "DEFAULT_BATCH_FILES",
    "EXECUTORS",
    "PATH_FACTS",
    "canonical_executor",
    "path_pattern_problem",
]

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


PATH_FACTS = ("machine", "compiler", "device")  # what a path pattern's named groups may supply


def path_pattern_problem(pattern: object) -> str | None:
    """What is wrong with a path pattern (``--path-pattern``), or None: it must compile, and name
    at least one group, each one of :data:`PATH_FACTS` (another would be a misspelt one, its
    fact never supplied).

    Args:
        pattern: the regular expression as given.
    """
    if not isinstance(pattern, str):
        return f"{type_name(pattern, article=True)}; expected a regular expression"
    try:
        groups = re.compile(pattern).groupindex
    # OverflowError: a repeat count past what re holds (a{99999999999}); RecursionError: nesting
    except (re.error, OverflowError, RecursionError) as e:
        return str(e) or type(e).__name__
    if not groups:
        return f"names no group; expected (?P<{'>...), (?P<'.join(PATH_FACTS)}>...)"
    if other := sorted(set(groups) - set(PATH_FACTS)):
        return f"group {other[0]!r} supplies nothing; the groups are {', '.join(PATH_FACTS)}"
    return None
