"""HPCToolkit databases (old ``experiment.xml`` + ``*.metric-db`` and new
``meta.db``/``profile.db``), through Hatchet.

* Old format: Hatchet's ``from_hpctoolkit``; one row of metrics per CCT node and rank (and thread).
  Runtime = max over ranks/threads of the root's inclusive time; counters = sum over ranks/threads
  of the root's inclusive value. Units come from ``experiment.xml`` (``CPUTIME (usec)``).
* New format: every metric's whole-program inclusive summary values, read directly from
  ``meta.db``/``profile.db`` (:mod:`~xamm_ingest.readers.hpctoolkit_db`). Hatchet's
  ``from_hpctoolkit_latest`` reads only the time metric unless given names, renames ``cycles``,
  ``cputime`` and ``realtime`` all to ``time``, and fails on three of the six public test databases;
  the tests check the values against it where it works. Runtime = the ``max`` over profiles
  (ranks x threads) of the whole-program inclusive REALTIME/CPUTIME: the database's ``max``
  statistic, else computed from each thread's own profile; counters = ``sum`` over profiles. A
  database without a time metric (e.g. cycles only) gives no runtime.

Metric names keep their spelling; each is resolved through the canonical counter table and kept
raw in ``extra_counters`` when unknown (GPU metrics such as ``GKER (sec)``), so nothing is lost.
"""

from __future__ import annotations

import re
import struct
import warnings
from pathlib import Path

from xamm_ingest.errors import IngestError
from xamm_ingest.readers.base import ReadResult, Source
from xamm_ingest.readers.hpctoolkit_db import read_summary
from xamm_ingest.readers.profile_common import SampleSpec, profile_row

from xamm_data.units import TIME_UNITS

READER = "xamm_ingest.readers.hpctoolkit"
_TIME_NAMES = ("cputime", "realtime")


def split_unit(raw: str) -> tuple[str, str | None]:
    m = re.match(r"^(.*?)\s*\(([^)]*)\)\s*$", raw.strip())
    return (m.group(1).strip(), m.group(2).strip()) if m else (raw.strip(), None)


def read_latest(src: Source, spec: SampleSpec) -> dict:
    summary = read_summary(src.path)
    if not any(m.values for m in summary.metrics):
        raise IngestError(
            src.path / "profile.db",
            "no whole-program (execution-scope) values in the summary profile",
        )
    metrics: dict[str, float] = {}
    runtime, aggregation = None, "no time metric in the database"
    n = max(summary.n_profiles, 1)
    for m in summary.metrics:
        if "sum" not in m.values:
            continue
        base, unit = split_unit(m.name)
        if base.lower() in _TIME_NAMES:
            scale = TIME_UNITS.get((unit or "sec").lower())
            if scale is None:
                raise IngestError(
                    src.path / "meta.db",
                    f"time metric {m.name!r} has unit {unit!r}; expected sec/usec/ns",
                )
            peak = m.values.get("max", m.values.get("max_over_profiles"))
            if peak is not None:
                runtime, aggregation = (
                    peak * scale,
                    (f"max over {n} profiles (ranks x threads) of whole-program inclusive {base}"),
                )
            else:
                k = m.profiles or n
                runtime = m.values["sum"] * scale / k
                aggregation = (
                    f"mean over {k} profiles (ranks x threads) of whole-program inclusive {base}"
                )
            continue
        metrics[m.name] = m.values["sum"]
    return {"runtime_s": runtime, "aggregation": aggregation, "metrics": metrics}


METRIC_DB_MAGIC = b"HPCPROF-metricdb__"


def check_metric_db(path: Path) -> None:
    """Refuse a truncated or padded old-format ``*.metric-db``: hpcprof writes a 32-byte header (the
    magic, a version, then big-endian node and metric counts) and one 8-byte value per node and
    metric, nothing else."""
    data = path.read_bytes()
    if len(data) < 32 or not data.startswith(METRIC_DB_MAGIC):
        raise IngestError(path, "not an HPCToolkit metric-db (no 'HPCPROF-metricdb' header)")
    nodes, nmetrics = struct.unpack_from(">II", data, 24)
    want = 32 + 8 * nodes * nmetrics
    if len(data) != want:
        raise IngestError(
            path,
            f"{len(data)} bytes where its header ({nodes} nodes x {nmetrics} "
            f"metrics) says {want}: "
            f"{'truncated' if len(data) < want else 'extra bytes'}; expected "
            "the file hpcprof wrote",
        )


def declared_metrics(src: Source) -> list[str]:
    """The metric names ``experiment.xml`` declares, after checking its metric-db files."""
    xml = (src.path / "experiment.xml").read_text(encoding="utf-8", errors="replace")
    declared = re.findall(r'<Metric\s+i="\d+"\s+n="([^"]+)"', xml)
    if not declared:
        raise IngestError(
            src.path / "experiment.xml",
            "no <Metric> declarations; expected an HPCToolkit experiment.xml",
        )
    if not list(src.path.glob("*.metric-db")):
        raise IngestError(src.path, "no *.metric-db files beside experiment.xml")
    for f in sorted(src.path.glob("*.metric-db")):
        check_metric_db(f)
    return declared


