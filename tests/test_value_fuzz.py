"""A seeded campaign of value and type mutations on real inputs, holding one rule: bad input is
refused or dropped naming the file, never as "an input xamm did not expect" and never with a
traceback.

Where ``test_profile_fuzz.py`` and ``test_ingest_fuzz.py`` judge stored values against independent
parses, this campaign reaches what they do not mutate: a value of another JSON type in Caliper's
json-split (a list, an object, a number where a column name goes), text where RAJAPerf's kernel
table has numbers, numbers past the largest double (``1e400``), infinities of both signs in one
metric, damaged HPCToolkit databases, and cells of another kind in mapped tables.
"""

from __future__ import annotations

import copy
import json
import random
import re
import shutil
from pathlib import Path

import pytest
from test_ingest_fuzz import within
from test_profile_fuzz import MAPPING as TABLE_MAPPING
from test_profile_fuzz import TABLE_HEADER

from xamm_ingest.cli import main

pytestmark = pytest.mark.data
UNNAMED = "did not expect"
TEXT_VALUES = ("n/a", "", "nan", "inf", "-inf", "-1", "1e400", "-1e400", "0", "abc", "1e308")
CSV_VALUES = (*TEXT_VALUES, "Not run", "99999999999999999999999", "1e-320")
CALI_CASES = 300
HPCTOOLKIT_CASES = 150
TABLE_CASES = 200
JSON_VALUES = ("n/a", "", None, "nan", -1, 1e308, 0, [], {}, [1, 2], True, 10**30, "1e400")


def _ingest(fmt: str, root: Path, args: list[str], capsys) -> dict:
    code = within(120, main, [fmt, str(root), *args, "--dry-run", "--json", "--workers", "1"])
    out = capsys.readouterr()
    assert code in (0, 1), out.err[-500:]
    assert "Traceback" not in out.err + out.out
    return json.loads(out.out)


def _unnamed(summary: dict) -> list[str]:
    texts = [r["reason"] for r in summary["rejected_files"]]
    texts += [json.dumps(d) for d in summary["dropped_records"]]
    return [t for t in texts if UNNAMED in t]


def _cali_values(text: str, rng: random.Random) -> str:
    """One to four record values of a ``.cali`` stream replaced."""
    lines = text.split("\n")
    ctx = [i for i, ln in enumerate(lines) if ln.startswith("__rec=ctx") and "\\" not in ln]
    for _ in range(rng.randint(1, 4)):
        i = rng.choice(ctx)
        head, _, data = lines[i].partition(",data=")
        if not data:
            continue
        values = data.split("=")
        values[rng.randrange(len(values))] = rng.choice(TEXT_VALUES)
        lines[i] = f"{head},data={'='.join(values)}"
    return "\n".join(lines)


@pytest.mark.parametrize("kind", ["rajaperf", "caliper"])
def test_cali_record_values(kind, shared_data, tmp_path, capsys):
    if kind == "rajaperf":
        # every RAJAPerf .cali set: spot profiles (ruby, the VM, dane) and the tutorial's
        src = [
            f
            for f in sorted(shared_data.rglob("*.cali"))
            if not any(part in f.parts for part in ("parallel-sorting", "lulesh", "lulesh_strong"))
        ]
        args: list[str] = []
    else:
        src = sorted((shared_data / "LLNL+thicket-tutorial/data/parallel-sorting").rglob("*.cali"))
        args = ["--app", "x", "--machine", "quartz"]
    assert src, "no .cali files in the shared data"
    for seed in range(CALI_CASES):
        rng = random.Random(seed)
        f = tmp_path / "in" / f"{seed:03d}.cali"
        f.parent.mkdir(exist_ok=True)
        f.write_text(_cali_values(rng.choice(src).read_text(), rng))
    summary = _ingest(kind, tmp_path / "in", args, capsys)
    assert summary["sources_read"] > 0
    assert _unnamed(summary) == []


def _csv_cell(run: Path, rng: random.Random) -> None:
    """One to three cells of a run's CSV files replaced."""
    files = sorted(run.glob("*.csv"))
    for _ in range(rng.randint(1, 3)):
        f = rng.choice(files)
        lines = f.read_text().split("\n")
        rows = [i for i, ln in enumerate(lines) if ln.count(",") >= 2]
        i = rng.choice(rows[1:] or rows)
        cells = lines[i].split(",")
        cells[rng.randrange(1, len(cells))] = f" {rng.choice(CSV_VALUES)} "
        lines[i] = ",".join(cells)
        f.write_text("\n".join(lines))


def test_rajaperf_csv_cells(shared_data, tmp_path, capsys):
    runs = [shared_data / "vm-rajaperf" / d for d in ("omp1", "omp2", "omp2_sizefact0.5")]
    tier = shared_data / "llnl+RAJAPerf-Benchmark/2026-FCR/data/RPBenchmark_H100_tier1"
    runs += sorted({p.parent for p in tier.rglob("*-kernel-run-data.csv")})[:4]
    for seed in range(40):
        rng = random.Random(seed)
        src = rng.choice(runs)
        dst = tmp_path / "in" / f"{seed:03d}"
        dst.mkdir(parents=True)
        for f in src.iterdir():
            if f.suffix in (".csv", ".txt"):
                shutil.copy(f, dst / f.name)
        _csv_cell(dst, rng)
    summary = _ingest("rajaperf", tmp_path / "in", ["--machine", "h100-node"], capsys)
    assert summary["sources_read"] > 0
    assert _unnamed(summary) == []


