"""A seeded fuzzer: bad inputs made from real RAJAPerf files, checked against an independent parse.

Each case mutates one real file (truncation at a random offset, a flipped byte, NaN/inf/huge/negative/
empty in a numeric field, a deleted line (missing metadata), non-UTF-8 bytes) and runs
``xamm-ingest rajaperf --json --dry-run`` on it. For every case:

* the exit code is 0 or 1, and nothing escapes as an exception (no traceback);
* every stored value (time per rep, problem size, reps) equals the independent parse of the mutated
  input (``caliperreader`` for ``.cali``, the ``csv`` module for RAJAPerf CSV);
* a record the independent parse finds invalid, or finds valid but xamm did not store, is named:
  the file (``.cali``) or the run's prefix (CSV runs span several files) is in a rejection or a
  dropped record.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import re
import shutil
from pathlib import Path

import pytest

from xamm_ingest.cli import main

pytestmark = pytest.mark.data
MUTATIONS = ("truncate", "flip", "number", "delete_line", "non_utf8")
BAD_NUMBERS = ("nan", "inf", "-inf", "1e300", "-5", "", "0")
UNVERIFIABLE = "unverifiable"


def _mutate(data: bytes, kind: str, rng: random.Random, numeric_fields: list[tuple[int, int]]) -> bytes:
    if kind == "truncate":
        return data[: rng.randrange(1, len(data))]
    if kind == "flip":
        i = rng.randrange(len(data))
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]
    if kind == "non_utf8":
        i = rng.randrange(len(data))
        return data[:i] + b"\xff\xfe\xc3" + data[i:]
    if kind == "delete_line":
        lines = data.split(b"\n")
        del lines[rng.randrange(len(lines) - 1)]
        return b"\n".join(lines)
    start, end = rng.choice(numeric_fields)
    return data[:start] + rng.choice(BAD_NUMBERS).encode() + data[end:]


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
    return [(m.start(), m.end()) for m in re.finditer(rb"(?<=[ ,])-?\d+(\.\d+)?(e-?\d+)?(?= *(,|$))", data, re.M)]


def _valid(t, size, reps) -> bool:
    ok = all(isinstance(x, float) and math.isfinite(x) for x in (t, size, reps))
    return ok and 1e-10 <= t <= 1e5 and 1 <= size <= 1e12 and size == int(size) and reps >= 1 and reps == int(reps)


class Hung(Exception):
    """A call that did not return in time."""


def within(seconds: int, fn, *args):
    """``fn(*args)``, or :class:`Hung` after ``seconds`` (SIGALRM: this runs in pytest's main thread)."""
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
    """{kernel: (time per rep, size, reps) or None if invalid} from caliperreader; None if it cannot parse
    (or loops: caliperreader never returns on some corrupt streams, e.g. a node that is its own parent)."""
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
    npasses = float(m.group(1)) if m and m.group(1).strip().isdigit() else (1.0 if not m else math.nan)
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
        res[kernel] = (t, size, reps) if _valid(t, size, reps) else None
    return res


def _f(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def oracle_csv(d: Path, prefix: str) -> dict | None:
    """{(kernel, variant, tuning): (time per rep, size, reps) or None} from the run-data and details files."""
    def table(role):
        try:
            text = (d / f"{prefix}-{role}.csv").read_bytes().decode("utf-8")
        except (UnicodeDecodeError, OSError):
            return None
        rows = [[c.strip() for c in r] for r in csv.reader(io.StringIO(text)) if r]
        return rows[1:] if rows and rows[0][0].startswith("Kernels run") else rows

    run, det = table("kernel-run-data"), table("kernel-details")
    if not run or not det or len(run) < 2 or len(det) < 2:
        return None
    try:
        h, dh = run[0], det[0]
        reps = {r[0]: _f(r[dh.index("Reps")]) for r in det[1:] if len(r) == len(dh)}
        out = {}
        for r in run[1:]:
            if len(r) != len(h):
                return None
            t, size = _f(r[h.index("Mean time per rep (sec.)")]), _f(r[h.index("Problem size")])
            rp = reps.get(r[0], math.nan)
            out[(r[0], r[1], r[2])] = (t, size, rp) if _valid(t, size, rp) else None
        return out
    except (ValueError, IndexError):
        return None


def _run_cli(d: Path, capsys, *extra) -> dict:
    # xamm must never hang on a corrupt input: a case over 30 s fails the test instead of stalling CI
    code = within(30, main, ["rajaperf", str(d), "--json", "--dry-run", "--no-progress", "--workers", "1", *extra])
    captured = capsys.readouterr()
    assert code in (0, 1) and "Traceback" not in captured.err
    assert json.loads(captured.out)  # always a JSON summary, with exit code 1 too
    return json.loads(captured.out)


def _named(out: dict, name: str) -> bool:
    texts = [r["path"] + r["reason"] for r in out["rejected_files"]]
    texts += [d["path"] + d["record"] + d["rule"] for d in out["dropped_records"]]
    return any(name in t for t in texts)


def _check(out: dict, rows: list[dict], expected: dict | None, key, name: str, case: str, original: dict) -> None:
    """``original``: the independent parse of the unmutated input, for records the parser of the mutated one lost."""
    if expected is None:  # the independent parse could not read it at all
        assert not rows or _named(out, name), case
        return
    stored = {key(r): r for r in rows}
    for k, r in stored.items():
        if expected.get(k) == UNVERIFIABLE:  # the mutation sat elsewhere in that record: values are unchanged
            expected[k] = original[k]
        assert k in expected and expected[k] is not None, f"{case}: stored {k} the independent parse rejects"
        t, size, reps = expected[k]
        assert r["time_per_rep_s"] == pytest.approx(t, rel=1e-9), case
        assert r["problem_size"] == size and r["reps"] == reps, case
    if any(v is None or v == UNVERIFIABLE for v in expected.values()) or set(expected) - set(stored):
        assert _named(out, name), f"{case}: a bad or missing record, but {name} is not named"


@pytest.fixture(scope="module")
def corpus(rajaperf_sets):
    cali = [next(rajaperf_sets["thicket"].glob("quartz/**/Base_Seq-default.cali")),
            next(rajaperf_sets["thicket"].glob("lassen/**/Base_CUDA-block_128.cali")),
            next(rajaperf_sets["tutorial_quartz"].glob("**/*.cali"))]
    run = rajaperf_sets["h100_tier1"]
    prefix = "DIFFUSION3DPA_factor_1"
    csv_files = [run / f"{prefix}-{r}.csv" for r in ("kernel-run-data", "kernel-details", "timing-Average",
                                                      "timing-Minimum", "timing-Maximum")]
    return cali, csv_files, prefix


def _cases(n: int, seed: int):
    rng = random.Random(seed)
    return [(i, rng.choice(MUTATIONS), rng.randrange(1 << 30)) for i in range(n)]


def _read_rows(tmp: Path, out: dict) -> list[dict]:
    from xamm_ingest import read_rajaperf

    return read_rajaperf(tmp, workers=1, machine=out.get("_machine")).frame.to_dicts() if out["rows"] else []


def fuzz_cali(corpus, tmp_path, capsys, n: int, seed: int):
    cali, _, _ = corpus
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
        _check(out, rows, oracle_cali(d / src.name), lambda r: r["kernel"], src.name, case, oracle_cali(src))


def fuzz_csv(corpus, tmp_path, capsys, n: int, seed: int):
    _, files, prefix = corpus
    for i, kind, s in _cases(n, seed):
        rng = random.Random(s)
        d = tmp_path / f"csv{i}"
        d.mkdir()
        for f in files:
            shutil.copy(f, d / f.name)
        victim = d / files[i % 2].name  # run-data or details
        data = victim.read_bytes()
        victim.write_bytes(_mutate(data, kind, rng, _csv_numbers(data)))
        case = f"case {i} ({kind}, seed {s}) of {victim.name}"
        out = _run_cli(d, capsys, "--machine", "h100-node")
        from xamm_ingest import read_rajaperf

        rows = read_rajaperf(d, workers=1, machine="h100-node").frame.to_dicts()
        _check(out, rows, oracle_csv(d, prefix), lambda r: (r["kernel"], r["variant"], r["tuning"]), prefix, case,
               oracle_csv(files[0].parent, prefix))


def test_fuzz_caliper_files(corpus, tmp_path, capsys):
    fuzz_cali(corpus, tmp_path, capsys, n=60, seed=20261122)


def test_fuzz_rajaperf_csv_runs(corpus, tmp_path, capsys):
    fuzz_csv(corpus, tmp_path, capsys, n=60, seed=20261123)


@pytest.mark.slow
def test_fuzz_campaign(corpus, tmp_path, capsys):
    fuzz_cali(corpus, tmp_path, capsys, n=400, seed=1)
    fuzz_csv(corpus, tmp_path, capsys, n=400, seed=2)
