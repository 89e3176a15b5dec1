"""What makes a certificate evidence: a hash chain, an index of its head, and optional signatures.

Every certificate records the SHA-256 of its own canonical content (``sha256``: the JSON of every
field but that one, keys sorted, no spaces) and the ``sha256`` of the machine's certificate before
it (``predecessor_sha256``). ``index.json`` beside a machine's certificates holds every number's
hash and the head. :func:`verify_folder` checks a machine's folder against all three, so an edited
certificate, a deleted one, two swapped, a truncated file or a stray file beside them is reported
by name, and the certificates that still agree with their records stay usable.

A hash chain shows an edit made by someone who did not also recompute every later hash and the
index. A centre that wants more signs each certificate with its own Ed25519 key
(``certificate@N.sig`` beside it, through the ``cryptography`` package: ``pip install
'xamm[sign]'``); :func:`check_signature` checks it against the public key the user names.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from xamm_data.errors import TamperedError

__all__ = [
    "INDEX",
    "ChainReport",
    "Problem",
    "canonical_bytes",
    "check_signature",
    "content_sha256",
    "load_private_key",
    "load_public_key",
    "sign",
    "sources_sha256",
    "verify_folder",
]

INDEX = "index.json"
CERT_FILE = re.compile(r"^certificate@(?P<n>[1-9][0-9]{0,8})\.json$")
SIG_FILE = re.compile(r"^certificate@(?P<n>[1-9][0-9]{0,8})\.sig$")
MAX_BYTES = 16 * 2**20  # a certificate is kilobytes; anything this large is not one


def sources_sha256(shas) -> str:
    """The hash of a set of runs: SHA-256 of their sorted source-file hashes, one a line."""
    return hashlib.sha256("\n".join(sorted(shas)).encode()).hexdigest()


def canonical_bytes(doc: dict) -> bytes:
    """The bytes a certificate's hash and signature cover: its JSON without ``sha256``, keys
    sorted, no spaces, ASCII."""
    body = {k: v for k, v in doc.items() if k != "sha256"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def content_sha256(doc: dict) -> str:
    """The SHA-256 of :func:`canonical_bytes`."""
    return hashlib.sha256(canonical_bytes(doc)).hexdigest()


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a machine's certificates: the file and what."""

    path: Path
    what: str

    def __str__(self) -> str:
        return f"{self.path}: {self.what}"


@dataclass
class ChainReport:
    """What :func:`verify_folder` found: the certificates that agree with their records
    (number -> the parsed JSON) and the problems, each naming its file."""

    machine: str
    good: dict[int, dict] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    head: int = 0  # the highest number ever issued (the index's head, or a file's)
    hashes: dict[int, str] = field(default_factory=dict)  # the index's record

    def raise_if_bad(self) -> None:
        """:class:`~xamm_data.errors.TamperedError` listing every problem, if there is one."""
        if self.problems:
            raise TamperedError("; ".join(map(str, self.problems)))


def _read_index(folder: Path, report: ChainReport) -> dict[int, str]:
    p = folder / INDEX
    if not p.is_file():
        return {}
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
        hashes = {int(n): str(h) for n, h in doc["certificates"].items()}
        report.head = max(int(doc["head"]), max(hashes, default=0))
        return hashes
    except (
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        UnicodeDecodeError,
        RecursionError,
    ) as e:
        report.problems.append(Problem(p, f"the index cannot be read ({e}); the certificates are "
                                          "checked against their own hashes only"))  # fmt: skip
        return {}


def _read_one(path: Path, n: int, report: ChainReport) -> dict | None:
    """A certificate's JSON when it can be read, names its own number and hashes as recorded."""
    try:
        if path.stat().st_size > MAX_BYTES:
            raise ValueError(f"{path.stat().st_size} bytes, not a certificate")
        doc = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(doc, dict):
            raise ValueError("not a JSON object")
    except (ValueError, UnicodeDecodeError, OSError, RecursionError) as e:
        report.problems.append(Problem(path, f"unreadable or truncated ({e})"))
        return None
    if doc.get("schema_version") == 1:
        report.problems.append(Problem(path, "written before certificates were chained (schema "
                                             "1, no hash): re-run xamm accept"))  # fmt: skip
        return None
    if doc.get("number") != n:
        report.problems.append(
            Problem(
                path,
                f"says it is certificate {doc.get('number')!r}, "
                f"its file name says {n}: moved or reordered",
            )
        )
        return None
    recorded, actual = doc.get("sha256"), content_sha256(doc)
    if recorded != actual:
        report.problems.append(
            Problem(
                path,
                "edited after it was issued: its content hashes to "
                f"{actual[:12]}, it records {str(recorded)[:12]}",
            )
        )
        return None
    return doc


def _against_index(folder: Path, docs: dict[int, dict], report: ChainReport) -> None:
    """Drop from ``docs`` a certificate whose hash is not the one the index recorded, unless the
    certificate after it names that very hash (then the index is the file that was edited)."""
    for n, doc in sorted(docs.items()):
        recorded = report.hashes.get(n)
        if recorded is None or recorded == doc["sha256"]:
            continue
        after = docs.get(n + 1)
        if after is not None and after.get("predecessor_sha256") == doc["sha256"]:
            report.problems.append(Problem(folder / INDEX, f"records another hash for "
                                           f"certificate {n} than it and certificate {n + 1} "
                                           "agree on: the index was edited"))  # fmt: skip
            report.hashes[n] = doc["sha256"]
            continue
        report.problems.append(Problem(folder / f"certificate@{n}.json", f"does not match the "
                                       f"index's hash {recorded[:12]}: replaced"))  # fmt: skip
        del docs[n]