def _json_paths(o, at=()):
    yield at
    if isinstance(o, dict):
        for k, v in o.items():
            yield from _json_paths(v, (*at, k))
    elif isinstance(o, list):
        for i, v in enumerate(o[:40]):
            yield from _json_paths(v, (*at, i))


def _json_value(doc, rng: random.Random):
    """One to three values anywhere in a JSON document replaced, removed or repeated."""
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        at = rng.choice([p for p in _json_paths(doc) if p])
        parent = doc
        for key in at[:-1]:
            parent = parent[key]
        if rng.random() < 0.7:
            parent[at[-1]] = rng.choice(JSON_VALUES)
        elif isinstance(parent, dict):
            del parent[at[-1]]
        else:
            parent.insert(at[-1], copy.deepcopy(parent[at[-1]]))
    return doc


def test_caliper_json_values(shared_data, tmp_path, capsys):
    data = shared_data / "LLNL+hatchet/hatchet/tests/data"
    docs = [
        json.loads(p.read_text())
        for p in (
            data / "caliper-lulesh-json/lulesh-annotation-profile.json",
            data / "caliper-cpi-json/cpi-callpath-profile.json",
        )
    ]
    for seed in range(80):
        rng = random.Random(seed)
        f = tmp_path / "in" / f"{seed:03d}" / "profile.json"
        f.parent.mkdir(parents=True)
        f.write_text(json.dumps(_json_value(rng.choice(docs), rng)))
    args = ["--app", "x", "--machine", "quartz", "--time-unit", "usec"]
    summary = _ingest("caliper", tmp_path / "in", args, capsys)
    assert summary["sources_read"] > 0
    unnamed = _unnamed(summary)
    assert unnamed == [], [re.sub(r"\s+", " ", u)[-200:] for u in unnamed]


def _flip_or_number(db: Path, rng: random.Random) -> None:
    """One to three of a database's files changed: a bit flipped, a file cut, or a number in its
    YAML or XML replaced."""
    files = sorted(f for f in db.rglob("*") if f.is_file())
    for _ in range(rng.randint(1, 3)):
        f = rng.choice(files)
        data = bytearray(f.read_bytes())
        if not data:
            continue
        numbers = [m.span() for m in re.finditer(rb"-?\d+(\.\d+)?", data)]
        op = rng.random()
        if f.suffix in (".xml", ".yaml") and numbers and op < 0.6:
            start, end = rng.choice(numbers)
            data[start:end] = rng.choice((b"-1", b"1e400", b"nan", b"abc", b"", b"0"))
        elif op < 0.8:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        else:
            del data[rng.randrange(len(data)) :]
        f.write_bytes(bytes(data))


def test_hpctoolkit_databases(shared_data, tmp_path, capsys):
    """Old and new HPCToolkit databases, damaged: refused by name, or read, within the time a run
    takes (a pointer that closes a loop in the context tree has its own test in
    ``tests/ingest/test_regions.py``: these seeds need not build one)."""
    dbs = [p.parent for p in sorted(shared_data.rglob("meta.db"))]
    dbs += [p.parent for p in sorted(shared_data.rglob("experiment.xml"))]
    assert len(dbs) >= 6
    for seed in range(HPCTOOLKIT_CASES):
        rng = random.Random(seed)
        src = rng.choice(dbs)
        dst = tmp_path / "in" / f"{seed:03d}" / src.name
        shutil.copytree(src, dst)
        _flip_or_number(dst, rng)
    summary = _ingest("hpctoolkit", tmp_path / "in", ["--app", "x", "--machine", "quartz"], capsys)
    assert summary["sources_read"] > 0
    assert _unnamed(summary) == []


TABLE_VALUES = (*TEXT_VALUES, "0x10", "1e23", "2.5", "null", "True", "[1,2]", "x" * 300)


def _table(rng: random.Random) -> str:
    """A small table of LULESH-like rows (a code path's input, not a measurement), one to three of
    its cells or header names replaced, or a row cut or lengthened."""
    import csv
    import io

    rows = [
        [
            "LULESH",
            "quartz",
            f"{rng.uniform(0.1, 100):.4f}",
            "1",
            "8",
            str(rng.randrange(10**12)),
            "30",
        ]
        for _ in range(rng.randint(1, 5))
    ]
    head = list(TABLE_HEADER)
    for _ in range(rng.randint(1, 3)):
        op = rng.random()
        if op < 0.75:
            row = rng.choice(rows)
            row[rng.randrange(len(row))] = rng.choice(TABLE_VALUES)
        elif op < 0.85:
            head[rng.randrange(len(head))] = rng.choice(TABLE_VALUES)
        elif op < 0.95:
            row = rng.choice(rows)
            del row[rng.randrange(len(row))]
        else:
            rows.append([*rng.choice(rows), "extra"])
    out = io.StringIO()
    csv.writer(out).writerows([head, *rows])
    return out.getvalue()


def test_mapped_tables(tmp_path, capsys):
    """Tables read through a mapping: a cell of another kind (text for a counter, a count no
    integer holds) drops its row by name, the table's other rows read."""
    (tmp_path / "in").mkdir()
    for seed in range(TABLE_CASES):
        (tmp_path / "in" / f"{seed:03d}.csv").write_text(_table(random.Random(seed)))
    (tmp_path / "map.toml").write_text(TABLE_MAPPING)
    args = ["--mapping", str(tmp_path / "map.toml")]
    summary = _ingest("table", tmp_path / "in", args, capsys)
    assert summary["sources_read"] > 0
    assert _unnamed(summary) == []
