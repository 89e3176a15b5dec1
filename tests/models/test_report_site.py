"""``xamm report`` without the public runs: certificates only (made in the test), the chain check
in the site, text from files escaped, and the folder it writes (never a user's, never half
written). The report of real runs is checked in ``compare/test_acceptance.py``.

Synthetic certificates test code paths here, never a claim about a machine."""

from __future__ import annotations

import json
import os
import random
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from certificate_world import certificate, chain

from xamm_data.cli.commands import main
from xamm_models.compare.certificates.records import CertificateRegistry, Criteria, Criterion
from xamm_models.report import markup, pages
from xamm_models.report.site import build_site

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
from report_in_browser import static_problems  # noqa: E402

HOSTILE_TEXT = "<script>alert(\"x\")</script> & <b>bold</b> 'q' </td></tr>"


class _Text(HTMLParser):
    """The tags and the text of a page, as a browser parses them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        self.tags.append(tag)

    def handle_data(self, data) -> None:
        self.text.append(data)


def parsed(text: str) -> _Text:
    p = _Text()
    p.feed(text)
    return p


def _home(tmp_path: Path, monkeypatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("XAMM_HOME", str(home))
    return home


def _xamm(*argv: str) -> int:
    return main(list(argv))


def test_a_home_of_certificates_only_gets_an_index_a_machine_page_and_a_page_per_certificate(
    tmp_path, monkeypatch, capsys
):
    home = _home(tmp_path, monkeypatch)
    chain(home / "certificates", 3)
    assert _xamm("report", "--out", str(tmp_path / "site"), "--json") == 0
    said = json.loads(capsys.readouterr().out)
    site = tmp_path / "site"
    want = ["index.html", "machines/newbox.html"] + [
        f"machines/newbox/certificate-{n}.html" for n in (1, 2, 3)
    ]
    assert sorted(said["pages"]) == sorted(want) and said["machines"] == ["newbox"]
    assert static_problems(site) == []
    data = json.loads((site / "report.json").read_text())
    certs = data["machines"][0]["certificates"]
    # the verdicts as the registry's files hold them, read here without xamm
    files = [
        json.loads(p.read_text())
        for p in sorted((home / "certificates" / "newbox").glob("certificate@*.json"))
    ]
    assert [(c["number"], c["verdict"]) for c in certs] == [
        (f["number"], f["verdict"]) for f in files
    ]
    index = parsed((site / "index.html").read_text())
    assert "3: pass" in " ".join(index.text)  # the newest certificate, third of pass/fail/pass
    page3 = " ".join(parsed((site / "machines/newbox/certificate-3.html").read_text()).text)
    prev = files[2]["previous"]  # made without `xamm accept`: no previous verdicts to set against
    assert ("the first certificate" in page3) is (prev is None)


def test_an_edited_certificate_is_never_shown_and_the_chain_problem_is(tmp_path, monkeypatch):
    home = _home(tmp_path, monkeypatch)
    reg = chain(home / "certificates", 3)
    p = reg.path("newbox", 2)
    os.chmod(p, 0o644)
    doc = json.loads(p.read_text())
    doc["verdict"] = "pass"  # was fail
    p.write_text(json.dumps(doc))
    site = build_site(tmp_path / "site")
    assert "machines/newbox/certificate-2.html" not in site.pages
    machine = " ".join(parsed((tmp_path / "site/machines/newbox.html").read_text()).text)
    assert "problem" in machine and "certificate@2.json" in machine
    assert site.data["machines"][0]["problems"]
    # the index counts the problems beside the machine
    assert ">1</td>" in (tmp_path / "site/index.html").read_text()


def test_text_from_a_certificate_reaches_the_page_as_text_never_as_markup(tmp_path, monkeypatch):
    home = _home(tmp_path, monkeypatch)
    crit = Criteria(
        name=HOSTILE_TEXT,
        criterion=[
            Criterion(id="no-slow-group", kind="slowdown", at_most=0.1, description=HOSTILE_TEXT)
        ],
    )
    c = certificate().model_copy(update={"criteria": crit})
    CertificateRegistry(home / "certificates").add(c)
    build_site(tmp_path / "site")
    page = parsed((tmp_path / "site/machines/newbox/certificate-1.html").read_text())
    assert "script" not in page.tags and "b" not in page.tags
    assert sum(t == HOSTILE_TEXT for t in page.text) == 1  # the description, whole
    assert any(HOSTILE_TEXT in t for t in page.text if t != HOSTILE_TEXT)  # the criteria's name


@pytest.mark.parametrize("seed", range(3))
def test_every_markup_function_keeps_any_text_as_text(seed):
    """Seeded: strings of markup characters, quotes and non-ASCII through every function that
    puts text on a page come back, parsed as a browser does, as the same text and no tag."""
    import polars as pl

    rng = random.Random(seed)
    alphabet = "<>&\"'/=; \n\tabc\u00e9\u2013\U0001f600"
    for _ in range(50):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
        for html_text in (
            markup.paragraph(s),
            markup.link("a.html", s),
            markup.status(s),
            markup.table(pl.DataFrame({"c": [s]})),
        ):
            p = parsed(html_text)
            assert set(p.tags) <= {
                "p",
                "a",
                "span",
                "div",
                "table",
                "thead",
                "tbody",
                "tr",
                "th",
                "td",
            }, s
            assert s in "".join(p.text), s


def test_the_out_folder_is_a_report_or_new_and_is_never_left_half_written(
    tmp_path, monkeypatch, capsys
):
    home = _home(tmp_path, monkeypatch)
    chain(home / "certificates", 1)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert _xamm("report", "--out", str(mine)) == 1
    assert "no report.json of an earlier xamm report" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    (tmp_path / "a-file").write_text("x")
    assert _xamm("report", "--out", str(tmp_path / "a-file")) == 1
    site = tmp_path / "site"
    assert _xamm("report", "--out", str(site), "--no-progress") == 0
    before = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    chain(home / "certificates", 2)  # a second certificate arrives ...

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(pages.Writer, "index", boom)  # ... and writing the new report fails
    assert _xamm("report", "--out", str(site)) == 1
    after = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    assert after == before  # the earlier report, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "home", "mine", "site"]
    monkeypatch.undo()
    monkeypatch.setenv("XAMM_HOME", str(home))
    assert _xamm("report", "--out", str(site), "--no-progress") == 0  # replaced whole
    assert (site / "machines/newbox/certificate-2.html").is_file()


@pytest.mark.parametrize(
    "name,code",
    [("../escape", 1), ("a/b", 1), ("<b>", 1), ("x" * 300, 1), ("nosuch", 1), ("newbox", 0)],
)
def test_a_machine_name_becomes_a_page_only_when_it_is_a_name_xamm_keeps(
    name, code, tmp_path, monkeypatch, capsys
):
    home = _home(tmp_path, monkeypatch)
    chain(home / "certificates", 1)
    out = tmp_path / "site"
    assert _xamm("report", "--out", str(out), "--machine", name) == code
    err = capsys.readouterr().err
    if code:
        assert err.startswith("xamm: error:") and "Traceback" not in err and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == (
        ["home", "site"] if not code else ["home"]
    )


def _key_files(tmp_path: Path, name: str):
    """An Ed25519 key pair: (private key, public PEM file)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = ed25519.Ed25519PrivateKey.generate()
    pub = tmp_path / f"{name}.pub"
    pub.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))  # fmt: skip
    return key, pub


