"""A centre's acceptance on real runs: the guide page's script (examples/centre_acceptance.py) run
in a fresh home, its certificates, histories and drifts checked against the files themselves;
quartz's -O0 build as a known change, dane's five runs and GCC 10.3.1's ten-and-ten as none."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import pytest

from xamm_data.cli.commands import main
from xamm_data.hashing import file_sha256
from xamm_ingest import read_rajaperf
from xamm_models.compare.history.drift import drift

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
sys.path.insert(0, str(EXAMPLES))

import acceptance_page  # noqa: E402
import centre_acceptance  # noqa: E402


@pytest.fixture(scope="module")
def guide(shared_data, tmp_path_factory):
    work = tmp_path_factory.mktemp("guide")
    mp = pytest.MonkeyPatch()
    mp.setenv("XAMM_HOME", str(work / "home"))
    try:
        log = centre_acceptance.steps(shared_data, work / "runs")
    finally:
        mp.undo()
    return shared_data, log, work


def _step(log, *argv):
    return next(e for e in log if e["argv"][: len(argv)] == list(argv))


def test_every_step_succeeds_and_the_certificates_rest_on_the_files(guide):
    data, log, _ = guide
    assert [e["code"] for e in log] == [0] * len(log)
    c1, c2 = [e["json"] for e in log if e["argv"][0] == "accept"]
    assert (c1["number"], c1["previous"], c2["number"], c2["previous"]) == (1, None, 2, 1)
    assert c1["verdict"] == c2["verdict"] == "pass" and c2["changed"] == []
    dane = sorted((data / centre_acceptance.DANE).glob("*/*.cali"))
    for cert, files in ((c1, dane[:2]), (c2, dane[2:])):
        g = cert["grounds"][0]
        assert g["target"] == "dane:cpu" and g["sources"] == len(files)
        shas = sorted(file_sha256(f) for f in files)  # the files' own bytes, hashed here
        assert g["runs_sha256"] == hashlib.sha256("\n".join(shas).encode()).hexdigest()
    assert c1["grounds"][0]["signature"] == "dane:cpu@1"
    assert c2["grounds"][0]["judged"] == "runs added since certificate 1"
    assert {r["criterion"] for r in c1["results"]} == {"stream-bandwidth", "no-slow-group"}


def test_the_routine_update_moves_nothing_and_the_bad_one_everything(guide):
    _, log, _ = guide
    dane = _step(log, "compare", "dane@now")["json"]
    assert not dane["drifted"] and len(dane["kernels"]) == 73
    assert {k["trials_before"] for k in dane["kernels"]} == {2}
    quartz = _step(log, "compare", "quartz@now")["json"]
    groups = [g for g in quartz["groups"] if g["group"] != "all"]
    assert groups and all(g["verdict"] == "slower" and g["lo"] > 1.05 for g in groups)
    slower = sum(k["verdict"] == "slower" for k in quartz["kernels"])
    assert slower >= 0.9 * len(quartz["kernels"])
    diff = _step(log, "amm", "diff")["json"]
    assert not any(f["moved"] for f in diff["figures"]) and not diff["drift"]["drifted"]
    # a figure measured as zero (dane's sequential runs launch nothing) has no ratio, never NaN
    zero = [f for f in diff["figures"] if f["older"] == 0]
    assert zero and all(f["ratio"] is None for f in zero)
    assert all(f["ratio"] is None or f["ratio"] == f["ratio"] for f in diff["figures"])
    # both versions ran the same kernels: nothing to say
    assert diff["kernels_only"] == {diff["older"]: [], diff["newer"]: []}


def test_histories_list_versions_runs_and_changes(guide):
    _, log, _ = guide
    dane = _step(log, "amm", "history", "dane")["json"]
    assert [r["version"] for r in dane] == [1, 2] and [r["sources"] for r in dane] == [2, 5]
    assert dane[0]["accepted"] == "certificate 1 (pass)"
    assert dane[1]["changes"].startswith("+3 runs")
    quartz = _step(log, "amm", "history", "quartz")["json"]
    assert "+1 runs" in quartz[1]["changes"] and "-O0" in quartz[1]["changes"]


def test_the_committed_guide_page_is_what_the_script_writes(guide):
    _, log, _ = guide
    acceptance_page.CRITERIA_TEXT = centre_acceptance.CRITERIA
    fresh = acceptance_page.page(log)
    committed = (EXAMPLES.parent / "docs" / "guide" / "acceptance.md").read_text()
    number = re.compile(r"\d+(\.\d+)?(e[+-]?\d+)?")  # numbers may differ in the last digit by CPU
    assert number.sub("#", fresh) == number.sub("#", committed)


def _drawn(monkeypatch, capsys, *argv: str) -> str:
    """What ``xamm ARGV`` prints, every table drawn with a rule between rows (where a row ends)."""
    from xamm_data.cli import summary

    real = summary.print_frame
    monkeypatch.setattr(
        summary, "print_frame", lambda *a, **k: real(*a, **{**k, "show_lines": True})
    )
    capsys.readouterr()
    assert main(list(argv)) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def _row_heights(text: str) -> list[int]:
    """The lines each table row of ``text`` takes (rows end at a rule: the header's, a row's, the
    table's bottom)."""
    heights, n = [], None
    for line in text.splitlines():
        if line.startswith(("╞", "├", "└")):
            if n:
                heights.append(n)
            n = None if line.startswith("└") else 0
        elif n is not None and line.startswith("│"):
            n += 1
    return heights


@pytest.mark.parametrize(
    "argv",
    [
        ("amm", "history", "dane"),
        ("amm", "history", "quartz"),
        ("amm", "diff", "dane:cpu@1", "dane:cpu@2"),
        ("compare", "quartz@now", "quartz@1"),
        ("compare", "dane", "quartz", "--size-ratio", "16"),
        ("datasets", "verify"),
    ],
    ids=" ".join,
)
def test_a_centres_commands_fit_100_columns_no_cell_over_two_lines(
    guide, argv, monkeypatch, capsys
):
    _, _, work = guide
    monkeypatch.setenv("XAMM_HOME", str(work / "home"))
    text = _drawn(monkeypatch, capsys, *argv)
    assert max(map(len, text.splitlines())) <= 100, text
    heights = _row_heights(text)
    assert max(heights, default=1) <= 2, text
    if argv[0] != "datasets":
        assert heights  # a table was drawn
    if argv[:2] == ("amm", "history"):  # what changed, in short, beside the certificate
        assert "certificate" in text or argv[2] == "quartz"
        assert "-O0" not in text and ("new flags" in text or argv[2] == "dane")
        wide = _drawn(monkeypatch, capsys, *argv, "--wide")
        assert "-O0" in wide or argv[2] == "dane"  # --wide: the flags themselves


def test_a_certificate_s_verdicts_fit_100_columns_with_their_reasons_under_them(
    guide, monkeypatch, capsys
):
    """The guide's first acceptance again, in a home of its own (dane's accepted runs against the
    embedded quartz), drawn with a rule between rows."""
    _, _, work = guide
    monkeypatch.setenv("XAMM_HOME", str(work / "home-accept"))
    centre_acceptance.ingest(work / "runs" / "dane-accepted")
    assert main(["amm", "build", "dane", "--kind", "physics"]) == 0
    crit = work / "runs" / "criteria.toml"
    text = _drawn(monkeypatch, capsys, "accept", "dane", "--against", "quartz", "--criteria",
                  str(crit), "--no-record")  # fmt: skip
    assert max(map(len, text.splitlines())) <= 100, text
    assert 0 < len(_row_heights(text)) and max(_row_heights(text)) <= 2, text
    assert "(1) " in text  # the first reason, under the table


def test_predict_regions_prints_the_regions_with_the_most_time_and_all_with_all(
    guide, monkeypatch, capsys
):
    data, _, work = guide
    monkeypatch.setenv("XAMM_HOME", str(work / "home"))
    lulesh = sorted((data / "LLNL+thicket-tutorial" / "data" / "lulesh").glob("*.cali"))[0]
    argv = ("predict", str(lulesh), "--regions", "--target", "dane:cpu")
    rows = json.loads(_drawn(monkeypatch, capsys, *argv, "--json"))["regions"]
    regions, targets = {r["region"] for r in rows}, {r["target"] for r in rows}
    top = _drawn(monkeypatch, capsys, *argv)
    programs = top[: top.index("└") + 1]  # the whole-program table, first
    assert max(map(len, programs.splitlines())) <= 100 and max(_row_heights(programs)) <= 2
    assert "dane:cpu" in programs and "[" in programs  # relR with its interval
    table = top[top.index("per region") :]
    table = table[: table.index("└")]  # the table (the notes after it are prose)
    assert f"the 10 of {len(regions)} regions with the most time" in table
    assert max(_row_heights(table)) <= 2 and max(map(len, table.splitlines())) <= 100
    every = _drawn(monkeypatch, capsys, *argv, "--all")
    assert len(_row_heights(every[every.index("per region") :])) == len(rows) > 10 * len(targets)
    assert len(_row_heights(top[top.index("per region") :])) == 10 * len(targets)
    # --wide: the same regions by path, every column
    wide = _drawn(monkeypatch, capsys, *argv, "--wide")
    wide = wide[wide.index("per region") :]
    assert len(_row_heights(wide)) == 10 * len(targets) and "relR_lo" in wide
    assert any(r in wide for r in regions if "/" in r)


def test_gcc_10_builds_at_o0_and_o3_measure_alike(shared_data):
    """The tutorial's GCC 10.3.1 builds carry -Ofast -march=native before the -O level: their
    ten -O0 and ten -O3 runs take the same time, and drift finds nothing (a real false-alarm
    check with ten trials a side)."""
    q = shared_data / "LLNL+thicket-tutorial/data/quartz/GCC_10.3.1_BaseSeq_08388608"
    o3, o0 = (read_rajaperf([str(q / o)], workers=1).frame for o in ("O3", "O0"))
    assert o0["compiler_flags"][0].startswith("-Ofast")
    assert not drift(o3, o0).drifted


def test_drift_states_need_an_acceptance_and_name_what_is_missing(shared_data, capsys):
    d = shared_data / centre_acceptance.DANE
    assert main(["compare", "dane@now", "dane@accepted"]) == 1
    assert "holds no benchmark runs" in capsys.readouterr().err
    from xamm_ingest.cli import main as ingest

    assert ingest(["rajaperf", str(d / "1"), "--no-progress", "-q"]) == 0
    assert main(["compare", "dane@now", "dane@accepted"]) == 1
    assert "no passing acceptance certificate" in capsys.readouterr().err
    assert main(["compare", "dane@now", "dane@yesterday"]) == 1
    assert "bad state" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(["compare", "dane"])
    assert usage.value.code == 2
    assert main(["compare", "dane", "--since", "2025-05-14"]) == 1
    assert "no run before 2025-05-14" in capsys.readouterr().err
    out = main(["compare", "dane", "--since", "2025-05-15", "--json"])
    assert out == 1 and "no run on or after" in capsys.readouterr().err


def test_signatures_certificates_and_histories_round_trip_the_hub(
    shared_data, tmp_path, local_hub, monkeypatch, capsys
):
    """Pushed from one home, pulled into another whose store has none of the runs: equal, and
    a certificate's bytes changed on the Hub after the push are refused naming the file."""
    from huggingface_hub import HfApi

    from xamm_data.hub.files import CorruptDataError
    from xamm_ingest.cli import main as ingest
    from xamm_models.compare.certificates.records import CertificateRegistry
    from xamm_models.compare.hub import pull_records
    from xamm_models.machines.signatures import SignatureRegistry

    d = shared_data / centre_acceptance.DANE
    crit = tmp_path / "criteria.toml"
    crit.write_text(centre_acceptance.CRITERIA)
    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "a"))
    for batch in (("1", "2"), ("3", "4", "5")):
        assert ingest(["rajaperf", *(str(d / r) for r in batch), "--no-progress", "-q"]) == 0
        assert main(["amm", "build", "dane", "--kind", "physics"]) == 0
        assert main(["accept", "dane", "--against", "quartz", "--criteria", str(crit)]) == 0
    assert main(["amm", "push", "--repo", "org/dane-records"]) == 0
    capsys.readouterr()
    assert main(["amm", "history", "dane", "--json"]) == 0
    history_a = json.loads(capsys.readouterr().out)
    certs_a = CertificateRegistry(tmp_path / "a" / "certificates").all("dane")

    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "b"))
    got = pull_records("org/dane-records", registry=SignatureRegistry.default())
    assert [c.number for c in got.certificates] == [1, 2]
    assert CertificateRegistry.default().all("dane") == certs_a
    assert {s.ref for s in got.signatures} >= {"dane:cpu@1 (physics)", "dane:cpu@2 (physics)"}
    assert main(["amm", "history", "dane", "--json"]) == 0  # no runs here: the pulled history
    assert json.loads(capsys.readouterr().out) == history_a

    HfApi().upload_file(
        path_or_fileobj=b'{"tampered": true}\n',
        path_in_repo="certificates/dane/certificate@1.json",
        repo_id="org/dane-records",
        repo_type="dataset",
    )
    monkeypatch.setenv("XAMM_HOME", str(tmp_path / "c"))
    with pytest.raises(CorruptDataError, match="certificate@1.json"):
        pull_records("org/dane-records", registry=SignatureRegistry.default())


