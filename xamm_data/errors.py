"""The one base of xamm's own errors: ``except XammError`` catches every refusal xamm raises on
purpose (bad input named by file and record, a tampered file, a name that cannot be a path).

Each error also derives from the built-in class its callers have always caught (``ValueError``
for bad input), so code written against those keeps working.
"""

from __future__ import annotations

__all__ = ["BadNameError", "BoundsError", "TamperedError", "XammError", "type_name"]


class XammError(Exception):
    """Base of the errors xamm raises on purpose."""


class BadNameError(XammError, ValueError):
    """A name that becomes a path or a key (machine, device, dataset, certificate, signature) and
    does not follow :data:`xamm_data.identifiers.NAME`; the message says what it is and where it
    came from."""


class BoundsError(XammError, ValueError):
    """Plausibility bounds (:class:`xamm_data.tables.bounds.Bounds`) that are no number above 0,
    or a lowest plausible value not below its highest: ``name`` is the bound ("" for a pair),
    ``problem`` what is wrong."""

    def __init__(self, name: str, problem: str):
        super().__init__(f"{name}: {problem}" if name else problem)
        self.name, self.problem = name, problem


class TamperedError(XammError, ValueError):
    """A record whose content no longer agrees with the hash recorded for it (an edited, deleted,
    reordered or stray certificate; a pulled file whose content disagrees with its repo path)."""


def type_name(value: object, article: bool = False) -> str:
    """How an error names the type of a value it refuses: a built-in's bare name (``NoneType``,
    ``dict``), any other with its module (``pandas.core.frame.DataFrame``).

    Args:
        value: the value refused.
        article: put "a" or "an" before it ("an int", "a dict").
    """
    kind = type(value)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    return f"{'an' if name[0].lower() in 'aeiou' else 'a'} {name}" if article else name
