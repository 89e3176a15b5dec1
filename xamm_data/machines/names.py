"""The machine registry's names without its records: where its two files are, and the ids and
aliases of the shipped one.

An ingest asks one thing of the registry for each file: the id of the machine the file names.
Where the user has no registry file of their own (``$XAMM_HOME/machines.toml``), every name is the
shipped file's, and this module answers from that file's ids and aliases alone, registered as the
registry registers them (:class:`~xamm_data.registry.Registry`, the same alias check): no record is
built, and the validation library the records need is not imported. Where the user's file
exists, its records must be checked before any of its names is believed, and callers ask the
registry itself (:func:`xamm_data.machines.registry.canonical_id`); a test holds the two to the
same answer for every shipped name.
"""

from __future__ import annotations

import functools
import os
import tomllib
from pathlib import Path

from xamm_data.identifiers import check_alias
from xamm_data.paths import xamm_home
from xamm_data.registry import Registry

__all__ = ["SHIPPED", "USER_FILE", "shipped_canonical_id", "user_file_path", "user_registry_exists"]

SHIPPED = Path(__file__).with_name("machines.toml")
USER_FILE = "machines.toml"


@functools.lru_cache(maxsize=16)
def _user_file_at(home: Path) -> str:
    # worked out once per home: an ingest asks for a machine's id once per file
    return str(home / USER_FILE)


def user_file_path() -> str:
    """The user's registry file (``$XAMM_HOME/machines.toml``), whether it exists or not."""
    return _user_file_at(xamm_home())


def user_registry_exists() -> bool:
    """Whether the user has a registry file of their own (then only the registry's checked records
    say which names are known)."""
    return os.path.isfile(user_file_path())


@functools.lru_cache(maxsize=1)
def _shipped_names() -> Registry[str]:
    """The shipped file's ids, each with its aliases, in the file's order (the file is xamm's own,
    and a test checks every record of it)."""
    tables = tomllib.loads(SHIPPED.read_text(encoding="utf-8"))["machines"]
    names: Registry[str] = Registry("machine")
    for mid, fields in tables.items():
        names.add(mid, mid, aliases=tuple(check_alias(a) for a in fields.get("aliases", ())))
    return names


def shipped_canonical_id(name: str) -> str | None:
    """The shipped registry's id for an id or alias (case-insensitive), else ``None``: what
    :func:`xamm_data.machines.registry.canonical_id` answers when the user has no file of their
    own."""
    return _shipped_names().canonical(name)