def test_signed_certificates_say_so_and_a_key_they_were_not_signed_by_hides_them(
    tmp_path, monkeypatch
):
    home = _home(tmp_path, monkeypatch)
    key, pub = _key_files(tmp_path, "centre")
    _, other = _key_files(tmp_path, "other")
    chain(home / "certificates", 2, sign_key=key)
    assert _xamm("report", "--out", str(tmp_path / "a"), "--public-key", str(pub)) == 0
    data = json.loads((tmp_path / "a" / "report.json").read_text())
    assert [c["number"] for c in data["machines"][0]["certificates"]] == [1, 2]
    page = (tmp_path / "a" / "machines" / "newbox" / "certificate-1.html").read_text()
    assert "<td>signed</td><td>yes, by the key given</td>" in page
    assert _xamm("report", "--out", str(tmp_path / "b")) == 0  # no key: the file beside it
    page = (tmp_path / "b" / "machines" / "newbox" / "certificate-2.html").read_text()
    assert "<td>signed</td><td>yes</td>" in page
    assert _xamm("report", "--out", str(tmp_path / "c"), "--public-key", str(other)) == 0
    data = json.loads((tmp_path / "c" / "report.json").read_text())
    assert data["machines"][0]["certificates"] == [] and len(data["machines"][0]["problems"]) >= 2
