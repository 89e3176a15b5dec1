"""Seeded fuzzers for the surfaces users and Hubs write: criteria files, the user's
machine registry, an ``xamm.toml``'s ``[node]``, certificates, Hub pulls of certificates and
histories, Benchpark/Ramble workspaces, ``xamm report``'s (machine names that become pages,
certificate text that becomes HTML, the folder it replaces), the recorded hashes of unchanged
files a rerun of an ingest trusts, ``xamm run`` configs, ``xamm-ingest table`` column mappings,
an ``xamm.toml``'s own fields, the Parquet files users hand to xamm's readers, and the
``--bound`` items of an ingest's command line.

Each case mutates a valid input in one way the campaign's seeded generator picks, runs the real
code on it and judges the outcome against an **independent** oracle written here (what the input
means by its own rules, not by xamm's code):

* ``refused``: refused with a message naming the file (and the record) — right when the oracle
  says the input is bad;
* ``taken``: read and used — right when the oracle says it is good;
* ``silent``: taken although bad (or a redirect, a verdict believed) — fails the test;
* ``false alarm``: a good input refused, or an untouched certificate reported — fails the test;
* ``traceback``: any other exception — fails the test;
* ``outside``: a file written outside ``$XAMM_HOME`` and the test's own folders — fails the test.

``python tests/test_surface_fuzz.py`` writes docs/reliability-surfaces.md; the test checks the
committed page against the campaign's tally.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import random
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml
from certificate_world import certificate, chain
from conftest import FIXTURES
from reliability_report import markdown_report
from surface_oracles import NAME as NAME_OK
from surface_oracles import (
    bound_items_ok,
    comparison_of,
    criteria_ok,
    parquet_nesting_ok,
    registry_record_ok,
    run_config_ok,
    run_dir_config_ok,
    table_mapping_ok,
)

from xamm_data.errors import XammError
from xamm_data.machines import registry as machines

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "docs" / "reliability-surfaces.md"
SEED = 64
CASES = {
    "criteria": 40,
    "user registry": 40,
    "xamm.toml [node]": 30,
    "certificates": 40,
    "benchpark workspace": 20,
    "report": 24,
    "file hashes": 27,
    "run config": 52,
    "column mapping": 56,
    "xamm.toml": 42,
    "parquet files": 48,
    "--bound": 40,
}
OUTCOMES = ("taken", "refused", "silent", "false alarm", "traceback", "outside")


# -- criteria ---------------------------------------------------------------------------------

CRITERIA = """schema_version = 1
name = "fuzz"
size_ratio = {ratio}

[[criterion]]
id = "stream"
kind = "throughput"
groups = {groups}
at_least = {least}

