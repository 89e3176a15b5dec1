"""The recorded hashes of unchanged files (xamm_ingest.pipeline.file_hashes): a rerun over a
stored archive reads no file whose ``stat`` is unchanged, reads every other one, and the records
on disk say what an independent parse of each file and its ``stat`` says."""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

import pytest
from cali_writer import write_cali

from xamm_ingest import ingest_archive
from xamm_ingest.cli import main
from xamm_ingest.pipeline import commit, stages
from xamm_ingest.pipeline import file_hashes as fh
from xamm_ingest.readers.profile_common import SampleSpec

TIME = "inclusive#sum#time.duration"
SPEC = SampleSpec(app="sort", machine="m")


def _profiles(root: Path, n: int, first: int = 0) -> list[Path]:
    """``n`` profiles under ``root``, the i-th timed ``1 + first + i`` s (``first`` apart: other
    content)."""
    out = []
    for i in range(n):
        p = root / f"t{i % 3}" / f"p{i:02d}.cali"
        p.parent.mkdir(parents=True, exist_ok=True)
        times = [(["main"], {TIME: 1.0 + first + i})]
        out.append(write_cali(p, times, {"cluster": "c"}, units={TIME: "sec"}))
    return out


@pytest.fixture
def reads(monkeypatch):
    """The files read to be hashed, by path (every way the pipeline reads one)."""
    seen: list[str] = []
    real = commit.hash_file

    def counted(path, *a, **kw):
        seen.append(os.path.basename(path))
        return real(path, *a, **kw)

    monkeypatch.setattr(commit, "hash_file", counted)  # hashed here, to skip what is held
    monkeypatch.setattr(stages, "hash_file", counted)  # hashed where it is read
    monkeypatch.setattr(fh, "RACY_S", 0.0)  # the files were written a moment ago
    return seen


def _ingest(root: Path, store: Path, **kw):
    return ingest_archive("caliper", root, store=store, spec=SPEC, batch_files=5, workers=1, **kw)


def _records(home: Path) -> list[tuple[bytes, int, int]]:
    """The records file parsed with ``struct``: (key, hash prefix high, low) per record."""
    data = (home / "ingest" / "file-hashes.bin").read_bytes()
    head, body = data[: len(fh.MAGIC)], data[len(fh.MAGIC) :]
    assert head == fh.MAGIC and len(body) % 32 == 0
    return [
        (body[i : i + 16], *struct.unpack("<QQ", body[i + 16 : i + 32]))
        for i in range(0, len(body), 32)
    ]


