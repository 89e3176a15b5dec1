"""Saved models and the Hub: where a model's folder is (:func:`snapshot_dir`: a local folder, the
embedded snapshot's copy, or a Hub snapshot checked file by file) and the persistence every xamm
predictor has (:class:`VerifiedHubMixin`: huggingface_hub's ``ModelHubMixin`` contract).

The Hub client (``huggingface_hub``) is imported only when a Hub is talked to (a download, a push)
or a model card is written: a predictor read from a folder or from the package's own snapshot loads
none of it.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from xamm_data.hub import snapshot
from xamm_data.hub.files import incomplete_download, verify_folder, write_manifest
from xamm_data.store.files import CorruptDataError

__all__ = ["CONFIG_NAME", "VerifiedHubMixin", "hub_endpoint", "hub_offline", "snapshot_dir"]

CONFIG_NAME = "config.json"  # huggingface_hub's name for a model's constructor arguments


def hub_endpoint() -> str | None:
    """The Hub endpoint from ``HF_ENDPOINT`` (read now), or ``None`` for huggingface_hub's
    default."""
    return os.environ.get("HF_ENDPOINT") or None


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` is set to a true value (read now)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def snapshot_dir(
    model_id: str,
    *,
    revision: str | None = None,
    cache_dir=None,
    force_download: bool = False,
    local_files_only: bool = False,
    token: str | bool | None = None,
) -> Path:
    """A saved model's folder: ``model_id`` itself if it is a local directory, else its Hub snapshot
    at ``revision`` (through huggingface_hub's cache; offline, the cache only). A zoo model
    (``xamm/<name>``) with no revision given and none pinned in
    :data:`xamm_data.hub.snapshot.PINNED_MODELS` is the embedded snapshot's copy."""
    if not str(model_id):  # Path("") is the current folder
        raise ValueError("model: an empty name; expected a folder, a Hub repo id or xamm/<name>")
    d = Path(model_id)
    if d.is_dir():
        # a folder xamm saved carries its manifest: checked
        verify_folder(d, str(d), required=False)
        return d
    embedded = snapshot.model_dir(model_id)
    if embedded is not None and revision is None and snapshot.PINNED_MODELS.get(model_id) is None:
        # nothing of it is pinned on the Hub: the package's own copy answers, at once
        return embedded
    revision = revision or snapshot.PINNED_MODELS.get(model_id)
    # the Hub client: a download talks to a Hub
    from huggingface_hub import snapshot_download

    try:
        local = Path(
            snapshot_download(
                model_id,
                revision=revision,
                cache_dir=cache_dir,
                force_download=force_download,
                local_files_only=local_files_only or hub_offline(),
                token=token,
                endpoint=hub_endpoint(),
            )
        )
    except OSError as e:
        corrupt = incomplete_download(e, f"{model_id}@{revision or 'main'}")
        if corrupt is None:
            raise
        raise corrupt from e
    # every pull and every cache hit: each file against the manifest saved with it and the Hub's own
    # hash
    verify_folder(local, f"{model_id}@{revision or 'main'} (commit {local.name})", required=True)
    return local


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _init_parameters(cls: type) -> list[inspect.Parameter]:
    return list(inspect.signature(cls.__init__).parameters.values())[1:]  # type: ignore[misc]


def _init_config(cls: type, args: tuple, kwargs: dict) -> dict | None:
    """The constructor's JSON-able arguments (defaults, then what was passed; a ``config`` dict
    merged in), as ``ModelHubMixin`` records them in ``config.json``."""
    params = _init_parameters(cls)
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    passed = {**dict(zip(positional, args)), **kwargs}
    if dataclasses.is_dataclass(passed.get("config")) and not isinstance(passed["config"], type):
        return dataclasses.asdict(passed["config"])
    config = {
        **{p.name: p.default for p in params if p.default is not p.empty and _jsonable(p.default)},
        **{k: v for k, v in passed.items() if _jsonable(v)},
    }
    inner = config.pop("config", {})
    if isinstance(inner, dict):
        config.update(inner)
    return config or None


def _saved_config(path: Path) -> dict | None:
    """The constructor's arguments a saved folder records (None: it records none); a file that is
    not a JSON object is refused naming it."""
    if not path.is_file():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError) as e:
        raise CorruptDataError(
            f"{path}: not JSON ({e}); expected the constructor's arguments"
        ) from None
    if not isinstance(config, dict):
        raise CorruptDataError(
            f"{path}: a JSON {type(config).__name__}; expected an object of the constructor's "
            "arguments"
        )
    return config


