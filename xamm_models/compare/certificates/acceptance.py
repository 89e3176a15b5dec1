"""``accept(new, refs, criteria)``: judge a machine against references and issue a certificate.

The certificate (:class:`~xamm_models.compare.certificates.records.Certificate`) records the
verdict per criterion, reference and kernel group, the physics signature version, store version and
data hashes of every target it rests on, and which verdicts changed against the machine's previous
certificate, so rerunning the same command after a system update shows what changed.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import polars as pl

from xamm_data.atomic import write_text_atomic
from xamm_data.machines.targets import Target
from xamm_data.store.store import as_store
from xamm_models.benchmark.dataset import samples_from_runs
from xamm_models.compare.certificates.evidence import sources_sha256
from xamm_models.compare.certificates.records import (
    Certificate,
    CertificateRegistry,
    Ground,
    GroupResult,
    judge,
    overall,
    read_criteria,
)
from xamm_models.compare.runs.comparison import compare_runs
from xamm_models.compare.runs.report import table
from xamm_models.compare.runs.targets import describe_runs, target_runs
from xamm_models.machines.signatures import SignatureRegistry, physics_record

__all__ = ["accept", "markdown", "write_certificate"]

CERTIFICATE_MD = "certificate.md"
CERTIFICATE_JSON = "certificate.json"


def _sources(rows: pl.DataFrame | pl.LazyFrame) -> list[str]:
    got = rows.lazy().select(pl.col("source_sha256").drop_nulls().unique().cast(pl.String))
    return sorted(got.collect().to_series().to_list())


def _runs_sha256(rows: pl.DataFrame | pl.LazyFrame) -> str:
    return sources_sha256(_sources(rows))


def _signature(target: str, rows: pl.LazyFrame, version: int | None, registry):
    """The physics signature of all the target's runs, registered as ``xamm amm build --kind
    physics`` registers it (the same inputs give the same version), for runs from the store; else
    the one the embedded snapshot ships."""
    if version is not None:
        samples = samples_from_runs(rows).filter(pl.col("target") == target)
        return registry.add(physics_record(target, samples).model_copy(
            update={"data_version": version}))  # fmt: skip
    try:
        return SignatureRegistry.for_reading().get(target, kind="physics")
    except KeyError:
        return None


def _ground(target: str, every: pl.LazyFrame, rows: pl.LazyFrame, store, registry) -> Ground:
    """What a certificate rests on for one target: the signature of all its runs (``every``),
    and the runs it judged (``rows``)."""
    st = as_store(store)
    in_store = st.has("benchmark_runs", Target.parse(target).machine)
    version = st.version("benchmark_runs") if in_store else None
    sig = _signature(target, every, version, registry)
    runs = describe_runs(rows)
    state = _sources(every)
    return Ground(
        state_sources=state,
        state_sha256=sources_sha256(state),
        target=target,
        data_version=version,
        signature=f"{sig.target}@{sig.version}" if sig is not None else None,
        data_sha256=sig.data_sha256 if sig is not None else None,
        runs_sha256=_runs_sha256(rows),
        sources=runs["sources"],
        rows=runs["rows"],
        first_run=runs["first_run"],
        last_run=runs["last_run"],
    )


def _since(rows: pl.LazyFrame, previous: Certificate | None) -> tuple[pl.LazyFrame, str]:
    """The runs a certificate judges: after an earlier certificate, the runs added since it (the
    machine as it is after the update), else all of them."""
    if previous is None:
        return rows, "all runs"
    ground = previous.ground()
    if ground is None or not ground.state_sources:
        return rows, "all runs"
    added = rows.filter(~pl.col("source_sha256").is_in(pl.Series(ground.state_sources).implode()))
    if added.select(pl.len()).collect().item() == 0:
        return rows, f"all runs (none added since certificate {previous.number})"
    return added, f"runs added since certificate {previous.number}"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}"


def _changes(results: list[GroupResult], previous: Certificate | None):
    if previous is None:
        return results, []
    before = {(r.criterion, r.ref, r.group): r for r in previous.results}
    out, changed = [], []
    for r in results:
        p = before.get((r.criterion, r.ref, r.group))
        out.append(r.model_copy(update={"before": p.verdict if p else None}))
        if p is not None and p.verdict != r.verdict:
            changed.append(
                f"{r.criterion} / {r.ref} / {r.group}: {p.verdict} -> {r.verdict} "
                f"(relR {_num(p.relR)} -> {_num(r.relR)}, limit {r.limit:.3g})"
            )
    return out, changed


def accept(
    new: str,
    refs: list[str],
    criteria: str | Path,
    *,
    store=None,
    registry=None,
    certificates: CertificateRegistry | None = None,
    family: str | None = None,
    record: bool = True,
    sign_key=None,
) -> Certificate:
    """Judge ``new`` against ``refs`` by the criteria file and issue a certificate.

    Args:
        new: the machine accepted (``machine`` or ``machine:device``).
        refs: reference targets.
        criteria: ``criteria.toml``.
        store: the local store (default ``$XAMM_HOME/store``).
        registry: the signature registry signatures are built into (default ``$XAMM_HOME``'s).
        certificates: the certificate registry (default ``$XAMM_HOME/certificates``).
        family: the variant family compared (default: the first every target ran).
        record: register the certificate (a passing one becomes ``MACHINE@accepted``).
        sign_key: an Ed25519 private key (:func:`~xamm_models.compare.certificates.evidence.
            load_private_key`) the centre signs the recorded certificate with.

    Returns:
        The certificate, numbered when recorded.
    """
    crit, crit_sha = read_criteria(criteria)
    if not refs:
        raise ValueError("accept needs at least one reference (--against REF)")
    machine = Target.parse(new).machine
    if any(Target.parse(r).machine == machine for r in refs):
        raise ValueError(f"{new} cannot be accepted against itself ({', '.join(refs)}): name "
                         "another machine, or compare its states (xamm compare M@now "
                         "M@accepted)")  # fmt: skip
    certs = certificates or CertificateRegistry.default()
    # the previous certificate read, the comparison and the new number under one lock: two
    # accepts at once each follow the other
    with certs.writing(machine) if record else contextlib.nullcontext():
        cert = _certify(new, refs, crit, crit_sha, store, registry, certs, family)
        return certs.add(cert, sign_key=sign_key) if record else cert


def _runs(new: str, refs: list[str], store) -> dict[str, pl.LazyFrame]:
    """Each target's runs, ``new`` first. A bare ``new`` whose runs hold several devices (a GPU
    run's host rows) takes the references' device when they share one."""
    ref_runs = dict(target_runs(r, store=store) for r in refs)
    devices = {Target.parse(r).device for r in ref_runs}
    t = Target.parse(new)
    try:
        first = target_runs(new, store=store)
    except ValueError:
        if t.device is not None or len(devices) != 1:
            raise
        first = target_runs(f"{t.machine}:{devices.pop()}", store=store)
    return {first[0]: first[1], **ref_runs}


def _certify(new, refs, crit, crit_sha, store, registry, certs, family) -> Certificate:
    runs = _runs(new, refs, store)
    every = dict(runs)
    names = list(runs)
    machine = Target.parse(names[0]).machine
    previous = certs.latest(machine, names[0])
    runs[names[0]], judged = _since(runs[names[0]], previous)
    c = compare_runs(runs, names[0], names[1:], family=family, size_ratio=crit.size_ratio)
    reg = registry or SignatureRegistry.default()
    grounds = [_ground(t, every[t], rows, store, reg) for t, rows in runs.items()]
    grounds[0] = grounds[0].model_copy(update={"judged": judged})
    results, changed = _changes(judge(c, crit), previous)
    return Certificate(
        machine=machine,
        new=names[0],
        refs=names[1:],
        family=c.family,
        verdict=overall(results),
        criteria=crit,
        criteria_sha256=crit_sha,
        grounds=grounds,
        results=results,
        changed=changed,
        previous=previous.number if previous else None,
        size_ratio=c.size_ratio,
    )


def markdown(cert: Certificate) -> str:
    """The certificate as Markdown.

    Args:
        cert: a certificate.

    Returns:
        Markdown.
    """
    number = f" no. {cert.number}" if cert.number else ""
    fails = sum(r.verdict == "fail" for r in cert.results)
    not_judged = sum(r.verdict == "not judged" for r in cert.results)
    out = [
        f"# Acceptance certificate{number}: {cert.new}\n",
        f"**{cert.verdict.upper()}** against {', '.join(cert.refs)} by the criteria "
        f'"{cert.criteria.name}" ({len(cert.results)} group verdicts, {fails} failed), '
        f"variant family {cert.family}; issued {cert.created} by xamm {cert.xamm_version}.\n",
        "relR is the geometric mean over a kernel group of seconds per iteration on "
        f"{cert.new} / on the reference, with its 90% bootstrap interval over kernels; a group "
        "passes when relR is within the limit, and `certain` says the whole interval is.\n",
        f"Problem sizes were matched within {cert.size_ratio or 1.5:g}x. A group whose matched "
        "sizes sit in different cache levels on the two nodes (working set against the "
        "registry's last-level cache) is never certain, and `why` says so; a group a criterion "
        f"names that was not compared is `not judged` ({not_judged} here).\n",
        "## Results\n",
        table(cert.frame().drop("before") if cert.previous is None else cert.frame()),
    ]
    if cert.previous is not None:
        out.append(f"\n## Changed since certificate {cert.previous}\n")
        out.append("".join(f"- {line}\n" for line in cert.changed) or "Nothing changed.\n")
    out += [
        "\n## What it rests on\n",
        table(pl.DataFrame([g.model_dump(exclude={"state_sources"}) for g in cert.grounds])),
        "\n## Criteria\n",
        f"`criteria.toml` sha256 {cert.criteria_sha256}, schema version "
        f"{cert.criteria.schema_version}; certificate schema version {cert.schema_version}.\n\n",
        "".join(
            f"- `{c.id}` ({c.kind}, groups {', '.join(c.groups)}, limit relR <= "
            f"{c.limit:.3g}, {c.basis}): {c.description}\n"
            for c in cert.criteria.criterion
        ),
    ]
    return "\n".join(out)


def write_certificate(cert: Certificate, out: str | Path) -> list[Path]:
    """Write ``certificate.md`` and ``certificate.json`` into ``out``.

    Returns:
        The two paths.
    """
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    md, js = d / CERTIFICATE_MD, d / CERTIFICATE_JSON
    write_text_atomic(md, markdown(cert))
    write_text_atomic(js, json.dumps(cert.model_dump(mode="json"), indent=2) + "\n")
    return [md, js]