[[criterion]]
id = "{second}"
kind = "slowdown"
groups = ["*"]
at_most = {most}
"""
NUMBERS = (
    "0.8",
    "1",
    "0",
    "-1",
    "80",
    "100",
    "1e308",
    "inf",
    "nan",
    "true",
    '"0.8"',
    "1e-300",
    "10",
    "5",
    "6",
)
GROUPS = ('["Stream"]', '["Stream", "Strem"]', '["Basic"]', '["Nope"]', "[]", '[""]')


def criteria_case(rng: random.Random, tmp: Path) -> tuple[str, str]:
    """One mutated criteria file; (its mutation, the outcome)."""
    from xamm_models.compare.certificates.records import judge, read_criteria

    kind = rng.choice(("least", "most", "ratio", "groups", "second", "bytes"))
    fields = {
        "least": "0.8",
        "most": "0.1",
        "ratio": "1.5",
        "groups": '["Stream"]',
        "second": "slow",
    }
    if kind in ("least", "most", "ratio"):
        fields[kind] = rng.choice(NUMBERS)
    elif kind == "groups":
        fields["groups"] = rng.choice(GROUPS)
    elif kind == "second":
        fields["second"] = rng.choice(("stream", "slow", "bad id!", ""))
    text = CRITERIA.format(**fields).encode()
    if kind == "bytes":
        cut = rng.randrange(len(text))
        text = text[:cut] + rng.choice((b"\xff", b"", b"\x00"))
    p = tmp / "criteria.toml"
    p.write_bytes(text)
    good = criteria_ok(text)
    try:
        crit, _ = read_criteria(p)
    except ValueError as e:
        return kind, ("refused" if str(p) in str(e) else "silent") if not good else "false alarm"
    if not good:
        return kind, "silent"
    results = judge(comparison_of(["Stream", "Basic"]), crit)
    named = {g for c in crit.criterion for g in c.groups}
    unjudged = {r.group for r in results if r.verdict == "not judged"}
    missing = {g for g in named if g != "*" and g not in ("Stream", "Basic")}
    return kind, "taken" if missing <= unjudged else "silent"


# -- the user's machine registry and xamm.toml [node] -----------------------------------------

VALUES = (
    ("cores_per_node", ("64", "true", "6.5", '"64"', "0", "-2")),
    ("memory_bandwidth_gbs", ("921.6", "nan", "inf", "-1", "0", "true", "1e300")),
    ("cpu", ('"EPYC"', "7", '"a\\nb"', '"x \\" y"')),
    ("notes", ('"line\\nline"', '"[machines.x]"', "3")),
    ("aliases", ('["nb"]', '["Dane"]', '["M1"]', '["a\\u0001b"]', '"nb"', "[1]")),
    # one processor's figures (a platform named by its processor): what specifications read
    ("processor_cores", ("64", "true", "6.5", "0", '"64"')),
    ("processor_memory_bandwidth_gbs", ("204.8", "nan", "-1", "0", "1e300")),
    ("processor_peak_gflops", ("2304", "inf", '"2304"', "0")),
)
IDS = ("newbox", "box.two", "a/b", "..", "Box", "x" * 101, "dane")


def registry_case(rng: random.Random, home: Path) -> tuple[str, str]:
    """One mutated ``$XAMM_HOME/machines.toml``; the registry must still load, every record it
    takes must be valid, every bad one must be named in a warning, no alias may redirect."""
    import logging

    mid = rng.choice(IDS)
    field, values = rng.choice(VALUES)
    value = rng.choice(values)
    text = f'[machines."{mid}"]\nsource = "fuzz"\n{field} = {value}\n'.encode()
    kind = f"{field}"
    if rng.random() < 0.15:
        text, kind = text[: rng.randrange(len(text))] + b"\xff[", "bytes"
    path = machines.user_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text)
    machines.reload()
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    log = logging.getLogger("xamm_data.machines.registry")
    log.addHandler(handler)
    try:
        ids = machines.list_machines()
        quartz = machines.get("M1").id  # a shipped alias resolves as shipped, whatever the file
    finally:
        log.removeHandler(handler)
    said = " ".join(r.getMessage() for r in records)
    ok = registry_record_ok(text, mid)
    if quartz != "quartz" or machines.get("Dane").id != "dane":
        return kind, "silent"
    if ok is None:  # the file itself is no TOML: ignored, named
        return kind, "refused" if str(path) in said else "silent"
    taken = mid in ids and (mid != "dane" or machines.get("dane").origin != "shipped")
    shadows = value == '["M1"]' or (value == '["Dane"]' and mid != "dane")
    if ok and field == "aliases" and shadows:
        return kind, "refused" if "already a name of" in said else "silent"
    if ok:
        return kind, "taken" if taken else "false alarm"
    return kind, "refused" if (str(path) in said and not taken) else "silent"


def node_case(rng: random.Random, tmp: Path) -> tuple[str, str]:
    """One ``xamm.toml`` with a mutated ``[node]``: refused naming the file, or taken when valid."""
    field, values = rng.choice(VALUES[:4])
    value = rng.choice(values)
    p = tmp / "xamm.toml"
    p.write_text(f'machine = "newbox"\n[node]\n{field} = {value}\n')
    ok = registry_record_ok(
        f'[machines.newbox]\nsource = "x"\n{field} = {value}\n'.encode(), "newbox"
    )
    return field, _xamm_toml_outcome(p, ok)


def _xamm_toml_outcome(p: Path, ok: bool) -> str:
    """How ``xamm-ingest`` read the ``xamm.toml`` ``p`` the oracle calls good (``ok``) or bad."""
    from xamm_ingest.errors import IngestError
    from xamm_ingest.machine_names import forget_node_facts, load_config

    try:
        load_config(p)
    except IngestError as e:
        return ("refused" if str(p) in str(e) else "silent") if not ok else "false alarm"
    finally:
        forget_node_facts()
    return "taken" if ok else "silent"


# -- xamm.toml's own fields ----------------------------------------------------------------------

RUN_DIR_LINES = {
    "machine": ('"quartz"', '"Quartz"', '"new box"', '""', '"  "', '"a/b"', '"../x"', "5", '"!!"'),
    "compiler": ('"gcc 12"', '""', '" "', "12"),
    "compiler_flags": ('"-O3 -march=native"', '""', "[]"),
    "omp_max_threads": ("4", "0", "true", "2.5", '"4"', "-1"),
    "device": ('"cpu"', '"gpu"', '"GPU"', '""'),
    "unknown field": ('machin = "quartz"', "threads = 4"),
    "metadata": (
        '[metadata]\nvariant = ["impl"]',
        '[metadata]\nvariant = [""]',
        '[metadata]\nvariant = "impl"',
        '[metadata]\nvarient = ["impl"]',
        '[metadata]\nvalues = {variant = {a = "x"}}',
        '[metadata]\nvalues = {varient = {a = "x"}}',
        '[metadata]\nvalues = {variant = {" " = "x"}}',
        "[metadata]\nranks = [1]",
    ),
}
RUN_DIR_MUTATIONS = tuple(RUN_DIR_LINES)
_RUN_DIR_CYCLE = itertools.cycle(RUN_DIR_MUTATIONS)


def run_dir_case(rng: random.Random, tmp: Path) -> tuple[str, str]:
    """One ``xamm.toml`` beside runs with one top-level field given another value (or an unknown
    field added): refused naming the file, or taken when valid."""
    kind = next(_RUN_DIR_CYCLE)  # every field in turn, its value drawn by the seeded generator
    value = rng.choice(RUN_DIR_LINES[kind])
    line = value if kind in ("unknown field", "metadata") else f"{kind} = {value}"
    text = (line if kind == "machine" else f'machine = "quartz"\n{line}') + "\n"
    p = tmp / "xamm.toml"
    p.write_text(text)
    return kind, _xamm_toml_outcome(p, run_dir_config_ok(text.encode()))


# -- certificates -------------------------------------------------------------------------------

CERT_MUTATIONS = (
    "edit",
    "edit and rehash",
    "delete",
    "delete the newest",
    "stray",
    "truncate",
    "reorder",
    "index edited",
)
_CYCLE = itertools.cycle(CERT_MUTATIONS)


def certificate_case(rng: random.Random, tmp: Path) -> tuple[str, str]:
    """A chain of four certificates, one mutation; every touched file must be named, no
    untouched one."""
    from xamm_models.compare.certificates.evidence import content_sha256

    reg = chain(tmp, 4)
    folder = tmp / "newbox"
    kind = next(_CYCLE)  # every mutation in turn, on a seeded certificate
    n = rng.randint(1, 4)
    p = reg.path("newbox", n)
    touched = {p.name}
    if kind in ("edit", "edit and rehash"):
        os.chmod(p, 0o644)
        doc = json.loads(p.read_text())
        was = doc["verdict"]
        doc[rng.choice(("verdict", "previous", "created", "family"))] = rng.choice(
            ("pass", "fail", 7, "x")
        )
        doc["verdict"] = "fail" if was == "pass" else "pass"  # always a real change
        if kind == "edit and rehash":
            doc["sha256"] = content_sha256(doc)
        p.write_text(json.dumps(doc))
    elif kind == "delete":
        p.unlink()
    elif kind == "delete the newest":
        reg.path("newbox", 4).unlink()
        touched = {"certificate@4.json"}
    elif kind == "stray":
        name = rng.choice(
            ("certificate@x.json", "certificate@2.bak.json", "notes.txt", "certificate@01.json")
        )
        (folder / name).write_text("{}")
        touched = {name}
    elif kind == "truncate":
        os.chmod(p, 0o644)
        p.write_bytes(p.read_bytes()[: rng.randrange(1, 200)])
    elif kind == "reorder":
        m = n % 4 + 1
        q = reg.path("newbox", m)
        a, b = p.read_bytes(), q.read_bytes()
        os.chmod(p, 0o644), os.chmod(q, 0o644)
        p.write_bytes(b), q.write_bytes(a)
        touched = {p.name, q.name}
    else:  # the index says another hash for n: the index is named, where the certificate after
        # n vouches for n; the newest has none, and is named itself
        idx = folder / "index.json"
        doc = json.loads(idx.read_text())
        doc["certificates"][str(n)] = "0" * 64
        idx.write_text(json.dumps(doc))
        touched = {p.name} if n == 4 else {"index.json"}
    named = {x.path.name for x in reg.verify("newbox").problems}
    if not touched <= named:
        return kind, "silent"
    if named - touched:
        return kind, "false alarm"
    lost = {t for t in touched if t.startswith("certificate@") and kind != "stray"}
    if len(reg.verify("newbox").good) != 4 - len(lost):
        return kind, "false alarm"
    return kind, "refused"


def _writer(root: str, k: int) -> None:
    from xamm_models.compare.certificates.records import CertificateRegistry

    reg = CertificateRegistry(root)
    for _ in range(k):
        reg.add(certificate())


def concurrent_case(tmp: Path) -> tuple[str, str]:
    """Four processes adding five certificates each: numbers 1..20, a chain with no problem."""
    import multiprocessing

    from xamm_models.compare.certificates.records import CertificateRegistry

    ctx = multiprocessing.get_context("fork")  # no tokio runtime is involved in certificates
    procs = [ctx.Process(target=_writer, args=(str(tmp), 5)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    report = CertificateRegistry(tmp).verify("newbox")
    ok = sorted(report.good) == list(range(1, 21)) and not report.problems
    return "concurrent", "taken" if ok else "false alarm"


# -- Benchpark workspaces -----------------------------------------------------------------------

WORKSPACE_MUTATIONS = (
    "results a list",
    "results a string",
    "experiments a mapping",
    "an experiment a number",
    "names missing",
    "variables a list",
    "not UTF-8",
    "nested 10^5 deep",
    "a link to /dev/zero",
    "65 MiB of results",
    "a run linked from outside",
    "an experiment linked from outside",
    "an include outside",
    "an absolute include",
)


def workspace_case(kind: str, tmp: Path) -> tuple[str, str]:
    """A good workspace and a mutated one under one root: the mutated one refused naming its
    file, the good one's rows read."""
    from ramble_writer import write_workspace

    from xamm_ingest.api import read_sources

    cali = sorted((FIXTURES / "rajaperf_sample").rglob("*.cali"))[:1]
    root = tmp / "root"
    write_workspace(root / "a-good", cali)  # read first: the bad one's copy of the file is a
    ws = write_workspace(root / "b-bad", cali)  # copy, and its refusals are what is judged
    outside = tmp / "outside"
    outside.mkdir()
    res = ws / "results.latest.json"
    doc = json.loads(res.read_text())
    bad_file = _mutate_workspace(kind, ws, res, doc, outside, cali[0])
    got = read_sources("benchpark", [root], workers=1)
    good = {str(p) for p in (root / "a-good").rglob("*.cali")}
    sources = set(got.frame.get_column("source_path").unique()) if got.frame.height else set()
    named = [r for r in got.rejected if bad_file in r.reason or bad_file in r.path]
    if not any("good" in s for s in sources) or not good:
        return kind, "false alarm"
    return kind, "refused" if named else "silent"


