"""The signature registry's Hub repo, by the name model cards published before the models were
arranged in subpackages print (``from xamm_models.signature_hub import pull_signatures``); it lives
in :mod:`xamm_models.machines.hub`."""

from xamm_models.machines.hub import pull_signatures, push_signatures, repo_path

__all__ = ["pull_signatures", "push_signatures", "repo_path"]
