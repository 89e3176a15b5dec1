"""A machine's records on the Hub: signatures, certificates and histories in one repo.

``push_records`` publishes every signature of the registry (as
:func:`~xamm_models.machines.hub.push_signatures`), every acceptance certificate
(``certificates/<machine>/certificate@<n>.json``, never changed once published) and the history of
every machine whose runs the local store holds (``histories/<machine>.json``, replaced as it
grows); the repo's card records each file's SHA-256. ``pull_records`` brings them back, each file
checked against that record: signatures and certificates into their registries (refusing a
published version that differs from a local one), histories under ``$XAMM_HOME/histories``, where
``xamm amm history`` reads them for machines whose runs are not in the local store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from xamm_data.atomic import write_text_atomic
from xamm_models.compare.certificates import Certificate, CertificateRegistry
from xamm_models.compare.history import histories_dir, history
from xamm_models.machines.hub import pull_files, pull_signatures, push_signatures

__all__ = ["Pulled", "pull_records", "push_records"]

HISTORIES = "histories/"
CERTIFICATES = "certificates/"


@dataclass
class Pulled:
    """What :func:`pull_records` brought."""

    signatures: list = field(default_factory=list)
    certificates: list[Certificate] = field(default_factory=list)
    histories: dict[str, Path] = field(default_factory=dict)


def _history_bytes(machine: str, registry, certificates, store) -> bytes | None:
    try:
        rows = history(machine, registry=registry, store=store, certificates=certificates)
    except (KeyError, ValueError, FileNotFoundError, OSError):
        return None  # no physics signature here, or its runs are not in this store
    return (json.dumps(rows.to_dicts(), indent=1, default=str) + "\n").encode()


def push_records(
    repo_id: str,
    *,
    registry,
    certificates: CertificateRegistry | None = None,
    store=None,
    token=None,
    revision: str = "main",
) -> str:
    """Publish signatures, certificates and histories to one Hub repo.

    Args:
        repo_id: the Hub repo.
        registry: the signature registry.
        certificates: the certificate registry (default ``$XAMM_HOME/certificates``).
        store: the local store histories are read from (default ``$XAMM_HOME/store``).
        token: a Hub token.
        revision: the branch to commit to.

    Returns:
        The commit.
    """
    certs = certificates or CertificateRegistry.default()
    extra: dict[str, bytes] = {}
    for machine in certs.machines():
        for n in certs.numbers(machine):
            extra[f"{CERTIFICATES}{machine}/certificate@{n}.json"] = certs.path(
                machine, n
            ).read_bytes()
    machines = sorted({s.machine for s in registry.all() if s.kind == "physics"})
    for machine in machines:
        data = _history_bytes(machine, registry, certs, store)
        if data is not None:
            extra[f"{HISTORIES}{machine}.json"] = data
    return push_signatures(repo_id, registry=registry, token=token, revision=revision,
                           extra=extra, replaceable=(HISTORIES,))  # fmt: skip


def pull_records(
    repo_id: str,
    *,
    registry,
    certificates: CertificateRegistry | None = None,
    revision: str = "main",
    token=None,
) -> Pulled:
    """Bring a repo's signatures, certificates and histories here, each file verified.

    Args:
        repo_id: the Hub repo.
        registry: the signature registry pulled into.
        certificates: the certificate registry pulled into (default ``$XAMM_HOME``'s).
        revision: the revision to pull (pin a commit).
        token: a Hub token.

    Returns:
        What was pulled.
    """
    certs = certificates or CertificateRegistry.default()
    out = Pulled(signatures=pull_signatures(repo_id, revision=revision, registry=registry,
                                            token=token))  # fmt: skip
    for data in pull_files(repo_id, CERTIFICATES, revision=revision, token=token).values():
        out.certificates.append(certs.add(Certificate.model_validate_json(data)))
    for path, data in pull_files(repo_id, HISTORIES, revision=revision, token=token).items():
        local = histories_dir() / Path(path).name
        json.loads(data)  # a history is JSON rows; verified bytes, checked shape
        write_text_atomic(local, data.decode("utf-8"))
        out.histories[Path(path).stem] = local
    return out
