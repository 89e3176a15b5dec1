"""A seeded fuzzer: bad inputs made from real RAJAPerf files, checked against an independent parse.

Each case mutates one real file (truncation at a random offset, a flipped byte,
NaN/inf/huge/negative/ RAJAPerf's -1/empty in a numeric field, RAJAPerf's -1 ('not set') in a bytes
or flops column, a deleted line (missing metadata), a deleted header row (a timing matrix without
its Tuning row), non-UTF-8 bytes) and runs ``xamm-ingest rajaperf --json --dry-run`` on it. For
every case:

* the exit code is 0 or 1, and nothing escapes as an exception (no traceback);
* every stored value (time per rep, problem size, reps; for CSV runs also bytes per rep and the
  minimum and maximum time per rep) equals the independent parse of the mutated input
  (``caliperreader`` for ``.cali``, the ``csv`` module for RAJAPerf CSV: a run with kernel-run-data,
  and a timing-only run);
* a record the independent parse finds invalid, or finds valid but xamm did not store, is named:
  the file (``.cali``) or the run's prefix (CSV runs span several files) is in a rejection or a
  dropped record.
"""

from __future__ import annotations

import csv
import json
import math
import random
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from reliability_report import markdown_report, tally_rows

from xamm_ingest.cli import main

pytestmark = pytest.mark.data
MUTATIONS = ("truncate", "flip", "number", "delete_line", "non_utf8")
CSV_MUTATIONS = (*MUTATIONS, "delete_header", "not_set")
CSV_CLASSES = ("rajaperf-csv", "rajaperf-timing-csv")  # the two runs of the corpus, in its order
REPORT = Path(__file__).resolve().parents[1] / "docs" / "reliability-rajaperf.md"
BAD_NUMBERS = ("nan", "inf", "-inf", "1e300", "-5", "-1", "", "0")
# a kernel's row: Group_KERNEL in the first cell
DATA_ROW = re.compile(rb"^[A-Za-z]+_[A-Za-z0-9_]+ *,")
UNVERIFIABLE = "unverifiable"


def _mutate(
    data: bytes, kind: str, rng: random.Random, numeric_fields: list[tuple[int, int]]
) -> bytes:
    if kind == "truncate":
        return data[: rng.randrange(1, len(data))]
    if kind == "flip":
        i = rng.randrange(len(data))
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]
    if kind == "non_utf8":
        i = rng.randrange(len(data))
        return data[:i] + b"\xff\xfe\xc3" + data[i:]
    if kind in ("delete_line", "delete_header"):
        lines = data.split(b"\n")
        header = next((i for i, ln in enumerate(lines) if DATA_ROW.match(ln)), len(lines) - 1)
        del lines[rng.randrange(header if kind == "delete_header" and header else len(lines) - 1)]
        return b"\n".join(lines)
    if kind == "not_set" and _per_rep_cells(data):  # RAJAPerf's -1: a figure the kernel never set
        start, end = rng.choice(_per_rep_cells(data))
        return data[:start] + b"-1" + data[end:]
    start, end = rng.choice(numeric_fields)
    return data[:start] + rng.choice(BAD_NUMBERS).encode() + data[end:]


def _per_rep_cells(data: bytes) -> list[tuple[int, int]]:
    """Byte spans of the cells under a Bytes.../rep or FLOPS/rep header of a per-kernel table."""
    spans, columns, pos = [], [], 0
    for line in data.split(b"\n"):
        cells = line.split(b",")
        if cells and cells[0].strip() in (b"Kernel", b"Kernels"):
            columns = [
                i for i, c in enumerate(cells) if re.fullmatch(rb"\s*(Bytes\w*|FLOPS)/rep\s*", c)
            ]
        elif columns and DATA_ROW.match(line):
            starts = [pos + sum(len(c) + 1 for c in cells[:i]) for i in range(len(cells))]
            spans += [(starts[i], starts[i] + len(cells[i])) for i in columns if i < len(cells)]
        pos += len(line) + 1
    return spans


def _cali_numbers(data: bytes) -> list[tuple[int, int]]:
    """Byte spans of the numbers in ``__rec=ctx`` data fields."""
    spans = []
    for m in re.finditer(rb"^__rec=ctx,[^\n]*?data=([^\n]*)$", data, re.M):
        pos = m.start(1)
        for part in m.group(1).split(b"="):
            spans.append((pos, pos + len(part)))
            pos += len(part) + 1
    return spans


