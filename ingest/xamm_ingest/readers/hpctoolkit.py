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

from pathlib import Path

from xamm_data.tables.regions import RegionProfileError
from xamm_ingest.errors import IngestError
from xamm_ingest.readers.base import ReadResult, Source
from xamm_ingest.readers.hpctoolkit_regions import read_hpctoolkit_regions
from xamm_ingest.readers.profile_common import SampleSpec, whole_program

READER = "xamm_ingest.readers.hpctoolkit"


def read_hpctoolkit(src: Source, spec: SampleSpec) -> ReadResult:
    """Read one HPCToolkit database directory into one ``app_profiles`` row: the database as
    ``xamm predict`` reads it, its regions kept; a database that measured no time keeps its
    counters and no runtime."""
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