class VerifiedHubMixin:
    """huggingface_hub's ``ModelHubMixin`` contract (``save_pretrained``, ``from_pretrained``,
    ``push_to_hub``; the constructor's arguments in ``config.json``; ``library_name``, ``tags``,
    ... as class keywords for the card), with the Hub client imported only for a push or a pull.

    ``save_pretrained`` ends by writing ``xamm-files.json`` over everything saved (weights, config,
    card); ``push_to_hub`` saves through it into the folder it uploads, so every push carries the
    checksums a pull verifies. A subclass implements ``_save_pretrained(folder)`` and
    ``_from_pretrained(model_id=..., **init_kwargs)``.
    """

    _hub_card: ClassVar[dict[str, Any]] = {}
    _hub_config: dict | None = None

    def __init_subclass__(cls, **card: Any) -> None:
        super().__init_subclass__()
        cls._hub_card = {**cls._hub_card, **{k: v for k, v in card.items() if v is not None}}

    def __new__(cls, *args: Any, **kwargs: Any):
        self = super().__new__(cls)
        self._hub_config = _init_config(cls, args, kwargs)
        return self

    def _save_pretrained(self, save_directory: Path) -> None:
        raise NotImplementedError

    @classmethod
    def _from_pretrained(cls, *, model_id: str, **kwargs: Any):
        raise NotImplementedError

    def save_pretrained(
        self,
        save_directory: str | Path,
        *,
        config: dict | None = None,
        repo_id: str | None = None,
        push_to_hub: bool = False,
        **push_to_hub_kwargs: Any,
    ) -> Any:
        """Save into ``save_directory``: the subclass's files, ``config.json`` (the constructor's
        arguments, unless the subclass wrote one) and the manifest of checksums.

        Args:
            save_directory: the folder (created).
            config: the configuration to record instead of the constructor's arguments.
            repo_id: where to push (default: the folder's name), with ``push_to_hub``.
            push_to_hub: push the saved folder too.
            **push_to_hub_kwargs: passed to :meth:`push_to_hub`.

        Returns:
            The push's commit when ``push_to_hub``, else None.
        """
        d = Path(save_directory)
        d.mkdir(parents=True, exist_ok=True)
        (d / CONFIG_NAME).unlink(missing_ok=True)
        self._save_pretrained(d)
        config = config if config is not None else self._hub_config
        if config is not None and not (d / CONFIG_NAME).exists():
            (d / CONFIG_NAME).write_text(json.dumps(config, sort_keys=True, indent=2))
        write_manifest(d)
        if push_to_hub:
            return self.push_to_hub(repo_id or d.name, config=config, **push_to_hub_kwargs)
        return None

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str | Path, **kwargs: Any):
        """The model saved in a folder or a Hub repo (:func:`snapshot_dir` resolves it), built by
        ``_from_pretrained`` with the constructor's arguments of its ``config.json``.

        Args:
            pretrained_model_name_or_path: a folder or a Hub repo id.
            **kwargs: ``revision``, ``cache_dir``, ``force_download``, ``local_files_only``,
                ``token`` (huggingface_hub's), and constructor arguments that override the saved
                ones.
        """
        hub = {k: kwargs.pop(k) for k in _HUB_ARGS if k in kwargs}
        model_id = str(pretrained_model_name_or_path)
        d = Path(model_id) if Path(model_id).is_dir() else snapshot_dir(model_id, **hub)
        config = _saved_config(d / CONFIG_NAME)
        if config is not None:
            params = {p.name: p for p in _init_parameters(cls)}
            takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
            for key, value in config.items():
                if key in params or takes_any:
                    kwargs.setdefault(key, value)
        model = cls._from_pretrained(model_id=model_id, **hub, **kwargs)
        if model._hub_config is None and config is not None:
            model._hub_config = config
        return model

    def push_to_hub(
        self,
        repo_id: str,
        *,
        config: dict | None = None,
        commit_message: str = "Push model using huggingface_hub.",
        private: bool | None = None,
        token: str | None = None,
        branch: str | None = None,
        create_pr: bool | None = None,
        allow_patterns: list[str] | str | None = None,
        ignore_patterns: list[str] | str | None = None,
        delete_patterns: list[str] | str | None = None,
    ) -> Any:
        """Save into a temporary folder and upload it as one commit (huggingface_hub's
        ``create_repo`` and ``upload_folder``, at ``HF_ENDPOINT``).

        Args:
            repo_id: the model repo (created if missing).
            config: the configuration to record instead of the constructor's arguments.
            commit_message: the commit's message.
            private: create the repo private.
            token: the Hub token.
            branch: the branch to commit to (default ``main``).
            create_pr: open a pull request instead of committing.
            allow_patterns: only files matching these are pushed.
            ignore_patterns: files matching these are not pushed.
            delete_patterns: remote files matching these are deleted in the same commit.

        Returns:
            huggingface_hub's ``CommitInfo``.
        """
        # the Hub client: a push talks to a Hub
        from huggingface_hub import HfApi

        api = HfApi(endpoint=hub_endpoint(), token=token)
        repo_id = api.create_repo(repo_id=repo_id, private=private, exist_ok=True).repo_id
        with tempfile.TemporaryDirectory() as tmp:
            saved = Path(tmp) / repo_id
            self.save_pretrained(saved, config=config)
            return api.upload_folder(
                repo_id=repo_id,
                repo_type="model",
                folder_path=saved,
                commit_message=commit_message,
                revision=branch,
                create_pr=create_pr,
                allow_patterns=allow_patterns,
                ignore_patterns=ignore_patterns,
                delete_patterns=delete_patterns,
            )


_HUB_ARGS = ("revision", "cache_dir", "force_download", "local_files_only", "token")
