"""The command lines: examples in every leaf --help, --json listings, -v/-q, completion, a closed
pipe."""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import unicodedata
from collections import Counter

import pytest
from conftest import FIXTURES

from xamm_data import load_dataset
from xamm_data.cli.commands import build_parser
from xamm_data.cli.commands import main as xamm
from xamm_data.store.store import CorruptDataError
from xamm_ingest.cli import build_parser as ingest_parser
from xamm_ingest.cli import main as ingest


def leaves(parser: argparse.ArgumentParser, path=()):
    """(command path, parser) of every leaf subcommand."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, p in subs[0].choices.items():
        yield from leaves(p, (*path, name))


def test_every_leaf_help_shows_an_example():
    found = list(leaves(build_parser()[0], ("xamm",))) + list(
        leaves(ingest_parser(), ("xamm-ingest",))
    )
    # datasets x3, schemas, ingest, amm x6, run, predict, eval, 4 ingest formats
    assert len(found) >= 17
    missing = [
        " ".join(path)
        for path, p in found
        if path[-1] != "ingest" and "examples:" not in (p.epilog or "")
    ]
    assert missing == []


@pytest.fixture
def store(tmp_path):
    s = tmp_path / "store"
    assert (
        ingest(
            [
                "rajaperf",
                str(FIXTURES / "rajaperf_sample"),
                "--store",
                str(s),
                "--no-progress",
                "-q",
            ]
        )
        == 0
    )
    return s


def test_datasets_listing_and_summary_as_json(store, capsys):
    capsys.readouterr()
    assert xamm(["datasets", "list", "example*", "--json", "--store", str(store)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["example-node"] and rows[0][
        "local_benchmark_runs_rows"
    ] == 10
    assert xamm(["datasets", "show", "example-node", "--json", "--store", str(store)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [(r["device"], r["rows"], r["kernels"]) for r in summary] == [("cpu", 10, 3)]


def test_amm_list_as_json(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "home"))
    assert xamm(["amm", "list", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    latest = {r["target"]: r["latest"] for r in rows}
    # nothing built under XAMM_HOME: the embedded snapshot's signatures, the registry's other
    # machines without one
    assert latest["quartz:cpu"] == "quartz:cpu@1" and latest["lassen:gpu"] == "lassen:gpu@1"
    assert latest["corona:cpu"] == "no signature yet"


def test_verbose_logs_what_the_pipeline_did(caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="xamm_ingest"):
        assert (
            ingest(
                ["rajaperf", str(FIXTURES / "rajaperf_sample"), "--dry-run", "--no-progress", "-v"]
            )
            == 0
        )
    assert any("3 source(s) to read" in r.getMessage() for r in caplog.records)


def test_shell_completion_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as e:
        xamm(["--print-completion", "bash"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and "datasets" in out and "ingest" in out and "amm" in out


@pytest.mark.parametrize("entry", ["sys.exit(main(", "console_script(lambda: main("])
def test_a_closed_pipe_exits_quietly(store, entry):
    code = (
        "import sys\nfrom xamm_data.cli.commands import main\n"
        "from xamm_data.cli.tools import console_script\n"
        f"{entry}['datasets', 'list', '--json', '--store', sys.argv[1]]))"
        + ("()" if entry.startswith("console") else "")
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code, str(store)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    p.stdout.read(5)
    p.stdout.close()  # the reader goes away, as `| head -c 5` would
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 0 and "Traceback" not in err and "BrokenPipe" not in err


def test_shipped_examples_are_valid(tmp_path):
    """examples/run-config.yml parses as a pipeline config; examples/table-mapping.toml ingests a
    table."""
    from conftest import REPO

    from xamm_ingest import read_profiles
    from xamm_models.predictors.paper.pipeline import load_config

    cfg = load_config(REPO / "examples" / "run-config.yml")
    assert cfg.func == "train" and cfg.regressor == "catboost" and cfg.output.name == "predictor"
    csv = tmp_path / "samples.csv"
    csv.write_text(
        "application,system,time_ms,nthreads,size,br,PAPI_TOT_INS,notes\n"
        "Kripke,Quartz,1500,4,32,1e8,1e9,first\n"
    )
    rep = read_profiles("table", csv, mapping=REPO / "examples" / "table-mapping.toml")
    assert rep.rejected == [] and rep.dropped == []
    row = rep.frame.row(0, named=True)
    assert (row["app"], row["machine"], row["runtime_s"], row["threads"]) == (
        "Kripke",
        "quartz",
        1.5,
        4,
    )
    assert (
        row["app_params"] == '{"size":32}' and row["ctr_br_ins"] == 1e8 and row["device"] == "cpu"
    )


def test_eval_page_needs_the_markers_and_a_missing_source_is_bad_input(tmp_path, capsys):
    pytest.importorskip("torch", reason="the models extra (torch) is not installed")
    readme = tmp_path / "README.md"
    readme.write_text("no markers here\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.json").write_text("{}")
    assert xamm(["eval", "--page", str(readme), "--out", str(tmp_path / "out")]) == 1
    assert "lacks the markers" in capsys.readouterr().err
    assert readme.read_text() == "no markers here\n"  # untouched
    assert xamm(["eval", "--quick", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o")]) == 1
    assert "lacks the xplat-rajaperf sources" in capsys.readouterr().err


def test_amm_list_reads_home_signatures_first_and_the_embedded_ones_for_the_rest(
    tmp_path, capsys, monkeypatch
):
    import shutil

    from xamm_data.hub import snapshot
    from xamm_models.machines.signatures import SignatureRegistry

    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "home"))
    shutil.copytree(
        snapshot.signatures_root() / "lassen", tmp_path / "home" / "signatures" / "lassen"
    )
    home = tmp_path / "home" / "signatures" / "lassen"
    (home / "gpu@2.json").write_text(
        (home / "gpu@1.json").read_text().replace('"version": 1', '"version": 2')
    )
    reading = SignatureRegistry.for_reading()
    assert reading.root == tmp_path / "home" / "signatures"
    assert xamm(["amm", "list", "--json"]) == 0
    latest = {r["target"]: r["latest"] for r in json.loads(capsys.readouterr().out)}
    # lassen from home (its version 2 exists only there); quartz from the package's snapshot
    assert latest["lassen:gpu"] == "lassen:gpu@2" and latest["quartz:cpu"] == "quartz:cpu@1"
    assert latest["dane:cpu"] == "dane:cpu@1"  # the snapshot's


@pytest.mark.parametrize(
    "main,argv,said",
    [
        (xamm, ["--nosuchflag"], "xamm: error: unrecognized arguments: --nosuchflag"),
        (xamm, ["amm", "--nosuchflag"], "xamm amm: error: unrecognized arguments: --nosuchflag"),
        (xamm, ["-v", "--nosuch=1", "amm"], "unrecognized arguments: --nosuch=1"),
        (ingest, ["--nosuchflag"], "xamm-ingest: error: unrecognized arguments: --nosuchflag"),
        (xamm, [], "the following arguments are required: COMMAND"),
        (xamm, ["nosuch"], "invalid choice: 'nosuch'"),
    ],
)
def test_an_unknown_option_before_the_command_is_named(main, argv, said, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and said in capsys.readouterr().err


def _actions(parser: argparse.ArgumentParser, path=()):
    """(command path, action) of every argument of every subcommand, the subcommands' own too."""
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, p in a.choices.items():
                yield from _actions(p, (*path, name))
        else:
            yield path, a


