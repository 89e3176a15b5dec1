"""Numbers users write are checked: criteria limits, tolerances, size ratios and ``@N``; a group
a criterion names that is not compared is "not judged"; a group compared across cache levels is
never certain."""

from __future__ import annotations

import polars as pl
import pytest
from surface_oracles import comparison_of

from xamm_data.cli.commands import main
from xamm_models.compare.certificates.records import Criteria, judge, overall, read_criteria
from xamm_models.compare.history.states import parse_state_ref

GOOD = """schema_version = 1
name = "t"
[[criterion]]
id = "c"
kind = "{kind}"
groups = {groups}
{limit}
"""


def _criteria(tmp_path, limit: str, kind: str = "slowdown", groups: str = '["Stream"]'):
    p = tmp_path / "criteria.toml"
    p.write_text(GOOD.format(kind=kind, groups=groups, limit=limit))
    return p


@pytest.mark.parametrize(
    "kind, limit, says",
    [
        ("slowdown", "at_most = inf", "finite"),
        ("slowdown", "at_most = nan", "finite"),
        ("throughput", "at_least = 80", "looks like a percent: limits are fractions, write 0.8"),
        ("slowdown", "at_most = 10", "looks like a percent"),
        ("slowdown", "at_most = 1e308", "less"),
        ("throughput", "at_least = 0", "greater than 0"),
        ("slowdown", "at_most = -0.1", "greater"),
        ("throughput", "at_least = true", "not true or false"),
        ("throughput", 'at_least = "0.8"', "number"),
    ],
)
def test_limits_that_cannot_fail_or_cannot_pass_are_refused_naming_the_file(
    tmp_path, kind, limit, says
):
    p = _criteria(tmp_path, limit, kind)
    with pytest.raises(ValueError, match=says) as e:
        read_criteria(p)
    assert str(p) in str(e.value) and "criterion.0" in str(e.value)


@pytest.mark.parametrize("ratio", ["nan", "inf", "0.5", "1e9"])
def test_a_size_ratio_that_means_nothing_is_refused(tmp_path, ratio):
    p = tmp_path / "c.toml"
    p.write_text(
        f"size_ratio = {ratio}\n"
        + GOOD.format(kind="slowdown", groups='["*"]', limit="at_most = 0.1")
    )
    with pytest.raises(ValueError, match="size_ratio"):
        read_criteria(p)


def test_a_misspelt_group_is_not_judged_beside_the_others(tmp_path):
    crit, _ = read_criteria(_criteria(tmp_path, "at_most = 0.1", groups='["Stream", "Strem"]'))
    results = judge(comparison_of(["Stream", "Basic"]), crit)
    by = {r.group: r for r in results}
    assert by["Stream"].verdict == "pass" and by["Stream"].certain
    assert by["Strem"].verdict == "not judged" and "compared: Stream, Basic" in by["Strem"].why
    assert overall(results) == "pass"  # judged on what was compared, the rest listed


def test_nothing_to_judge_is_one_clear_error(tmp_path):
    crit, _ = read_criteria(_criteria(tmp_path, "at_most = 0.1", groups='["Strem"]'))
    with pytest.raises(
        ValueError,
        match="no criterion could be judged: the compared kernel groups are Basic, Stream",
    ):
        judge(comparison_of(["Stream", "Basic"]), crit)
    empty = comparison_of([])
    with pytest.raises(ValueError, match="no kernel of newbox:cpu was matched"):
        judge(empty, crit)


def test_a_group_compared_across_cache_levels_is_never_certain(tmp_path):
    crit, _ = read_criteria(_criteria(tmp_path, "at_most = 0.1"))
    (r,) = judge(comparison_of(["Stream"], regime="across"), crit)
    assert r.verdict == "pass" and not r.certain and "cache levels" in r.why


@pytest.mark.parametrize("flag", ["--tolerance", "--size-ratio"])
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "1e9"])
def test_tolerances_and_size_ratios_are_finite_and_in_range(flag, value, capsys):
    with pytest.raises(SystemExit) as e:
        main(["compare", "dane", "quartz", flag, value])
    assert e.value.code == 2 and "expected a number from" in capsys.readouterr().err


def test_a_drift_tolerance_is_checked_in_the_library_too():
    from xamm_models.compare.history.drift import drift

    empty = pl.DataFrame()
    for bad in (float("nan"), float("inf"), -0.1):
        with pytest.raises(ValueError, match="tolerance a fraction"):
            drift(empty, empty, target="x:cpu", tolerance=bad)


@pytest.mark.parametrize("ref", ["dane@0", "dane@00", "dane@01", "dane@-1", "../x@now", "dane@1.5"])
def test_a_state_is_exact_or_refused(ref):
    with pytest.raises(ValueError):
        parse_state_ref(ref)
    assert parse_state_ref("dane:cpu@12") == ("dane:cpu", "12")


def test_a_machine_is_never_accepted_against_itself(tmp_path, capsys):
    p = _criteria(tmp_path, "at_most = 0.1")
    assert main(["accept", "dane", "--against", "dane:cpu", "--criteria", str(p)]) == 1
    assert "cannot be accepted against itself" in capsys.readouterr().err


def test_the_schema_refuses_what_the_model_refuses():
    schema = Criteria.model_json_schema()
    limit = schema["$defs"]["Criterion"]["properties"]["at_least"]["anyOf"][0]
    assert limit["exclusiveMinimum"] == 0 and limit["maximum"] == 10


def test_certificates_on_real_runs_say_the_size_ratio_and_the_cache_levels(
    shared_data, tmp_path, monkeypatch
):
    """dane's node against quartz's at sizes 16x apart: Stream's matched sizes sit within dane's
    node cache and beyond quartz's (quartz's one rank scaled to its node), so no verdict is
    certain, and the certificate says why."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
    import centre_acceptance

    from xamm_ingest.cli import main as ingest
    from xamm_models.compare.certificates.acceptance import accept, markdown

    d = shared_data / centre_acceptance.DANE
    crit = tmp_path / "criteria.toml"
    crit.write_text(centre_acceptance.CRITERIA)
    assert ingest(["rajaperf", str(d / "1"), "--no-progress", "-q"]) == 0
    cert = accept("dane", ["quartz"], crit, record=False)
    stream = [r for r in cert.results if r.group == "Stream"]
    assert stream and all(not r.certain and "cache levels" in r.why for r in stream)
    assert cert.size_ratio == 16 and "matched within 16x" in markdown(cert)
