"""``xamm-ingest hpctoolkit``: HPCToolkit databases (old ``experiment.xml`` or new ``meta.db``),
one ``app_profiles`` row each; and the database ``xamm predict`` reads region by region.

The row is the database as prediction reads it
(:func:`~xamm_ingest.readers.hpctoolkit_regions.read_hpctoolkit_regions`), its regions kept.
"""

from __future__ import annotations

from pathlib import Path

from xamm_data.tables.regions import LINE_BYTES, RegionProfile
from xamm_ingest import profiles
from xamm_ingest.readers import hpctoolkit
from xamm_ingest.readers.base import ReadResult
from xamm_ingest.readers.hpctoolkit_regions import read_hpctoolkit_regions
from xamm_ingest.report import Rejected
from xamm_ingest.sources import Plan, Task, ingest_root, list_files

prepare = profiles.require_spec("hpctoolkit")


def plan(paths: list[Path], opts: dict) -> Plan:
    """Every database directory at or under ``paths``; a directory that looks like one but is not
    (parts of a database, measurements without one) is refused, naming what is missing."""
    out = Plan(root=ingest_root(paths))
    list_files(paths, out)  # reports dangling links and traces
    found, refused = hpctoolkit.find_databases(paths)
    out.tasks = [Task("hpctoolkit", d, out.root) for d in found]
    out.rejected += [Rejected(str(d), f"{d}: {why}", problem=why) for d, why in refused]
    return out


def read(task: Task, opts: dict) -> ReadResult:
    """One database into one ``app_profiles`` row."""
    return hpctoolkit.read_hpctoolkit(
        profiles.task_source(task), profiles.need_spec(opts, "hpctoolkit")
    )


def read_regions(path: Path, opts: dict) -> RegionProfile:
    """The database region by region (options ``line_bytes``, ``clock_ghz``)."""
    return read_hpctoolkit_regions(
        Path(path), line_bytes=opts.get("line_bytes") or LINE_BYTES, clock_ghz=opts.get("clock_ghz")
    )
