"""The ``xamm`` command: the parser and the dataset commands (:mod:`.commands`), ``xamm
machines`` (:mod:`.machines`), shared options and output (:mod:`.tools`), what reaches the
terminal as text (:mod:`.terminal`) and the summary table (:mod:`.summary`). The top floor:
nothing below imports it.
"""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

# what ``xamm_data.cli`` exports (its main module's names), loaded on first use
_PUBLIC = {
    "EPILOG": "xamm_data.cli.commands",
    "RAW": "xamm_data.cli.commands",
    "UsageError": "xamm_data.cli.tools",
    "register": "xamm_data.cli.commands",
    "build_parser": "xamm_data.cli.commands",
    "DATASET_ACTIONS": "xamm_data.cli.data_commands",
    "main": "xamm_data.cli.commands",
}
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
__all__ = sorted(_PUBLIC)  # noqa: PLE0605
