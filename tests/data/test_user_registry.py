"""The user's machine registry cannot be broken from outside: no name, fact or alias a user or a
data folder writes bricks a later command or redirects another machine's data."""

from __future__ import annotations

import json
import logging
import tomllib

import pytest
from cali_writer import write_cali

from xamm_data.cli.commands import main as xamm
from xamm_data.machines import registry as machines
from xamm_ingest.cli import main as ingest

TIME = "inclusive#sum#time.duration"


def _profile(path, seconds: float, **globals_):
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_cali(
        path,
        [(["main"], {TIME: seconds})],
        {k: str(v) for k, v in globals_.items()},
        units={TIME: "sec"},
    )


def _ingest(argv, capsys) -> tuple[int, dict]:
    code = ingest([*argv, "--json", "--no-progress"])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, json.loads(out.out) if out.out.strip() else {}


def test_ids_with_dots_and_notes_with_newlines_are_written_by_a_toml_writer(isolated_home):
    m = machines.add_facts("foo.bar", cpu='x "quoted" \\ back', notes="two\nlines [machines.x]")
    assert m.id == "foo.bar" and m.notes == "two\nlines [machines.x]"
    doc = tomllib.loads(machines.user_file().read_text())  # an independent parse of the file
    assert doc == {
        "machines": {"foo.bar": {"cpu": 'x "quoted" \\ back', "notes": "two\nlines [machines.x]"}}
    }
    assert xamm(["machines", "show", "quartz"]) == 0  # every later command still works


@pytest.mark.parametrize(
    "facts, why",
    [
        ({"cores_per_node": True}, "valid integer"),
        ({"memory_bandwidth_gbs": float("nan")}, "finite"),
        ({"memory_gib": float("inf")}, "finite"),
        ({"sockets": 2.5}, "valid integer"),
        ({"peak_gflops": -1.0}, "greater than 0"),
        ({"cpu": 7}, "valid string"),
        ({"aliases": ["a\nb"]}, "control characters"),
    ],
)
def test_strict_facts_are_refused_before_the_file_is_touched(facts, why, isolated_home):
    machines.add_facts("newbox", cpu="EPYC")
    before = machines.user_file().read_bytes()
    with pytest.raises(machines.MachineFactsError, match=why):
        machines.add_facts("newbox", **facts)
    assert machines.user_file().read_bytes() == before


@pytest.mark.parametrize("bad", ["../x", "/abs", "a/b", "Dane!", "..", ".x", "a..b", ""])
def test_an_id_that_is_not_a_name_is_refused(bad, isolated_home):
    with pytest.raises(machines.MachineFactsError):
        machines.add_facts(bad, cpu="x")
    assert not machines.user_file().exists()


def test_an_alias_never_shadows_another_machine(isolated_home, tmp_path, capsys):
    assert xamm(["machines", "add", "evilbox", "--alias", "dane", "--cpu", "x"]) == 1
    assert "already a name of dane" in capsys.readouterr().err
    assert xamm(["machines", "add", "evilbox", "--alias", "M1", "--cpu", "x"]) == 1  # quartz's
    # written by hand: the alias is ignored with a warning naming the file, the rest taken
    machines.user_file().parent.mkdir(parents=True, exist_ok=True)
    machines.user_file().write_text('[machines.evilbox]\ncpu = "x"\naliases = ["Dane", "eb"]\n')
    machines.reload()
    assert machines.get("Dane").id == "dane" and machines.get("eb").id == "evilbox"
    _profile(tmp_path / "runs" / "d.cali", 2.0, cluster="Dane")
    code, out = _ingest(["caliper", str(tmp_path / "runs"), "--app", "a", "--dry-run"], capsys)
    assert code == 0 and out["machines"] == ["dane"]


def test_a_broken_user_file_never_bricks_a_command(isolated_home, tmp_path, capsys, caplog):
    machines.user_file().parent.mkdir(parents=True, exist_ok=True)
    machines.user_file().write_text(
        '[machines.ok]\ncpu = "c"\n[machines.zz]\ncores_per_node = '
        'true\n[machines."a/b"]\ncpu = "x"\n'
    )
    machines.reload()
    with caplog.at_level(logging.WARNING, "xamm_data.machines.registry"):
        assert machines.get("ok").cpu == "c" and machines.get("quartz").cores_per_node == 36
    said = " ".join(r.getMessage() for r in caplog.records)
    assert f"{machines.user_file()}: machine 'zz', field 'cores_per_node'" in said
    assert "'a/b' is not a name" in said and "zz" not in machines.list_machines()
    machines.user_file().write_text("[machines\nnot toml")
    machines.reload()
    assert "quartz" in machines.list_machines()
    _profile(tmp_path / "runs" / "q.cali", 2.0, cluster="quartz")
    code, out = _ingest(["caliper", str(tmp_path / "runs"), "--app", "a"], capsys)
    assert code == 0 and out["rows"] == 1
    machines.add_facts("newbox", cpu="x")  # a new file, the unreadable one kept beside it
    assert (
        machines.user_file()
        .with_name("machines.toml.unreadable")
        .read_text()
        .startswith("[machines\n")
    )


def _runs_with_node(tmp_path, machine: str, node: str):
    d = tmp_path / "runs"
    _profile(d / "a.cali", 2.0, cluster=machine)
    (d / "xamm.toml").write_text(f'machine = "{machine}"\n[node]\n{node}\n')
    return d


