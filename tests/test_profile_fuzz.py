"""A seeded fuzzer for the application-profile ingestors: Caliper application profiles, HPCToolkit
databases (old and new format) and flattened tables, each mutated from real inputs and checked
against an independent parse.

For every case the CLI runs with ``--json --dry-run`` and the outcome is one of:

* ``read``: every stored value equals the independent parse of the mutated input (caliperreader for
  ``.cali``; the ``csv`` module for tables; the bytes themselves for HPCToolkit files, whose
  mutations must be refused);
* ``refused``: the source or the record is named in a rejection or a dropped record.

Anything else fails: a stored value the independent parse does not give (a silent wrong value), a
value stored from an input the independent parse finds invalid (silent acceptance), a traceback, or
an exit code other than 0 or 1. The tally of every class is compared with ``docs/reliability.md``,
which ``python tests/test_profile_fuzz.py`` regenerates from the same seeded campaign.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from reliability_report import markdown_report, tally_rows
from test_ingest_fuzz import Hung, within

from xamm_data.tables.regions import SUM_RTOL
from xamm_ingest.cli import main

pytestmark = pytest.mark.data
REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "docs" / "reliability.md"
BAD_NUMBERS = ("nan", "inf", "-inf", "1e302", "1e-303", "-5", "", "0", "2.5")
# machine names a profile's `cluster` may carry: paths (refused), unknown (noted), known
CLUSTERS = ("../../../x", "a/b", "newbox-7", "quartz")
CASES = {
    "caliper-app": 40,
    "hpctoolkit-old": 8,
    "hpctoolkit-new": 8,
    "table": 24,
    "region-table": 16,
    "feature-table": 12,
    "babelstream": 40,
}
TIME = "avg#inclusive#sum#time.duration"
SUM = "sum#inclusive#sum#time.duration"
# a profile's stored runtime is the sum of its regions' exclusive times, which the region contract
# holds within SUM_RTOL of the roots' inclusive time (xamm_data.tables.regions.region_problems)
NESTING_RTOL = SUM_RTOL


def _cli(args: list[str], capsys) -> tuple[int, dict]:
    code = within(60, main, [*args, "--json", "--dry-run"])
    out = capsys.readouterr()
    assert code in (0, 1), out.err
    assert "Traceback" not in out.err and "Traceback" not in out.out
    assert out.out.strip(), f"no JSON summary (exit {code}): {out.err[-300:]}"
    return code, json.loads(out.out)


def _named(out: dict, name: str) -> bool:
    texts = [r["path"] + r["reason"] for r in out["rejected_files"]] + [
        d["path"] + d["rule"] for d in out["dropped_records"]
    ]
    texts.append(out.get("error", ""))
    return any(name in t for t in texts)


# -- Caliper application profiles
# --------------------------------------------------------------------------------
def _cali_runtime(path: Path) -> float | None:
    """The profile's runtime by caliperreader alone, as docs/decisions.md defines it: the roots'
    inclusive time, the mean over ranks (their total over ranks / ``mpi.world.size`` where the
    spot profile keeps totals, else its per-rank mean), in seconds; None where the parse fails or a
    root value is missing, not finite or implausible."""
    import caliperreader

    def parse():
        r = caliperreader.CaliperReader()
        r.read(str(path))
        return r

    try:
        r = within(5, parse)
        world = int(r.globals.get("mpi.world.size") or 0)
        attr = SUM if world and SUM in r.attributes() else TIME
        unit = r.attribute(attr).metadata().get("attribute.unit")
    except (Exception, Hung):
        return None
    roots = [
        rec
        for rec in r.records
        if isinstance(rec.get("path"), str) or len(rec.get("path") or []) == 1
    ]
    timed = [
        tuple(sorted((k, str(v)) for k, v in rec.items())) for rec in r.records if rec.get("path")
    ]
    if len(set(timed)) < len(timed):  # a record written twice: no aggregated profile holds one
        return None
    try:
        values = [float(rec[attr]) for rec in roots if rec.get("path")]
    except (KeyError, ValueError):
        return None
    if unit != "sec" or not values or not all(math.isfinite(v) for v in values):
        return None
    t = math.fsum(values) / (world if attr == SUM else 1)
    return t if 1e-9 <= t <= 1e7 else None


def _mutate_cali(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    kind = rng.choice(
        ("truncate", "flip", "number", "delete_line", "non_utf8", "nan_root", "duplicate_record")
        + ("cluster",)
    )
    if kind == "truncate":
        return kind, data[: rng.randrange(1, len(data))]
    if kind == "flip":
        i = rng.randrange(len(data))
        return kind, data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]
    if kind == "non_utf8":
        i = rng.randrange(len(data))
        return kind, data[:i] + b"\xff\xfe" + data[i:]
    lines = data.split(b"\n")
    if kind == "cluster":  # the machine the metadata names: a path, or a name no registry knows
        attr = re.search(rb"__rec=node,id=(\d+),attr=8,data=cluster,", data).group(1)
        value = rng.choice(CLUSTERS).encode()
        node = re.compile(rb"^(__rec=node,id=\d+,attr=" + attr + rb",data=)[^,]*", re.M)
        return kind, node.sub(lambda m: m.group(1) + value, data)
    if kind == "delete_line":
        del lines[rng.randrange(len(lines) - 1)]
        return kind, b"\n".join(lines)
    ctx = [i for i, ln in enumerate(lines) if ln.startswith(b"__rec=ctx") and b"data=" in ln]
    if kind == "duplicate_record":  # a record written twice (two files joined, an edit)
        i = rng.choice(ctx[1:])
        lines.insert(i + 1, lines[i])
        return kind, b"\n".join(lines)
    if kind == "nan_root":  # every statistic of the first timed record (the root's) is NaN
        i = ctx[1]
        head, _, vals = lines[i].partition(b"data=")
        lines[i] = head + b"data=" + b"=".join(b"nan" for _ in vals.split(b"="))
        return kind, b"\n".join(lines)
    i = rng.choice(ctx)
    head, _, vals = lines[i].partition(b"data=")
    parts = vals.split(b"=")
    j = rng.randrange(len(parts))
    parts[j] = rng.choice(BAD_NUMBERS).encode()
    lines[i] = head + b"data=" + b"=".join(parts)
    return kind, b"\n".join(lines)


def _caliper_case(src: Path, d: Path, rng: random.Random, capsys) -> tuple[str, str]:
    kind, data = _mutate_cali(src.read_bytes(), rng)
    f = d / "profile.cali"
    f.write_bytes(data)
    if kind == "cluster":
        return kind, _cluster_case(f, capsys)
    expected = _cali_runtime(f)
    _predict_reads(f, expected, (src, kind))
    _, out = _cli(["caliper", str(d), "--app", "fuzz", "--machine", "fuzz-node"], capsys)
    stored = out["rows"]
    if expected is None:
        assert stored == 0 or _named(out, "profile.cali"), (src, kind)
        return kind, "refused" if _named(out, "profile.cali") else "read"
    if stored == 0:
        assert _named(out, "profile.cali"), (src, kind)
        return kind, "refused"
    _caliper_values_match(f)
    return kind, "read"


def _cluster_case(f: Path, capsys) -> str:
    """The machine comes from the profile's ``cluster`` (no --machine): a name with path characters
    refuses the file by name; a name no registry knows is stored as given, with a note."""
    import caliperreader

    r = caliperreader.CaliperReader()
    r.read(str(f))
    name = str(r.globals["cluster"])
    _, out = _cli(["caliper", str(f.parent), "--app", "fuzz"], capsys)
    if "/" in name or ".." in name:
        assert out["rows"] == 0 and _named(out, "profile.cali"), (name, out)
        assert any("path or control characters" in x["reason"] for x in out["rejected_files"])
        return "refused"
    assert out["rows"] == 1, (name, out)
    noted = any("not a known machine" in n and name in n for n in out.get("notes", []))
    assert noted == (name != "quartz"), (name, out.get("notes"))
    return "read"


def _predict_reads(path: Path, expected: float | None, case) -> None:
    """``xamm predict``'s reader on the same file: the independent runtime (within the nesting
    tolerance) or a refusal naming the file; never another time."""
    from xamm_data.tables.regions import RegionProfileError
    from xamm_ingest.regions import read_regions

    try:
        got = within(10, read_regions, path).runtime_s
    except RegionProfileError as e:
        assert path.name in str(e), (case, str(e))
        return
    assert expected is not None, (case, "predict read a profile ingest's parse refuses", got)
    assert got == pytest.approx(expected, rel=NESTING_RTOL), case


def _caliper_values_match(src: Path) -> None:
    """A read case's stored runtime equals the independent parse (checked through the library, not
    the summary), and its metadata record is one the model takes unchanged."""
    from xamm_ingest import read_profiles
    from xamm_ingest.readers.caliper_regions import read_caliper_rows
    from xamm_ingest.readers.profile_common import SampleSpec

    rep = read_profiles("caliper", src, SampleSpec(app="fuzz", machine="fuzz-node"))
    expected = _cali_runtime(src)
    if rep.frame.height:
        # the metadata the ingest path holds unvalidated is what the model takes unchanged
        meta = read_caliper_rows(src).meta
        assert meta.validated().model_dump() == meta._asdict(), src
        assert expected is not None and rep.frame.get_column("runtime_s")[0] == pytest.approx(
            expected, rel=NESTING_RTOL
        ), src


# -- HPCToolkit databases
# ----------------------------------------------------------------------------------------
def _hpctoolkit_case(
    db: Path, d: Path, rng: random.Random, capsys, files: tuple[str, ...]
) -> tuple[str, str]:
    target = d / "db"
    shutil.copytree(db, target)
    name = rng.choice([f for f in sorted(p.name for p in target.iterdir()) if f.endswith(files)])
    data = (target / name).read_bytes()
    kind = rng.choice(("truncate", "flip"))
    if kind == "truncate":
        mutated = data[: rng.randrange(1, len(data))]
    else:
        i = rng.randrange(len(data))
        mutated = data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]
    (target / name).write_bytes(mutated)
    _, out = _cli(["hpctoolkit", str(target), "--app", "fuzz", "--machine", "fuzz-node"], capsys)
    if kind == "truncate":  # a cut file is never read as if whole
        assert out["rows"] == 0 and _named(out, "db"), (db, name, len(mutated))
        return kind, "refused"
    if out["rows"] == 0:
        assert _named(out, "db"), (db, name)
        return kind, "refused"
    # a flipped bit inside a value is a different measurement: nothing can tell it apart
    return kind, "read"


# -- tables
# ------------------------------------------------------------------------------------------------
TABLE_HEADER = ["application", "system", "time", "nthreads", "nranks", "PAPI_TOT_INS", "size"]
MAPPING = """params = ["size"]