def test_every_path_argument_refuses_an_empty_one():
    """A path argument takes ``path_arg`` (or ``store_arg``), which refuses "": ``Path("")`` is the
    current folder, where an unset shell variable would send a read or a write."""
    from pathlib import Path

    from xamm_data.cli.tools import path_arg, store_arg

    found = list(_actions(build_parser()[0], ("xamm",))) + list(
        _actions(ingest_parser(), ("xamm-ingest",))
    )
    typed = [(path, a) for path, a in found if a.type in (Path, path_arg, store_arg)]
    assert len(typed) >= 30
    assert [(path, a.dest) for path, a in typed if a.type is Path] == []
    for fn in (path_arg, store_arg):
        with pytest.raises(argparse.ArgumentTypeError, match="empty string"):
            fn("")


@pytest.mark.parametrize(
    ("main", "argv", "said"),
    [
        (ingest, ["rajaperf", ""], "argument paths: expected a path, got an empty string"),
        (ingest, ["rajaperf", str(FIXTURES), "--store", ""], "argument --store: expected a"),
        (xamm, ["predict", ""], "expected a path, got an empty string"),
        (xamm, ["report", "--out", ""], "argument --out: expected a path, got an empty string"),
        (xamm, ["datasets", "list", "--store", ""], "argument --store: expected a store's"),
    ],
)
def test_an_empty_path_is_a_usage_error(main, argv, said, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and said in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_every_text_argument_refuses_an_empty_one():
    """Each argument taking plain text (a name, a model, a pattern), choices aside, is checked by
    ``text_arg`` once the command line is parsed: "" or blanks would read as not given."""
    from xamm_data.cli.tools import text_arg, text_arguments

    found = list(_actions(text_arguments(build_parser()[0]), ("xamm",))) + list(
        _actions(text_arguments(ingest_parser()), ("xamm-ingest",))
    )
    plain = [
        (path, a.dest)
        for path, a in found
        if a.type is None and a.nargs != 0 and not a.choices
        and isinstance(a, (argparse._StoreAction, argparse._AppendAction))
    ]  # fmt: skip
    assert plain == []
    assert sum(a.type is text_arg for _, a in found) >= 70
    for bad, said in (("", "an empty string"), ("  ", "only white space")):
        with pytest.raises(argparse.ArgumentTypeError, match=f"expected text, got {said}"):
            text_arg(bad)
    assert text_arg(" quartz") == " quartz"  # kept as written: the command normalises it


@pytest.mark.parametrize(
    ("main", "argv", "said"),
    [
        (ingest, ["rajaperf", str(FIXTURES), "--machine", ""], "argument --machine: expected text"),
        (ingest, ["caliper", str(FIXTURES), "--app", " "], "argument --app: expected text, got"),
        (xamm, ["predict", str(FIXTURES), "--source", ""], "argument --source: expected text"),
        (xamm, ["predict", str(FIXTURES), "--model="], "argument --model: expected text"),
        (xamm, ["machines", "show", ""], "argument machine: expected text, got an empty string"),
        (xamm, ["ingest", "rajaperf", str(FIXTURES), "--machine="], "argument --machine:"),
    ],
)
def test_an_empty_name_is_a_usage_error(main, argv, said, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XAMM_HOME", str(tmp_path))
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and said in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_known_options_before_the_command_still_parse(capsys, tmp_path, monkeypatch):
    """Clusters (-vv), prefixes (--deb) and values (--print-completion fish) are argparse's."""
    monkeypatch.setenv("XAMM_HOME", str(tmp_path))
    assert xamm(["-vv", "--deb", "machines", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)
    with pytest.raises(SystemExit) as e:
        xamm(["--print-completion", "fish", "amm"])
    assert e.value.code == 0 and "complete -c xamm" in capsys.readouterr().out


def _outcome(fn, argv):
    try:
        return ("parsed", vars(fn(argv)))
    except SystemExit as e:
        return ("exit", e.code)


def test_the_option_check_before_the_command_agrees_with_argparse_on_seeded_command_lines(capsys):
    """300 seeded command lines from a pool of known and unknown options, commands, actions and
    values: the check before the command never refuses what argparse accepts, nor accepts what it
    refuses (argparse itself is the oracle; only the message may differ)."""
    import random

    from xamm_data.cli.tools import parse_command_line

    parser = build_parser()[0]
    pool = [
        "-v", "-vv", "-q", "--debug", "--deb", "--nosuch", "--nosuch=1", "-z", "--", "-",
        "amm", "list", "show", "--json", "machines", "datasets", "nosuch", "quartz", "--store",
        "x", "--print-completion", "bash", "--version", "-h",
    ]  # fmt: skip
    rng = random.Random(20261129)
    disagree = []
    for _ in range(300):
        argv = [rng.choice(pool) for _ in range(rng.randint(0, 5))]
        ours = _outcome(lambda a: parse_command_line(parser, a), argv)
        theirs = _outcome(parser.parse_args, argv)
        if ours[0] != theirs[0] or (ours[0] == "exit" and ours[1] != theirs[1]):
            disagree.append((argv, ours, theirs))
        elif ours[0] == "parsed":
            ours[1].pop("handler", None), theirs[1].pop("handler", None)
            if ours != theirs:
                disagree.append((argv, ours, theirs))
    capsys.readouterr()
    assert disagree == []


#: what a table's cells may hold (text read from users' files): controls, wide and combining
#: characters, brackets, line breaks
_CELL_CHARS = [*"aZ7_[]/-. \n\t\r\x1b\x07\x00\x7f\x9b", "日", "本", "é", "\u0301", "Ω", "µ"]
_BORDERS = set("┌─┬┐│┆╞═╪╡└┴┘├╌┼┤")


def _escaped(text: str) -> str:
    """The oracle: a control character (but a line feed) as the escape Python writes for it."""
    named = {"\t": "\\t", "\r": "\\r"}
    return "".join(
        c if c == "\n" or unicodedata.category(c) != "Cc" else named.get(c, f"\\x{ord(c):02x}")
        for c in text
    )


def _random_frame(rng: random.Random):
    import polars as pl

    def word() -> str:
        longest = rng.choice([30, 30, 30, 1200])  # now and then past what polars shows whole
        return "".join(rng.choice(_CELL_CHARS) for _ in range(rng.randint(0, longest)))

    columns: dict[str, list] = {}
    rows = rng.randint(0, 4)
    for i in range(rng.randint(1, 4)):
        kind = rng.choice("sfi")
        columns[f"c{i}{word()}"] = [
            rng.choice([None, word()])
            if kind == "s"
            else rng.choice([None, rng.uniform(-1e6, 1e6), float("nan"), 1e-300])
            if kind == "f"
            else rng.choice([None, rng.randint(-(10**9), 10**9)])
            for _ in range(rows)
        ]
    return pl.DataFrame(columns, strict=False), word()


def test_a_table_draws_every_cell_and_sends_no_control_character_to_the_terminal(capsys):
    """300 seeded tables of text as users' files may hold it: every character of the title,
    the column names and the cells is drawn (a control as its escape), and none but a line feed
    reaches the terminal as a control character."""
    from xamm_data.cli.summary import print_frame

    rng = random.Random(20261130)
    for _ in range(300):
        df, title = _random_frame(rng)
        print_frame(df, title=title, width=rng.choice([40, 60, 100]))
        out = capsys.readouterr().out
        cells = [
            "" if v is None else f"{v:.4g}" if isinstance(v, float) else _escaped(str(v))
            for c in df.columns
            for v in df[c].to_list()
        ]
        texts = [_escaped(title), *map(_escaped, df.columns), *cells]
        want = Counter(c for t in texts for c in t if not c.isspace())
        assert Counter(c for c in out if not c.isspace() and c not in _BORDERS) == want, out
        assert [c for c in out if c != "\n" and unicodedata.category(c) == "Cc"] == [], out


def test_a_table_shows_values_as_text_and_an_interval_in_one_column(capsys):
    import polars as pl

    from xamm_data.cli.summary import print_frame, with_intervals

    df = pl.DataFrame(
        {"k": ["[bold]x[/bold]", "y"], "v": [1.0, None], "lo": [0.5, 0.1], "hi": [2.0, 0.25]}
    )
    out = with_intervals(df, {"v": ("lo", "hi")})
    assert out.columns == ["k", "v"] and out["v"].to_list() == ["1 [0.5, 2]", ""]
    print_frame(out, title="v [lo, hi]", width=40)
    text = capsys.readouterr().out
    # brackets are text, never rich markup; the table keeps to its width
    assert "[bold]x[/bold]" in text and "v [lo, hi]" in text
    assert max(map(len, text.splitlines())) <= 40


_BIDI = {
    "ARABIC LETTER MARK", "LEFT-TO-RIGHT MARK", "RIGHT-TO-LEFT MARK", "LEFT-TO-RIGHT EMBEDDING",
    "RIGHT-TO-LEFT EMBEDDING", "POP DIRECTIONAL FORMATTING", "LEFT-TO-RIGHT OVERRIDE",
    "RIGHT-TO-LEFT OVERRIDE", "LEFT-TO-RIGHT ISOLATE", "RIGHT-TO-LEFT ISOLATE",
    "FIRST STRONG ISOLATE", "POP DIRECTIONAL ISOLATE",
}  # fmt: skip


def _shown(c: str) -> str:
    """What a terminal should be sent for ``c``, from Unicode's own tables: a control character
    (but the line feed and the tab), a bidirectional formatting character or a line or paragraph
    separator as the escape Python writes; anything else as it is."""
    if c in "\n\t":
        return c
    if c == "\r":
        return "\\r"
    if unicodedata.category(c) == "Cc":
        return f"\\x{ord(c):02x}"
    if unicodedata.name(c, "") in _BIDI or unicodedata.category(c) in ("Zl", "Zp"):
        return f"\\u{ord(c):04x}"
    return c


def test_a_console_script_s_streams_send_text_never_a_control_character():
    """500 seeded texts, written in pieces as ``print`` writes them: what reaches the stream beneath
    is each character as Unicode's tables say to show it (:func:`_shown`), whatever the piece
    boundaries; the stream's other faces (``isatty``, ``encoding``, ``buffer``) are the terminal's,
    and a progress bar's :func:`unfiltered` stream is the one beneath."""
    import copy
    import io

    from xamm_data.cli.terminal import PrintableText, unfiltered

    alphabet = [chr(c) for c in range(0xA0)] + list(
        "\u00ad\u061c\u200b\u200c\u200d\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
        "\u2066\u2067\u2068\u2069\u206a\u0301é漢字🙂\ufeff\ufffd"
    )
    rng = random.Random(66)
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 120)))
        beneath = io.StringIO()
        stream = PrintableText(beneath)
        cut = sorted(rng.sample(range(len(text) + 1), min(3, len(text) + 1)))
        for a, b in zip([0, *cut], [*cut, len(text)], strict=True):
            assert stream.write(text[a:b]) == b - a
        stream.flush()
        assert beneath.getvalue() == "".join(map(_shown, text)), repr(text)
    raw = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    stream = PrintableText(raw)
    assert (stream.isatty(), stream.encoding, stream.buffer) == (False, "utf-8", raw.buffer)
    assert unfiltered(stream) is raw and unfiltered(raw) is raw
    assert unfiltered(copy.copy(stream)) is raw  # a copy made without __init__ forwards as well


