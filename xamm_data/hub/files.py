"""Checksums of what xamm publishes on the Hub: recorded at push, checked on every pull and every
cache hit.

* A dataset repo's card records, under ``xamm.partitions.<kind>.<machine>``, the ``sha256`` of each
  Parquet file.
* A saved model folder holds ``xamm-files.json``: the SHA-256 of every other file in it (subfolders
  included), written by ``save_pretrained`` (:class:`~xamm_data.hub.models.VerifiedHubMixin`), so
  every push carries it.
* A signature repo's card records ``xamm.files``: the SHA-256 of each signature file.

A pulled file is read only after its bytes match the recorded SHA-256, and the hash the Hub itself
reported at download (huggingface_hub names each cached blob by the Hub's ETag: the SHA-256 of an
LFS file, the git blob id of a regular one) is compared too, so a cache edited after download is
caught even where the record was fetched from the same cache. A mismatch raises
:class:`CorruptDataError` naming repo, revision and file.

What this cannot tell: a server that serves an older commit's files *and* its record under a newer
commit id is consistent with itself; pin revisions to commits you trust (the registry pins commits,
never branches).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from xamm_data.store.files import CorruptDataError

MANIFEST = "xamm-files.json"
_NOT_LISTED = (".gitattributes", MANIFEST)  # the Hub's own file, and the manifest itself
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_HEX40 = re.compile(r"^[0-9a-f]{40}$")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_blob_id(data: bytes) -> str:
    """The git object id of a file's bytes (what the Hub reports as the ETag of a regular, non-LFS
    file)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _listed(folder: Path) -> list[Path]:
    """Every file of a model folder but the manifest itself, the Hub's .gitattributes and a
    local_dir's .cache."""
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.relative_to(folder).as_posix() not in _NOT_LISTED
        and ".cache" not in p.relative_to(folder).parts
    )


def write_manifest(folder: str | Path) -> Path:
    """Write ``folder/xamm-files.json``: the SHA-256 of every file under ``folder`` (sorted,
    byte-stable)."""
    folder = Path(folder)
    files = {p.relative_to(folder).as_posix(): sha256(p.read_bytes()) for p in _listed(folder)}
    path = folder / MANIFEST
    path.write_text(
        json.dumps({"algorithm": "sha256", "files": files}, indent=1, sort_keys=True) + "\n"
    )
    return path


def check_hub_etag(local: str | Path, data: bytes, where: str) -> None:
    """Compare ``data`` with the hash the Hub reported when ``local`` (a huggingface_hub cache path)
    was downloaded: the cache stores each file as ``blobs/<ETag>``. Files outside a Hub cache are
    not checked."""
    blob = Path(local).resolve()
    if blob.parent.name != "blobs":
        return
    etag = blob.name
    if _HEX64.match(etag) and sha256(data) != etag:
        raise CorruptDataError(
            f"{where}: its bytes do not match the SHA-256 the Hub reported "
            f"for it (LFS {etag[:12]}...)"
            "; the cached copy changed after download. Refused; delete it "
            "from the Hub cache"
        )
    if _HEX40.match(etag) and git_blob_id(data) != etag:
        raise CorruptDataError(
            f"{where}: its bytes do not match the git blob id the Hub "
            "reported for it "
            f"({etag[:12]}...); the cached copy changed after download. "
            "Refused; delete it from "
            "the Hub cache"
        )


def read_verified(local: str | Path, expected_sha256: str | None, where: str) -> bytes:
    """The bytes of a pulled file after both checks: the Hub's own hash, then the SHA-256 recorded
    at push."""
    data = Path(local).read_bytes()
    check_hub_etag(local, data, where)
    if expected_sha256 is None:
        raise CorruptDataError(
            f"{where}: no SHA-256 was recorded for it at push (published by "
            "another tool, or by "
            "an xamm that did not record checksums), so it cannot be "
            "verified; refused. "
            "Re-publish it with this xamm"
        )
    if sha256(data) != expected_sha256:
        raise CorruptDataError(
            f"{where}: its bytes do not match the SHA-256 recorded at push "
            f"({expected_sha256[:12]}...); refused"
        )
    return data


def incomplete_download(e: OSError, where: str) -> CorruptDataError | None:
    """huggingface_hub's size check of a download, as a CorruptDataError naming the file (None:
    another error)."""
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    if not first.startswith("Consistency check failed"):
        return None
    return CorruptDataError(
        f"{where}: the download is not the size the Hub reported "
        f"({first}); refused. Retry; if "
        "it persists, the server or the network alters the file"
    )


def verify_folder(folder: str | Path, where: str, *, required: bool) -> None:
    """Check every file of a model folder against its ``xamm-files.json`` (and each cached file
    against the Hub's hash). Without a manifest: refused if ``required`` (a pulled model), else
    nothing to check (a local folder)."""
    folder = Path(folder)
    mpath = folder / MANIFEST
    if not mpath.is_file():
        if required:
            raise CorruptDataError(
                f"{where}: the model has no {MANIFEST} (the SHA-256 of each file, "
                "written at save), "
                "so it cannot be verified; refused. Re-publish it with this xamm"
            )
        return
    manifest_bytes = mpath.read_bytes()
    check_hub_etag(mpath, manifest_bytes, f"{where}/{MANIFEST}")
    try:
        files = json.loads(manifest_bytes).get("files")
    except (ValueError, AttributeError, RecursionError):
        files = None
    if not isinstance(files, dict):
        raise CorruptDataError(f"{where}/{MANIFEST}: not a file manifest; refused")
    present = {p.relative_to(folder).as_posix() for p in _listed(folder)}
    if extra := sorted(present - set(files)):
        raise CorruptDataError(f"{where}: {extra[0]} is not in {MANIFEST}; refused")
    for rel, want in sorted(files.items()):
        if rel not in present:
            raise CorruptDataError(f"{where}: {rel}, listed in {MANIFEST}, is missing; refused")
        read_verified(folder / rel, want, f"{where}/{rel}")


__all__ = [
    "MANIFEST",
    "check_hub_etag",
    "git_blob_id",
    "incomplete_download",
    "read_verified",
    "sha256",
    "verify_folder",
    "write_manifest",
]
