"""Frozen dataclass instances built without their ``__init__``, for the two made per source.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__``, a
call per field: for the eleven fields of :class:`~xamm_ingest.sources.Task`, made for each file a
walk finds and rebuilt once a source is hashed, that costs more than the hash of a small file.
:func:`built` puts the fields in the instance's ``__dict__`` at once, which is where those calls
put them: for a class with no ``__post_init__``, no ``__slots__`` and no field that is not an
``__init__`` argument (what the tests check of the classes built here), the instance is the one
``__init__`` makes.
"""

from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["built"]

T = TypeVar("T")


def built(cls: type[T], fields: dict[str, Any]) -> T:
    """An instance of the frozen dataclass ``cls`` holding ``fields``, as ``cls(**fields)`` makes
    it (no value checked or converted, as its ``__init__`` checks none).

    Args:
        cls: a frozen dataclass of the kind the module docstring says.
        fields: every one of its fields, by name.
    """
    new = object.__new__(cls)
    new.__dict__.update(fields)
    return new