def test_columns_whose_names_meet_once_escaped_are_each_drawn(capsys):
    """A name holding a control character and one holding its written escape (or a numbered name
    already taken) are drawn as distinct columns, each with its values: none is dropped."""
    import polars as pl

    from xamm_data.cli.summary import print_frame

    df = pl.DataFrame({"x #2": ["p"], "a\x1b": ["q"], "a\\x1b": ["r"], "x": ["s"], "x\x00": ["t"]})
    df = df.with_columns(pl.lit("u").alias("x\\x00"))
    print_frame(df, width=200)
    header, _, values = capsys.readouterr().out.splitlines()[1:4]
    names = [c.strip() for c in header.strip("│").split("┆")]
    assert names == ["x #2", "a\\x1b", "a\\x1b #2", "x", "x\\x00", "x\\x00 #2"]
    assert [c.strip() for c in values.strip("│").split("┆")] == list("pqrstu")


DEEP = 100_000  # brackets: past the recursion limit of Python's JSON and TOML parsers


def test_input_nested_past_the_parsers_is_refused_by_name(tmp_path, capsys, monkeypatch, caplog):
    """A Caliper JSON file, an ``xamm.toml``, a column mapping, a criteria file and the user's
    machine registry nested deeper than Python's parsers go: each refused naming the file, never
    a traceback nor "an input xamm did not expect"."""
    from xamm_models.compare.certificates.records import read_criteria

    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "home"))
    deep_toml = "a = " + "[" * DEEP + "]" * DEEP + "\n"
    (tmp_path / "deep.json").write_text("[" * DEEP + "]" * DEEP)
    code = ingest(["caliper", str(tmp_path / "deep.json"), "--app", "a", "--machine", "quartz",
                   "--dry-run", "--json"])  # fmt: skip
    [why] = [r["reason"] for r in json.loads(capsys.readouterr().out)["rejected_files"]]
    assert code == 1 and why.startswith(f"{tmp_path / 'deep.json'}: JSON nested deeper")
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "p.cali").write_bytes(
        (FIXTURES / "rajaperf_sample/run-1/Base_Seq-default.cali").read_bytes()
    )
    (runs / "xamm.toml").write_text(deep_toml)
    assert ingest(["rajaperf", str(runs), "--dry-run", "--json"]) == 1
    [why] = [r["reason"] for r in json.loads(capsys.readouterr().out)["rejected_files"]]
    toml_said = "not valid TOML: maximum recursion depth exceeded"
    assert why == f"{runs / 'p.cali'}: {runs / 'xamm.toml'}: {toml_said}"
    (tmp_path / "map.toml").write_text(deep_toml)
    (tmp_path / "t.csv").write_text("region,time\na,1\n")
    assert ingest(["table", str(tmp_path / "t.csv"), "--mapping", str(tmp_path / "map.toml"),
                   "--dry-run"]) == 1  # fmt: skip
    assert "map.toml: cannot read the mapping: maximum recursion" in capsys.readouterr().err
    with pytest.raises(ValueError, match="deep.toml: not TOML: maximum recursion"):
        (tmp_path / "deep.toml").write_text(deep_toml)
        read_criteria(tmp_path / "deep.toml")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "machines.toml").write_text(deep_toml)
    assert xamm(["machines", "list", "--json"]) == 0 and json.loads(capsys.readouterr().out)
    assert "machines.toml: not valid TOML (maximum recursion depth exceeded)" in caplog.text