@pytest.fixture(scope="module")
def report(guide):
    """The guide's ``xamm report`` (with the thicket tutorial's first LULESH profile), and what
    ``xamm predict`` prints for that profile in the same home."""
    data, log, work = guide
    mp = pytest.MonkeyPatch()
    mp.setenv("XAMM_HOME", str(work / "home"))
    try:
        predicted = _json_of("predict", str(work / "runs" / "lulesh.cali"))
    finally:
        mp.undo()
    assert _step(log, "report")["code"] == 0
    site = work / "runs" / "acceptance-report"
    return site, json.loads((site / "report.json").read_text()), predicted


def _json_of(*argv: str) -> dict:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*argv, "--json"]) == 0
    return json.loads(out.getvalue())


def test_the_report_links_every_page_and_draws_every_figure(report):
    sys.path.insert(0, str(EXAMPLES.parent / "benchmarks"))
    from report_in_browser import static_problems

    site, data, _ = report
    assert sorted(data["pages"]) == [
        "index.html", "machines/dane.html", "machines/dane/certificate-1.html",
        "machines/dane/certificate-2.html", "machines/quartz.html", "predictions.html",
    ]  # fmt: skip
    assert sorted(data["figures"]) == [
        "figures/dane-cpu-signature.png", "figures/predictions.png",
        "figures/quartz-cpu-drift.png", "figures/quartz-cpu-signature.png",
    ]  # fmt: skip
    for f in data["figures"]:
        assert (site / f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert static_problems(site) == []


def test_the_report_says_what_the_commands_say(guide, report):
    """Versions, drift and certificates as `xamm amm history`, `xamm compare M@now M@1` and the
    certificate files on disk hold them; the prediction as `xamm predict` prints it."""
    _, log, work = guide
    site, data, predicted = report
    by = {t["target"]: t for m in data["machines"] for t in m["targets"]}
    assert by["dane:cpu"]["versions"] == [1, 2] and by["quartz:cpu"]["versions"] == [1, 2]
    # dane was accepted on all five runs (certificate 2): nothing since to compare
    assert by["dane:cpu"]["drift"] is None
    assert by["dane:cpu"]["drift_state"] == "no runs added since the acceptance (certificate 2)"
    compared = _step(log, "compare", "quartz@now")["json"]
    drift = by["quartz:cpu"]["drift"]
    key = ("kernel", "problem_size", "verdict")
    assert [[k[c] for c in key] for k in drift["kernels"]] == [
        [k[c] for c in key] for k in compared["kernels"]
    ]
    slower = sum(k["verdict"] == "slower" for k in compared["kernels"])
    assert by["quartz:cpu"]["drift_state"] == (
        f"{slower} slower of {len(compared['kernels'])} kernels since signature version 1 "
        "(never accepted)"
    )
    index = (site / "index.html").read_text()
    assert by["quartz:cpu"]["drift_state"] in index
    for n in (1, 2):
        cert = json.loads((work / "home/certificates/dane" / f"certificate@{n}.json").read_text())
        page = (site / f"machines/dane/certificate-{n}.html").read_text()
        assert page.count('<span class="pass">pass</span>') >= len(cert["results"])
        for r in cert["results"]:
            assert f"<td>{r['criterion']}</td>" in page and f"<td>{r['group']}</td>" in page
    got = {r["target"]: r["relR"] for r in data["prediction"]["programs"]}
    want = {r["target"]: r["relR"] for r in predicted["programs"]}
    assert got.keys() == want.keys()
    assert all(got[t] == pytest.approx(want[t], rel=1e-9) for t in want)


def _masked(text: str) -> str:
    """A page with its numbers and hashes masked: they differ by CPU and by the day it ran."""
    return re.sub(r"[0-9a-f]{12,64}|\d+(\.\d+)?(e[+-]?\d+)?", "#", text)


def test_the_committed_report_is_what_the_script_writes(report):
    site, data, _ = report
    committed = EXAMPLES.parent / "docs" / "guide" / "acceptance-report"
    kept = json.loads((committed / "report.json").read_text())
    assert (kept["pages"], kept["figures"]) == (data["pages"], data["figures"])
    for page in data["pages"]:
        assert _masked((committed / page).read_text()) == _masked((site / page).read_text()), page