def test_each_record_is_the_files_stat_and_its_sha256(tmp_path, reads):
    files = _profiles(tmp_path / "runs", 7)
    assert _ingest(tmp_path / "runs", tmp_path / "s").rows_written == 7
    got = {key: (hi, lo) for key, hi, lo in _records(tmp_path / "xamm_home")}
    assert len(got) == 7
    for f in files:
        st = os.stat(f)
        text = "\0".join(
            str(v) for v in (f, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        )
        key = hashlib.blake2b(text.encode(), digest_size=16).digest()
        digest = hashlib.sha256(f.read_bytes()).digest()
        assert got[key] == (int.from_bytes(digest[:8], "big"), int.from_bytes(digest[8:16], "big"))


def test_a_rerun_reads_no_unchanged_file_and_every_changed_one(tmp_path, reads):
    files = _profiles(tmp_path / "runs", 12)
    assert _ingest(tmp_path / "runs", tmp_path / "s").rows_written == 12
    assert len(reads) == 12
    reads.clear()
    again = _ingest(tmp_path / "runs", tmp_path / "s")
    assert (again.already_stored, again.unread, again.rows_written, reads) == (12, 12, 0, [])
    assert again.summary()["already_stored_unread"] == 12
    # same size, modification time put back: the change time still tells
    st = os.stat(files[4])
    text = files[4].read_text()
    files[4].write_text(text.replace("data=5.000000", "data=5.500000"))
    assert os.stat(files[4]).st_size == st.st_size and files[4].read_text() != text
    os.utime(files[4], ns=(st.st_atime_ns, st.st_mtime_ns))
    new = _ingest(tmp_path / "runs", tmp_path / "s")
    assert reads == [files[4].name]
    assert (new.already_stored, new.unread, new.rows_written) == (11, 11, 1)


def test_a_recorded_hash_the_table_does_not_hold_is_read(tmp_path, reads):
    """Records made for one store: another store that holds half the files skips that half and
    reads (and commits) the rest."""
    _profiles(tmp_path / "runs", 10)
    assert _ingest(tmp_path / "runs", tmp_path / "one").rows_written == 10
    half = sorted((tmp_path / "runs").rglob("*.cali"))[:5]
    part = tmp_path / "part"
    for f in half:
        (part / f.parent.name).mkdir(parents=True, exist_ok=True)
        (part / f.parent.name / f.name).symlink_to(f)
    assert _ingest(part, tmp_path / "two").rows_written == 5
    reads.clear()
    rep = _ingest(tmp_path / "runs", tmp_path / "two")
    assert (rep.already_stored, rep.rows_written) == (5, 5)
    assert sorted(reads) == sorted(
        f.name for f in set((tmp_path / "runs").rglob("*.cali")) - set(half)
    )


def test_rehash_reads_every_file_and_a_racy_file_is_not_recorded(tmp_path, reads, monkeypatch):
    _profiles(tmp_path / "runs", 6)
    _ingest(tmp_path / "runs", tmp_path / "s")
    reads.clear()
    assert _ingest(tmp_path / "runs", tmp_path / "s", rehash=True).already_stored == 6
    assert len(reads) == 6
    # changed a moment ago: its record could outlive a second write in the same clock tick
    monkeypatch.setattr(fh, "RACY_S", 3600.0)
    (tmp_path / "h2").mkdir()
    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "h2"))
    _ingest(tmp_path / "runs", tmp_path / "s")
    assert not (tmp_path / "h2" / "ingest" / "file-hashes.bin").exists()


def test_the_file_stays_compact_and_a_dry_run_writes_none(tmp_path, reads, monkeypatch):
    monkeypatch.setattr(fh, "FLUSH_RECORDS", 2)
    _profiles(tmp_path / "runs", 8)
    for _ in range(5):
        _ingest(tmp_path / "runs", tmp_path / "s", rehash=True)
    assert len(_records(tmp_path / "xamm_home")) <= 2 * 8 + 2
    assert len({k for k, *_ in _records(tmp_path / "xamm_home")}) == 8
    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "h2"))
    _ingest(tmp_path / "runs", None, dry_run=True)
    assert not (tmp_path / "h2").exists()


def test_the_command_line_takes_rehash_and_says_what_it_did_not_read(tmp_path, reads, capsys):
    _profiles(tmp_path / "runs", 4)
    argv = ["caliper", str(tmp_path / "runs"), "--app", "a", "--machine", "m", "--store",
            str(tmp_path / "s"), "--batch-files", "2", "--no-progress"]  # fmt: skip
    assert main(argv) == 0 and len(reads) == 4
    capsys.readouterr()
    assert main(argv) == 0 and len(reads) == 4
    said = capsys.readouterr().out
    assert "skipped 4 source(s) the store already holds (same SHA-256; 4 unchanged" in said
    assert main([*argv, "--rehash"]) == 0 and len(reads) == 8
    assert "(same SHA-256)\n" in capsys.readouterr().out


@pytest.mark.parametrize("damage", ["torn last record", "not a file of records"])
def test_a_damaged_file_is_mended_by_the_next_run(tmp_path, reads, damage):
    """A torn last record is cut before the next append, a file without the header begun anew:
    the run after reads nothing again."""
    _profiles(tmp_path / "runs", 6)
    _ingest(tmp_path / "runs", tmp_path / "s")
    path = tmp_path / "xamm_home" / fh.FILE
    if damage == "torn last record":
        path.write_bytes(path.read_bytes()[:-5])
    else:
        path.write_bytes(b"my own notes\n" + path.read_bytes())
    reads.clear()
    assert _ingest(tmp_path / "runs", tmp_path / "s").already_stored == 6
    assert len(reads) == (1 if damage == "torn last record" else 6)
    assert len(_records(tmp_path / "xamm_home")) >= 5  # aligned records behind the header
    reads.clear()
    assert _ingest(tmp_path / "runs", tmp_path / "s").already_stored == 6 and reads == []