def test_a_certificate_or_log_entry_nested_past_the_parser_is_named(
    tmp_path, capsys, monkeypatch, caplog
):
    """A certificate nested past Python's parser is left out of a report with a warning naming it
    (the report is still written); a store's log entry so nested (100,000 deep, on which delta-rs
    ends the process) is refused before delta-rs opens the table: the ingest, the reads and
    ``load_dataset`` name the file and its line."""
    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "home"))
    mine = tmp_path / "home" / "certificates" / "newbox" / "certificate@1.json"
    mine.parent.mkdir(parents=True)
    mine.write_text("[" * DEEP + "]" * DEEP)
    assert xamm(["report", "--out", str(tmp_path / "site"), "--no-progress"]) == 0
    assert f"certificate not used: {mine}: unreadable or truncated" in caplog.text
    assert (tmp_path / "site" / "index.html").is_file()
    store, runs = tmp_path / "store", FIXTURES / "rajaperf_sample" / "run-1"
    assert ingest(["rajaperf", str(runs / "Base_Seq-default.cali"), "--store", str(store)]) == 0
    entry = store / "benchmark_runs" / "_delta_log" / f"{1:020d}.json"
    entry.write_text("[" * DEEP + "]" * DEEP + "\n")
    capsys.readouterr()
    said = f"{entry.relative_to(tmp_path)} line 1: JSON nested 100,000 levels deep"
    assert ingest(["rajaperf", str(runs / "Base_Seq-default.cali"), "--store", str(store)]) == 1
    assert said in capsys.readouterr().err.replace(str(tmp_path) + "/", "")
    for argv in (["datasets", "list"], ["datasets", "show", "example-node", "--version", "0"]):
        assert xamm([*argv, "--store", str(store)]) == 1
        assert said in capsys.readouterr().err.replace(str(tmp_path) + "/", "")
    with pytest.raises(CorruptDataError, match="line 1: JSON nested 100,000 levels deep"):
        load_dataset("example-node", store=store)


