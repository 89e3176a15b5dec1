"""Which machine: the machine registry (:mod:`.registry`, the shipped ``machines.toml`` and
the user's), ``machine:device`` targets (:mod:`.targets`) and programming-model
families (:mod:`.families`). Imports only the shared base.
"""

from __future__ import annotations

from xamm_data._lazy import lazy_exports

# what ``xamm_data.machines`` exports (its main module's names), loaded on first use
_PUBLIC = {
    "NODE_FACTS": "xamm_data.machines.registry",
    "SHIPPED": "xamm_data.machines.registry",
    "Machine": "xamm_data.machines.registry",
    "MachineFactsError": "xamm_data.machines.registry",
    "UnknownMachineError": "xamm_data.machines.registry",
    "add_facts": "xamm_data.machines.registry",
    "canonical_id": "xamm_data.machines.registry",
    "checked_facts": "xamm_data.machines.registry",
    "get": "xamm_data.machines.registry",
    "list_machines": "xamm_data.machines.registry",
    "pinned": "xamm_data.machines.registry",
    "reload": "xamm_data.machines.registry",
    "same_silicon": "xamm_data.machines.registry",
    "silicon_key": "xamm_data.machines.registry",
    "split_target": "xamm_data.machines.registry",
    "user_file": "xamm_data.machines.registry",
    "MACHINES": "xamm_data.machines.registry",
    "REGISTRY": "xamm_data.machines.registry",
}
__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)
__all__ = sorted(_PUBLIC)  # noqa: PLE0605
