"""Certificates are evidence: an edited, deleted, reordered or stray certificate is named and
never believed, numbers are never reused, concurrent accepts chain right, a pull verifies all
before it registers anything and never writes outside the home, and ``M@accepted`` is the runs
the certificate names."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from certificate_world import HOSTILE, certificate, chain, hostile_files, publish

from xamm_data.cli.commands import main
from xamm_data.errors import BadNameError, TamperedError, XammError
from xamm_models.compare.certificates.evidence import content_sha256
from xamm_models.compare.certificates.records import CertificateRegistry

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
import centre_acceptance  # noqa: E402  (the guide's runs and criteria)

crypto = pytest.importorskip("cryptography", reason="signing needs the sign extra")
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ed25519  # noqa: E402


def _edit(path: Path, **fields) -> None:
    os.chmod(path, 0o644)
    doc = json.loads(path.read_text())
    doc.update(fields)
    path.write_text(json.dumps(doc, indent=2))


def _problems(reg: CertificateRegistry, machine: str = "newbox") -> dict[str, str]:
    return {p.path.name: p.what for p in reg.verify(machine).problems}


def test_each_certificate_records_its_hash_and_its_predecessors(tmp_path):
    reg = chain(tmp_path, 3)
    docs = [json.loads(reg.path("newbox", n).read_text()) for n in (1, 2, 3)]
    assert [d["number"] for d in docs] == [1, 2, 3]
    assert all(d["sha256"] == content_sha256(d) for d in docs)  # recomputed here, by the rule
    assert [d["predecessor_sha256"] for d in docs] == [None, docs[0]["sha256"], docs[1]["sha256"]]
    index = json.loads((tmp_path / "newbox" / "index.json").read_text())
    assert index["head"] == 3 and index["certificates"] == {
        str(d["number"]): d["sha256"] for d in docs
    }
    assert reg.verify("newbox").problems == [] and sorted(reg.verify("newbox").good) == [1, 2, 3]


def test_an_edited_failure_is_never_believed_and_the_others_stay_usable(tmp_path, capsys):
    reg = chain(tmp_path, 3)  # pass, fail, pass
    _edit(reg.path("newbox", 2), verdict="pass")
    assert "edited after it was issued" in _problems(reg)["certificate@2.json"]
    assert [c.number for c in reg.all("newbox")] == [1, 3]
    with pytest.raises(KeyError, match="certificate@2.json: edited"):
        reg.get("newbox", 2)
    _edit(reg.path("newbox", 3), verdict="fail")  # the newest pass edited too
    assert reg.accepted("newbox").number == 1  # never the edited one


def test_an_edit_that_rehashes_itself_breaks_the_chain_and_the_index(tmp_path):
    reg = chain(tmp_path, 3)
    p = reg.path("newbox", 2)
    _edit(p, verdict="pass")
    doc = json.loads(p.read_text())
    p.write_text(json.dumps({**doc, "sha256": content_sha256(doc)}))  # a careful forger
    what = _problems(reg)
    assert "does not match the index" in what["certificate@2.json"]
    os.remove(tmp_path / "newbox" / "index.json")  # and the index gone too
    assert "does not follow certificate 2" in _problems(reg)["certificate@3.json"]


def test_a_deleted_newest_certificate_is_reported_and_its_number_never_reused(tmp_path):
    reg = chain(tmp_path, 3)
    os.remove(reg.path("newbox", 3))
    assert "was issued (the index records it) and is gone" in _problems(reg)["certificate@3.json"]
    assert reg.add(certificate()).number == 4


def test_reordered_truncated_and_stray_files_are_named_and_the_rest_used(tmp_path):
    reg = chain(tmp_path, 4)
    folder = tmp_path / "newbox"
    one, two = reg.path("newbox", 1), reg.path("newbox", 2)
    a, b = one.read_bytes(), two.read_bytes()
    os.chmod(one, 0o644), os.chmod(two, 0o644)
    one.write_bytes(b), two.write_bytes(a)  # swapped
    reg.path("newbox", 4).chmod(0o644)
    reg.path("newbox", 4).write_bytes(reg.path("newbox", 4).read_bytes()[:100])  # truncated
    (folder / "certificate@x.json").write_text("{}")
    shutil.copy(reg.path("newbox", 3), folder / "certificate@3.bak.json")
    what = _problems(reg)
    assert "file name says 1" in what["certificate@1.json"]
    assert "file name says 2" in what["certificate@2.json"]
    assert "truncated" in what["certificate@4.json"]
    assert "stray" in what["certificate@x.json"] and "stray" in what["certificate@3.bak.json"]
    assert [c.number for c in reg.all("newbox")] == [3]  # the one untouched stays usable


def test_accept_verify_names_each_file_and_exits_1(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XAMM_HOME", str(tmp_path))
    reg = chain(tmp_path / "certificates", 3)
    assert main(["accept", "verify", "newbox", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verified"] == [1, 2, 3]
    _edit(reg.path("newbox", 1), verdict="fail")
    os.remove(reg.path("newbox", 3))
    assert main(["accept", "verify", "newbox"]) == 1
    out = capsys.readouterr()
    assert "certificate@1.json: edited" in out.out and "certificate@3.json: was issued" in out.out
    assert "2 problem(s)" in out.err


def _key_pair(tmp_path: Path) -> tuple[Path, Path, ed25519.Ed25519PrivateKey]:
    key = ed25519.Ed25519PrivateKey.generate()
    priv, pub = tmp_path / "centre.pem", tmp_path / "centre.pub"
    priv.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    pub.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return priv, pub, key


def test_a_signed_then_edited_certificate_fails_the_centres_key(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XAMM_HOME", str(tmp_path))
    priv, pub, key = _key_pair(tmp_path)
    reg = chain(tmp_path / "certificates", 3, sign_key=key)
    assert main(["accept", "verify", "newbox", "--public-key", str(pub)]) == 0
    (tmp_path / "other").mkdir()
    other = _key_pair(tmp_path / "other")[1]
    assert main(["accept", "verify", "newbox", "--public-key", str(other)]) == 1
    assert "does not verify with the key given" in capsys.readouterr().out
    # the head edited, its own hash and the index rewritten: only the signature tells
    p = reg.path("newbox", 3)
    _edit(p, verdict="fail")
    doc = json.loads(p.read_text())
    doc["sha256"] = content_sha256(doc)
    p.write_text(json.dumps(doc))
    index = tmp_path / "certificates" / "newbox" / "index.json"
    idx = json.loads(index.read_text())
    idx["certificates"]["3"] = doc["sha256"]
    index.write_text(json.dumps(idx))
    assert main(["accept", "verify", "newbox"]) == 0  # the chain alone cannot see it
    assert main(["accept", "verify", "newbox", "--public-key", str(pub)]) == 1
    assert "certificate@3.json: the signature does not verify" in capsys.readouterr().out


def _accept_many(home: str, n: int, q) -> None:
    os.environ["XAMM_HOME"] = home
    reg = CertificateRegistry(Path(home) / "certificates")
    done = []
    for _ in range(n):
        with reg.writing("newbox"):  # what accept() holds: the previous read inside the lock
            before = reg.latest("newbox", "newbox:cpu")
            c = certificate().model_copy(update={"previous": before.number if before else None})
            done.append(reg.add(c).number)
    q.put(done)


def test_four_concurrent_writers_number_and_chain_every_certificate_right(tmp_path):
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_accept_many, args=(str(tmp_path), 6, q)) for _ in range(4)]
    for p in procs:
        p.start()
    numbers = sorted(n for _ in procs for n in q.get(timeout=120))
    for p in procs:
        p.join(timeout=60)
    assert numbers == list(range(1, 25))
    reg = CertificateRegistry(tmp_path / "certificates")
    assert reg.verify("newbox").problems == []
    assert [c.previous for c in reg.all("newbox")] == [None, *range(1, 24)]


def test_names_that_would_be_paths_are_refused_where_they_enter(tmp_path):
    reg = CertificateRegistry(tmp_path)
    for bad in ("../../x", "/abs", "a/b", "..", ".hidden", "Dane", "a..b", "x" * 101, "a\nb"):
        with pytest.raises((BadNameError, ValueError)):
            reg.path(bad, 1)
        with pytest.raises(ValueError):
            type(certificate()).model_validate({**certificate().model_dump(), "machine": bad})
    assert issubclass(BadNameError, XammError) and issubclass(TamperedError, XammError)
    assert not any(tmp_path.parent.glob("x")) and not Path("/abs").exists()


@pytest.mark.slow
def test_at_accepted_is_the_runs_the_certificate_names(shared_data, tmp_path, monkeypatch, capsys):
    """A certificate resolves to its own runs in any store holding them, by their hashes; a
    store without them is refused naming both hashes."""
    from xamm_data.store.store import Store
    from xamm_ingest.cli import main as ingest
    from xamm_models.compare.history.states import resolve

    d = shared_data / centre_acceptance.DANE
    crit = tmp_path / "criteria.toml"
    crit.write_text(centre_acceptance.CRITERIA)
    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "a"))
    assert ingest(["rajaperf", str(d / "1"), str(d / "2"), "--no-progress", "-q"]) == 0
    assert main(["accept", "dane", "--against", "quartz", "--criteria", str(crit)]) == 0
    cert = CertificateRegistry.default().accepted("dane")
    want = set(cert.ground().state_sources)
    assert len(want) == 2
    other = tmp_path / "other-store"  # another store: all five runs, in another order
    for r in ("3", "1", "4", "2", "5"):
        assert ingest(["rajaperf", str(d / r), "--store", str(other), "--no-progress", "-q"]) == 0
    got = resolve("dane@accepted", store=Store(other))
    assert set(got.rows["source_sha256"].unique()) == want and got.rows.height == 146
    thin = tmp_path / "thin-store"
    assert ingest(["rajaperf", str(d / "1"), "--store", str(thin), "--no-progress", "-q"]) == 0
    with pytest.raises(ValueError, match=f"{cert.ground().state_sha256}.*holds 1 of them"):
        resolve("dane@accepted", store=Store(thin))


@pytest.mark.slow
def test_concurrent_accepts_name_the_right_previous(shared_data, tmp_path):
    """Four `xamm accept` at once, on real runs: every certificate names the one before it."""
    from xamm_ingest.cli import main as ingest

    d = shared_data / centre_acceptance.DANE
    crit = tmp_path / "criteria.toml"
    crit.write_text(centre_acceptance.CRITERIA)
    env = {**os.environ, "XAMM_HOME": str(tmp_path / "home")}
    home = ["--store", str(tmp_path / "home" / "store")]
    assert ingest(["rajaperf", str(d / "1"), str(d / "2"), "--no-progress", "-q", *home]) == 0
    argv = ["accept", "dane", "--against", "quartz", "--criteria", str(crit), "--json"]
    code = (
        "import sys; from xamm_data.cli.commands import main; raise SystemExit(main(sys.argv[1:]))"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, *argv], env=env, stdout=subprocess.DEVNULL)
        for _ in range(4)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0] * 4
    reg = CertificateRegistry(tmp_path / "home" / "certificates")
    certs = reg.all("dane")
    assert [c.number for c in certs] == [1, 2, 3, 4] and reg.verify("dane").problems == []
    assert [c.previous for c in certs] == [None, 1, 2, 3]


@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_pull_is_refused_whole_and_writes_nothing(case, tmp_path, local_hub):
    from xamm_models.compare.hub import pull_records
    from xamm_models.machines.signatures import SignatureRegistry

    made = chain(tmp_path / "made", 3)
    extra = hostile_files(case, made)
    repo = f"org/hostile-{case}"
    publish(repo, extra, tmp_path)
    home = tmp_path / "xamm_home"
    key = _key_pair(tmp_path)[2].public_key() if case == "unsigned" else None
    before = {p for p in tmp_path.rglob("*")}
    with pytest.raises(XammError) as refused:
        pull_records(repo, registry=SignatureRegistry.default(), public_key=key)
    assert repo in str(refused.value)  # named: the repo, and the file
    assert not list(home.rglob("*.json")), "a refused pull registered something"
    landed = {p for p in tmp_path.rglob("*")} - before
    assert all(home in p.parents or "hf_home" in p.parts for p in landed), landed
    assert not list(Path("/tmp").glob("escape*"))


def test_a_signed_chain_round_trips_the_hub_and_verifies_here(tmp_path, local_hub, monkeypatch):
    from xamm_models.compare.hub import pull_records, push_records
    from xamm_models.machines.signatures import SignatureRegistry

    priv, pub, key = _key_pair(tmp_path)
    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "a"))
    chain(tmp_path / "a" / "certificates", 3, sign_key=key)
    sigs = SignatureRegistry.default()
    from xamm_data.hub import snapshot

    sigs.add(SignatureRegistry(snapshot.signatures_root()).get("dane:cpu", kind="physics"))
    push_records("org/signed", registry=sigs)
    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "b"))
    got = pull_records(
        "org/signed", registry=SignatureRegistry.default(), public_key=key.public_key()
    )
    assert [c.number for c in got.certificates] == [1, 2, 3]
    assert main(["accept", "verify", "newbox", "--public-key", str(pub)]) == 0
    # an edit made before a push is never published
    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "a"))
    _edit(CertificateRegistry.default().path("newbox", 2), verdict="pass")
    with pytest.raises(TamperedError, match="certificate@2.json: edited"):
        push_records("org/signed-2", registry=sigs)


def test_a_self_consistent_certificate_of_another_machine_is_not_used(tmp_path):
    """A file whose own hash holds, copied into another machine's folder with the index gone:
    named and never used."""
    reg = chain(tmp_path, 1)
    chain(tmp_path, 1, machine="other")
    os.remove(tmp_path / "newbox" / "index.json")
    os.remove(reg.path("newbox", 1))
    shutil.copy(reg.path("other", 1), reg.path("newbox", 1))
    assert "is a certificate of 'other'" in _problems(reg)["certificate@1.json"]
    assert reg.all("newbox") == []
