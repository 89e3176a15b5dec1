"""``xamm ingest ...``: the ``xamm-ingest`` command inside ``xamm`` (the ``xamm.commands`` entry
point). Registering it loads nothing of the ingest wing; running it does."""

from __future__ import annotations

__all__ = ["register_xamm"]


def _ingest(argv: list[str]) -> int:
    # the ingest wing: loaded when the command runs, never to build ``xamm``'s parser
    from xamm_ingest.cli import main

    return main(argv, prog="xamm ingest")


def register_xamm(sub) -> dict:
    """Add ``xamm ingest`` (the same as ``xamm-ingest``, passed through) to ``xamm``.

    Args:
        sub: the ``xamm`` parser's subparsers.

    Returns:
        The pass-through command: ``{"ingest": main(argv)}``.
    """
    sub.add_parser(
        "ingest", help="same as the xamm-ingest command (xamm ingest --help)", add_help=False
    )
    return {"ingest": _ingest}