def _mutate_workspace(kind, ws: Path, res: Path, doc: dict, outside: Path, cali: Path) -> str:
    """Apply one mutation; the file whose name the refusal must carry."""
    target = res.resolve()
    write = {
        "results a list": [doc],
        "results a string": "results",
        "experiments a mapping": {**doc, "experiments": {"a": 1}},
        "an experiment a number": {**doc, "experiments": [1]},
        "names missing": {**doc, "experiments": [{"name": "x"}]},
        "variables a list": {
            **doc,
            "experiments": [{**doc["experiments"][0], "RAMBLE_VARIABLES": [1, 2]}],
        },
    }
    if kind in write:
        target.write_text(json.dumps(write[kind]))
    elif kind == "not UTF-8":
        target.write_bytes(b'{"experiments": "\xff"}')
    elif kind == "nested 10^5 deep":
        target.write_text("[" * 100_000 + "]" * 100_000)
    elif kind == "a link to /dev/zero":
        res.unlink()
        res.symlink_to("/dev/zero")
    elif kind == "65 MiB of results":
        with open(target, "r+b") as f:
            f.truncate(65 * 2**20)
    elif kind == "a run linked from outside":
        exp = next((ws / "experiments").glob("*/*/*"))
        shutil.copy(cali, outside / "stolen.cali")
        (exp / "linked.cali").symlink_to(outside / "stolen.cali")
        return "linked.cali"
    elif kind == "an experiment linked from outside":
        (outside / "exp").mkdir()
        shutil.copy(cali, outside / "exp" / cali.name)
        (ws / "experiments" / "raja-perf" / "suite" / "elsewhere").symlink_to(outside / "exp")
        return "elsewhere"
    else:
        inc = str(outside / "x.yaml") if kind == "an absolute include" else "../../../../x.yaml"
        (outside / "x.yaml").write_text("modifiers: []\n")
        cfg = ws / "configs" / "ramble.yaml"
        cfg.write_text(
            cfg.read_text().replace(
                "  - ./configs/modifier.yaml", f"  - ./configs/modifier.yaml\n  - {inc}"
            )
        )
        return "ramble.yaml"
    return "results.latest.json"


# -- xamm report: names that become pages, text that becomes HTML, the folder it replaces ---------

REPORT_MUTATIONS = ("machine name", "certificate text", "edited certificate", "out folder")
NAME_PIECES = (
    "newbox",
    "a",
    "0",
    ".",
    "..",
    "/",
    "-",
    "_",
    "B",
    "<b>",
    "%2e",
    " ",
    "\u00e9",
    "x" * 60,
)
TEXT_PIECES = ("<script>alert(1)</script>", "</td></tr>", "&amp;", '"', "'", "<img src=x>",
               "plain", "\u2013", "<!--", "]]>", "<b>")  # fmt: skip
