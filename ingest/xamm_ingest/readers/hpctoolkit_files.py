"""What an HPCToolkit database's files say before its metrics are read: metric names with their
units, and whether an old-format ``*.metric-db`` file is whole."""

from __future__ import annotations

import re
import struct
from pathlib import Path

from xamm_ingest.errors import IngestError
from xamm_ingest.readers.base import Source

__all__ = ["METRIC_DB_MAGIC", "check_metric_db", "declared_metrics", "split_unit"]


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