@pytest.mark.parametrize(
    ("main", "argv"),
    [
        (xamm, ["predict", "p.cali", "--time-unit", "parsec"]),
        (ingest, ["caliper", "p.cali", "--app", "a", "--time-unit", "parsec"]),
    ],
)
def test_an_unknown_time_unit_is_a_usage_error_listing_the_units(main, argv, capsys):
    """Both commands check ``--time-unit`` as they parse it, whether or not the profile records a
    unit."""
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err
    assert e.value.code == 2 and "argument --time-unit: unknown time unit 'parsec'" in err
    assert "ms, msec" in err and "ns, nsec" in err


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "0"])
def test_a_stated_runtime_that_is_no_finite_positive_time_is_a_usage_error(value, capsys):
    """Every runtime a user states must be a finite time > 0: a usage error otherwise, before any
    profile is read."""
    with pytest.raises(SystemExit) as e:
        ingest(["caliper", "p.cali", "--app", "a", "--runtime-s", value, "--dry-run"])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert e.value.code == 2 and err.startswith("xamm-ingest: error: --runtime-s: Input should")


@pytest.mark.parametrize(
    "argv",
    [
        ["machines", "show", "no-such-machine", "--json"],
        ["datasets", "show", "no-such-dataset", "--json"],
        ["predict", "{missing}", "--json"],
    ],
)
def test_a_command_asked_for_json_that_fails_prints_its_error_as_json(argv, tmp_path, capsys):
    """Bad input (exit 1) under ``--json``: standard output is JSON naming the error, as
    ``xamm-ingest --json`` gives it, and standard error keeps the one-line message."""
    missing = tmp_path / "no such profile.cali"
    argv = [a.format(missing=missing) for a in argv]
    assert xamm(argv) == 1
    out, err = capsys.readouterr()
    error = json.loads(out)["error"]
    assert argv[-2].split("/")[-1] in error  # the machine, dataset or file asked for
    assert err.startswith("xamm: error: ") and error.split("\n")[0] in err
    assert xamm(argv[:-1]) == 1  # without --json, standard output stays empty
    assert capsys.readouterr().out == ""