def test_new_files_into_a_stored_archive_rewrite_no_record_until_repeats_are_half(
    tmp_path, reads, monkeypatch
):
    """An ingest that read the records counts what they hold: new files into a stored archive
    append their records and rewrite none; repeats (the same files into other stores) are
    compacted once they make up half the file, so it stays within twice its distinct records."""
    monkeypatch.setattr(fh, "FLUSH_RECORDS", 2)
    _profiles(tmp_path / "runs", 12)
    new = _profiles(tmp_path / "new", 2, first=100)
    path = tmp_path / "xamm_home" / fh.FILE
    _ingest(tmp_path / "runs", tmp_path / "s")
    first, inode = _records(tmp_path / "xamm_home"), path.stat().st_ino
    assert _ingest(tmp_path / "new", tmp_path / "s").rows_written == len(new) == 2
    assert path.stat().st_ino == inode  # appended to, not rewritten
    assert (
        _records(tmp_path / "xamm_home")[:12] == first
        and len(_records(tmp_path / "xamm_home")) == 14
    )
    for i in range(5):  # five stores holding the two new files (each run compacts the file)
        _ingest(tmp_path / "new", tmp_path / f"s{i}")
    assert len(_records(tmp_path / "xamm_home")) == 14
    sizes = []
    for i in range(5):  # the twelve into each: 14 distinct read + 12 made, rewritten past 54
        _ingest(tmp_path / "runs", tmp_path / f"s{i}")
        sizes.append(len(_records(tmp_path / "xamm_home")))
    assert sizes == [26, 38, 50, 14, 26]
    assert len({k for k, *_ in _records(tmp_path / "xamm_home")}) == 14


def test_a_first_ingest_reads_each_file_once_on_the_workers_and_records_what_they_read(
    tmp_path, monkeypatch
):
    """Into a store that holds nothing, each source is read once, by the local process that parses
    it: hashed there from the bytes its reader parses (the reader opens no file), the hash and the
    ``stat`` of that read sent back and recorded here. Each read is logged to a file: the workers
    are processes of their own."""
    from xamm_data.store.store import Store
    from xamm_ingest import pipeline
    from xamm_ingest.pipeline import stages
    from xamm_ingest.readers import caliper_files

    log = tmp_path / "reads.log"

    def logged(what, real):
        def read(path, *a, **kw):
            with open(log, "a") as f:
                f.write(f"{what} {os.path.basename(path)} {os.getpid()}\n")
            return real(path, *a, **kw)

        return read

    monkeypatch.setattr(fh, "RACY_S", 0.0)
    monkeypatch.setattr(pipeline, "POOL_MIN_FILES", 2)
    monkeypatch.setattr(pipeline, "CHUNK_FILES", 2)
    monkeypatch.setattr(stages, "hash_file", logged("hash-where-read", stages.hash_file))
    monkeypatch.setattr(commit, "hash_file", logged("hash-before", commit.hash_file))
    monkeypatch.setattr(caliper_files, "open", logged("open", open), raising=False)
    files = _profiles(tmp_path / "runs", 9)
    rep = ingest_archive(
        "caliper", tmp_path / "runs", store=tmp_path / "s", spec=SPEC, batch_files=4, workers=2
    )
    assert rep.rows_written == 9
    reads = [line.split() for line in log.read_text().splitlines()]
    assert sorted((what, name) for what, name, _ in reads) == sorted(
        ("hash-where-read", f.name) for f in files
    )
    assert {int(pid) for *_, pid in reads} - {os.getpid()}  # read on the local workers
    stored = Store(tmp_path / "s").scan("app_profiles").collect()
    by_path = dict(zip(stored["source_path"], stored["source_sha256"]))
    recorded = {key: (hi, lo) for key, hi, lo in _records(tmp_path / "xamm_home")}
    for f in files:
        digest = hashlib.sha256(f.read_bytes()).digest()
        assert by_path[f.relative_to(tmp_path / "runs").as_posix()] == digest.hex()
        assert recorded[_stat_key(f)] == (
            int.from_bytes(digest[:8], "big"),
            int.from_bytes(digest[8:16], "big"),
        )