[columns]
app = "application"
machine = "system"
runtime_s = "time"
threads = "nthreads"
ranks = "nranks"
"""


def _table_rows(rng: random.Random, lulesh: list[tuple[str, float]]) -> list[list[str]]:
    """Rows of real LULESH runtimes (the shared quartz profiles' roots), one per profile sampled."""
    return [
        ["LULESH", "fuzz-node", repr(t), "1", "8", str(rng.randrange(1, 10**12)), size]
        for size, t in lulesh
    ]


def _mutate_table(
    rows: list[list[str]], rng: random.Random
) -> tuple[str, list[list[str]], int | None]:
    """(kind, rows with the header first, index of the data row made invalid or None)."""
    kind = rng.choice(
        ("no_header", "non_integer_count", "negative", "absurd", "non_finite", "text")
    )
    body = [list(r) for r in rows]
    if kind == "no_header":
        return kind, body, None
    i = rng.randrange(len(body))
    col = {"non_integer_count": 3, "text": rng.choice((2, 3, 4))}.get(kind, rng.choice((2, 5)))
    body[i][col] = {
        "non_integer_count": rng.choice(("2.5", "0.5", "7.25")),
        "negative": "-3",
        "absurd": rng.choice(("1e302", "1e-303")),
        "non_finite": rng.choice(("nan", "inf", "-inf")),
        "text": "fast",
    }[kind]
    if kind == "absurd" and col == 5:  # an absurd count is still a count
        body[i][col] = "-1e302"
    return kind, [TABLE_HEADER, *body], i


def _table_case(lulesh, d: Path, rng: random.Random, capsys) -> tuple[str, str]:
    kind, rows, bad = _mutate_table(_table_rows(rng, lulesh), rng)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    (d / "t.csv").write_text(buf.getvalue())
    (d / "m.toml").write_text(MAPPING)
    code, out = _cli(["table", str(d / "t.csv"), "--mapping", str(d / "m.toml")], capsys)
    n = len(rows) - 1
    if kind == "no_header":  # the first data row became the header: the mapped columns are missing
        assert out["rows"] == 0 and code == 1 and _named(out, "t.csv"), out
        return kind, "refused"
    assert out["rows"] == n - 1, (kind, out)
    assert any(dr["record"] == f"row {bad + 2}" for dr in out["dropped_records"]), (
        kind,
        out["dropped_records"],
    )
    return kind, "refused"


def _stream_logs(shared_data: Path) -> list[Path]:
    """Real BabelStream logs (UoB) with a kernel table and a device line, one in seven."""
    root = shared_data / "UoB-HPC+performance-portability" / "benchmarking"
    logs = [
        p
        for p in sorted(root.glob("*/babelstream/**/*"))
        if p.is_file()
        and re.search(STREAM_ROW.pattern, t := p.read_text(errors="replace"), re.M)
        and re.search(r"^Function", t, re.M)
        and re.search(r"^Using \S+ device \S", t, re.M)
    ]
    return logs[::7]


def _lulesh(shared_data: Path, k: int) -> list[tuple[str, float]]:
    files = sorted((shared_data / "LLNL+thicket-tutorial" / "data" / "lulesh").glob("**/*.cali"))[
        :: max(1, 150 // k)
    ][:k]
    return [(f.stem, _cali_runtime(f)) for f in files]


# -- xamm predict's tables: regions, and feature rows
# --------------------------------------------------------------------------------------------
def _region_rows(cali: Path) -> list[dict]:
    """A real profile's regions as a user would export them (region, parent, times)."""
    from xamm_ingest.regions import read_regions

    cols = ("region", "parent", "inclusive_s", "exclusive_s")
    return [{c: r[c] for c in cols} for r in read_regions(cali).regions.to_dicts()]


def _region_table_case(cali: Path, d: Path, rng: random.Random) -> tuple[str, str]:
    """One cell of a region table made bad: predict reads the independent sum of exclusive times
    or refuses naming the file."""
    from xamm_data.tables.regions import RegionProfileError
    from xamm_ingest.regions import read_regions

    rows = _region_rows(cali)
    i, col = rng.randrange(len(rows)), rng.choice(("inclusive_s", "exclusive_s"))
    bad = rng.choice(BAD_NUMBERS)
    rows[i][col] = bad
    f = d / "regions.csv"
    with f.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows({k: ("" if v is None else v) for k, v in r.items()} for r in rows)
    # the independent reading: every time finite, >= 0 and within the bounds, exclusive within
    # inclusive, and the exclusive times add up to the roots' inclusive times
    parsed = list(csv.DictReader(f.open()))
    ex = [float(r["exclusive_s"]) if r["exclusive_s"] else math.nan for r in parsed]
    inc = [float(r["inclusive_s"]) if r["inclusive_s"] else None for r in parsed]
    ok = all(math.isfinite(x) and 0 <= x <= 1e7 for x in ex) and all(
        x is None or (math.isfinite(x) and 0 <= x <= 1e7) for x in inc
    )
    root_inc = [x for x, r in zip(inc, parsed) if not r["parent"]]
    roots = math.fsum(x or 0.0 for x in root_inc)
    # a root without an inclusive time (a region table may leave it out) has no sum to match
    untimed = any(x is None for x in root_inc)
    ok = ok and (untimed or abs(math.fsum(ex) - roots) <= NESTING_RTOL * roots + 1e-6 * len(ex))
    kind = f"region {bad or 'empty'}"
    try:
        got = read_regions(f).runtime_s
    except RegionProfileError as e:
        assert f.name in str(e), (kind, str(e))
        return kind, "refused"
    assert ok, (kind, "a region table the independent reading refuses was predicted", got)
    assert got == pytest.approx(math.fsum(ex), rel=1e-9), kind
    return kind, "read"


def _feature_rows() -> pl.DataFrame:
    """quartz's RAJAPerf kernels from the embedded snapshot, as the default predictor's rows."""
    from xamm_data.hub import snapshot
    from xamm_models.benchmark.dataset import samples_from_runs

    s = samples_from_runs(snapshot.read("benchmark_runs", "quartz"))
    return s.filter(s["target"] == "quartz:cpu").head(6)


def _feature_table_case(rows, d: Path, rng: random.Random, capsys) -> tuple[str, str]:
    """One number of a feature table made bad: ``xamm predict`` predicts finite relR or refuses
    naming the file (exit 1), as the contract's bounds say (runtime_s within (0, 1e7] s)."""
    from xamm_data.cli.commands import main as xamm

    col = rng.choice(("runtime_s", "bytes_per_rep", "flops_per_rep", "f_log_s_per_iter"))
    bad = rng.choice(BAD_NUMBERS)
    i = rng.randrange(rows.height)
    vals = rows[col].cast(pl.Float64).to_list()
    vals[i] = float(bad) if bad else None
    f = d / "features.csv"
    rows.with_columns(pl.Series(col, vals, dtype=pl.Float64)).write_csv(f)
    x = vals[i]
    lo, strict = {"runtime_s": (0.0, True), "f_log_s_per_iter": (None, False)}.get(
        col, (0.0, False)
    )
    ok = x is not None and math.isfinite(x) and (lo is None or (x > lo if strict else x >= lo))
    ok = ok and not (col == "runtime_s" and x > 1e7)
    ok = ok and not (col in ("bytes_per_rep", "flops_per_rep") and 0 < x < 1)  # counts
    other = {"bytes_per_rep": "flops_per_rep", "flops_per_rep": "bytes_per_rep"}.get(col)
    ok = ok and not (other and x == 0 and rows[other][i] == 0)  # no work at all: no physics
    argv = ["predict", str(f), "--source", "quartz:cpu", "--target", "lassen:gpu", "--json"]
    code = within(60, xamm, argv)
    out = capsys.readouterr()
    assert code in (0, 1) and "Traceback" not in out.err, out.err[-500:]
    kind = f"{col} {bad or 'empty'}"
    if code == 1:
        assert f.name in out.err and len(out.err.strip().splitlines()) == 1, out.err
        assert not ok, (kind, "a valid table was refused", out.err)
        return kind.split()[0], "refused"
    assert ok, (kind, "predicted from a value outside the contract")
    relr = [r["relR"] for r in json.loads(out.out)]
    assert all(math.isfinite(r) and r > 0 for r in relr), kind
    return kind.split()[0], "read"


# -- BabelStream logs
# ------------------------------------------------------------------------------------------------
STREAM_ROW = re.compile(
    r"^(Copy|Mul|Add|Triad|Dot|Nstream)\s+(\d+\.\d{3})\s+(\d+\.\d{5})\s+(\d+\.\d{5})\s+(\d+\.\d{5})\s*$"
)
STREAM_KERNELS = {"Copy", "Mul", "Add", "Triad", "Dot", "Nstream"}


def _stream_truth(text: str) -> tuple[Counter, int]:
    """(the kernel lines BabelStream could have printed, as (kernel, min, average); how many
    records the file's runs must account for), by a parse of its own: a line as main.cpp prints
    it (std::fixed: 3 and 5 decimals), min <= average <= max, not cut by the file's end; a table
    holds Copy..Dot (five lines) or Nstream (one), and a table with none is one record."""
    lines = text.split("\n")
    good: Counter = Counter()
    tables: list[set[str]] = []
    for no, line in enumerate(lines):
        cut = no == len(lines) - 1 and not text.endswith("\n")
        if line.startswith("Function"):
            tables.append(set())
            continue
        word = line.split()[0] if line.split() else ""
        if word in STREAM_KERNELS and tables:
            tables[-1].add(word)
        m = STREAM_ROW.match(line)
        if m and not cut:
            lo, hi, avg = (float(m.group(i)) for i in (3, 4, 5))
            if lo - 0.5e-5 <= avg <= hi + 0.5e-5:
                good[(m.group(1), lo, avg)] += 1
    owed = sum((1 if "Nstream" in t else 5) if t else 1 for t in tables)
    return good, owed


def _mutate_stream(text: str, rng: random.Random) -> tuple[str, str]:
    kind = rng.choice(("truncate", "flip", "delete_line", "number", "average"))
    if kind == "truncate":
        return kind, text[: rng.randrange(1, len(text))]
    if kind == "flip":
        i = rng.randrange(len(text))
        return kind, text[:i] + chr(ord(text[i]) ^ (1 << rng.randrange(6))) + text[i + 1 :]
    lines = text.split("\n")
    rows = [i for i, ln in enumerate(lines) if STREAM_ROW.match(ln)]
    i = rng.choice(rows)
    if kind == "delete_line":
        del lines[i]
        return kind, "\n".join(lines)
    parts = lines[i].split()
    if kind == "average":  # an average of 0, or ten times the max
        parts[4] = rng.choice(("0.00000", f"{float(parts[3]) * 10:.5f}"))
    else:
        parts[rng.randrange(1, 5)] = rng.choice(BAD_NUMBERS) or "x"
    lines[i] = "  ".join(parts)
    return kind, "\n".join(lines)


def _babelstream_case(src: Path, d: Path, rng: random.Random, capsys) -> tuple[str, str]:
    """A mutated real log: every stored kernel line is one the independent parse accepts, and every
    kernel a table should hold is stored or named (a dropped record, or the file refused)."""
    from xamm_ingest import read_babelstream

    original = src.read_text(errors="replace")
    if rng.random() < 0.15:  # two devices' logs under one --machine
        kind = "two_devices"
        (d / "a.out").write_text(original)
        dev = re.search(r"^Using (\S+) device (.*)$", original, re.M)
        # another device of the same kind (its name keeps the words that say CPU or GPU)
        other = original.replace(dev.group(0), f"{dev.group(0)} X2", 1)
        (d / "b.out").write_text(other)
    else:
        kind, text = _mutate_stream(original, rng)
        (d / "a.out").write_text(text)
    _, out = _cli(["babelstream", str(d), "--machine", "fuzz-node", "--device", "gpu"], capsys)
    rep = read_babelstream(d, machine="fuzz-node", device="gpu", workers=1)
    if kind == "two_devices":
        assert rep.frame.height == 0 and len(rep.rejected) == 2, rep.rejected
        assert all(re.search(r"name 2 (cpu|gpu) devices", r.reason) for r in rep.rejected)
        return kind, "refused"
    good, owed = _stream_truth((d / "a.out").read_text(errors="replace"))
    f = rep.frame
    stored = Counter(
        (k.removeprefix("Stream_").capitalize(), lo, avg)
        for k, lo, avg in zip(f["kernel"], f["time_per_rep_min_s"], f["time_per_rep_s"])
    )
    assert not stored - good, (src, kind, "stored a line the independent parse refuses")
    if rep.rejected:
        return kind, "refused"
    named = len(rep.dropped)
    # every kernel line a table owes is stored or named; an empty table is one named record
    assert f.height + named >= owed, (src, kind, "kernel lines lost without a word", owed)
    return kind, "refused" if named else "read"


# -- the campaign
# ------------------------------------------------------------------------------------------------
def campaign(shared_data: Path, tmp: Path, capsys, seed: int = 20261124) -> list[dict]:
    """Run every case of every class; one row per class: cases, silent wrong values, tracebacks,
    refusals."""
    rng = random.Random(seed)
    base = shared_data / "LLNL+thicket-tutorial" / "data"
    cali = (
        sorted((base / "parallel-sorting").glob("**/*.cali"))[::997]
        + sorted((base / "lulesh").glob("**/*.cali"))[::37]
    )
    old = [
        shared_data / "LLNL+hatchet" / "hatchet" / "tests" / "data" / f"hpctoolkit-{n}-database"
        for n in ("cpi", "allgather")
    ]
    new = sorted(
        p.parent
        for p in (shared_data / "HPCToolkit+hpcviewer.e4" / "tests" / "resources" / "metadb").glob(
            "*/meta.db"
        )
    )
    lulesh = _lulesh(shared_data, 6)
    streams = _stream_logs(shared_data)
    features = _feature_rows()
    tally: dict[str, Counter] = {c: Counter() for c in CASES}
    for cls, n in CASES.items():
        for i in range(n):
            d = tmp / f"{cls}-{i}"
            d.mkdir(parents=True)
            if cls == "caliper-app":
                kind, outcome = _caliper_case(rng.choice(cali), d, rng, capsys)
            elif cls == "hpctoolkit-old":
                kind, outcome = _hpctoolkit_case(rng.choice(old), d, rng, capsys, (".metric-db",))
            elif cls == "hpctoolkit-new":
                kind, outcome = _hpctoolkit_case(
                    rng.choice(new), d, rng, capsys, ("meta.db", "profile.db")
                )
            elif cls == "table":
                kind, outcome = _table_case(lulesh, d, rng, capsys)
            elif cls == "region-table":
                kind, outcome = _region_table_case(rng.choice(cali), d, rng)
            elif cls == "feature-table":
                kind, outcome = _feature_table_case(features, d, rng, capsys)
            else:
                kind, outcome = _babelstream_case(rng.choice(streams), d, rng, capsys)
            tally[cls][kind] += 1
            tally[cls][outcome] += 1
    return tally_rows(tally)


def render(rows: list[dict]) -> str:
    return markdown_report(
        "Reliability: mutated real inputs",
        "Generated by `python tests/test_profile_fuzz.py` from the "
        "seeded campaign that "
        "`tests/test_profile_fuzz.py::test_mutated_profiles_are_read_as_parsed_or_refused_by_name` "
        "runs (a case with a "
        "silent wrong value or a traceback fails that test, so both "
        "columns are 0 whenever the suite is green).\n"
        "The RAJAPerf ingestors have their own in "
        "[reliability-rajaperf](reliability-rajaperf.md); the store's "
        "log has its own "
        "in [reliability-log](reliability-log.md), "
        "the Hub's pulls in [reliability-hub](reliability-hub.md), the surfaces users and Hubs "
        "write (criteria, the machine registry, certificates, Benchpark workspaces, what "
        "`xamm report` turns into pages, `xamm run` configs, `xamm-ingest table` column "
        "mappings, an `xamm.toml`'s fields) in "
        "[reliability-surfaces](reliability-surfaces.md). Value and type mutations these "
        "oracles do not reach (other JSON types in Caliper's json-split, text in RAJAPerf's "
        "kernel table, numbers past the largest double, infinities of both signs in one metric) "
        "are held by `tests/test_value_fuzz.py` to one rule: refused or dropped by name, never "
        "as an input xamm did not expect. A Parquet file whose schema nests deeper than polars' "
        "reader survives (it ends the process some hundreds of levels down), or whose footer "
        "nests Thrift structures past parquet-format's, is refused by name before polars opens "
        "it, wherever one is read: a table ingested or predicted from, a run config's data, a "
        "Hub pull, a store's data file (`tests/data/test_parquet_depth.py`).",
        rows,
    )


def test_mutated_profiles_are_read_as_parsed_or_refused_by_name(shared_data, tmp_path, capsys):
    rows = campaign(shared_data, tmp_path, capsys)
    assert REPORT.read_text() == render(rows), (
        "docs/reliability.md is stale: run python tests/test_profile_fuzz.py"
    )


def test_a_read_caliper_profile_stores_the_independent_runtime(shared_data):
    """Unmutated real files: the stored runtime is the roots' mean inclusive time to the printed
    digits (6 decimals of each rank's value)."""
    from xamm_ingest import read_profiles
    from xamm_ingest.readers.profile_common import SampleSpec

    base = shared_data / "LLNL+thicket-tutorial" / "data"
    for f in (
        sorted((base / "parallel-sorting").glob("**/*.cali"))[::1500]
        + sorted((base / "lulesh").glob("**/*.cali"))[::50]
    ):
        rep = read_profiles("caliper", f, SampleSpec(app="fuzz", machine="fuzz-node"))
        stored = rep.frame.get_column("runtime_s")[0]
        assert stored == pytest.approx(_cali_runtime(f), rel=1e-5, abs=1e-5), f


if __name__ == "__main__":  # regenerate docs/reliability.md
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from conftest import shared_data_dir
    from reliability_report import run_captured

    with tempfile.TemporaryDirectory() as t:
        REPORT.write_text(render(run_captured(campaign, shared_data_dir(), Path(t))))
    print(REPORT.read_text())
