"""Where a store's tables live: a local directory or an object-store URI that delta-rs supports.

:class:`TableLocation` gives the store the few file operations it needs (read, write, size, list,
remove) through ``pyarrow.fs`` for data files, and the URI and ``storage_options`` delta-rs needs
for the log. For ``s3://`` the options come from the standard AWS variables (``AWS_ENDPOINT_URL``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ALLOW_HTTP``); commits use
S3's conditional writes (``AWS_CONDITIONAL_PUT=etag``) so concurrent writers never overwrite each
other's log entries.

A data file is written to a temporary name and renamed on a local file system; an object store's PUT
is already all-or-nothing, so the object is written under its final (content-addressed) name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

SCHEMES = ("s3",)


def is_uri(root) -> bool:
    """Whether ``root`` names an object store (``s3://bucket/prefix``) rather than a local
    directory."""
    return isinstance(root, str) and urlparse(root).scheme in SCHEMES


def storage_options(uri: str) -> dict[str, str]:
    """delta-rs ``storage_options`` for ``uri`` from the environment (read now)."""
    if urlparse(uri).scheme != "s3":
        return {}
    opts = {
        k: os.environ[k]
        for k in (
            "AWS_ENDPOINT_URL",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_REGION",
            "AWS_SESSION_TOKEN",
            "AWS_ALLOW_HTTP",
        )
        if os.environ.get(k)
    }
    opts.setdefault("AWS_CONDITIONAL_PUT", os.environ.get("AWS_CONDITIONAL_PUT", "etag"))
    if opts.get("AWS_ENDPOINT_URL", "").startswith("http://"):
        opts.setdefault("AWS_ALLOW_HTTP", "true")
    return opts


def _s3_filesystem():
    import pyarrow.fs as pafs  # pyarrow: imported when an object store is used

    ep = os.environ.get("AWS_ENDPOINT_URL")
    kw = {
        "region": os.environ.get("AWS_REGION", "us-east-1"),
        "access_key": os.environ.get("AWS_ACCESS_KEY_ID"),
        "secret_key": os.environ.get("AWS_SECRET_ACCESS_KEY"),
        "session_token": os.environ.get("AWS_SESSION_TOKEN"),
    }
    if ep:
        u = urlparse(ep)
        kw.update(endpoint_override=u.netloc or u.path, scheme=u.scheme or "https")
    return pafs.S3FileSystem(**{k: v for k, v in kw.items() if v is not None})


@dataclass(frozen=True)
class TableLocation:
    """One table's directory: ``uri`` for delta-rs, ``local`` when it is a local path."""

    uri: str
    local: Path | None

    @classmethod
    def of(cls, root, kind: str) -> TableLocation:
        if is_uri(root):
            return cls(f"{root.rstrip('/')}/{kind}", None)
        return cls(str(Path(root) / kind), Path(root) / kind)

    @property
    def storage_options(self) -> dict[str, str]:
        return storage_options(self.uri)

    def _fs_path(self, rel: str) -> tuple[Any, str]:  # a pyarrow.fs.FileSystem (untyped)
        u = urlparse(self.uri)
        return _s3_filesystem(), f"{u.netloc}{u.path}/{rel}".replace("//", "/")

    def has_log(self) -> bool:
        if self.local is not None:
            return (self.local / "_delta_log").is_dir()
        from deltalake import DeltaTable  # delta-rs: imported when a table is opened

        return DeltaTable.is_deltatable(self.uri, storage_options=self.storage_options)

    def read_bytes(self, rel: str) -> bytes:
        """The bytes of ``rel``; FileNotFoundError if it is not there."""
        if self.local is not None:
            return (self.local / rel).read_bytes()
        fs, path = self._fs_path(rel)
        try:
            with fs.open_input_stream(path) as f:
                return f.read()
        except OSError as e:
            if (
                "NoSuchKey" in str(e)
                or "not found" in str(e).lower()
                or "does not exist" in str(e).lower()
            ):
                raise FileNotFoundError(f"{self.uri}/{rel}") from e
            raise

    def read_tail(self, rel: str, n: int) -> bytes:
        """The last ``n`` bytes of ``rel`` (all of it when shorter; one ranged read on an object
        store); FileNotFoundError if it is not there."""
        if self.local is not None:
            with open(self.local / rel, "rb") as f:
                size = f.seek(0, os.SEEK_END)
                f.seek(max(size - n, 0))
                return f.read(n)
        fs, path = self._fs_path(rel)
        try:
            with fs.open_input_file(path) as f:
                size = f.size()
                return f.read_at(min(n, size), max(size - n, 0))
        except OSError as e:
            if "NoSuchKey" in str(e) or "not found" in str(e).lower():
                raise FileNotFoundError(f"{self.uri}/{rel}") from e
            raise

    def list_dir(self, rel: str) -> list[str]:
        """The names of the files directly in the table-relative directory ``rel`` ([] if it is not
        there)."""
        if self.local is not None:
            d = self.local / rel
            return sorted(p.name for p in d.iterdir() if p.is_file()) if d.is_dir() else []
        import pyarrow.fs as pafs  # pyarrow: imported when an object store is used

        fs, path = self._fs_path(rel)
        infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
        return sorted(i.base_name for i in infos if i.type == pafs.FileType.File)

    def size(self, rel: str) -> int | None:
        if self.local is not None:
            p = self.local / rel
            return p.stat().st_size if p.is_file() else None
        import pyarrow.fs as pafs  # pyarrow: imported when an object store is used

        fs, path = self._fs_path(rel)
        info = fs.get_file_info(path)
        return info.size if info.type == pafs.FileType.File else None

    def put(self, rel: str, data: bytes, tmp_name: str) -> None:
        """Write ``data`` as ``rel``, all or nothing (a temporary file and a rename on a local
        disk)."""
        if self.local is None:
            fs, path = self._fs_path(rel)
            with fs.open_output_stream(path) as f:
                f.write(data)
            return
        target = self.local / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / tmp_name
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)

    def where(self, rel: str) -> Path | str:
        """A table-relative path as a local path, or a URI on an object store."""
        return self.local / rel if self.local is not None else f"{self.uri}/{rel}"

    def display(self, rel: str) -> str:
        return str(self.where(rel))
