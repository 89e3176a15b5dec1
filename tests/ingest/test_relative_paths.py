"""A source's path under the ingest root is what ``Path.resolve`` says it is, links followed, for a
plain file, a linked file, a file under a linked directory and a file outside the root."""

from __future__ import annotations

import os
from pathlib import Path

from xamm_ingest.readers.base import relative_path


def _resolved_rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.name


def test_relative_paths_follow_links_as_resolve_does(tmp_path):
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    (root / "a" / "f.cali").write_text("x")
    (tmp_path / "outside.cali").write_text("x")
    os.symlink(root / "a" / "f.cali", root / "b" / "link.cali")
    os.symlink(root / "a", root / "c")
    os.symlink(tmp_path / "outside.cali", root / "b" / "out.cali")
    cases = {
        root / "a" / "f.cali": "a/f.cali",
        root / "b" / "link.cali": "a/f.cali",
        root / "c" / "f.cali": "a/f.cali",
        root / "b" / "out.cali": "out.cali",
        root / "b" / ".." / "a" / "f.cali": "a/f.cali",
    }
    relative_path.cache_clear()
    for path, want in cases.items():
        assert relative_path(path, root) == want == _resolved_rel(path, root), path


def test_relative_paths_resolve_a_linked_directory_before_its_parent(tmp_path):
    """``link/../x`` goes up from where the link points, as ``Path.resolve`` does, never lexically
    (the link's own folder); text paths and Path objects give the same answer."""
    root = tmp_path / "root"
    (root / "deep" / "inner").mkdir(parents=True)
    (root / "deep" / "f.cali").write_text("x")
    (root / "f.cali").write_text("x")
    os.symlink(root / "deep" / "inner", root / "link")
    path = root / "link" / ".." / "f.cali"
    relative_path.cache_clear()
    assert relative_path(path, root) == "deep/f.cali" == _resolved_rel(path, root)
    assert relative_path(str(path), str(root) + "/") == "deep/f.cali"
    assert relative_path(root, root) == "." == _resolved_rel(root, root)
