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
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest
from reliability_report import markdown_report, tally_rows
from test_ingest_fuzz import Hung, within

from xamm_data.regions import SUM_RTOL
from xamm_ingest.cli import main

pytestmark = pytest.mark.data
REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "docs" / "reliability.md"
BAD_NUMBERS = ("nan", "inf", "-inf", "1e302", "1e-303", "-5", "", "0", "2.5")
CASES = {"caliper-app": 24, "hpctoolkit-old": 8, "hpctoolkit-new": 8, "table": 24}
TIME = "avg#inclusive#sum#time.duration"
SUM = "sum#inclusive#sum#time.duration"
# a profile's stored runtime is the sum of its regions' exclusive times, which the region contract
# holds within SUM_RTOL of the roots' inclusive time (xamm_data.regions.region_problems)
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
    try:
        values = [float(rec[attr]) for rec in roots if rec.get("path")]
    except (KeyError, ValueError):
        return None
    if unit != "sec" or not values or not all(math.isfinite(v) for v in values):
        return None
    t = math.fsum(values) / (world if attr == SUM else 1)
    return t if 1e-9 <= t <= 1e7 else None


def _mutate_cali(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    kind = rng.choice(("truncate", "flip", "number", "delete_line", "non_utf8"))
    if kind == "truncate":
        return kind, data[: rng.randrange(1, len(data))]
    if kind == "flip":
        i = rng.randrange(len(data))
        return kind, data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]
    if kind == "non_utf8":
        i = rng.randrange(len(data))
        return kind, data[:i] + b"\xff\xfe" + data[i:]
    lines = data.split(b"\n")
    if kind == "delete_line":
        del lines[rng.randrange(len(lines) - 1)]
        return kind, b"\n".join(lines)
    ctx = [i for i, ln in enumerate(lines) if ln.startswith(b"__rec=ctx") and b"data=" in ln]
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
    expected = _cali_runtime(f)
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


def _caliper_values_match(src: Path) -> None:
    """A read case's stored runtime equals the independent parse (checked through the library, not
    the summary)."""
    from xamm_ingest import read_profiles
    from xamm_ingest.readers.profile_common import SampleSpec

    rep = read_profiles("caliper", src, SampleSpec(app="fuzz", machine="fuzz-node"))
    expected = _cali_runtime(src)
    if rep.frame.height:
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


def _lulesh(shared_data: Path, k: int) -> list[tuple[str, float]]:
    files = sorted((shared_data / "LLNL+thicket-tutorial" / "data" / "lulesh").glob("**/*.cali"))[
        :: max(1, 150 // k)
    ][:k]
    return [(f.stem, _cali_runtime(f)) for f in files]


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
            else:
                kind, outcome = _table_case(lulesh, d, rng, capsys)
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
        "the Hub's pulls in [reliability-hub](reliability-hub.md).",
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