def test_an_empty_path_given_to_the_library_never_names_the_current_folder(tmp_path, monkeypatch):
    """``Path("")`` is ".": a store, a model or a profile named by an empty variable is refused
    before anything is read or written where the process runs."""
    from xamm_data import Store, load_dataset
    from xamm_data.tables.regions import RegionProfileError
    from xamm_ingest.regions import read_regions
    from xamm_models.zoo import load_model

    monkeypatch.chdir(tmp_path)
    for call in (lambda: Store(""), lambda: load_dataset("quartz", store="")):
        with pytest.raises(ValueError, match="store: an empty path"):
            call()
    with pytest.raises(TypeError, match="store: an int; expected a folder or an s3:// URI"):
        Store(5)
    with pytest.raises(RegionProfileError, match="an empty path; expected a profile"):
        read_regions("")
    with pytest.raises(ValueError, match="model: an empty name"):
        load_model("")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--jobs", "0"], "argument --jobs: jobs to simulate: expected a whole number from 1"),
        (["--jobs", "2.5"], "expected a whole number from 1 to 1000000, not '2.5'"),
        (["--load", "nan"], "argument --load: a fraction of the cluster's capacity: expected"),
        (["--load", "0"], "expected a number from 0.01 to 10, not '0'"),
        (["--nodes", "quartz:cpu=3"], "--nodes names quartz:cpu twice; give each machine once"),
    ],
)
def test_schedule_sim_counts_and_repeats_are_usage_errors(argv, said, tmp_path, capsys):
    """A count of jobs below one, a load that is no fraction of capacity and a machine given twice
    (one count would hide the other) are usage errors, found before the store is read."""
    pytest.importorskip("torch", reason="the models extra (torch) is not installed")
    base = ["schedule-sim", "--store", str(tmp_path / "none"), "--nodes", "quartz:cpu=2"]
    with pytest.raises(SystemExit) as e:
        xamm([*base, *argv])
    assert e.value.code == 2 and said in capsys.readouterr().err


