"""xamm's own formats are declared light (``xamm_ingest.formats.catalog``): every piece of work they
name resolves to a function of the module it names, a deferred function pickles as its name, and a
table given by name resolves to the table."""

from __future__ import annotations

import dataclasses
import pickle

import pytest

from xamm_ingest.format import Deferred, Format, list_formats


def _deferred(fmt: Format) -> dict[str, Deferred]:
    return {
        f.name: getattr(fmt, f.name)
        for f in dataclasses.fields(fmt)
        if isinstance(getattr(fmt, f.name), Deferred)
    }


def test_every_deferred_function_of_every_format_resolves_to_a_function():
    seen = 0
    for fmt in list_formats():
        for field, work in _deferred(fmt).items():
            fn = work.resolve()
            assert callable(fn) and not isinstance(fn, Deferred), (fmt.name, field, work)
            seen += 1
    assert seen >= 20  # the check covers the catalog, not an empty list


def test_a_stored_format_resolves_its_table_by_name():
    names = {f.name: f.rows_table.name for f in list_formats(ingests=True)}
    assert names["rajaperf"] == "benchmark_runs" and names["caliper"] == "app_profiles"
    assert {f.name: f.table_name for f in list_formats(ingests=True)} == names


def test_a_deferred_function_pickles_as_its_name_and_calls_through():
    d = Deferred("xamm_ingest.sniff:json_kind")
    back = pickle.loads(pickle.dumps(d))
    assert back == d and hash(back) == hash(d) and back.resolve() is d.resolve()
    assert back("/nonexistent.json") == d.resolve()("/nonexistent.json")


@pytest.mark.parametrize("bad", ["no_colon", ":f", "m:", ""])
def test_a_deferred_target_without_module_and_attribute_is_refused(bad):
    with pytest.raises(ValueError, match="module:attribute"):
        Deferred(bad)


def test_a_deferred_function_that_does_not_exist_fails_when_called_naming_it():
    d = Deferred("xamm_ingest.sniff:no_such_function")
    with pytest.raises(AttributeError, match="no_such_function"):
        d()


def test_a_format_naming_an_unknown_table_is_told_the_tables_there_are():
    fmt = Format(
        name="x", summary="x", table="no_such_table", plan=Deferred("m:f"), read=Deferred("m:g")
    )
    assert fmt.ingests and fmt.table_name == "no_such_table"
    with pytest.raises(ValueError, match="'no_such_table'; expected one of .*app_profiles"):
        _ = fmt.rows_table


def test_a_json_file_is_guessed_caliper_by_its_head_and_another_programs_is_not(tmp_path):
    """Caliper's JSON (json-split, ``json(object)``, a plain list of records) is the Caliper
    format's; a Thicket's ``to_json()`` is RAJAPerf's; another program's JSON object beside them
    (settings, notes) is neither, so ``xamm predict FOLDER`` neither counts nor offers it."""
    from xamm_ingest.format import get_format

    heads = {
        "split.json": '{"data": [[0, 1.5]], "columns": ["path", "time"], "nodes": []}',
        "object.json": '{"records": [{"path": "main", "time": 1.5}], "globals": {}}',
        "list.json": '[{"path": "main", "time": 1.5}]',
        "thicket.json": '{"graph": [], "dataframe": []}',
        "settings.json": '{"threads": 8, "note": "a run\'s settings"}',
    }
    for name, text in heads.items():
        (tmp_path / name).write_text(text)
    caliper, rajaperf = get_format("caliper"), get_format("rajaperf")
    got = {n: (caliper.guess(tmp_path / n), rajaperf.guess(tmp_path / n)) for n in heads}
    assert got == {
        "split.json": (True, False),
        "object.json": (True, False),
        "list.json": (True, False),
        "thicket.json": (False, True),
        "settings.json": (False, False),
    }
