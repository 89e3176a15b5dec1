"""HPCToolkit databases (old ``experiment.xml`` + ``*.metric-db`` and new
``meta.db``/``profile.db``) into ``app_profiles`` rows, and finding and checking them.

A database is read once, by the reader ``xamm predict`` uses
(:mod:`~xamm_ingest.readers.hpctoolkit_regions`), and stored as read: ``runtime_s`` is the sum of
its regions' exclusive times (the mean over ranks and threads of the root's inclusive time), the
regions are kept, and every other metric's whole-program total becomes a canonical counter or stays
raw in ``extra_counters`` (GPU metrics such as ``GKER (sec)``), so nothing is lost. A database
without a time metric (e.g. cycles only) keeps its counters and gives no runtime. Hatchet's
``from_hpctoolkit_latest`` reads only the time metric unless given names, renames ``cycles``,
``cputime`` and ``realtime`` all to ``time``, and fails on three of the six public test databases;
new-format databases are read directly, and the tests check the values against Hatchet where it
works.
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

from xamm_ingest.errors import IngestError
from xamm_ingest.readers.base import ReadResult, Source
from xamm_ingest.readers.profile_common import SampleSpec, whole_program

from xamm_data.regions import RegionProfileError

READER = "xamm_ingest.readers.hpctoolkit"


def split_unit(raw: str) -> tuple[str, str | None]:
    m = re.match(r"^(.*?)\s*\(([^)]*)\)\s*$", raw.strip())
    return (m.group(1).strip(), m.group(2).strip()) if m else (raw.strip(), None)


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


def read_hpctoolkit(src: Source, spec: SampleSpec) -> ReadResult:
    """Read one HPCToolkit database directory into one ``app_profiles`` row: the database as
    ``xamm predict`` reads it, its regions kept; a database that measured no time keeps its
    counters and no runtime."""
    # the region reader imports this module's metric-db checks: imported here, at run time
    from xamm_ingest.readers.hpctoolkit_regions import read_hpctoolkit_regions

    path = src.path
    if not path.is_dir():
        raise IngestError(path, "not a directory; expected an HPCToolkit database directory")
    try:
        profile = read_hpctoolkit_regions(path, require_time=False)
    except RegionProfileError as e:
        message = str(e)
        head = f"{path}: "
        message = message[len(head) :] if message.startswith(head) else message
        raise IngestError(path, message) from None
    return ReadResult(rows=[whole_program(profile, spec, src, READER)])


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