#: the tags a report page is made of; any other one came from a file's text
PAGE_TAGS = {"html", "head", "meta", "title", "link", "body", "header", "main", "h1", "h2", "h3",
             "p", "a", "span", "div", "table", "thead", "tbody", "tr", "th", "td", "ul", "li",
             "figure", "img", "figcaption"}  # fmt: skip


def _page_text(path: Path) -> tuple[set[str], str]:
    """The tags of a page and its text, parsed as a browser does (independent of xamm)."""
    from html.parser import HTMLParser

    class P(HTMLParser):
        tags: set[str] = set()
        text: list[str] = []

        def handle_starttag(self, tag, attrs):
            self.tags.add(tag)

        def handle_data(self, data):
            self.text.append(data)

    p = P()
    p.tags, p.text = set(), []
    p.feed(path.read_text())
    return p.tags, "".join(p.text)


def _report(out: Path, *extra: str) -> tuple[int, str]:
    """``xamm report --out OUT ...``: its exit code and what it wrote to stderr."""
    import contextlib
    import io

    from xamm_data.cli.commands import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(["report", "--out", str(out), "--no-progress", *extra])
        except SystemExit as e:  # a usage error: argparse's exit
            code = e.code
    return code, err.getvalue()


def report_case(rng: random.Random, tmp: Path) -> tuple[str, str]:
    """A home of certificates and one mutation of what ``xamm report`` turns into pages."""
    from xamm_models.compare.certificates.records import CertificateRegistry, Criteria, Criterion

    kind = REPORT_MUTATIONS[rng.randrange(len(REPORT_MUTATIONS))]
    home = Path(os.environ["XAMM_HOME"])
    reg = chain(home / "certificates", 2)
    out = tmp / "site"
    if kind == "machine name":
        name = "".join(rng.choice(NAME_PIECES) for _ in range(rng.randint(1, 3)))
        good = bool(NAME_OK.match(name)) and len(name) <= 100
        if good:
            chain(home / "certificates", 1, machine=name)
        # one argument, as a user writes a name that starts with "-": the name reaches xamm's
        # own check, not argparse's (which takes "--machine -a" for two options)
        code, err = _report(out, f"--machine={name}")
        if not good:
            # a blank name is no name: a usage error (exit 2); any other, bad input (exit 1)
            said = (
                (code == 2 and "argument --machine: expected text" in err)
                if not name.strip()
                else (code == 1 and err.startswith("xamm: error:"))
            )
            return kind, "refused" if said and not out.exists() else "silent"
        written = code == 0 and (out / "machines" / f"{name}.html").is_file()
        return kind, "taken" if written else "false alarm"
    if kind == "certificate text":
        text = "".join(rng.choice(TEXT_PIECES) for _ in range(rng.randint(1, 4)))
        one = Criterion(id="no-slow-group", kind="slowdown", at_most=0.1, description=text)
        crit = Criteria(name="fuzz", criterion=[one])
        CertificateRegistry(home / "certificates").add(
            certificate("other").model_copy(update={"criteria": crit})
        )
        if _report(out)[0] != 0:
            return kind, "false alarm"
        tags, shown = _page_text(out / "machines" / "other" / "certificate-1.html")
        return kind, "taken" if tags <= PAGE_TAGS and text in shown else "silent"
    if kind == "edited certificate":
        p = reg.path("newbox", rng.randint(1, 2))
        os.chmod(p, 0o644)
        doc = json.loads(p.read_text())
        doc["verdict"] = "fail" if doc["verdict"] == "pass" else "pass"
        p.write_text(json.dumps(doc))
        code, _ = _report(out)
        n = p.stem.split("@")[1]
        shown = (out / "machines" / "newbox" / f"certificate-{n}.html").exists()
        _, page = _page_text(out / "machines" / "newbox.html") if code == 0 else (set(), "")
        return kind, "refused" if code == 0 and not shown and p.name in page else "silent"
    # the out folder: someone's folder, a file, a report.json that is not a report's, an earlier
    # report (the one case it may replace)
    how = rng.choice(("folder", "file", "fake mark", "earlier report"))
    if how == "earlier report":
        _report(out)
    elif how == "file":
        out.write_text("mine")
    else:
        out.mkdir()
        (out / ("report.json" if how == "fake mark" else "notes.txt")).write_text('{"mine": 1}')
    before = {p: p.read_bytes() for p in [out, *out.rglob("*")] if p.is_file()}
    code, err = _report(out)
    if how == "earlier report":
        return kind, "taken" if code == 0 and (out / "index.html").is_file() else "false alarm"
    after = {p: p.read_bytes() for p in [out, *out.rglob("*")] if p.is_file()}
    kept = after == before and str(out) in err
    return kind, "refused" if code == 1 and kept else "silent"


# -- the recorded hashes of unchanged files ---------------------------------------------------

HASH_MUTATIONS = (
    "flip a byte",
    "truncate",
    "header",
    "another hash for a key",
    "junk records",
    "swap records",
    "empty",
    "a directory",
    "not ours",
)


def _hash_records(data: bytes) -> list[bytes]:
    """The oracle's parse of ``$XAMM_HOME/ingest/file-hashes.bin`` by its documented layout: a
    header line, then 32-byte records (16 bytes of key, 16 of hash); a torn tail is no record."""
    from xamm_ingest.pipeline.file_hashes import MAGIC

    if not data.startswith(MAGIC):
        return []
    body = data[len(MAGIC) :]
    return [body[i : i + 32] for i in range(0, len(body) - len(body) % 32, 32)]


def _trusted(records: list[bytes]) -> set[bytes]:
    """The records a reader may believe: a key recorded with two hashes is believed for none."""
    hashes: dict[bytes, set[bytes]] = {}
    for r in records:
        hashes.setdefault(r[:16], set()).add(r[16:])
    return {r for r in records if len(hashes[r[:16]]) == 1}


