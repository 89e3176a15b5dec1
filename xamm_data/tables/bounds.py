"""Physical plausibility bounds shared by every reader: what ``xamm-ingest`` stores and what
``xamm predict`` reads from a file are held to the same limits, so a value one refuses the other
never predicts from.

The CLI sets them with ``--bound NAME=VALUE`` (``xamm-ingest``); :data:`DEFAULT_BOUNDS` is what the
region contract (:mod:`xamm_data.tables.regions`) and predict's input checks use.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = ["DEFAULT_BOUNDS", "Bounds"]


class Bounds(BaseModel):
    """Physical plausibility bounds; a record outside them is rejected naming the rule."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_time_per_rep_s: float = Field(
        1e-10, gt=0, description="shortest plausible time of one repetition (s)"
    )
    max_time_per_rep_s: float = Field(
        1e5, gt=0, description="longest plausible time of one repetition (s)"
    )
    max_bytes_per_rep: float = Field(1e16, gt=0, description="most bytes one repetition can move")
    max_flops_per_rep: float = Field(1e16, gt=0, description="most flops one repetition can do")
    max_problem_size: float = Field(1e12, gt=0, description="largest plausible problem size")
    min_runtime_s: float = Field(
        1e-9, gt=0, description="shortest plausible application runtime (s)"
    )
    max_runtime_s: float = Field(
        1e7, gt=0, description="longest plausible application runtime (s), about 116 days"
    )

    @classmethod
    def from_items(cls, items: list[str] | None) -> Bounds:
        """Bounds from ``NAME=VALUE`` strings (the CLI's ``--bound``).

        Args:
            items: the strings (None: the defaults).

        Returns:
            The bounds.

        Raises:
            ValueError: a malformed item or an unknown name; the message names the valid ones.
        """
        values: dict[str, float] = {}
        for item in items or []:
            name, sep, value = item.partition("=")
            name = name.strip()
            if not sep or name not in cls.model_fields:
                raise ValueError(
                    f"--bound {item!r}: expected NAME=VALUE with NAME one of "
                    f"{', '.join(cls.model_fields)}"
                )
            if name in values:  # the last would win unseen
                raise ValueError(f"--bound {item!r}: {name} is given twice")
            try:
                values[name] = float(value)
            except ValueError:
                raise ValueError(f"--bound {item!r}: {value!r} is not a number") from None
        try:
            return cls(**values)
        except ValidationError as e:
            err = e.errors()[0]
            name = str(err["loc"][0]) if err["loc"] else ""
            where = f" {name}={values[name]!r}" if name in values else ""
            raise ValueError(
                f"--bound{where}: {err['msg'].removeprefix('Value error, ')}"
            ) from None

    @model_validator(mode="after")
    def _ranges(self) -> Bounds:
        # a lowest plausible value at or above the highest: every record would be dropped
        for low, high in (
            ("min_time_per_rep_s", "max_time_per_rep_s"),
            ("min_runtime_s", "max_runtime_s"),
        ):
            if getattr(self, low) >= getattr(self, high):
                raise ValueError(
                    f"{low} ({getattr(self, low):g}) is not below {high} "
                    f"({getattr(self, high):g}): nothing would be plausible"
                )
        return self


DEFAULT_BOUNDS = Bounds.model_validate({})  # every default (a call mypy can check)
