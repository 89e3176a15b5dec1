"""Errors raised by readers: each names the file, the record and what was expected."""

from __future__ import annotations

from xamm_data.errors import XammError


class IngestError(XammError, ValueError):
    """A source file could not be ingested.

    Attributes:
        path: the file.
        record: where in the file (a line, a kernel, a record), or ``None`` for the whole file.
        problem: what was wrong and what was expected.
    """

    def __init__(self, path, problem: str, record: str | None = None):
        self.path, self.problem, self.record = str(path), problem, record
        where = f" [{record}]" if record else ""
        super().__init__(f"{self.path}{where}: {problem}")

    def __reduce__(self):  # keep the fields when crossing a process boundary
        return (type(self), (self.path, self.problem, self.record))


class RecordError(IngestError):
    """One record of a source is bad; the reader drops that record and keeps the rest of the
    file."""

    def __init__(
        self, path, problem: str, record: str | None = None, field: str = "", value: object = ""
    ):
        super().__init__(path, problem, record)
        self.field, self.value = field, value

    def __reduce__(self):
        return (type(self), (self.path, self.problem, self.record, self.field, self.value))
