"""The console scripts (``[project.scripts]``) end as ``main`` says, with everything printed and
every exit handler run, and without the interpreter's teardown
(:func:`xamm_data.cli.tools.exit_now`)."""

from __future__ import annotations

import importlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# a main in a process of its own: an exit handler writes a file, stdout holds more than a pipe's
# buffer, and a module-level object says so when the teardown frees it
PROGRAM = """
import atexit, sys, threading, time
from xamm_data.cli.tools import console_script

class Loud:
    def __del__(self):
        sys.stderr.write("torn down\\n")

keep = Loud()

def late(path):
    time.sleep(0.3)
    open(path, "w").write("thread done")

def main():
    out, how = sys.argv[1], sys.argv[2]
    atexit.register(lambda: open(out + ".atexit", "w").write("handlers ran"))
    sys.stdout.write("x" * 200_000)
    if how == "thread":
        threading.Thread(target=late, args=(out + ".thread",)).start()
    if how.startswith("raise "):
        raise SystemExit(eval(how[6:]))
    if how == "error":
        raise RuntimeError("boom")
    return 3

if sys.argv[3] == "console":
    console_script(main)()
else:
    sys.exit(main())
"""


def _run(tmp_path: Path, how: str, entry: str = "console") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PROGRAM, str(tmp_path / "out"), how, entry],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def test_main_s_code_its_output_and_the_exit_handlers_without_the_teardown(tmp_path):
    r = _run(tmp_path, "return")
    assert r.returncode == 3
    assert r.stdout == "x" * 200_000  # flushed before the process ends
    assert (tmp_path / "out.atexit").read_text() == "handlers ran"
    assert "torn down" not in r.stderr  # no teardown freed the module's objects
    control = _run(tmp_path, "return", entry="sys.exit")  # Python's own exit tears down
    assert control.returncode == 3 and "torn down" in control.stderr


@pytest.mark.parametrize(
    ("raised", "code", "said"),
    [("2", 2, ""), ("None", 0, ""), ("'no such machine'", 1, "no such machine\n")],
)
def test_a_system_exit_ends_with_its_code_as_python_would(tmp_path, raised, code, said):
    r = _run(tmp_path, f"raise {raised}")
    assert (r.returncode, r.stderr) == (code, said)
    assert len(r.stdout) == 200_000 and (tmp_path / "out.atexit").exists()


def test_an_exception_main_lets_through_is_python_s_traceback_and_exit_1(tmp_path):
    r = _run(tmp_path, "error")
    assert r.returncode == 1 and "RuntimeError: boom" in r.stderr and "Traceback" in r.stderr


def test_a_thread_still_running_is_waited_for(tmp_path):
    r = _run(tmp_path, "thread")
    assert r.returncode == 3
    assert (tmp_path / "out.thread").read_text() == "thread done"
    assert (tmp_path / "out.atexit").read_text() == "handlers ran"


def test_every_console_script_is_its_main_behind_console_script():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert set(scripts) == {"xamm", "xamm-ingest"}
    for target in scripts.values():
        module, name = target.split(":")
        mod = importlib.import_module(module)
        assert getattr(mod, name).__qualname__ == "console_script.<locals>.run"
        assert getattr(mod, name).__name__ == "main" == mod.main.__name__


