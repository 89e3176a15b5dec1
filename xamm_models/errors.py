"""Every error xamm_models raises on purpose, in one place (light: importing it loads no model
library)."""

from __future__ import annotations

from xamm_data.errors import XammError
from xamm_data.registry import UnknownNameError

__all__ = [
    "ADD_A_TARGET",
    "ConfigError",
    "FeatureSchemaError",
    "ImmutableSignatureError",
    "NotAReportError",
    "ProfileInputError",
    "SavedFormatError",
    "UnknownSourceError",
    "UnknownTargetError",
    "WrongKindError",
    "unknown_name_message",
]


class FeatureSchemaError(XammError, ValueError):
    """Input whose columns do not match the predictor's feature schema."""


class UnknownSourceError(XammError, ValueError):
    """A source machine the predictor was not trained with."""


class UnknownTargetError(XammError, ValueError):
    """A target the predictor knows nothing about: not in training, and no signature or benchmark
    runs given."""


class NotAReportError(XammError, ValueError):
    """``xamm report --out`` names a file, or a folder that holds files and is not an earlier
    report (the report replaces the folder it writes)."""


class ProfileInputError(XammError, ValueError):
    """A profile table a predictor cannot use: missing columns, non-numeric or out-of-range values,
    no rows."""


class ConfigError(XammError, ValueError):
    """A config file that does not validate; the message names the field."""


class ImmutableSignatureError(XammError, ValueError):
    """An attempt to change a published signature version."""


class SavedFormatError(XammError, ValueError):
    """A saved predictor folder in a format this xamm does not read (another kind, or a newer or
    unknown format version)."""


class WrongKindError(XammError, ValueError):
    """``Kind.from_pretrained`` on a folder that holds another kind of predictor."""


ADD_A_TARGET = (
    "to predict for a new machine, give its RAJAPerf runs: "
    "predict(..., target_benchmarks=runs) or "
    "xamm predict --target-benchmarks STORE"
)


def unknown_name_message(kind: str, name: str, known: list[str]) -> str:
    """The message of an unknown source or target: the known names and the closest one.

    Args:
        kind: what was looked up ("source", "target").
        name: the name asked for.
        known: the names there are.

    Returns:
        The message (with "Did you mean" when a name is close).
    """
    return str(UnknownNameError(kind, name, sorted(known), cutoff=0.6))
