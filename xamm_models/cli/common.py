"""Shared by the model commands: the help formatter and the models-extra check."""

from __future__ import annotations

import argparse

from xamm_data.extras import install_hint
from xamm_models import runtime as cpu_kernels

TOP_REGIONS = 10  # the regions `xamm predict --regions` prints without --all: the most time first

RAW = argparse.RawDescriptionHelpFormatter


def needs_models(handler, needs_torch=lambda args: True):
    """``handler`` run with the models extra checked: torch imported first where
    ``needs_torch(args)`` says so (after :func:`~xamm_models.runtime.pin`), else loaded only if the
    model used needs it; a missing library of the extra is a one-line error naming it.

    Args:
        handler: the command's handler, called with the parsed arguments.
        needs_torch: whether these arguments need torch before the handler runs.
    """

    def run_handler(args):
        cpu_kernels.pin()  # before torch is imported: the same numbers on every x86-64 machine
        try:
            if needs_torch(args):
                import torch  # noqa: F401  (the models extra; checked here so `xamm --help` never imports it)
            return handler(args)
        except ModuleNotFoundError as e:  # a library of an extra not installed
            hint = install_hint(e)
            if hint is None:
                raise
            raise LookupError(f"'xamm {args.command}' {hint.removeprefix('this ')}") from None

    return run_handler


def _in_range(lo: float, hi: float, what: str, read, kind: str):
    """An argparse type: ``read(text)`` within [lo, hi], else a usage error naming the option."""
    shown = str if read is int else (lambda x: f"{x:g}")

    def parse(text: str):
        try:
            v = read(text)
        except ValueError:
            v = None
        if v is None or not lo <= v <= hi:  # nan and inf fail here
            raise argparse.ArgumentTypeError(
                f"{what}: expected {kind} from {shown(lo)} to {shown(hi)}, not {text!r}"
            )
        return v

    return parse


def bounded(lo: float, hi: float, what: str):
    """An argparse type: a finite number in [lo, hi], else a usage error naming the option.

    Args:
        lo: the least value taken.
        hi: the greatest.
        what: what the number is, for the message.
    """
    return _in_range(lo, hi, what, float, "a number")


def whole(lo: int, hi: int, what: str):
    """:func:`bounded` for counts: a whole number in [lo, hi] (``2.5`` is none)."""
    return _in_range(lo, hi, what, int, "a whole number")


#: ``--epochs``: at least one (0 would leave an embedder untrained, its signatures noise)
EPOCHS = whole(1, 100_000, "training epochs")
