"""What a command writes reaches the terminal as text, never as a command to it.

A message names what the user's files hold: file and folder names, kernel and region labels,
metadata values. Such text may carry control characters (an escape sequence sets a terminal's
title, colours or clipboard; a carriage return writes over the line before it; a bidirectional
override reorders what is shown). A console script's ``stdout`` and ``stderr`` are wrapped by
:class:`PrintableText`, which writes each such character as the escape Python writes for it
(``\\x1b``, ``\\r``, ``\\u202e``); the line feed and the tab pass. A progress bar, which moves the
cursor on purpose, writes to the stream beneath (:func:`unfiltered`). ``--json`` output is ASCII
(``json.dumps`` escapes the rest), so it passes unchanged.

The line feed passes because messages are lines; where a message puts such text on a line of its
own (a rejected file's reason, a note, an error), :func:`one_line` writes a line feed in it as
``\\n``, so a file name cannot start a line that looks like the command's own.
"""

from __future__ import annotations

import io
import sys
from typing import TextIO

__all__ = ["ESCAPES", "PrintableText", "filter_streams", "one_line", "printable", "unfiltered"]

#: control characters (C0 but the line feed and the tab, DEL, C1), the bidirectional formatting
#: characters and the line and paragraph separators, each to the escape Python writes for it
ESCAPES = {
    c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}")
    for c in (
        *range(0x20),
        0x7F,
        *range(0x80, 0xA0),
        0x061C,
        0x200E,
        0x200F,
        *range(0x202A, 0x202F),
        *range(0x2066, 0x206A),
        0x2028,
        0x2029,
    )
    if c not in (0x0A, 0x09)
} | {0x0D: "\\r"}


def printable(text: str) -> str:
    """``text`` with every character of :data:`ESCAPES` written as its escape.

    Args:
        text: what is about to be written.
    """
    return text.translate(ESCAPES)


def one_line(text: object) -> str:
    """``text`` (a message naming what a user's files hold) as one line: each line feed written
    as ``\\n`` (the other control characters are the stream's to escape).

    Args:
        text: the message, or anything ``str`` makes one of.
    """
    return str(text).replace("\n", "\\n")


class PrintableText(io.TextIOBase):
    """A text stream writing :func:`printable` text to the stream it wraps.

    Args:
        stream: the stream written to (``sys.stdout``, ``sys.stderr``).
    """

    def __init__(self, stream: TextIO):
        super().__init__()
        self.unfiltered = stream

    def write(self, s: str) -> int:
        self.unfiltered.write(s.translate(ESCAPES))
        return len(s)

    def flush(self) -> None:
        self.unfiltered.flush()

    def isatty(self) -> bool:
        return self.unfiltered.isatty()

    def fileno(self) -> int:
        return self.unfiltered.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.unfiltered.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self.unfiltered.errors

    @property
    def buffer(self):
        """The binary stream beneath (bytes are written as they are)."""
        return self.unfiltered.buffer

    def __getattr__(self, name: str):
        if name == "unfiltered":  # not set yet (a copy made without ``__init__``): no recursion
            raise AttributeError(name)
        return getattr(self.unfiltered, name)


def unfiltered(stream: TextIO) -> TextIO:
    """The stream beneath a :class:`PrintableText` (what a progress bar writes to), else
    ``stream``.

    Args:
        stream: ``sys.stdout`` or ``sys.stderr`` as they are now.
    """
    return getattr(stream, "unfiltered", stream)


def filter_streams() -> None:
    """Wrap ``sys.stdout`` and ``sys.stderr`` in :class:`PrintableText` (once; a missing stream is
    left alone). Console scripts only: a program importing xamm keeps its streams."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, PrintableText):
            setattr(sys, name, PrintableText(stream))