def _read_old(src: Source, spec: SampleSpec) -> dict:
    try:
        # only old-format HPCToolkit databases need hatchet (about 190 MB with pandas)
        import hatchet as ht
    except ImportError:
        raise IngestError(
            src.path,
            "an old-format HPCToolkit database (experiment.xml) needs the "
            "hatchet extra: "
            "pip install 'xamm[hatchet]' (new-format databases with meta.db "
            "need nothing more)",
        ) from None

    declared = declared_metrics(src)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gf = ht.GraphFrame.from_hpctoolkit(str(src.path))
    except Exception as e:
        raise IngestError(
            src.path, f"Hatchet could not read the database ({type(e).__name__}: {e})"
        ) from None
    df = gf.dataframe.reset_index()
    root = gf.graph.roots[0]
    rows = df[df["node"] == root]
    ranks = int(df["rank"].nunique()) if "rank" in df else None
    threads = int(df["thread"].nunique()) if "thread" in df else None
    # experiment.xml names, e.g. "CPUTIME (usec):Sum (I)" -> base CPUTIME, unit usec
    units = {}
    for n in declared:
        base, unit = split_unit(re.sub(r":\w+\s*\((I|E)\)\s*$", "", n))
        units[base.lower()] = (base, unit)
    metrics: dict[str, float] = {}
    runtime, aggregation = None, "no time metric in the database"
    for col in gf.inc_metrics:
        hname = col[: -len(" (inc)")] if col.endswith(" (inc)") else col
        if hname == "time":
            base, unit = next(
                ((b, u) for k, (b, u) in units.items() if k in _TIME_NAMES), ("CPUTIME", "usec")
            )
            scale = TIME_UNITS.get((unit or "sec").lower())
            if scale is None:
                raise IngestError(
                    src.path / "experiment.xml",
                    f"time metric {base} has unit {unit!r}; expected sec/usec/ns",
                )
            runtime = float(rows[col].max()) * scale
            aggregation = (
                f"max over {ranks or 1} rank(s)"
                + (f" x {threads} thread(s)" if threads else "")
                + f" of root inclusive {base}"
            )
        else:
            base, unit = units.get(hname.lower(), (hname, None))
            metrics[f"{base} ({unit})" if unit else base] = float(rows[col].sum())
    return {"runtime_s": runtime, "aggregation": aggregation, "metrics": metrics, "ranks": ranks}


def read_hpctoolkit(src: Source, spec: SampleSpec) -> ReadResult:
    """Read one HPCToolkit database directory into one ``app_profiles`` row."""
    path = src.path
    if not path.is_dir():
        raise IngestError(path, "not a directory; expected an HPCToolkit database directory")
    if (path / "meta.db").is_file():
        got, fmt = read_latest(src, spec), "hpctoolkit-latest"
    elif (path / "experiment.xml").is_file():
        got, fmt = _read_old(src, spec), "hpctoolkit"
    else:
        raise IngestError(
            path, "neither meta.db (new format) nor experiment.xml (old format) found"
        )
    row = profile_row(
        spec,
        src,
        fmt,
        READER,
        runtime_s=got["runtime_s"],
        aggregation=got["aggregation"],
        metrics=got["metrics"],
        ranks=got.get("ranks"),
    )
    return ReadResult(rows=[row])


HPCTOOLKIT_PARTS = ("profile.db", "cct.db", "trace.db")


def find_databases(paths: list[Path]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """HPCToolkit database directories at or under ``paths``, and directories that look like one but
    are not.

    A directory with ``profile.db``/``cct.db`` but no ``meta.db``, or with measurement files
    (``*.hpcrun``) but no database, is returned with the reason, so it is reported rather than
    skipped.
    """
    out, refused = [], []
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such file or directory")
        cands = [p] + sorted(d for d in p.rglob("*") if d.is_dir()) if p.is_dir() else []
        for d in cands:
            if (d / "meta.db").is_file() or (d / "experiment.xml").is_file():
                out.append(d)
            elif parts := [n for n in HPCTOOLKIT_PARTS if (d / n).is_file()]:
                refused.append(
                    (
                        d,
                        f"an HPCToolkit database directory with {', '.join(parts)} but no "
                        "meta.db; "
                        "expected meta.db beside them (copy the whole database written "
                        "by hpcprof)",
                    )
                )
            elif any(d.glob("*.hpcrun")):
                refused.append(
                    (
                        d,
                        "an HPCToolkit measurement directory (*.hpcrun), not a database; "
                        "run "
                        "hpcprof on it first and ingest the database it writes",
                    )
                )
    return out, refused
