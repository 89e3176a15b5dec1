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
import re
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from xamm_data.atomic import write_text_atomic
from xamm_data.errors import TamperedError
from xamm_data.identifiers import check_name, is_name
from xamm_models.compare.certificates import evidence
from xamm_models.compare.certificates.records import Certificate, CertificateRegistry
from xamm_models.compare.history.versions import histories_dir, history
from xamm_models.machines.hub import (
    check_registrable,
    fetch_signatures,
    pull_files,
    push_signatures,
)

__all__ = ["Pulled", "pull_records", "push_records"]

HISTORIES = "histories/"
CERTIFICATES = "certificates/"
_CERT = re.compile(
    r"^certificates/(?P<m>[^/]+)/certificate@(?P<n>[1-9][0-9]{0,8})\.(?P<ext>json|sig)$"
)


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
    """Publish signatures, certificates (with their signatures) and histories to one Hub repo;
    a machine whose certificates do not verify here is refused, naming the files.

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
        report = certs.verify(machine)
        report.raise_if_bad()  # an edit made before a push is never published
        for n in sorted(report.good):
            extra[f"{CERTIFICATES}{machine}/certificate@{n}.json"] = certs.path(
                machine, n
            ).read_bytes()
            sig = certs.signature_path(machine, n)
            if sig.is_file():
                extra[f"{CERTIFICATES}{machine}/{sig.name}"] = sig.read_bytes()
    machines = sorted({s.machine for s in registry.all() if s.kind == "physics"})
    for machine in machines:
        data = _history_bytes(machine, registry, certs, store)
        if data is not None:
            extra[f"{HISTORIES}{machine}.json"] = data
    return push_signatures(repo_id, registry=registry, token=token, revision=revision,
                           extra=extra, replaceable=(HISTORIES,))  # fmt: skip


def _certificates(files: dict[str, bytes], where: str, public_key) -> list[tuple]:
    """The pulled certificates, each agreeing with its repo path, its own hash, the chain of the
    ones before it and, with ``public_key``, its signature: (certificate, signature bytes)."""
    out, sigs = [], {}
    for path, data in sorted(files.items()):
        m = _CERT.match(path)
        if m is None or not is_name(m["m"]):
            raise TamperedError(
                f"{where}: {path} is not a certificate file name "
                "(certificates/<machine>/certificate@<n>.json or .sig)"
            )
        if m["ext"] == "sig":
            sigs[(m["m"], int(m["n"]))] = data
            continue
        try:
            doc = json.loads(data)
            cert = Certificate.model_validate(doc)
        except (ValueError, ValidationError, RecursionError) as e:
            raise TamperedError(f"{where}: {path}: not a certificate ({e})") from None
        if (cert.machine, cert.number) != (m["m"], int(m["n"])):
            raise TamperedError(f"{where}: {path} holds {cert.machine}'s certificate "
                                f"{cert.number}, not what its path names")  # fmt: skip
        if cert.sha256 != evidence.content_sha256(doc):
            raise TamperedError(f"{where}: {path}: edited after it was issued (its content does "
                                "not hash to the sha256 it records)")  # fmt: skip
        out.append((cert, doc, path))
    return _chained(out, sigs, where, public_key)


def _chained(out, sigs, where: str, public_key) -> list[tuple]:
    by = {(c.machine, c.number): c for c, _, _ in out}
    for cert, doc, path in out:
        before = by.get((cert.machine, cert.number - 1))
        if cert.number > 1 and before is None:
            raise TamperedError(f"{where}: {path}: certificate {cert.number - 1} of "
                                f"{cert.machine} is missing from the repo")  # fmt: skip
        if before is not None and cert.predecessor_sha256 != before.sha256:
            raise TamperedError(f"{where}: {path} does not follow certificate "
                                f"{cert.number - 1}: the chain is broken")  # fmt: skip
        if public_key is not None:
            evidence.check_signature(doc, sigs.get((cert.machine, cert.number)), public_key,
                                     f"{where}: {path}")  # fmt: skip
    return [(c, sigs.get((c.machine, c.number))) for c, _, _ in out]


def _histories(files: dict[str, bytes], where: str) -> dict[str, bytes]:
    out = {}
    for path, data in files.items():
        name = path.removeprefix(HISTORIES).removesuffix(".json")
        if not path.endswith(".json") or not is_name(name):
            raise TamperedError(f"{where}: {path} is not a history file name "
                                "(histories/<machine>.json)")  # fmt: skip
        try:
            rows = json.loads(data)
            assert isinstance(rows, list) and all(isinstance(r, dict) for r in rows)
        except (ValueError, AssertionError, RecursionError):
            raise TamperedError(f"{where}: {path}: not a history (JSON rows)") from None
        out[name] = data
    return out


def pull_records(
    repo_id: str,
    *,
    registry,
    certificates: CertificateRegistry | None = None,
    revision: str = "main",
    token=None,
    public_key=None,
) -> Pulled:
    """Bring a repo's signatures, certificates and histories here: every file is verified (its
    recorded SHA-256, its path, the certificates' chain and, with ``public_key``, their
    signatures) and checked against what is held here before anything is registered, so a pull
    is all or nothing.

    Args:
        repo_id: the Hub repo.
        registry: the signature registry pulled into.
        certificates: the certificate registry pulled into (default ``$XAMM_HOME``'s).
        revision: the revision to pull (pin a commit).
        token: a Hub token.
        public_key: an Ed25519 public key every certificate must be signed by.

    Returns:
        What was pulled.
    """
    certs = certificates or CertificateRegistry.default()
    where = f"{repo_id}@{revision}"
    sigs = fetch_signatures(repo_id, revision=revision, token=token)
    pulled = _certificates(pull_files(repo_id, CERTIFICATES, revision=revision, token=token),
                           where, public_key)  # fmt: skip
    hist = _histories(pull_files(repo_id, HISTORIES, revision=revision, token=token), where)
    check_registrable(registry, sigs)
    for cert, _ in pulled:
        certs.check_add(cert)
    out = Pulled(signatures=[registry.add(s) for s in sigs])
    for cert, sig in pulled:
        out.certificates.append(certs.add(cert, signature=sig))
    for name, data in sorted(hist.items()):
        local = histories_dir() / f"{check_name(name)}.json"
        write_text_atomic(local, data.decode("utf-8"))
        out.histories[name] = local
    return out
