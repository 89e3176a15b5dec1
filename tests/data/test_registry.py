"""The one registry pattern, and the registries built on it."""

from __future__ import annotations

import pytest

from xamm_data.registry import Registry, UnknownNameError


def test_register_get_list_and_did_you_mean():
    reg: Registry = Registry("widget")

    @reg.register("blue-widget", colour="blue")
    def blue():
        return "b"

    reg.add("red-widget", "r", aliases=("Crimson",))
    assert reg.get("blue-widget") is blue and blue.registry_info == {"colour": "blue"}
    assert reg.get("crimson") == "r" and "CRIMSON" in reg and "green" not in reg
    assert (
        reg.list() == ["blue-widget", "red-widget"]
        and reg.list("r*") == ["red-widget"]
        and len(reg) == 2
    )
    with pytest.raises(UnknownNameError) as e:
        reg.get("blue-widgte")
    assert e.value.suggestion == "blue-widget"
    assert str(e.value) == (
        "unknown widget 'blue-widgte'. Did you mean 'blue-widget'? Known: blue-widget, red-widget"
    )
    with pytest.raises(ValueError, match="registered twice"):
        reg.add("red-widget", "again")
    for not_text in (None, 5, b"red-widget"):  # "None" is close to no name, and is not one
        with pytest.raises(UnknownNameError) as e:
            reg.get(not_text)
        assert e.value.suggestion is None
        assert str(e.value) == (
            f"unknown widget {not_text!r}. Expected text. Known: blue-widget, red-widget"
        )


@pytest.mark.parametrize(
    "lookup,bad,expected",
    [
        ("machines", "lasen", "lassen"),
        ("datasets", "quartzz", "quartz"),
        ("embedders", "atention", "attention"),
        ("regressors", "catbost", "catboost"),
        ("formats", "rajaperff", "rajaperf"),
    ],
)
def test_every_registry_uses_the_pattern(lookup, bad, expected):
    if lookup == "machines":
        from xamm_data.machines import registry as m

        reg = m.REGISTRY
    elif lookup == "datasets":
        from xamm_data.hub.datasets import dataset_registry

        reg = dataset_registry()
    elif lookup == "embedders":
        pytest.importorskip("torch")
        from xamm_models import embedders as m

        reg = m.REGISTRY
    elif lookup == "regressors":
        from xamm_models.predictors.paper import regressors as m

        reg = m.REGISTRY
    else:
        from xamm_ingest.format import formats

        reg = formats()
    assert isinstance(reg, Registry)
    with pytest.raises(UnknownNameError) as e:
        reg.get(bad)
    assert e.value.suggestion == expected and expected in e.value.known


def test_target_parses_prints_and_builds_columns():
    import polars as pl

    from xamm_data.machines.registry import split_target
    from xamm_data.machines.targets import Target

    t = Target.parse("lassen:gpu")
    assert (
        t == ("lassen", "gpu")
        and str(t) == "lassen:gpu"
        and str(Target.parse("quartz")) == "quartz"
    )
    assert split_target("h100-node:cpu") == ("h100-node", "cpu")
    for bad in ("lassen:tpu", "a:b:c", "", "with space:cpu"):
        with pytest.raises(ValueError, match="MACHINE:cpu"):
            Target.parse(bad)
    df = pl.DataFrame({"machine": ["quartz", "lassen"], "device": ["cpu", "gpu"]})
    assert df.select(Target.expr()).to_series().to_list() == ["quartz:cpu", "lassen:gpu"]
    assert df.select(Target.expr()).select(Target.device_expr("machine")).to_series().to_list() == [
        "cpu",
        "gpu",
    ]


def test_one_content_hash_and_one_as_store(tmp_path):
    import polars as pl

    from xamm_data.hashing import dir_sha256, file_sha256, frame_sha256
    from xamm_data.store.store import Store, as_store

    a = pl.DataFrame({"x": [1, None], "y": ["", "b"]})
    assert (
        frame_sha256(a)
        == frame_sha256(a.clone())
        != frame_sha256(a.with_columns(pl.col("x").fill_null(0)))
    )
    # null is not ""
    assert frame_sha256(a) != frame_sha256(pl.DataFrame({"x": [1, None], "y": [None, "b"]}))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_bytes(b"abc")
    import hashlib

    assert file_sha256(tmp_path / "d" / "f") == hashlib.sha256(b"abc").hexdigest()
    line = f"f\0{hashlib.sha256(b'abc').hexdigest()}\n".encode()
    assert dir_sha256(tmp_path / "d") == hashlib.sha256(line).hexdigest()
    st = Store(tmp_path / "s")
    assert as_store(st) is st and as_store(tmp_path / "s").root == st.root


def test_a_files_hash_is_its_bytes_whatever_their_length_against_the_chunk(tmp_path):
    """Empty, one byte, a chunk less one, a chunk, a chunk and one, several chunks: the hash is
    ``hashlib``'s of the bytes ``open`` reads, with the ``stat`` of the file it opened; the bytes
    are kept, when asked, for a file of at most a chunk."""
    import hashlib
    import random

    from xamm_data.hashing import file_sha256_stat, hash_file

    rng = random.Random(3)
    f = tmp_path / "f"
    for n in (0, 1, 6, 7, 8, 20, 1 << 20, (1 << 20) + 1):
        f.write_bytes(rng.randbytes(n))
        want = hashlib.sha256(f.read_bytes()).hexdigest()
        for chunk in (7, 1 << 20):
            got = hash_file(f, chunk)
            assert (got.sha256, got.stat.st_size, got.link) == (want, n, False), (n, chunk)
            assert file_sha256_stat(f, chunk)[0] == want
            assert got.data is None  # kept only when asked
            kept = hash_file(f, chunk, keep=True)
            # the bytes hashed, where the first read (a chunk and one byte) held them all
            whole = f.read_bytes() if n <= chunk + 1 else None
            assert kept.sha256 == want and kept.data == whole, (n, chunk)


def test_a_read_that_falls_short_of_the_size_is_not_taken_for_the_files_end(tmp_path, monkeypatch):
    """A read may give fewer bytes than it asks before the end (a FUSE or network file system):
    the hash reads on until a read finds the end, and keeps no bytes it did not hash whole; a
    read that gives the size ``fstat`` gave is the last one asked."""
    import hashlib
    import os
    import random

    from xamm_data import hashing

    f = tmp_path / "f"
    f.write_bytes(random.Random(5).randbytes(1000))
    opened, real_open, real_read = [], hashing._open, os.read

    def recorded(path):
        fd, link = real_open(path)
        opened.append(fd)
        return fd, link

    monkeypatch.setattr(hashing, "_open", recorded)
    reads = []

    def short(fd, n):  # only the hash's descriptor reads short: 300 bytes at most a read
        reads.append(fd)
        return real_read(fd, min(n, 300) if fd in opened else n)

    monkeypatch.setattr(os, "read", short)
    got = hashing.hash_file(f, keep=True)
    assert got.sha256 == hashlib.sha256(f.read_bytes()).hexdigest() and got.data is None
    # a read that gives the size fstat gave is the whole file: no read asked after it
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(fd) or real_read(fd, n))
    reads.clear()
    got = hashing.hash_file(f, keep=True)
    assert got.data == f.read_bytes() and reads.count(opened[-1]) == 1