def _mutate_hashes(kind: str, path: Path, rng: random.Random) -> None:
    from xamm_ingest.pipeline.file_hashes import MAGIC

    data = path.read_bytes()
    body = bytearray(data[len(MAGIC) :])
    if kind == "flip a byte":
        body[rng.randrange(len(body))] ^= 1 << rng.randrange(8)
    elif kind == "truncate":
        body = body[: rng.randrange(len(body))]
    elif kind == "header":
        data = bytes([data[0] ^ 0x20]) + data[1:]
    elif kind == "another hash for a key":
        r = rng.randrange(len(body) // 32) * 32
        body += body[r : r + 16] + bytes(rng.randrange(256) for _ in range(16))
    elif kind == "junk records":
        body += bytes(rng.randrange(256) for _ in range(32 * rng.randint(1, 4) + rng.randrange(8)))
    elif kind == "swap records":
        r = [body[i : i + 32] for i in range(0, len(body), 32)]
        rng.shuffle(r)
        body = bytearray(b"".join(r))
    if kind == "a directory":
        path.unlink()
        path.mkdir()
        return
    out = {"empty": b"", "not ours": b"sha256 of my files\n" + bytes(body)}.get(kind)
    path.write_bytes(out if out is not None else data[: len(MAGIC)] + bytes(body))


def hashes_case(rng: random.Random, tmp: Path) -> tuple[str, str]:
    """An archive ingested, its records file damaged one way and one file changed in place (same
    size, its modification time put back): a rerun must read exactly the changed file and every
    file whose record the damage touched, commit only the change, and believe no damaged
    record."""
    from cali_writer import write_cali

    from xamm_ingest import ingest_archive
    from xamm_ingest.pipeline import commit, stages
    from xamm_ingest.pipeline import file_hashes as fh
    from xamm_ingest.readers.profile_common import SampleSpec

    kind = HASH_MUTATIONS[rng.randrange(len(HASH_MUTATIONS))]
    time_ = "inclusive#sum#time.duration"
    files = [
        write_cali(tmp / "runs" / f"p{i}.cali", [(["main"], {time_: 1.0 + i})], {"cluster": "c"},
                   units={time_: "sec"})
        for i in range(6)
    ]  # fmt: skip
    spec, racy, reads = SampleSpec(app="sort", machine="m"), fh.RACY_S, []
    real = commit.hash_file

    def counted(path, *a, **kw):  # every way the pipeline reads a file to hash it
        reads.append(os.path.basename(path))
        return real(path, *a, **kw)

    def run():
        return ingest_archive("caliper", tmp / "runs", store=tmp / "s", spec=spec, batch_files=2,
                              workers=1)  # fmt: skip

    fh.RACY_S = 0.0
    try:
        run()
        path = Path(os.environ["XAMM_HOME"]) / fh.FILE
        before = _trusted(_hash_records(path.read_bytes()))
        _mutate_hashes(kind, path, rng)
        after = _trusted(_hash_records(path.read_bytes())) if path.is_file() else set()
        j = rng.randrange(len(files))
        changed, st = files[j], files[j].stat()
        changed.write_bytes(
            changed.read_bytes().replace(b"data=%d.000000" % (j + 1), b"data=%d.500000" % (j + 1))
        )
        os.utime(changed, ns=(st.st_atime_ns, st.st_mtime_ns))
        commit.hash_file = stages.hash_file = counted
        rep = run()
    finally:
        fh.RACY_S, commit.hash_file, stages.hash_file = racy, real, real
    kept = {r[:16] for r in before & after}  # the keys a reader may still believe
    expected = {changed.name} | {f.name for f in files if _key(f) not in kept}
    if (rep.rows_written, rep.already_stored) != (1, 5) or not expected <= set(reads):
        return kind, "silent"
    if set(reads) != expected or len(reads) != len(expected):
        return kind, "false alarm"
    return kind, "taken" if before <= after else "refused"


def _key(f: Path) -> bytes:
    """``f``'s key by the documented rule: BLAKE2b-128 of its absolute path and ``stat`` fields
    joined by NUL."""
    import hashlib

    st = f.stat()
    fields = (f.absolute(), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return hashlib.blake2b("\0".join(map(str, fields)).encode(), digest_size=16).digest()


# -- hostile Hub pulls -------------------------------------------------------------------------


def hub_case(case: str, tmp: Path) -> tuple[str, str]:
    """A repo lying in one way (certificate_world.HOSTILE), pulled into an empty home: refused
    naming the repo, nothing registered."""
    from certificate_world import chain, hostile_files, publish
    from cryptography.hazmat.primitives.asymmetric import ed25519

    from xamm_models.compare.hub import pull_records
    from xamm_models.machines.signatures import SignatureRegistry

    made = chain(tmp / "made", 3)
    repo = f"org/fuzz-{case}-{tmp.name}"
    publish(repo, hostile_files(case, made), tmp)
    key = ed25519.Ed25519PrivateKey.generate().public_key() if case == "unsigned" else None
    home = Path(os.environ["XAMM_HOME"])
    try:
        pull_records(repo, registry=SignatureRegistry.default(), public_key=key)
    except XammError as e:
        named = repo in str(e) and not list(home.rglob("*.json"))
        return case, "refused" if named else "silent"
    return case, "silent"


# -- xamm run configs ---------------------------------------------------------------------------

RUN_CONFIG = {
    "func": "train",
    "machine_data_path": "store",
    "app_train_data_path": "train.parquet",
    "output": "predictor",
    "regressor": "catboost",
    "embedder": "attention",
    "aggregation": "l2",
    "epochs": "5",
    "seed": "0",
    "log_target": "true",
    "features": "[f_a, f_b]",
}
RUN_VALUES = {
    "func": ("amm", "test", "tarin", "''", "[train]", "null"),
    "machine_data_path": ("''", "' '", "null", "5", "other", "[a]"),
    "app_train_data_path": ("''", "null", "x.parquet", "{a: 1}"),
    "output": ("''", "'  '", "null", "out", "7"),
    "regressor": ("catbost", "XGBoost", "random_forest", "''", "5", "null"),
    "embedder": ("atention", "vae", "MLP", "''", "[attention]"),
    "aggregation": ("mean", "L2", "max", "''"),
    "epochs": ("1", "0", "-3", "true", "2.5", "'5'", "1e3", "null"),
    "seed": ("-1", "true", "1.5", "'0'", "99999999999999999999"),
    "log_target": ("false", "1", "'yes'", "null"),
    "features": ("[]", "['']", "[f_a, f_a]", "[f_c]", "f_a", "null", "[1]"),
}


RUN_MUTATIONS = (*RUN_VALUES, "left out", "unknown field")
_RUN_CYCLE = itertools.cycle(RUN_MUTATIONS)


def run_config_case(rng: random.Random, tmp: Path) -> tuple[str, str]:
    """One mutated ``xamm run`` config: a field given another value, left out, or one unknown
    field added; read by ``load_config``."""
    from xamm_models.predictors.paper.pipeline import ConfigError, load_config

    fields = dict(RUN_CONFIG)
    kind = next(_RUN_CYCLE)  # every mutation in turn, its value drawn by the seeded generator
    if kind == "left out":
        fields.pop(rng.choice(sorted(fields)))
    elif kind == "unknown field":
        fields[rng.choice(("epoch", "bogus", "Func"))] = "1"
    else:
        fields[kind] = rng.choice(RUN_VALUES[kind])
    text = "".join(f"{k}: {v}\n" for k, v in fields.items()).encode()
    p = tmp / "run.yml"
    p.write_bytes(text)
    good = run_config_ok(text)
    try:
        cfg = load_config(p)
    except ConfigError as e:
        return kind, ("refused" if str(p) in str(e) else "silent") if not good else "false alarm"
    if not good:
        return kind, "silent"
    # what was read is what the file says (paths made relative to its folder)
    doc = yaml.safe_load(text)
    same = cfg.epochs == doc.get("epochs", 200) and cfg.output == (
        None if doc.get("output") is None else tmp / doc["output"]
    )
    return kind, "taken" if same else "silent"


# -- xamm-ingest table mappings -----------------------------------------------------------------

TABLE_CSV = "application,system,time_ms,nthreads,size,br,notes\nKripke,quartz,1500,4,32,100,a\n"
MAPPING_LINES = {
    "params": ('["size"]', '["size", "size"]', '["nosuch"]', "[]", '"size"', "[1]"),
    "ignore": ('["notes"]', '["nosuch"]', "3"),
    "columns": (
        'app = "application"', 'app = "nosuch"', 'runtime = "time_ms"', 'app = ""',
        'device = "system"', 'threads = "size"',
    ),
    "units": ('runtime_s = "ms"', 'runtime_s = "MS"', 'runtime_s = "fortnight"',
              'runtime_s = ""', "runtime_s = 5", 'threads = "ms"'),
    "counters": ('br = "branches"', 'br = "PAPI_TOT_INS"', 'br = "tot_ins"', 'br = "bogus"',
                 'nosuch = "branches"'),
    "defaults": ('device = "cpu"', "threads = 2.5", "threads = true", 'threads = "4"',
                 "threads = 0", "gpus = 0", "ranks = 8", "trial = -1", "runtime_s = 5",
                 'device = " "', "bogus = 1", 'machine = "dane"'),
}  # fmt: skip
MAPPING_MUTATIONS = (*MAPPING_LINES, "left out", "bytes")
_MAPPING_CYCLE = itertools.cycle(MAPPING_MUTATIONS)


def _mapping_text(parts: dict[str, list[str]]) -> str:
    top = "".join(f"{k} = {parts[k][0]}\n" for k in ("params", "ignore") if parts.get(k))
    tables = [k for k in ("columns", "units", "counters", "defaults") if parts.get(k)]
    return top + "".join(f"[{k}]\n" + "".join(f"{line}\n" for line in parts[k]) for k in tables)


def mapping_case(rng: random.Random, tmp: Path) -> tuple[str, str]:
    """One mutated column mapping for ``xamm-ingest table``: a line given another value or added,
    a section left out, or the file cut; read with a one-row table."""
    from xamm_ingest import IngestError, read_profiles

    parts = {
        "params": ['["size"]'],
        "ignore": ['["notes"]'],
        "columns": ['app = "application"', 'machine = "system"', 'runtime_s = "time_ms"'],
        "units": ['runtime_s = "ms"'],
        "counters": ['br = "branches"'],
        "defaults": ['device = "cpu"'],
    }
    kind = next(_MAPPING_CYCLE)  # every mutation in turn, its value drawn by the seeded generator
    if kind == "left out":
        parts.pop(rng.choice(sorted(parts)))
    elif kind in ("params", "ignore"):
        parts[kind] = [rng.choice(MAPPING_LINES[kind])]
    elif kind != "bytes":
        parts[kind] = [*parts[kind], rng.choice(MAPPING_LINES[kind])]
    text = _mapping_text(parts).encode()
    if kind == "bytes":
        text = text[: rng.randrange(len(text))] + rng.choice((b"\xff", b"", b"\x00", b"["))
    csv, mapping = tmp / "runs.csv", tmp / "mapping.toml"
    csv.write_text(TABLE_CSV)
    mapping.write_bytes(text)
    good = table_mapping_ok(text, TABLE_CSV.split("\n")[0].split(","))
    try:
        rep = read_profiles("table", csv, mapping=mapping)
    except IngestError as e:
        named = str(mapping) in str(e)
        return kind, ("refused" if named else "silent") if not good else "false alarm"
    if rep.rejected:  # the table refused for what the mapping says: named with the mapping
        named = all(mapping.name in r.reason for r in rep.rejected)
        return kind, ("refused" if named else "silent") if not good else "false alarm"
    return kind, ("taken" if rep.frame.height == 1 else "silent") if good else "silent"


# -- Parquet files users hand over ---------------------------------------------------------------

PARQUET_DEPTHS = (1, 2, 4, 8, 63, 64, 65, 100, 101, 400, 100_000)
PARQUET_DAMAGE = ("none", "none", "none", "a footer byte flipped", "footer cut", "length wrong")
PARQUET_READERS = (
    "xamm-ingest table",
    "xamm predict's regions table",
    "a profiles file",
    "a run config's samples",
)
_PARQUET_CYCLE = itertools.cycle(PARQUET_READERS)


def _damaged(data: bytes, damage: str, rng: random.Random) -> bytes:
    b = bytearray(data)
    n = int.from_bytes(b[-8:-4], "little")
    if damage == "a footer byte flipped":
        b[rng.randrange(len(b) - 8 - n, len(b) - 8)] ^= 1 << rng.randrange(8)
    elif damage == "footer cut":
        del b[len(b) - 8 - rng.randrange(1, n) : len(b) - 8]
    elif damage == "length wrong":
        b[-8:-4] = rng.choice((0, n + 1, n - 1, 2**31)).to_bytes(4, "little")
    return bytes(b)


def parquet_case(rng: random.Random, tmp: Path) -> tuple[str, str]:
    """One Parquet file written from the format's definition (tests/parquet_footer_writer.py): a
    schema of a seeded depth, its fields in either order, a leaf's ``logicalType`` nesting Thrift
    structures or not, perhaps damaged; handed to one reader of a user's Parquet file in turn."""
    from parquet_footer_writer import chain, parquet_file

    from xamm_data.store.parquet_depth import ParquetDepthError
    from xamm_ingest import read_profiles
    from xamm_ingest.readers.table_regions import read_table_regions
    from xamm_models.profile_input import read_profiles_file
    from xamm_models.stored import load_app_samples

    depth, damage = rng.choice(PARQUET_DEPTHS), rng.choice(PARQUET_DAMAGE)
    schema = chain(depth, logical_nesting=rng.choice((0, 0, 3, 100_000)))
    data = _damaged(parquet_file(schema, metadata_first=rng.random() < 0.5), damage, rng)
    path = tmp / "given.parquet"
    path.write_bytes(data)
    reader = next(_PARQUET_CYCLE)
    good = parquet_nesting_ok(data)
    try:
        if reader == "xamm-ingest table":
            (tmp / "map.toml").write_text('[columns]\napp = "a"\nmachine = "m"\nruntime_s = "t"\n')
            said = [
                r.reason for r in read_profiles("table", path, mapping=tmp / "map.toml").rejected
            ]
        else:
            {
                "xamm predict's regions table": read_table_regions,
                "a profiles file": read_profiles_file,
                "a run config's samples": load_app_samples,
            }[reader](path)
            said = []
    except (ValueError, ParquetDepthError) as e:
        said = [str(e)]
    deep = any("nests" in m or "not the FileMetaData" in m for m in said)
    named = bool(said) and all(str(path) in m for m in said)
    kind = f"{reader}: {damage}"
    if good is False:
        return kind, "refused" if deep and named else "silent"
    if good is True:  # past the depth gate: what its columns make of it is the reader's to say
        return kind, "false alarm" if deep else "taken"
    return kind, "refused" if said and named else ("taken" if not said else "silent")


# -- --bound ------------------------------------------------------------------------------------

BOUND_NAMES = ("min_time_per_rep_s", "max_time_per_rep_s", "max_problem_size", "min_runtime_s",
               "max_runtime_s", " max_bytes_per_rep ", "max_time", "nonsense", "")  # fmt: skip
BOUND_VALUES = ("1", "1e-12", "1e6", "0", "-1", "nan", "inf", "-inf", "1e400", "abc", "", " 5 ",
                "1_000", "0x10", "True", "1e5", "2e-10", "=3")  # fmt: skip
BOUND_MUTATIONS = ("one item", "two items", "a name twice", "no '='")
_BOUND_CYCLE = itertools.cycle(BOUND_MUTATIONS)


def bound_case(rng: random.Random, tmp: Path) -> tuple[str, str]:
    """``xamm-ingest rajaperf --bound ...`` with seeded items: refused as a usage error (exit 2)
    naming ``--bound``, or taken (the dry run reads the runs) when the oracle calls them valid."""
    from xamm_ingest.cli import main as ingest

    kind = next(_BOUND_CYCLE)  # every mutation in turn, its names and values seeded
    items = [f"{rng.choice(BOUND_NAMES)}={rng.choice(BOUND_VALUES)}"
             for _ in range(2 if kind == "two items" else 1)]  # fmt: skip
    if kind == "a name twice":
        items.append(items[0].split("=")[0] + "=" + rng.choice(BOUND_VALUES))
    elif kind == "no '='":
        items = [items[0].replace("=", " ", 1)]
    argv = ["rajaperf", str(FIXTURES / "rajaperf_sample" / "run-1"), "--machine", "example-node"]
    argv += [*itertools.chain.from_iterable(("--bound", b) for b in items), "--dry-run", "--quiet"]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = ingest(argv)
        except SystemExit as e:
            code = e.code
    ok, named = bound_items_ok(items), "--bound" in err.getvalue()
    if code == 2:  # a usage error
        return kind, "false alarm" if ok else ("refused" if named else "silent")
    # taken: the dry run read the runs, or dropped every record naming the bound that was given
    used = code == 0 or (code == 1 and "(bound" in err.getvalue())
    return kind, ("taken" if ok else "silent") if used else "traceback"


# -- the campaign --------------------------------------------------------------------------------


def _run(fn, *args) -> tuple[str, str]:
    try:
        return fn(*args)
    except (XammError, ValueError, KeyError) as e:  # an uncaught refusal is still a traceback
        return type(e).__name__, "traceback"


#: where a name that escaped would land: the folders above a case's own (a case's files stay in
#: its folder and its $XAMM_HOME, both under the campaign's temporary folder)
WATCHED = (Path("/tmp"), REPO, REPO / "tests")


def _listing() -> set[Path]:
    return {p for w in WATCHED for p in w.iterdir() if not p.name.startswith(("pytest-", "tmp"))}


def campaign(tmp: Path, monkeypatch_home) -> dict[str, Counter]:
    """Every class's seeded cases; {class: Counter of mutations and outcomes}."""
    global _CYCLE, _RUN_CYCLE, _MAPPING_CYCLE, _RUN_DIR_CYCLE, _PARQUET_CYCLE, _BOUND_CYCLE
    rng, _CYCLE = random.Random(SEED), itertools.cycle(CERT_MUTATIONS)
    _PARQUET_CYCLE = itertools.cycle(PARQUET_READERS)
    _RUN_CYCLE = itertools.cycle(RUN_MUTATIONS)
    _MAPPING_CYCLE = itertools.cycle(MAPPING_MUTATIONS)
    _RUN_DIR_CYCLE = itertools.cycle(RUN_DIR_MUTATIONS)
    _BOUND_CYCLE = itertools.cycle(BOUND_MUTATIONS)
    classes = [*CASES, "certificates, concurrent", "hub pulls"]
    tally: dict[str, Counter] = {c: Counter() for c in classes}
    runners = {
        "criteria": criteria_case,
        "user registry": registry_case,
        "xamm.toml [node]": node_case,
        "certificates": certificate_case,
        "report": report_case,
        "file hashes": hashes_case,
        "run config": run_config_case,
        "column mapping": mapping_case,
        "xamm.toml": run_dir_case,
        "parquet files": parquet_case,
        "--bound": bound_case,
    }
    for cls, fn in runners.items():
        for i in range(CASES[cls]):
            case = tmp / cls.replace(" ", "-").replace("[", "").replace("]", "") / str(i)
            case.mkdir(parents=True)
            monkeypatch_home(case / "home")
            before = _listing()
            kind, outcome = _run(fn, rng, case if cls != "user registry" else case / "home")
            if _listing() - before:
                outcome = "outside"
            tally[cls][kind] += 1
            tally[cls][outcome] += 1
    kind, outcome = _run(concurrent_case, tmp / "concurrent")
    tally["certificates, concurrent"].update([kind, outcome])
    for kind in WORKSPACE_MUTATIONS:
        case = tmp / "workspaces" / kind.replace(" ", "-").replace("/", "-")
        case.mkdir(parents=True)
        k, outcome = _run(workspace_case, kind, case)
        tally["benchpark workspace"].update([kind, outcome])
    from certificate_world import HOSTILE

    for kind in HOSTILE:
        case = tmp / "hub" / kind
        case.mkdir(parents=True)
        monkeypatch_home(case / "home")
        before = _listing()
        k, outcome = _run(hub_case, kind, case)
        tally["hub pulls"].update([kind, "outside" if _listing() - before else outcome])
    machines.reload()
    return tally


def rows(tally: dict[str, Counter]) -> list[dict]:
    out = []
    for cls, t in tally.items():
        out.append(
            {
                "class": cls,
                "mutations": ", ".join(sorted(k for k in t if k not in OUTCOMES)),
                "cases": sum(t[o] for o in OUTCOMES),
                **{o: t[o] for o in OUTCOMES},
            }
        )
    return out


INTRO = (
    "Generated by `python tests/test_surface_fuzz.py` from the seeded campaign that "
    "`tests/test_surface_fuzz.py::test_every_surface_survives_its_campaign` runs (seed "
    f"{SEED}). Each case mutates a valid input once and is judged by an oracle written in the "
    "test, independent of xamm's code: `refused` names the file (and the record) of a bad "
    "input, `taken` reads a good one; `silent` (a bad input taken, an alias that redirects, an "
    "edit not seen), `false alarm` (a good input refused, an untouched certificate reported), "
    "`traceback` and `outside` (a file written outside `$XAMM_HOME`) fail the test, so those "
    "columns are 0 whenever the suite is green. `hub pulls` are pulls from a local Hub server "
    "of repos that lie about certificates, signatures and histories (their card's checksums "
    "agree with the lies): `refused` names the repo and registers nothing. `file hashes` damages "
    "the recorded hashes of unchanged files one way and changes one file in place: `refused` is "
    "a rerun that reads exactly the changed file and every file whose record the damage touched "
    "and commits only the change (`taken`: the same, no record touched). `parquet files` hands "
    "files written from parquet-format's definition (a schema of a seeded depth, its fields in "
    "either order, perhaps damaged) to the readers of a user's Parquet file: `refused` names the "
    "file and its depth when it nests past 64 levels (or names the file where pyarrow cannot "
    "read the footer either), `taken` passes a file within the depth on to the reader, whatever "
    "its columns then make of it. `--bound` gives `xamm-ingest rajaperf` seeded plausibility "
    "bounds (names, values, repeats, a missing `=`): `refused` is a usage error naming `--bound`, "
    "`taken` a dry run that reads the runs (or drops every record, naming the bound)."
)


def render(tally: dict[str, Counter]) -> str:
    return markdown_report("Reliability: the surfaces users and Hubs write", INTRO, rows(tally))


@pytest.mark.slow
def test_every_surface_survives_its_campaign(tmp_path, monkeypatch, local_hub):
    before = set(Path("/tmp").glob("escape*"))

    def home(p: Path) -> None:
        monkeypatch.setenv("XAMM_HOME", str(p))

    tally = campaign(tmp_path, home)
    bad = {
        c: {o: t[o] for o in ("silent", "false alarm", "traceback", "outside") if t[o]}
        for c, t in tally.items()
    }
    assert not any(bad.values()), bad
    assert set(Path("/tmp").glob("escape*")) == before
    assert REPORT.read_text() == render(tally), "run `python tests/test_surface_fuzz.py`"


if __name__ == "__main__":
    import tempfile

    import huggingface_hub.constants as hf
    from hub_server import LocalHub

    sys.path.insert(0, str(Path(__file__).parent))
    with tempfile.TemporaryDirectory() as t, LocalHub() as hub:
        os.environ.update(
            HF_ENDPOINT=hub.endpoint,
            HF_TOKEN="hf_xamm_test_token",
            HF_HOME=str(Path(t) / "hf"),
            HF_HUB_DISABLE_XET="1",
        )
        hf.ENDPOINT, hf.HF_HUB_OFFLINE = hub.endpoint, False
        hf.HUGGINGFACE_CO_URL_TEMPLATE = hub.endpoint + "/{repo_id}/resolve/{revision}/{filename}"
        home = lambda p: os.environ.__setitem__("XAMM_HOME", str(p))  # noqa: E731
        REPORT.write_text(render(campaign(Path(t), home)))
    print(REPORT.read_text())