def _stat_key(f: Path) -> bytes:
    """``f``'s record key by the documented rule (BLAKE2b-128 of its path and ``stat``)."""
    st = os.stat(f)
    text = "\0".join(
        str(v) for v in (f, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    )
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def test_the_row_holds_the_hash_of_the_bytes_it_was_read_from_though_the_file_changes(
    tmp_path, monkeypatch
):
    """A file rewritten after it was hashed and before it was parsed: its row is what the bytes
    hashed say (its time and its hash agree), and the record of that read keeps the ``stat`` the
    read saw, so the next run reads the file as it is now."""
    from xamm_data.store.store import Store
    from xamm_ingest.pipeline import stages

    monkeypatch.setattr(fh, "RACY_S", 0.0)
    (f,) = _profiles(tmp_path / "runs", 1)
    before = f.read_bytes()
    real = stages.hash_file

    def then_rewritten(path, *a, **kw):
        got = real(path, *a, **kw)
        f.write_bytes(before.replace(b"data=1.000000", b"data=7.000000"))
        return got

    monkeypatch.setattr(stages, "hash_file", then_rewritten)
    assert _ingest(tmp_path / "runs", tmp_path / "s").rows_written == 1
    row = Store(tmp_path / "s").scan("app_profiles").collect().row(0, named=True)
    assert (row["runtime_s"], row["source_sha256"]) == (1.0, hashlib.sha256(before).hexdigest())
    monkeypatch.setattr(stages, "hash_file", real)
    again = _ingest(tmp_path / "runs", tmp_path / "s")  # the file as it is now: new content
    assert (again.unread, again.rows_written) == (0, 1)
    rows = Store(tmp_path / "s").scan("app_profiles").collect()
    assert sorted(rows["runtime_s"]) == [1.0, 7.0]


def test_a_file_gone_before_its_read_is_rejected_by_name_and_the_others_are_stored(
    tmp_path, monkeypatch
):
    """A source removed between the walk and the read that hashes it is one rejection naming the
    file and what was expected; the other sources are stored."""
    from xamm_ingest.pipeline import stages

    files = _profiles(tmp_path / "runs", 3)
    real = stages._sha

    def gone_first(path, *a, **kw):
        if path == files[1] and path.exists():
            path.unlink()
        return real(path, *a, **kw)

    monkeypatch.setattr(stages, "_sha", gone_first)
    rep = _ingest(tmp_path / "runs", tmp_path / "s")
    (rejected,) = rep.rejected
    assert rep.rows_written == 2 and rejected.path == str(files[1])
    assert "cannot be read (No such file or directory); expected a readable file" in rejected.reason
    assert "did not expect" not in rejected.reason


@pytest.mark.parametrize("rehash", [False, True])
def test_a_new_file_gone_before_the_resume_hashes_it_is_rejected_by_name(
    tmp_path, monkeypatch, rehash
):
    """Into a table that holds sources the run hashes new files before it sends them: one gone by
    then is rejected by name, not sent (unhashed, it would escape the check of what the table
    holds); the run goes on."""
    from xamm_ingest.pipeline import stages

    monkeypatch.setattr(fh, "RACY_S", 0.0)
    _profiles(tmp_path / "runs", 3)
    assert _ingest(tmp_path / "runs", tmp_path / "s").rows_written == 3
    new = _profiles(tmp_path / "runs" / "new", 2, first=10)
    real_sha, real_hash, sent = stages._sha, commit.hash_file, []

    def gone_first(real):
        def hash_(path, *a, **kw):
            if Path(path) == new[0] and new[0].exists():  # (an old file has its name)
                new[0].unlink()
            return real(path, *a, **kw)

        return hash_

    monkeypatch.setattr(stages, "_sha", gone_first(real_sha))
    monkeypatch.setattr(commit, "hash_file", gone_first(real_hash))
    real_here = stages._hashed_here
    monkeypatch.setattr(stages, "_hashed_here", lambda t: sent.append(t.path) or real_here(t))
    rep = _ingest(tmp_path / "runs", tmp_path / "s", rehash=rehash)
    (rejected,) = rep.rejected
    assert (rep.rows_written, rep.already_stored, rejected.path) == (1, 3, str(new[0]))
    assert "cannot be read (No such file or directory); expected a readable file" in rejected.reason
    assert sent == [new[1]]  # what the workers read: the new file the run could hash
