"""A source's path under the ingest root is what ``Path.resolve`` says it is, links followed, for a
plain file, a linked file, a file under a linked directory and a file outside the root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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


def test_relative_paths_follow_chains_and_relative_links_as_resolve_does(tmp_path):
    """A link to a link, a relative link through a linked folder and a loop: each answer is
    ``Path.resolve``'s (a loop, which resolves to nothing under the root, is the link's name)."""
    root = tmp_path / "root"
    (root / "data" / "deep").mkdir(parents=True)
    (root / "data" / "deep" / "f.cali").write_text("x")
    (root / "links").mkdir()
    os.symlink(root / "data" / "deep", root / "d")
    os.symlink("../d/f.cali", root / "links" / "rel.cali")  # relative, through a linked folder
    os.symlink(root / "links" / "rel.cali", root / "links" / "chain.cali")
    os.symlink("../data/deep/../deep/f.cali", root / "links" / "dots.cali")
    os.symlink("loop2.cali", root / "links" / "loop1.cali")
    os.symlink("loop1.cali", root / "links" / "loop2.cali")
    relative_path.cache_clear()
    for name in ("rel.cali", "chain.cali", "dots.cali"):
        path = root / "links" / name
        assert relative_path(path, root) == "data/deep/f.cali" == _resolved_rel(path, root), name
    assert relative_path(root / "links" / "loop1.cali", root) == "loop1.cali"


def test_the_open_that_hashes_a_source_tells_whether_it_is_a_link_and_its_path_follows(tmp_path):
    """The hash of a source opens it without following a link first: a plain file is no link, a
    linked file and a chain are (their hash the target's), a folder and a dangling link are
    refused as ``open`` refuses them, no descriptor left open; the path a hashed task gives is
    ``Path.resolve``'s, as it is with nothing known of links."""
    from xamm_data.hashing import file_sha256, hash_file
    from xamm_ingest.pipeline.stages import _rel, hashed
    from xamm_ingest.sources import Task

    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f.cali").write_text("x")
    os.symlink(root / "a" / "f.cali", root / "link.cali")
    os.symlink(root / "link.cali", root / "chain.cali")
    os.symlink(root / "a", root / "c")
    os.symlink(root / "missing.cali", root / "dangling.cali")
    links = {"a/f.cali": False, "link.cali": True, "chain.cali": True, "c/f.cali": False}
    for rel, link in links.items():
        got = hash_file(root / rel)
        assert (got.link, got.sha256) == (link, file_sha256(root / "a" / "f.cali")), rel
        task = hashed(Task("caliper", root / rel, root))
        assert task.link is link
        relative_path.cache_clear()
        assert _rel(task) == "a/f.cali" == _resolved_rel(root / rel, root), rel
    fds = len(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").is_dir() else None
    for bad, error in (
        (root / "a", IsADirectoryError),
        (root / "dangling.cali", FileNotFoundError),
    ):
        with pytest.raises(error):
            hash_file(bad)
        with pytest.raises(error):
            open(bad, "rb")  # noqa: SIM115 (refused before it opens)
    if fds is not None:
        assert len(os.listdir("/proc/self/fd")) == fds


def _relative_by_split_and_join(path: str, root: str) -> str:
    """The relative path of a source no link leads to, by ``os.path.split`` and ``os.path.join``
    (the rule :func:`relative_path` follows without their calls)."""
    path = path.rstrip(os.sep) or path
    directory, name = os.path.split(path)
    real = os.path.join(os.path.realpath(directory or os.curdir), name)
    base = os.path.realpath(root)
    if real == base:
        return "."
    head = base if base.endswith(os.sep) else base + os.sep
    return real[len(head) :] if real.startswith(head) else name


def test_a_paths_directory_and_name_are_split_and_joined_as_os_path_does(tmp_path, monkeypatch):
    """Seeded paths of separators, dots and names, absolute and relative, under and beside
    seeded roots (``/`` and ``//`` among them): the relative path is the one ``os.path.split``
    and ``os.path.join`` give."""
    import random

    monkeypatch.chdir(tmp_path)
    rng = random.Random(66)
    parts = ["", ".", "..", "a", "b", "c.cali", "//", "/"]
    roots = ["/", "//", ".", "a", "a/", "/a/b", str(tmp_path), str(tmp_path) + "/a//"]
    paths = ["/", "//", "///", ".", "a", "a/", "/a", "a//b/", "//a", "./c.cali"]
    for _ in range(3000):
        paths.append("/".join(rng.choice(parts) for _ in range(rng.randint(1, 6))))
    relative_path.cache_clear()
    for path in paths:
        for root in rng.sample(roots, 3):
            want = _relative_by_split_and_join(path, root)
            assert relative_path(path, root, link=False) == want, (path, root)


def test_a_relative_path_is_taken_in_the_working_directory_of_each_call(tmp_path, monkeypatch):
    """The same relative names asked again after the process changed directory (a notebook's
    ``os.chdir``, a command run in-process) are resolved there, not where they were first asked."""
    for d in ("a", "b"):
        (tmp_path / d / "runs" / "sub").mkdir(parents=True)
        (tmp_path / d / "runs" / "sub" / "x.cali").write_text("x")
    real = Path(os.path.realpath(tmp_path))
    got = {}
    for d in ("a", "b"):
        monkeypatch.chdir(tmp_path / d)
        got[d] = (
            relative_path(".", "/", link=False),
            relative_path(real / d / "runs" / "sub" / "x.cali", "runs", link=False),
            relative_path("runs/sub/x.cali", real / d, link=False),
        )
    for d in ("a", "b"):
        # "." joined to its resolved directory, as os.path.join joins it (the test above)
        here = (real / d).as_posix().lstrip("/") + "/."
        assert got[d] == (here, "sub/x.cali", "runs/sub/x.cali"), d