def test_a_data_folder_never_changes_a_known_machine_without_the_flag(
    isolated_home, tmp_path, capsys
):
    d = _runs_with_node(tmp_path, "dane", "cores_per_node = 4")
    code, out = _ingest(["caliper", str(d), "--app", "a"], capsys)
    assert code == 0 and out["rows"] == 1
    (note,) = [n for n in out["notes"] if "[node]" in n]
    assert "cores_per_node: 112 -> 4" in note and "--update-machine" in note
    machines.reload()
    assert machines.get("dane").cores_per_node == 112
    _profile(d / "b.cali", 3.0, cluster="dane")  # a new source: an ingest that writes
    code, out = _ingest(["caliper", str(d), "--app", "a", "--update-machine"], capsys)
    assert code == 0 and any("updated" in n for n in out["notes"])
    machines.reload()
    assert machines.get("dane").cores_per_node == 4


def test_a_bad_node_table_is_refused_naming_the_folder_file_before_rows(
    isolated_home, tmp_path, capsys
):
    d = _runs_with_node(tmp_path, "newbox", "cores_per_node = true")
    code = ingest(["caliper", str(d), "--app", "a", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert f"{d / 'xamm.toml'}" in err and "field 'cores_per_node'" in err
    assert not (isolated_home / "store").exists() or not list(
        (isolated_home / "store").rglob("*.parquet")
    )
    assert xamm(["machines", "list"]) == 0  # nothing bricked
    capsys.readouterr()
    d2 = _runs_with_node(tmp_path / "new", "newbox", "cores_per_node = 64")
    code, out = _ingest(["caliper", str(d2), "--app", "a"], capsys)
    assert code == 0 and any("recorded" in n for n in out["notes"])
    machines.reload()
    assert machines.get("newbox").cores_per_node == 64  # a new machine takes its folder's facts


def test_a_file_name_that_is_not_utf8_is_refused_by_name_and_the_rest_stored(
    isolated_home, tmp_path, capsys
):
    d = tmp_path / "runs"
    for i in range(3):
        _profile(d / f"p{i}.cali", 2.0 + i, cluster="quartz")
    bad = bytes(d) + b"/bad\xffname.cali"
    with open(bad, "wb") as f:
        f.write((d / "p0.cali").read_bytes())
    code, out = _ingest(["caliper", str(d), "--app", "a"], capsys)
    assert out["rows"] == 3
    (r,) = out["rejected_files"]
    assert "bad\\xffname.cali" in r["reason"] and "not UTF-8" in r["reason"]


def test_a_pinned_registry_is_the_one_of_its_entry_and_a_new_machine_shows_after_it(isolated_home):
    """Inside ``pinned`` (a chunk of sources being read) the registry is the one on entry, whatever
    another process writes to the user's file; the file is read again as soon as the pin ends, and
    a machine added inside the pin is seen at once."""
    machines.add_facts("pinbox", cpu="EPYC")
    written = machines.user_file().read_text()
    machines.user_file().write_text("")
    machines.reload()
    assert machines.canonical_id("pinbox") is None
    with machines.pinned():
        machines.user_file().write_text(written)  # another process adds the machine
        assert machines.canonical_id("pinbox") is None
    assert machines.canonical_id("pinbox") == "pinbox"
    with machines.pinned():
        assert machines.add_facts("pinbox2", cpu="EPYC").id == "pinbox2"
        assert machines.canonical_id("pinbox2") == "pinbox2"


def _every_shipped_name() -> list[str]:
    shipped = tomllib.loads(machines.SHIPPED.read_text())["machines"]
    names = [n for mid, f in shipped.items() for n in (mid, *f.get("aliases", ()))]
    assert len(names) > len(shipped)  # the shipped file has aliases to look up
    return names


def test_the_shipped_names_answer_as_the_registry_does_without_a_user_file(isolated_home):
    """Where the user has no registry file, an ingest looks names up in the shipped file's ids
    and aliases alone (no record built): every id and alias, in any case, and names no machine
    has, get the registry's own answer."""
    from xamm_data.machines import names
    from xamm_ingest.machine_names import names_pinned, registry_id

    assert not names.user_registry_exists()
    asked = [v for n in _every_shipped_name() for v in (n, n.upper(), n.lower(), f" {n}")]
    asked += ["no-such-machine", "quartzz", "", "Quartz:cpu"]
    want = [machines.canonical_id(n) for n in asked]
    assert sum(w is not None for w in want) >= len(_every_shipped_name())
    assert [names.shipped_canonical_id(n) for n in asked] == want
    assert [registry_id(n) for n in asked] == want
    with names_pinned():
        assert [registry_id(n) for n in asked] == want


def test_a_user_registry_s_names_are_looked_up_in_its_checked_records(isolated_home):
    """Where the user has a registry file, its machines and aliases are known to an ingest (the
    shipped names alone would not know them), and a record the registry refuses lends no name."""
    from xamm_data.machines import names
    from xamm_ingest.machine_names import names_pinned, registry_id

    machines.add_facts("mybox", cpu="EPYC", aliases=["MB1"])
    user = machines.user_file()
    user.write_text(user.read_text() + '\n[machines.badbox]\naliases = ["BB"]\nsockets = 2.5\n')
    assert names.user_registry_exists() and names.shipped_canonical_id("MB1") is None
    assert registry_id("MB1") == "mybox" and registry_id("mybox") == "mybox"
    assert registry_id("BB") is None and registry_id("Dane") == machines.canonical_id("Dane")
    with names_pinned():
        assert registry_id("mb1") == "mybox"
        user.unlink()  # pinned: the registry as it was on entry
        assert registry_id("MB1") == "mybox"
    assert registry_id("MB1") is None
