"""Prediction input is checked before any model runs: named columns, refused rows, named files, no
traceback."""

from __future__ import annotations

import polars as pl
import pytest

from xamm_data.cli.commands import main
from xamm_models.profile_input import DEFAULT_COLUMNS, ProfileInputError, check_profiles

GOOD = {
    "app": ["a", "b"],
    "runtime_s": [1e-8, 2e-8],
    "bytes_per_rep": [8e6, 1.6e7],
    "flops_per_rep": [1e6, 2e6],
    "iterations_per_rep": [1e6, 1e6],
    "f_log_s_per_iter": [-8.0, -7.7],
    "f_arith_intensity": [0.125, 0.125],
    "f_log_problem_size": [6.0, 6.0],
}


def _predict(tmp_path, capsys, frame_or_bytes, *extra) -> tuple[int, str]:
    f = tmp_path / "p.parquet"
    if isinstance(frame_or_bytes, bytes):
        f.write_bytes(frame_or_bytes)
    else:
        frame_or_bytes.write_parquet(f)
    code = main(
        [
            "predict",
            str(f),
            "--model",
            "xamm/default",
            "--source",
            "quartz:cpu",
            "--target",
            "lassen:gpu",
            *extra,
        ]
    )
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.err + out.out


def test_a_good_profile_predicts(tmp_path, capsys):
    code, text = _predict(tmp_path, capsys, pl.DataFrame(GOOD))
    assert code == 0 and "lassen:gpu" in text


@pytest.mark.parametrize("value", [float("nan"), -1.0, 0.0, float("inf")])
def test_non_finite_or_non_positive_runtimes_are_refused_naming_the_rows(tmp_path, capsys, value):
    bad = pl.DataFrame(GOOD).with_columns(pl.Series("runtime_s", [1e-8, value]))
    code, text = _predict(tmp_path, capsys, bad)
    assert (
        code == 1
        and "runtime_s" in text
        and "row 1 (1 of 2)" in text
        and "time per iteration" in text
    )


def test_a_missing_column_is_named_with_its_meaning(tmp_path, capsys):
    code, text = _predict(tmp_path, capsys, pl.DataFrame(GOOD).drop("runtime_s"))
    assert (
        code == 1
        and ("lacks runtime_s (the profile's time per iteration on the source machine, s)") in text
    )


def test_kernels_per_rep_is_optional_but_checked_when_present(tmp_path, capsys):
    assert _predict(tmp_path, capsys, pl.DataFrame(GOOD))[0] == 0
    code, text = _predict(
        tmp_path, capsys, pl.DataFrame(GOOD).with_columns(pl.Series("kernels_per_rep", [1.0, 0.5]))
    )
    assert code == 1 and "kernels_per_rep" in text and "row 1" in text


def test_strings_in_a_numeric_column_are_named(tmp_path, capsys):
    code, text = _predict(
        tmp_path, capsys, pl.DataFrame(GOOD).with_columns(pl.col("bytes_per_rep").cast(pl.String))
    )
    assert code == 1 and "bytes_per_rep" in text and "not numbers" in text


def test_a_file_that_is_not_parquet_is_named(tmp_path, capsys):
    code, text = _predict(tmp_path, capsys, b"not a parquet file at all")
    assert code == 1 and "p.parquet: cannot read it as Parquet" in text


def test_an_empty_input_is_refused(tmp_path, capsys):
    code, text = _predict(tmp_path, capsys, pl.DataFrame(GOOD).clear())
    assert code == 1 and "no profiles" in text


def test_a_store_of_application_profiles_only_is_refused(tmp_path, capsys):
    from xamm_data.store.store import Store
    from xamm_ingest import ingest_profiles

    (tmp_path / "t.csv").write_text("app,machine,runtime_s\nA,quartz,1.5\n")
    (tmp_path / "m.toml").write_text(
        '[columns]\napp = "app"\nmachine = "machine"\nruntime_s = "runtime_s"\n'
    )
    ingest_profiles(
        "table", tmp_path / "t.csv", mapping=tmp_path / "m.toml", store=Store(tmp_path / "store")
    )
    code = main(
        [
            "predict",
            str(tmp_path / "store"),
            "--model",
            "xamm/default",
            "--source",
            "quartz:cpu",
            "--target",
            "lassen:gpu",
        ]
    )
    out = capsys.readouterr()
    assert code == 1 and "holds no benchmark_runs" in out.err and "Traceback" not in out.err


def test_a_cut_table_says_how_many_rows_it_left_out(tmp_path, capsys):
    many = pl.concat([pl.DataFrame(GOOD)] * 30)
    code, text = _predict(tmp_path, capsys, many, "--target", "h100-node:gpu")
    assert code == 0 and "showing 50 of 120 rows (70 left out)" in text and "--out" in text


def test_the_contract_names_each_column_with_meaning_and_unit():
    with pytest.raises(ProfileInputError) as e:
        check_profiles(pl.DataFrame({"x": [1.0]}))
    for c in DEFAULT_COLUMNS:
        assert (c.name in str(e.value)) == c.required
        if c.required:
            assert c.meaning in str(e.value) and c.unit in str(e.value)


def test_profiles_that_are_no_polars_frame_and_a_target_named_alone(tmp_path):
    """What is not a polars DataFrame is refused naming its type (a pandas frame is pointed to
    pl.from_pandas), never an AttributeError; one target named alone is that target, not a list of
    its letters."""
    from xamm_models.zoo import load_model

    model = load_model("xamm/default")
    for bad, name in ((None, "NoneType"), ({"a": [1]}, "dict"), ([GOOD], "list")):
        with pytest.raises(ProfileInputError, match=f"profiles: a {name}; .*polars DataFrame"):
            model.rank_targets(bad, "quartz:cpu", ["lassen:gpu"])
        with pytest.raises(ProfileInputError, match=f"profiles: a {name};"):
            check_profiles(bad)
    good = pl.DataFrame(GOOD)
    alone = model.predict(good, "quartz:cpu", "lassen:gpu")
    assert alone.equals(model.predict(good, "quartz:cpu", ["lassen:gpu"]))
    assert alone.get_column("target").unique().to_list() == ["lassen:gpu"]
