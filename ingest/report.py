"""What an ingest run read, rejected and wrote; shared by every ``xamm-ingest`` format."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from xamm_data.store import WriteReport


@dataclass
class Rejected:
    """A source that was not ingested, and why (the reason names the file and the record)."""

    path: str
    reason: str


def distinct(frame: pl.DataFrame, column: str) -> list:
    return sorted(frame.get_column(column).unique().to_list()) if frame.height else []


@dataclass
class Report:
    """Rows read, rejected sources, and what the store write did."""

    frame: pl.DataFrame
    sources_read: int = 0
    rejected: list[Rejected] = field(default_factory=list)
    write: WriteReport | None = None

    def summary(self) -> dict:
        return {"sources_read": self.sources_read, "rows": self.frame.height,
                "machines": distinct(self.frame, "machine"), "rejected": len(self.rejected),
                "rows_written": self.write.rows_written if self.write else 0}