def test_compare_since_that_is_no_date_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        xamm(["compare", "quartz", "--since", "2026-13-45", "--store", str(tmp_path)])
    said = "argument --since: expected a date or time, YYYY-MM-DD[THH:MM], not '2026-13-45'"
    assert e.value.code == 2 and said in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["store", "vacuum", "--retention-hours", "-5"], "expected whole hours, 0 or more"),
        (["amm", "build", "quartz", "--epochs", "0"], "argument --epochs: training epochs"),
        (["eval", "--epochs", "0"], "expected a whole number from 1 to 100000, not '0'"),
        (["zoo", "build", "--epochs", "-3"], "expected a whole number from 1 to 100000"),
    ],
)
def test_no_epoch_and_a_negative_retention_are_usage_errors(argv, said, capsys):
    """An embedder trains at least one epoch (none leaves its weights random), and vacuum's
    cutoff never lies in the future (past files a running writer has not committed)."""
    pytest.importorskip("torch", reason="the models extra (torch) is not installed")
    with pytest.raises(SystemExit) as e:
        xamm(argv)
    assert e.value.code == 2 and said in capsys.readouterr().err


def test_vacuum_and_an_embedder_refuse_the_same_from_the_library(tmp_path):
    pytest.importorskip("torch", reason="the models extra (torch) is not installed")
    import numpy as np

    from xamm_data.store.store import Store
    from xamm_models.embedders.networks import create_embedder

    with pytest.raises(ValueError, match="retention_hours is -1; expected 0 or more"):
        Store(tmp_path).vacuum("benchmark_runs", retention_hours=-1)
    emb = create_embedder("mlp", n_features=3, embed_dim=2)
    with pytest.raises(ValueError, match="epochs is 0; an embedder trains at least one epoch"):
        emb.fit(np.ones((8, 3)), epochs=0)


@pytest.mark.parametrize(
    ("features", "said"), [(",,", "--features ',,' names no column"), ("a,b,a", "names 'a' twice")]
)
def test_adapt_features_naming_no_column_or_one_twice_are_usage_errors(
    features, said, tmp_path, capsys
):
    """``--features`` names at least one column, each once (``,,`` must not stand for every
    numeric column); checked before the model loads."""
    pytest.importorskip("torch", reason="the models extra (torch) is not installed")
    samples = tmp_path / "l.csv"
    samples.write_text("x\n1\n")
    argv = ["adapt", str(samples), "--model", str(tmp_path / "no-model"), "--platform", "q:cpu"]
    with pytest.raises(SystemExit) as e:
        xamm([*argv, "--out", str(tmp_path / "out"), "--features", features])
    assert e.value.code == 2 and said in capsys.readouterr().err