def _csv_numbers(data: bytes) -> list[tuple[int, int]]:
    return [
        (m.start(), m.end())
        for m in re.finditer(rb"(?<=[ ,])-?\d+(\.\d+)?(e-?\d+)?(?= *(,|$))", data, re.M)
    ]


def _valid(t, size, reps) -> bool:
    ok = all(isinstance(x, float) and math.isfinite(x) for x in (t, size, reps))
    return (
        ok
        and 1e-10 <= t <= 1e5
        and 1 <= size <= 1e12
        and size == int(size)
        and reps >= 1
        and reps == int(reps)
    )


class Hung(Exception):
    """A call that did not return in time."""


def within(seconds: int, fn, *args):
    """``fn(*args)``, or :class:`Hung` after ``seconds`` (SIGALRM: this runs in pytest's main
    thread)."""
    import signal

    def alarm(*_):
        raise Hung(f"{getattr(fn, '__name__', fn)} took over {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        return fn(*args)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def oracle_cali(path: Path) -> dict | None:
    """{kernel: {column: value} or None if invalid} from caliperreader; None if it cannot parse
    (or loops: caliperreader never returns on some corrupt streams, e.g. a node that is its own
    parent)."""
    import caliperreader

    def parse():
        r = caliperreader.CaliperReader()
        r.read(str(path))
        return r.records, r.globals

    try:
        recs, g = within(5, parse)
    except (Exception, Hung):
        return None
    cmd = str(g.get("cmdline", ""))
    m = re.search(r"--npasses,\s*([^,\]]*)", cmd)
    npasses = (
        float(m.group(1)) if m and m.group(1).strip().isdigit() else (1.0 if not m else math.nan)
    )
    out: dict = {}
    for rec in recs:
        p = rec.get("path")
        if not isinstance(p, list) or len(p) != 3 or p[0] != "RAJAPerf":
            continue
        slot = out.setdefault(p[2], {"t": [], "size": set(), "reps": set()})
        for k, v in rec.items():
            if k.endswith("inclusive#sum#time.duration") and k.startswith(("avg#", "inclusive#")):
                slot["t"].append(_f(v))
            elif k == "inclusive#sum#time.duration.ns":
                slot["t"].append(_f(v) * 1e-9)
            elif k.endswith("#ProblemSize"):
                slot["size"].add(_f(v))
            elif k.endswith("#Reps"):
                slot["reps"].add(_f(v))
    res = {}
    for kernel, s in out.items():
        if not (s["t"] or s["size"] or s["reps"]):
            res[kernel] = UNVERIFIABLE  # caliperreader lost every value of the record
            continue
        if len(s["size"]) != 1 or len(s["reps"]) != 1 or not s["t"]:
            res[kernel] = None
            continue
        size, reps = next(iter(s["size"])), next(iter(s["reps"]))
        t = math.fsum(s["t"]) / (reps * npasses) if reps and npasses else math.nan
        res[kernel] = (
            {"time_per_rep_s": t, "problem_size": size, "reps": reps}
            if _valid(t, size, reps)
            else None
        )
    return res


def _f(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _rows(path: Path) -> list[list[str]] | None:
    """The non-empty rows of a CSV file, cells stripped; None if it is not UTF-8 text or absent."""
    try:
        text = path.read_bytes().decode("utf-8")
    except (UnicodeDecodeError, OSError):
        return None
    # RAJAPerf ends lines with \n only
    lines = [ln.rstrip("\r").replace("\r", " ") for ln in text.split("\n")]
    return [[c.strip() for c in r] for r in csv.reader(lines) if r]


def _table(d: Path, prefix: str, *roles: str) -> list[list[str]] | None:
    """Header and rows of the first per-kernel table present (after the 'Kernels run ...' line)."""
    for role in roles:
        if (d / f"{prefix}-{role}.csv").exists():
            rows = _rows(d / f"{prefix}-{role}.csv")
            return rows[1:] if rows and rows[0][0].startswith("Kernels run") else rows
    return None


def _matrix(path: Path) -> dict | None:
    """{(kernel, variant, tuning): cell text} of a RAJAPerf timing matrix: a title line, a Variant
    row and a Tuning row (labelled Variant/Tuning, or Kernel/Kernel in 2023-2024 releases), then one
    row per kernel. None if the file is not such a matrix (a header row missing, a row of the wrong
    length, a column twice)."""
    rows = _rows(path)
    i = next((j for j, r in enumerate(rows or []) if r[0] in ("Variant", "Kernel")), None)
    if i is None or i + 1 >= len(rows) or rows[i + 1][0] not in ("Tuning", "Kernel"):
        return None
    columns = list(zip(rows[i][1:], rows[i + 1][1:]))
    if len(rows[i]) != len(rows[i + 1]) or len(set(columns)) != len(columns):
        return None
    out = {}
    for r in rows[i + 2 :]:
        if len(r) != len(columns) + 1:
            return None
        out.update({(r[0], v, t): cell for (v, t), cell in zip(columns, r[1:])})
    return out


def _bytes(text: str):
    """Bytes or flops per rep as stored: RAJAPerf's -1 ('not set'), empty and non-finite are null;
    False if invalid."""
    b = _f(text)
    if not text or not math.isfinite(b) or b == -1:
        return None
    return b if 0 <= b <= 1e16 else False


def _per_rep(cell: str | None, reps: float):
    """A matrix cell per rep as stored (None: not run or non-finite); False if the record is
    invalid."""
    if cell is None or cell == "Not run" or (cell and not math.isfinite(_f(cell))):
        return None
    v = _f(cell) / reps if reps else math.nan
    return v if cell and 1e-10 <= v <= 1e5 else False


def oracle_csv(d: Path, prefix: str) -> dict | None:
    """{(kernel, variant, tuning): {column: value} or None} of a RAJAPerf CSV run, from its files
    alone: the time from kernel-run-data or else timing-Average / Reps; reps and bytes from
    kernel-details (or kernels); minimum and maximum per rep from their matrices. None if a file of
    the run cannot be read."""
    det = _table(d, prefix, "kernel-details", "kernels")
    run = _table(d, prefix, "kernel-run-data")
    matrices = {
        role: _matrix(d / f"{prefix}-timing-{role}.csv")
        for role in ("Average", "Minimum", "Maximum")
        if (d / f"{prefix}-timing-{role}.csv").exists()
    }
    if (
        not det
        or len(det) < 2
        or None in matrices.values()
        or (run is None and "Average" not in matrices)
    ):
        return None
    try:
        dh = det[0]
        # a flipped header: not known
        b_col = next((c for c in ("Bytes/rep", "BytesMoved/rep") if c in dh), None)
        details = {r[0]: r for r in det[1:] if len(r) == len(dh)}
        if run is not None:
            if len(run) < 2 or any(len(r) != len(run[0]) for r in run):
                return None
            h = run[0]
            base = {
                (r[0], r[1], r[2]): (
                    _f(r[h.index("Mean time per rep (sec.)")]),
                    _f(r[h.index("Problem size")]),
                )
                for r in run[1:]
            }
        else:
            base = {
                k: (_f(c) if c else math.nan, None)
                for k, c in matrices["Average"].items()
                if c != "Not run"
            }
        out = {}
        for key, (t, size) in base.items():
            r = details.get(key[0])
            reps = _f(r[dh.index("Reps")]) if r else math.nan
            size = (
                size if size is not None else (_f(r[dh.index("Problem size")]) if r else math.nan)
            )
            t = t if run is not None else t / reps
            per_rep = [c for c in dh if re.fullmatch(r"(Bytes\w*|FLOPS)/rep", c)]
            row = {
                "time_per_rep_s": t,
                "problem_size": size,
                "reps": reps,
                "bytes_per_rep": (_bytes(r[dh.index(b_col)]) if b_col else None) if r else False,
                "flops_per_rep": (_bytes(r[dh.index("FLOPS/rep")]) if "FLOPS/rep" in dh else None)
                if r
                else False,
                "_not_set": bool(r) and any(_f(r[dh.index(c)]) == -1 for c in per_rep),
            }
            for role, col in (("Minimum", "time_per_rep_min_s"), ("Maximum", "time_per_rep_max_s")):
                row[col] = _per_rep(matrices[role].get(key), reps) if role in matrices else None
            cells = [m.get(key) for m in matrices.values()]
            ok = _valid(t, size, reps) and not any(
                v is False for c, v in row.items() if c != "_not_set"
            )
            ok = ok and "" not in cells
            ok = ok and all(
                c in (None, "Not run") or not math.isnan(_f(c)) or c.lower() == "nan" for c in cells
            )
            out[key] = row if ok else None
        return out
    except (ValueError, IndexError, ZeroDivisionError):
        return None


def _run_cli(d: Path, capsys, *extra) -> dict:
    # xamm must never hang on a corrupt input: a case over 30 s fails the test instead of stalling
    # CI
    code = within(
        30,
        main,
        ["rajaperf", str(d), "--json", "--dry-run", "--no-progress", "--workers", "1", *extra],
    )
    captured = capsys.readouterr()
    assert code in (0, 1) and "Traceback" not in captured.err
    assert json.loads(captured.out)  # always a JSON summary, with exit code 1 too
    return json.loads(captured.out)


def _named(out: dict, name: str) -> bool:
    texts = [r["path"] + r["reason"] for r in out["rejected_files"]]
    texts += [d["path"] + d["record"] + d["rule"] for d in out["dropped_records"]]
    return any(name in t for t in texts)


def _check(
    out: dict, rows: list[dict], expected: dict | None, key, name: str, case: str, original: dict
) -> str:
    """Fail on a silent wrong value or silent acceptance; else the outcome: ``refused`` (the source
    or a record is named) or ``read`` (stored as the independent parse gives). ``original``: the
    independent parse of the unmutated input, for records the parser of the mutated one lost."""
    if expected is None:  # the independent parse could not read it at all
        assert not rows or _named(out, name), case
        return "refused" if _named(out, name) else "read"
    stored = {key(r): r for r in rows}
    for k, r in stored.items():
        # the mutation sat elsewhere in that record: values are unchanged
        if expected.get(k) == UNVERIFIABLE:
            expected[k] = original[k]
        assert k in expected and expected[k] is not None, (
            f"{case}: stored {k} the independent parse rejects"
        )
        for column, value in ((c, v) for c, v in expected[k].items() if not c.startswith("_")):
            assert r[column] == (value if value is None else pytest.approx(value, rel=1e-9)), (
                f"{case}: {column}"
            )
    if any(v is None or v == UNVERIFIABLE for v in expected.values()) or set(expected) - set(
        stored
    ):
        assert _named(out, name), f"{case}: a bad or missing record, but {name} is not named"
    return "refused" if _named(out, name) else "read"


def corpus_files(shared: Path) -> tuple[list[Path], list[tuple[list[Path], str]]]:
    """The real inputs mutated: three RAJAPerf ``.cali`` files, and two CSV runs (files, prefix)."""
    thicket = shared / "LLNL+thicket" / "thicket" / "tests" / "data" / "rajaperf"
    cali = [
        next(thicket.glob("quartz/**/Base_Seq-default.cali")),
        next(thicket.glob("lassen/**/Base_CUDA-block_128.cali")),
        next((shared / "LLNL+thicket-tutorial" / "data" / "quartz").glob("**/*.cali")),
    ]
    h100 = shared / "llnl+RAJAPerf-Benchmark" / "2026-FCR" / "data" / "RPBenchmark_H100_tier1"
    prefix = "DIFFUSION3DPA_factor_1"
    with_run_data = [
        h100 / f"{prefix}-{r}.csv"
        for r in (
            "kernel-run-data",
            "kernel-details",
            "timing-Average",
            "timing-Minimum",
            "timing-Maximum",
        )
    ]
    # a 2024-era run: timing-Average (header rows both labelled Kernel) and kernels.csv, five
    # variant-tunings
    rse = shared / "rse-ops+vis-experiment"
    timing_only = [rse / "RAJAPerf-timing-Average.csv", rse / "RAJAPerf-kernels.csv"]
    return cali, [(with_run_data, prefix), (timing_only, "RAJAPerf")]


@pytest.fixture(scope="module")
def corpus(shared_data):
    return corpus_files(shared_data)


def _cases(n: int, seed: int, mutations=MUTATIONS):
    rng = random.Random(seed)
    return [(i, rng.choice(mutations), rng.randrange(1 << 30)) for i in range(n)]


def _read_rows(tmp: Path, out: dict) -> list[dict]:
    from xamm_ingest import read_rajaperf

    return (
        read_rajaperf(tmp, workers=1, machine=out.get("_machine")).frame.to_dicts()
        if out["rows"]
        else []
    )


def fuzz_cali(corpus, tmp_path, capsys, n: int, seed: int) -> dict[str, Counter]:
    """``n`` seeded cases over the ``.cali`` files; {class: Counter of mutations and outcomes}."""
    cali, _ = corpus
    tally = {"rajaperf-cali": Counter()}
    for i, kind, s in _cases(n, seed):
        rng = random.Random(s)
        src = cali[i % len(cali)]
        data = src.read_bytes()
        d = tmp_path / f"cali{i}"
        d.mkdir()
        (d / src.name).write_bytes(_mutate(data, kind, rng, _cali_numbers(data)))
        case = f"case {i} ({kind}, seed {s}) of {src.name}"
        out = _run_cli(d, capsys)
        rows = _read_rows(d, out)
        outcome = _check(
            out,
            rows,
            oracle_cali(d / src.name),
            lambda r: r["kernel"],
            src.name,
            case,
            oracle_cali(src),
        )
        tally["rajaperf-cali"].update((kind, outcome))
    return tally


def fuzz_csv(corpus, tmp_path, capsys, n: int, seed: int) -> dict[str, Counter]:
    """``n`` seeded cases over the two CSV runs in turn; {class: Counter of mutations and
    outcomes}."""
    _, runs = corpus
    tally = {c: Counter() for c in CSV_CLASSES}
    for i, kind, s in _cases(n, seed, CSV_MUTATIONS):
        rng = random.Random(s)
        files, prefix = runs[i % len(runs)]
        d = tmp_path / f"csv{i}"
        d.mkdir()
        for f in files:
            shutil.copy(f, d / f.name)
        victim = d / files[(i // len(runs)) % len(files)].name  # every file of each run in turn
        data = victim.read_bytes()
        victim.write_bytes(_mutate(data, kind, rng, _csv_numbers(data)))
        case = f"case {i} ({kind}, seed {s}) of {victim.name}"
        out = _run_cli(d, capsys, "--machine", "h100-node")
        from xamm_ingest import read_rajaperf

        rows = read_rajaperf(d, workers=1, machine="h100-node").frame.to_dicts()
        expected = oracle_csv(d, prefix)
        outcome = _check(
            out,
            rows,
            expected,
            lambda r: (r["kernel"], r["variant"], r["tuning"]),
            prefix,
            case,
            oracle_csv(files[0].parent, prefix),
        )
        if any(
            (expected or {}).get((r["kernel"], r["variant"], r["tuning"]), {}).get("_not_set")
            for r in rows
        ):
            assert any("-1 ('not set') stored as null for" in n for n in out["notes"]), case
        tally[CSV_CLASSES[i % len(runs)]].update((kind, outcome))
    return tally


def campaign(
    corpus, tmp: Path, capsys, n: int = 60, seeds: tuple[int, int] = (20261122, 20261123)
) -> list[dict]:
    """Both fuzzers; one row per class: mutations, cases, silent wrong values, tracebacks, refusals,
    reads."""
    tally = {
        **fuzz_cali(corpus, tmp, capsys, n, seeds[0]),
        **fuzz_csv(corpus, tmp, capsys, n, seeds[1]),
    }
    return tally_rows(tally)


def render(rows: list[dict]) -> str:
    return markdown_report(
        "Reliability: mutated real RAJAPerf inputs",
        "Generated by `python tests/test_ingest_fuzz.py` from the seeded "
        "cases that "
        "`tests/test_ingest_fuzz.py::"
        "test_mutated_rajaperf_inputs_are_read_as_parsed_or_refused_by_name` "
        "runs (a silent wrong value, a silent acceptance or a traceback "
        "fails that test, so both columns "
        "are 0 whenever the suite is green); a campaign of 400 cases per "
        "fuzzer runs under `slow`.\n"
        "`rajaperf-csv` is a run with kernel-run-data (H100 node), "
        "`rajaperf-timing-csv` a 2024-era run "
        "with timing matrices and kernels.csv only (rse-ops); "
        "`delete_header` removes a header row "
        "(a timing matrix without its Tuning row), `not_set` writes "
        "RAJAPerf's -1 into a bytes or "
        "flops column.",
        rows,
    )


def test_mutated_rajaperf_inputs_are_read_as_parsed_or_refused_by_name(corpus, tmp_path, capsys):
    rows = campaign(corpus, tmp_path, capsys)
    assert REPORT.read_text() == render(rows), (
        "docs/reliability-rajaperf.md is stale: run python tests/test_ingest_fuzz.py"
    )


@pytest.mark.slow
def test_fuzz_campaign(corpus, tmp_path, capsys):
    campaign(corpus, tmp_path, capsys, n=400, seeds=(1, 2))


if __name__ == "__main__":  # regenerate docs/reliability-rajaperf.md
    import sys
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from conftest import shared_data_dir
    from reliability_report import run_captured

    with tempfile.TemporaryDirectory() as t:
        REPORT.write_text(render(run_captured(campaign, corpus_files(shared_data_dir()), Path(t))))
    print(REPORT.read_text())