@pytest.mark.parametrize(
    ("argv", "code", "said"),
    [
        (["--help"], 0, "usage: xamm-ingest"),
        (["--no-such-option"], 2, "unrecognized arguments"),
        (["rajaperf", "/no/such/runs"], 1, "/no/such/runs: no such file or directory"),
    ],
)
def test_the_ingest_script_s_exit_codes(argv, code, said, tmp_path):
    program = (
        "import sys; from xamm_ingest.cli import console; sys.argv[0] = 'xamm-ingest'; console()"
    )
    r = subprocess.run(
        [sys.executable, "-c", program, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert r.returncode == code and said in r.stdout + r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_a_store_that_cannot_be_written_is_an_error_not_a_traceback(where, tmp_path):
    """A store where a file is (or under one) cannot take its folders: the command says so on one
    line naming the path, exits 1, writes nothing, and ``--json`` carries the error."""
    taken = tmp_path / "taken"
    taken.write_text("mine")
    store = taken if where == "a file" else taken / "store"
    program = (
        "import sys; from xamm_ingest.cli import console; sys.argv[0] = 'xamm-ingest'; console()"
    )
    sample = REPO / "tests" / "fixtures" / "rajaperf_sample"
    for extra in ([], ["--json"]):
        r = subprocess.run(
            [sys.executable, "-c", program, "rajaperf", str(sample), "--store", str(store), *extra],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env={**os.environ, "XAMM_HOME": str(tmp_path / "home")},
        )
        assert r.returncode == 1 and "Traceback" not in r.stderr
        lines = r.stderr.strip().splitlines()
        assert lines[-1].startswith("xamm-ingest: error: ") and str(taken) in lines[-1]
        if extra:
            assert str(taken) in json.loads(r.stdout)["error"]
    assert taken.read_text() == "mine"
    assert {p.name for p in tmp_path.iterdir()} <= {"taken", "home"}


# a console script made with loads_then_forks: what the collector does before and after loaded()
LOADING = """
import gc, sys
from xamm_data.cli.tools import console_script, loaded

def main():
    before = (gc.isenabled(), gc.get_freeze_count())
    loaded()
    after = (gc.isenabled(), gc.get_freeze_count())
    print(before[0], before[1] == 0, after[0], after[1] > 1000)
    return 0

console_script(main, loads_then_forks=sys.argv[1] == "yes")()
"""


@pytest.mark.parametrize(
    ("forks", "said"), [("yes", "False True True True"), ("no", "True True True False")]
)
def test_a_forking_command_loads_without_collections_then_freezes_what_it_loaded(forks, said):
    r = subprocess.run(
        [sys.executable, "-c", LOADING, forks], capture_output=True, text=True, timeout=120
    )
    assert (r.returncode, r.stdout.strip()) == (0, said), r.stderr


def test_loaded_called_from_python_changes_nothing():
    import gc

    from xamm_data.cli.tools import loaded

    frozen, enabled = gc.get_freeze_count(), gc.isenabled()
    loaded()
    assert (gc.get_freeze_count(), gc.isenabled()) == (frozen, enabled)


def test_the_ingest_command_says_loaded_once_its_pipeline_is_loaded(monkeypatch, tmp_path):
    from xamm_ingest import cli

    seen: list[bool] = []
    monkeypatch.setattr(cli, "loaded", lambda: seen.append("xamm_ingest.pipeline" in sys.modules))
    cli.main(["rajaperf", str(tmp_path), "--dry-run"])
    assert seen == [True]
    from xamm_data.cli import commands

    # the ingest script forks its readers; xamm's commands do not pause the collector
    assert cli.console.loads_then_forks is True and commands.console.loads_then_forks is False


def test_a_profiled_command_ends_as_python_does_so_the_profile_is_written(tmp_path):
    script = tmp_path / "command.py"
    script.write_text(PROGRAM)
    stats = tmp_path / "stats.prof"
    r = subprocess.run(
        [sys.executable, "-m", "cProfile", "-o", str(stats), str(script)]
        + [str(tmp_path / "out"), "return", "console"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert stats.stat().st_size > 0, r.stderr  # (cProfile's runner ends with 0 whatever the code)
    assert "torn down" in r.stderr  # Python's own exit


def test_an_ingest_on_a_dask_cluster_ends_with_its_commit_whole(tmp_path):
    """The ingest script with a local Dask cluster (threads and processes of its own) ends by
    ``exit_now``: exit 0, and the store holds every row it said it wrote."""
    from cali_writer import write_cali

    from xamm_data.store.store import Store

    t = "inclusive#sum#time.duration"
    for i in range(4):
        write_cali(tmp_path / "runs" / f"p{i}.cali", [(["main"], {t: 1.0 + i})], {"cluster": "c"},
                   units={t: "sec"})  # fmt: skip
    program = (
        "import sys; from xamm_ingest.cli import console; sys.argv[0] = 'xamm-ingest'; console()"
    )
    argv = ["caliper", str(tmp_path / "runs"), "--app", "a", "--machine", "m", "--store",
            str(tmp_path / "s"), "--executor", "dask", "--no-progress", "--json"]  # fmt: skip
    env = {**os.environ, "XAMM_HOME": str(tmp_path / "home")}
    r = subprocess.run([sys.executable, "-c", program, *argv], capture_output=True, text=True,
                       timeout=300, cwd=tmp_path, env=env)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["rows_written"] == 4
    assert Store(tmp_path / "s").scan("app_profiles").collect().height == 4


# what a hostile run folder may name its files: an escape sequence setting the terminal's title
# (ended by a bell), a colour, C1's one-byte CSI, a bidirectional override, a carriage return
HOSTILE = [
    "a\x1b]0;PWNED\x07.cali",
    "b\x1b[31mRED.cali",
    "c\x9b2J.cali",
    "d\u202eilac.cali",
    "e\rX.cali",
]
# what must not reach the terminal from them: each of their control characters
CONTROLS = ["\x1b", "\x07", "\x9b", "\u202e", "\r"]


def _console(module: str, name: str, argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    program = f"import sys; from {module} import console; sys.argv[0] = {name!r}; console()"
    return subprocess.run(
        [sys.executable, "-c", program, *argv], capture_output=True, timeout=120, cwd=cwd
    )


def test_a_file_name_s_control_characters_reach_the_terminal_as_text(tmp_path):
    """Both console scripts print what the user's files are named as text: each control character
    as the escape Python writes for it, never as a command to the terminal; ``--json`` keeps the
    names exactly (JSON escapes them)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    # five different faults: each file's rejection is printed alone, not grouped with others
    faults = [b"", b"__rec=node", b"\xff\xfe\n", b"hello\n", b"__rec=ctx,ref=999\n"]
    for name, fault in zip(HOSTILE, faults, strict=True):
        (runs / name).write_bytes(fault)
    r = _console("xamm_ingest.cli", "xamm-ingest", ["rajaperf", "runs", "--store", "st"], tmp_path)
    said = (r.stdout + r.stderr).decode()
    assert r.returncode == 1, said
    assert not [c for c in CONTROLS if c in said], said
    for name in HOSTILE:
        assert f"runs/{name.encode('unicode_escape').decode()}: " in said, (name, said)
    j = _console(
        "xamm_ingest.cli", "xamm-ingest", ["rajaperf", "runs", "--store", "st", "--json"], tmp_path
    )
    report = json.loads(j.stdout)
    assert sorted(x["path"] for x in report["rejected_files"]) == sorted(
        f"runs/{n}" for n in HOSTILE
    )
    p = _console(
        "xamm_data.cli.commands", "xamm", ["predict", HOSTILE[0], "--target", "quartz"], tmp_path
    )
    assert b"\x1b" not in p.stdout + p.stderr and b"a\\x1b]0;PWNED\\x07.cali" in p.stderr


# a file name that would start a line of its own: what a command prints, as if the command said it
FORGED = "f\nxamm-ingest: ok: 5 sources ingested, nothing rejected.cali"


def test_a_file_name_s_line_feed_never_starts_a_line_of_its_own(tmp_path):
    """A line feed in a file or folder name is printed as ``\\n`` where a message names the file
    (a rejection, the error that ends the command, ``xamm``'s error), so no line the command
    prints is one the name wrote; ``--json`` keeps the name exactly."""
    runs = tmp_path / "runs"
    (runs / "g\nh").mkdir(parents=True)
    (runs / FORGED).write_bytes(b"hello\n")
    (runs / "g\nh" / "x.cali").write_bytes(b"")
    r = _console("xamm_ingest.cli", "xamm-ingest", ["rajaperf", "runs", "--store", "st"], tmp_path)
    said = (r.stdout + r.stderr).decode()
    assert r.returncode == 1, said
    lines = said.splitlines()
    assert not [x for x in lines if x.startswith(("xamm-ingest: ok", "h/x.cali"))], said
    assert "runs/f\\nxamm-ingest: ok: 5 sources ingested, nothing rejected.cali: " in said, said
    assert "runs/g\\nh/x.cali: " in said, said
    j = _console(
        "xamm_ingest.cli", "xamm-ingest", ["rajaperf", "runs", "--store", "st", "--json"], tmp_path
    )
    assert sorted(x["path"] for x in json.loads(j.stdout)["rejected_files"]) == [
        f"runs/{FORGED}",
        "runs/g\nh/x.cali",
    ]
    p = _console("xamm_data.cli.commands", "xamm", ["predict", f"runs/{FORGED}"], tmp_path)
    assert p.returncode == 1
    lines = [x for x in p.stderr.decode().splitlines() if x]
    assert len(lines) == 1 and lines[0].startswith("xamm: error: "), p.stderr


def test_a_log_record_s_message_is_one_line_and_its_traceback_keeps_its_lines():
    from xamm_data.cli.tools import OneLineFormatter

    fmt = OneLineFormatter("%(levelname)s %(name)s: %(message)s")
    record = logging.LogRecord("xamm_ingest", logging.WARNING, __file__, 1, "read %s", ("a\nb",),
                               None)  # fmt: skip
    assert fmt.format(record) == "WARNING xamm_ingest: read a\\nb"
    try:
        raise ValueError("boom")
    except ValueError:
        record.exc_info = sys.exc_info()
    text = fmt.format(record)
    assert text.startswith("WARNING xamm_ingest: read a\\nb\nTraceback (most recent call last):")


def _on_a_terminal(argv: list[str], cwd: Path, stdout=None) -> tuple[int, bytes]:
    """``xamm-ingest argv`` with a pseudo-terminal for standard error (and standard output, unless
    ``stdout`` is given): its exit status and what the terminal was sent."""
    import pty

    program = (
        "import sys; from xamm_ingest.cli import console; sys.argv[0] = 'xamm-ingest'; console()"
    )
    main, child = pty.openpty()
    p = subprocess.Popen(
        [sys.executable, "-c", program, *argv],
        stdin=child, stdout=stdout or child, stderr=child, cwd=cwd, close_fds=True,
    )  # fmt: skip
    os.close(child)
    said = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        said += chunk
    code = p.wait(timeout=120)
    os.close(main)
    return code, said


def test_on_a_terminal_the_progress_bar_draws_and_a_file_name_stays_text(tmp_path):
    """On a terminal (a pseudo-terminal here) ``xamm-ingest`` draws its progress bar, which moves
    the cursor with escape sequences of its own, while the same output quotes a hostile file name
    as text."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / HOSTILE[0]).write_bytes(b"")  # its own fault: its rejection is printed alone
    for i in range(3):
        (runs / f"{i}.cali").write_bytes(b"hello again\n")
    code, said = _on_a_terminal(["rajaperf", "runs", "--store", "st"], tmp_path)
    assert code == 1
    assert b"\x1b[?25l" in said  # rich hid the cursor to draw the bar
    assert b"runs/a\\x1b]0;PWNED\\x07.cali" in said and b"\x1b]0;PWNED" not in said, said


def test_with_its_output_redirected_the_bar_draws_on_the_terminal_and_the_file_is_the_summary(
    tmp_path,
):
    """``xamm-ingest ... > summary.txt`` on a terminal: the progress bar draws on standard error,
    the terminal; the file holds the summary from its first line, and no sequence of the bar."""
    shutil.copytree(REPO / "tests" / "fixtures" / "rajaperf_sample", tmp_path / "runs")
    with open(tmp_path / "summary.txt", "wb") as out:
        code, said = _on_a_terminal(["rajaperf", "runs", "--store", "st"], tmp_path, stdout=out)
    summary = (tmp_path / "summary.txt").read_text()
    assert code == 0, said
    assert b"\x1b[?25l" in said and b"reading sources" in said  # the bar, on the terminal
    assert summary.startswith("ingested ") and "\x1b" not in summary, summary
