"""The model commands of ``xamm``, one module per command: ``amm`` (:mod:`.amm`, with ``history``
and ``diff`` in :mod:`.history`), ``run`` (:mod:`.run`), ``predict`` (:mod:`.predict`,
profiles in :mod:`.predict_profile`), ``eval`` (:mod:`.evaluate`), ``zoo`` (:mod:`.zoo`), ``adapt``
(:mod:`.adapt`), ``schedule-sim`` (:mod:`.schedule`), ``compare`` (:mod:`.compare`) and ``accept``
(:mod:`.drift`), ``report`` (:mod:`.report`); shared helpers in :mod:`.common`."""

from __future__ import annotations

from xamm_models.cli import (
    adapt,
    amm,
    compare,
    drift,
    evaluate,
    predict,
    report,
    run,
    schedule,
    zoo,
)


def register(sub) -> dict:
    """Add the model commands to ``xamm``. Handlers that train or embed import torch first; the
    others load only what their model needs. Without a library of the models extra they say which
    extra to install.

    Args:
        sub: the ``xamm`` parser's subparsers.
    """
    add_commands(sub)
    return {}


def add_commands(sub) -> None:
    """``amm`` and its actions, then ``run``, ``predict``, ``eval`` and the rest, in the order
    ``xamm --help`` lists them.

    Args:
        sub: the ``xamm`` parser's subparsers.
    """
    amm.add(sub)
    run.add(sub)
    predict.add(sub)
    evaluate.add(sub)
    zoo.add(sub)
    schedule.add(sub)
    adapt.add(sub)
    compare.add(sub)
    drift.add_accept(sub)
    report.add(sub)
