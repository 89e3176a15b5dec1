"""Publishing: datasets pushed to and pulled from the Hugging Face Hub (:mod:`.publish`,
:mod:`.files`), the dataset registry and :func:`~xamm_data.hub.datasets.load_dataset`
(:mod:`.datasets`), the embedded snapshot (:mod:`.snapshot`) and saved models (:mod:`.models`).
Imports the store, the machines, the tables and the base.
"""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

# what ``xamm_data.hub`` exports (its main module's names), loaded on first use
_PUBLIC = {
    "hub_endpoint": "xamm_data.hub.models",
    "hub_offline": "xamm_data.hub.models",
    "snapshot_dir": "xamm_data.hub.models",
    "HubUnavailableError": "xamm_data.hub.publish",
    "hub_errors": "xamm_data.hub.publish",
    "api": "xamm_data.hub.publish",
    "SPDX": "xamm_data.hub.publish",
    "dataset_card": "xamm_data.hub.publish",
    "push_dataset": "xamm_data.hub.publish",
    "download_partition": "xamm_data.hub.publish",
}
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
__all__ = sorted(_PUBLIC)  # noqa: PLE0605