def verify_folder(folder: Path, machine: str) -> ChainReport:
    """Check one machine's certificates: each file's own hash, its number, the index and the
    chain of predecessors; every problem names its file, and what agrees stays usable.

    Args:
        folder: ``<certificates>/<machine>``.
        machine: the machine, for the report.

    Returns:
        The :class:`ChainReport`.
    """
    report = ChainReport(machine)
    if not folder.is_dir():
        return report
    report.hashes = _read_index(folder, report)
    numbers = []
    for p in sorted(folder.iterdir()):
        m = CERT_FILE.match(p.name)
        if m and p.is_file() and not p.is_symlink():
            numbers.append(int(m["n"]))
        elif not (SIG_FILE.match(p.name) or p.name == INDEX or p.name.startswith(".")):
            report.problems.append(Problem(p, "a stray file among the certificates; ignored"))
    for n in sorted(numbers):
        doc = _read_one(folder / f"certificate@{n}.json", n, report)
        if doc is not None:
            report.good[n] = doc
    _against_index(folder, report.good, report)
    for n in sorted(numbers):
        if report.hashes and n not in report.hashes:
            report.problems.append(Problem(folder / f"certificate@{n}.json",
                                           "is not in the index: not issued here"))  # fmt: skip
            report.good.pop(n, None)
    for n in sorted(set(report.hashes) - set(numbers)):
        report.problems.append(
            Problem(
                folder / f"certificate@{n}.json", "was issued (the index records it) and is gone"
            )
        )
    _check_links(folder, report)
    report.head = max(report.head, max(numbers, default=0))
    return report


def _check_links(folder: Path, report: ChainReport) -> None:
    """Each certificate names the hash of the one before it as recorded (the index's, else the
    file's own)."""
    for n, doc in sorted(report.good.items()):
        if n == 1:
            want = None
        else:
            # the predecessor's own hash when it verifies, else the one the index recorded
            before = report.good.get(n - 1)
            want = (before or {}).get("sha256") or report.hashes.get(n - 1)
            if want is None:
                continue  # the predecessor's loss is reported on its own file
        if doc.get("predecessor_sha256") != want:
            report.problems.append(Problem(folder / f"certificate@{n}.json",
                                           f"does not follow certificate {n - 1}: the chain is "
                                           "broken (reordered or replaced)"))  # fmt: skip


# -- signatures (optional: the cryptography package) -------------------------------------------


def _crypto():
    try:
        # the sign extra: loaded only when a key is used
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519  # likewise
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "signing certificates needs the cryptography package: pip install 'xamm[sign]'",
            name="cryptography",
        ) from None
    return serialization, ed25519


def load_private_key(path: str | Path):
    """An Ed25519 private key from a PEM file (``openssl genpkey -algorithm ed25519``)."""
    serialization, ed25519 = _crypto()
    try:
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{path}: not an unencrypted PEM private key ({e})") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise ValueError(f"{path}: not an Ed25519 key (openssl genpkey -algorithm ed25519)")
    return key


def load_public_key(path: str | Path):
    """An Ed25519 public key from a PEM file (``openssl pkey -in key.pem -pubout``)."""
    serialization, ed25519 = _crypto()
    try:
        key = serialization.load_pem_public_key(Path(path).read_bytes())
    except (ValueError, TypeError) as e:
        raise ValueError(f"{path}: not a PEM public key ({e})") from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise ValueError(f"{path}: not an Ed25519 public key")
    return key


def key_id(public_key) -> str:
    """The SHA-256 of a public key's raw bytes: which key signed."""
    serialization, _ = _crypto()
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def sign(doc: dict, private_key) -> bytes:
    """The ``certificate@N.sig`` file of a certificate: JSON naming the algorithm, the key and
    the signature over :func:`canonical_bytes`."""
    sig = private_key.sign(canonical_bytes(doc))
    body = {
        "algorithm": "ed25519",
        "key_sha256": key_id(private_key.public_key()),
        "certificate_sha256": doc["sha256"],
        "signature": base64.b64encode(sig).decode(),
    }
    return (json.dumps(body, indent=1) + "\n").encode()


def check_signature(doc: dict, sig_bytes: bytes | None, public_key, where: Path | str) -> None:
    """Raise :class:`~xamm_data.errors.TamperedError` naming ``where`` unless ``sig_bytes`` is a
    signature of ``doc`` by ``public_key``."""
    from cryptography.exceptions import InvalidSignature  # the sign extra, as above

    if sig_bytes is None:
        raise TamperedError(f"{where}: no signature (certificate@N.sig) beside it")
    try:
        body = json.loads(sig_bytes)
        raw = base64.b64decode(body["signature"], validate=True)
        public_key.verify(raw, canonical_bytes(doc))
    except InvalidSignature:
        raise TamperedError(
            f"{where}: the signature does not verify with the key given "
            "(edited after signing, or signed by another key)"
        ) from None
    except (ValueError, KeyError, TypeError, RecursionError) as e:
        raise TamperedError(f"{where}: unreadable signature file ({e})") from None
