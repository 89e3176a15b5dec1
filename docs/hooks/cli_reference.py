"""MkDocs hook: the CLI reference page is every command's ``--help``, generated from the parsers at
build time (nothing is copied by hand)."""

from __future__ import annotations

import argparse
import os

MARKER = "<!-- cli-reference -->"


def _walk(parser: argparse.ArgumentParser, path: list[str]):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, [*path, name])


def cli_reference() -> str:
    """Markdown: one section per command and subcommand, its ``--help`` verbatim."""
    os.environ.setdefault("COLUMNS", "100")
    from xamm_data.cli.commands import build_parser
    from xamm_ingest.cli import build_parser as ingest_parser

    out = []
    for root in (build_parser()[0], ingest_parser()):
        for path, parser in _walk(root, [root.prog.split()[0]]):
            help_text = parser.format_help().rstrip()
            out += [f"## `{' '.join(path)}`", "", "```text", help_text, "```", ""]
    return "\n".join(out)


def on_page_markdown(markdown: str, page, config, files) -> str:
    return markdown.replace(MARKER, cli_reference()) if MARKER in markdown else markdown
