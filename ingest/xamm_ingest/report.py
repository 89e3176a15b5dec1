"""What an ingest run read, rejected and wrote; shared by every ``xamm-ingest`` format.

Rejections name the file and the reason; :meth:`IngestReport.grouped` folds identical reasons
(220 CSV files without a machine name print as one line), with every file still in ``--json``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import polars as pl

from xamm_data.store.store import WriteReport


@dataclass
class Rejected:
    """A source that was not ingested, and why (the reason names the file and the record).

    ``problem`` is the reason without the file's name: identical problems are grouped in summaries.
    """

    path: str
    reason: str
    problem: str = ""

    def __post_init__(self):
        if not self.problem:
            self.problem = (
                self.reason.split(": ", 1)[1]
                if self.reason.startswith(self.path + ": ")
                else self.reason
            )


def distinct(frame: pl.DataFrame, column: str) -> list:
    return (
        sorted(frame.get_column(column).unique().to_list())
        if frame.height and column in frame.columns
        else []
    )


@dataclass
class IngestReport:
    """Rows read, rejected sources, records dropped from good sources, and what the store write
    did."""

    frame: pl.DataFrame
    table: str = "benchmark_runs"
    sources_read: int = 0
    rejected: list[Rejected] = field(default_factory=list)
    dropped: list = field(default_factory=list)  # DroppedRecord
    notes: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    merged_rows: int = 0
    write: WriteReport | None = None
    # machine names resolved through a registry alias
    aliases: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict:
        """The report's counts: sources read, rejected, rows, records dropped by reason.

        Returns:
            The counts.
        """
        f = self.frame
        out = {
            "table": self.table,
            "sources_read": self.sources_read,
            "rows": f.height,
            "machines": distinct(f, "machine"),
            "rejected": len(self.rejected),
            "records_dropped": len(self.dropped),
            "rows_written": self.write.rows_written if self.write else 0,
            "machine_aliases": dict(sorted(self.aliases.items())),
        }
        if self.table == "benchmark_runs":
            out.update(
                kernels=f.get_column("kernel").n_unique() if f.height else 0,
                variants=distinct(f, "variant"),
                merged_csv_caliper_rows=self.merged_rows,
            )
        else:
            out["apps"] = distinct(f, "app")
        return out

    def grouped(self) -> list[tuple[str, list[str]]]:
        """The rejected sources grouped by problem, most frequent first.

        Returns:
            ``(problem, files)`` pairs.
        """
        groups: dict[str, list[str]] = defaultdict(list)
        for r in self.rejected:
            groups[r.problem].append(r.path)
        return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))

    def grouped_drops(self) -> list[tuple[str, list]]:
        """The dropped records grouped by the field whose rule they broke, most frequent first.

        Returns:
            ``(field, records)`` pairs.
        """
        groups: dict[str, list] = defaultdict(list)
        for d in self.dropped:
            groups[d.field].append(d)
        return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))

    def as_json(self) -> dict:
        """The report as JSON-ready data (what ``--json`` prints).

        Returns:
            The summary, with every rejected source and dropped record.
        """
        s = self.summary()
        s["rejected_files"] = [{"path": r.path, "reason": r.reason} for r in self.rejected]
        s["rejection_groups"] = [{"problem": p, "files": len(fs)} for p, fs in self.grouped()]
        s["dropped_records"] = [
            {"path": d.path, "record": d.record, "field": d.field, "value": d.value, "rule": d.rule}
            for d in self.dropped
        ]
        s["notes"] = self.notes
        s["ignored_files"] = len(self.ignored)
        return s


@dataclass
class ArchiveReport(IngestReport):
    """An ingest committed in batches: counts instead of the rows (which went to the store batch
    by batch)."""

    rows: int = 0
    apps: set[str] = field(default_factory=set)
    machines: set[str] = field(default_factory=set)
    already_stored: int = 0  # sources skipped: the table held them (same SHA-256)
    unread: int = 0  # of those, skipped by their recorded hash: unchanged since hashed, not read
    copies: int = 0  # byte-identical copies of a source read once
    commits: list[int] = field(default_factory=list)
    rows_written: int = 0
    seconds: float = 0.0

    def summary(self) -> dict:
        """The counts (see :meth:`IngestReport.summary`), with the batches committed.

        Returns:
            The counts: sources read and rejected, rows read and written, sources already stored
            (and how many of them were not read: unchanged since xamm hashed them), identical
            copies, the versions committed and the seconds taken.
        """
        out = super().summary()
        out.update(
            rows=self.rows,
            machines=sorted(self.machines),
            apps=sorted(self.apps),
            rows_written=self.rows_written,
            already_stored=self.already_stored,
            already_stored_unread=self.unread,
            identical_copies=self.copies,
            commits=self.commits,
            seconds=round(self.seconds, 3),
        )
        return out
