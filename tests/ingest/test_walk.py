"""The lazy walk of an archive (``walk_file_tasks``: a directory at a time, each directory's
``xamm.toml`` looked up once, each name's ending found without a path's split) and the whole-list
plan (``plan_files``) give the tasks, the ignored files and the refusals the file-by-file rule
(:func:`_rule`: the ending by ``os.path.splitext``, the task by ``Task(...)``) gives over the
whole list of files, on seeded trees of the names that make the rules differ."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from xamm_ingest import profiles
from xamm_ingest.machine_names import CONFIG_NAME
from xamm_ingest.report import Rejected
from xamm_ingest.sources import (
    OTF2_SUFFIXES,
    Plan,
    Task,
    _plain,
    ingest_root,
    list_files,
    walk_dirs,
    walk_files,
)

SUFFIXES = (".cali", ".json")
NAMES = [
    "a.cali", "B.CALI", "c.Json", "d.cali.bak", "e.txt", "noext", ".cali", "..cali", ".hidden.cali",
    "f..cali", "g.", "h.tar.gz", "xamm.toml", "run.otf2", "..otf2", "k.DEF", "l.evt", "m .cali",
    "n.cali ", "ü.cali", "\u212a.cali", "x.otf2.cali", "p.json.", "q.jsonl",
]  # fmt: skip
TOMLS = ['[metadata]\nvariant = ["impl"]\n', "", '[metadata]\nvariant = "not a list"\n']


def _tree(root: Path, rng: random.Random) -> None:
    """A seeded tree: folders up to three deep, files drawn from :data:`NAMES`, a name that is not
    UTF-8, an ``xamm.toml`` (good, empty or bad) here and there, an OTF2 trace with its folder of
    event files, a link to a file and a dangling link."""
    dirs = [root]
    for _ in range(rng.randint(1, 6)):
        parent = rng.choice(dirs)
        if len(parent.relative_to(root).parts) < 3:
            dirs.append(parent / f"d{len(dirs)}{rng.choice(['', '.cali', '.otf2'])}")
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
        for name in rng.sample(NAMES, rng.randint(0, 8)):
            text = rng.choice(TOMLS) if name == "xamm.toml" else name
            (d / name).write_text(text)
        if rng.random() < 0.2:
            (d / os.fsdecode(b"\xff.cali")).write_text("x")
        if rng.random() < 0.2:  # a trace: its anchor file and its folder of event files
            (d / "t.otf2").write_text("x")
            (d / "t").mkdir(exist_ok=True)
            (d / "t" / "0.evt").write_text("x")
            (d / "t" / "0.def").write_text("x")
    files = [p for p in root.rglob("*") if p.is_file()]
    if files:
        (rng.choice(dirs) / "link.cali").symlink_to(rng.choice(files))
    if rng.random() < 0.5:
        (rng.choice(dirs) / "gone.cali").symlink_to(root / "nowhere")


def _rule(paths: list[Path]) -> Plan:
    """The plan file by file, as written from the rule: every file listed, its ending by
    ``os.path.splitext``, its directory's map, its task by ``Task(...)``."""
    out, configs = Plan(root=ingest_root(paths)), {}
    for f in list_files(paths, out):
        if f.name == CONFIG_NAME:
            continue
        if os.path.splitext(f.name)[1].lower() not in SUFFIXES:
            out.ignored.append(str(f))
            continue
        here = profiles._dir_metadata(f.parent, out.root, configs)
        if isinstance(here, Rejected):
            out.rejected.append(Rejected(str(f), f"{f}: {here.reason}", here.problem))
        else:
            out.tasks.append(Task("caliper", f, out.root, defaults=here))
    return out


def _seen(plan: Plan, tasks) -> tuple:
    rejected = sorted((r.path, r.reason, r.problem) for r in plan.rejected)
    return (
        sorted((str(t.path), tuple(sorted(t.__dict__.items()))) for t in tasks),
        sorted(plan.ignored),
        rejected,
    )


@pytest.mark.parametrize("seed", range(40))
def test_the_walk_and_the_plan_give_the_rules_tasks_ignored_files_and_refusals(tmp_path, seed):
    root = tmp_path / "runs"
    _tree(root, random.Random(seed))
    paths = [root]
    if seed % 4 == 0:  # files named one by one beside the folder
        paths += sorted(p for p in root.iterdir() if p.is_file())[:2]
    want = _rule(paths)
    plan = profiles.plan_files("caliper", SUFFIXES)(paths, {})
    assert _seen(plan, plan.tasks) == _seen(want, want.tasks)
    walked = Plan(root=plan.root)
    tasks = list(profiles.walk_file_tasks("caliper", SUFFIXES)(paths, {}, walked))
    assert _seen(walked, tasks) == _seen(want, want.tasks)
    # each task as Task(...) makes it, its fields and nothing else
    assert all(t == type(t)(t.fmt, t.path, t.root, defaults=t.defaults) for t in tasks)
    assert all(t.__dict__ == type(t)(t.fmt, t.path, t.root, defaults=t.defaults).__dict__
               for t in tasks)  # fmt: skip


@pytest.mark.parametrize("seed", range(10))
def test_a_directory_at_a_time_is_the_walk_file_by_file(tmp_path, seed):
    root = tmp_path / "runs"
    _tree(root, random.Random(seed))
    by_dir = [(d, names, files) for d, names, files in walk_dirs([root], Plan(root=root))]
    assert [f for _, _, files in by_dir for f in files] == list(walk_files([root], Plan(root=root)))
    for d, names, files in by_dir:
        assert files == [d / n for n in names] and all(f.parent == d for f in files)


def test_a_names_ending_is_what_splitext_gives():
    rng = random.Random(7)
    alphabet = [".", ".", "a", "B", "c", "\u212a", "\u0130", " ", "ü"]
    names = [*NAMES, *("".join(rng.choices(alphabet, k=rng.randint(1, 7))) for _ in range(3000))]
    for name in names:
        assert profiles.suffix_of(name) == os.path.splitext(name)[1].lower(), name


def test_a_directory_is_plain_as_the_name_by_name_rule_says():
    """The one look at every name's ending at once against the rule it shortcuts: each name
    encoded, each name's ending read as :func:`_without_traces` reads it (a path's suffix), so
    that a walk and a plan refuse the same traces."""

    def rule(here: str, names: list[str]) -> bool:
        try:
            here.encode("utf-8")
            for n in names:
                n.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return not any(Path(n).suffix.lower() in OTF2_SUFFIXES for n in names)

    rng = random.Random(11)
    pieces = [
        *NAMES,
        "a.OTF2",
        "b.Evt",
        "c.def.cali",
        ".def",
        "..evt",
        "x\u212a.evt",
        "\udcff.cali",
    ]
    for _ in range(3000):
        names = rng.sample(pieces, rng.randint(0, 6))
        here = rng.choice(["runs", "r/\udcffs", "r.otf2"])
        assert _plain(here, names) == rule(here, names), (here, names)
