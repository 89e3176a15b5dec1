"""One rule for every name that becomes a path or a key.

A machine id, a device, a dataset name, a certificate's machine and a signature's machine each
end up as a folder or file name under ``$XAMM_HOME`` or in a Hub repo path. They enter from the
command line, from files users write (``machines.toml``, ``xamm.toml``, ``criteria.toml``) and from
files pulled from a Hub, and every one of those boundaries checks them with :func:`check_name`
against the one pattern :data:`NAME`: lower-case letters and digits, then also ``.``, ``_`` and
``-``, at most 100 characters. No separator, no leading dot, no ``..``, nothing a shell or a file
system reads specially, so a name can never point outside the folder it is joined to.

Aliases are the one kind of name that never becomes a path: they are what files call a machine
(``Dane``, ``Intel(R) Xeon(R) Platinum 8479``) and map to an id. :func:`check_alias` takes
printable text without control characters.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable

from xamm_data.errors import BadNameError

__all__ = [
    "ALIAS",
    "DEVICES",
    "NAME",
    "NAME_BODY",
    "check_alias",
    "check_name",
    "first_repeated",
    "is_name",
]

#: the one pattern of a name that becomes a path or a key, without anchors (for larger patterns)
NAME_BODY = r"[a-z0-9][a-z0-9_-]*(\.[a-z0-9_-]+)*"
#: the one pattern of a name that becomes a path or a key
NAME = re.compile(f"^{NAME_BODY}$")
MAX_LENGTH = 100
#: what a machine is on a node: the targets ``machine:cpu`` and ``machine:gpu``
DEVICES = ("cpu", "gpu")
#: an alias: printable, no control character, at most 100 characters
ALIAS = re.compile(r"^[^\x00-\x1f\x7f]{1,100}$")
RULE = "lower-case letters, digits, '.', '_' or '-', starting with a letter or digit, no '..'"


def is_name(value: object) -> bool:
    """Whether ``value`` is a string that follows :data:`NAME`."""
    return isinstance(value, str) and len(value) <= MAX_LENGTH and bool(NAME.match(value))


def check_name(value: object, what: str = "machine", where: str | None = None) -> str:
    """``value`` when it follows :data:`NAME`, else :class:`BadNameError`.

    Args:
        value: the name as given.
        what: what it names (``machine``, ``dataset``, ``certificate machine``), for the message.
        where: where it came from (a file, ``--machine``, a Hub path), for the message.

    Returns:
        ``value`` unchanged.
    """
    if is_name(value):
        return str(value)
    at = f"{where}: " if where else ""
    raise BadNameError(f"{at}{what} name {value!r} is not a name xamm keeps: expected {RULE}, "
                       f"at most {MAX_LENGTH} characters (e.g. quartz, h100-node)")  # fmt: skip


def check_alias(value: object, where: str | None = None) -> str:
    """``value`` when it is printable text of at most 100 characters, else
    :class:`BadNameError`."""
    if isinstance(value, str) and value.strip() and ALIAS.match(value):
        return value
    at = f"{where}: " if where else ""
    raise BadNameError(f"{at}alias {value!r}: expected printable text without control "
                       "characters, at most 100 characters")  # fmt: skip


def first_repeated(names: Iterable[Hashable]) -> Hashable | None:
    """The first of ``names`` given a second time (None when each is given once): what an error
    names when a list (targets, columns, machines) must name each once.

    Args:
        names: the names in the order given.
    """
    seen: set = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None
