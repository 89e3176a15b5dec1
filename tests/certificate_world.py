"""Certificates made in a test, without runs: the registry's rules (numbers, hashes, chain,
signatures) hold whatever a certificate judged, so these carry one made-up verdict each.

Synthetic data tests code paths here, never a claim about a machine."""

from __future__ import annotations

import hashlib

from xamm_models.compare.certificates.evidence import sources_sha256
from xamm_models.compare.certificates.records import (
    Certificate,
    CertificateRegistry,
    Criteria,
    Criterion,
    Ground,
    GroupResult,
)


def source_hashes(*names: str) -> list[str]:
    """Stand-ins for source-file hashes: the SHA-256 of each name."""
    return [hashlib.sha256(n.encode()).hexdigest() for n in names]


def certificate(
    machine: str = "newbox",
    verdict: str = "pass",
    relR: float = 0.9,
    sources: tuple[str, ...] = ("run-1",),
    device: str = "cpu",
) -> Certificate:
    """An unnumbered certificate of ``machine:device`` against quartz with one group's verdict."""
    shas = source_hashes(*sources)
    crit = Criteria(criterion=[Criterion(id="no-slow-group", kind="slowdown", at_most=0.1)])
    ground = Ground(
        target=f"{machine}:{device}",
        data_version=None,
        signature=None,
        data_sha256=None,
        runs_sha256=sources_sha256(shas),
        sources=len(shas),
        rows=10 * len(shas),
        state_sources=sorted(shas),
        state_sha256=sources_sha256(shas),
    )
    result = GroupResult(
        criterion="no-slow-group",
        ref="quartz:cpu",
        group="Stream",
        kernels=5,
        basis="node",
        relR=relR,
        lo=relR * 0.9,
        hi=relR * 1.1,
        limit=1.1,
        verdict=verdict,
        certain=True,
    )
    return Certificate(
        machine=machine,
        new=f"{machine}:{device}",
        refs=["quartz:cpu"],
        family="Base",
        verdict=verdict,
        criteria=crit,
        criteria_sha256="0" * 64,
        grounds=[ground],
        results=[result],
        size_ratio=1.5,
    )


def chain(root, n: int = 3, machine: str = "newbox", sign_key=None) -> CertificateRegistry:
    """A registry under ``root`` holding ``n`` certificates of ``machine``: pass, fail, pass, ..."""
    reg = CertificateRegistry(root)
    for i in range(n):
        verdict = "pass" if i % 2 == 0 else "fail"
        c = certificate(
            machine, verdict, relR=0.9 if verdict == "pass" else 1.2, sources=(f"run-{i}",)
        )
        reg.add(c, sign_key=sign_key)
    return reg


# -- hostile Hub repos ----------------------------------------------------------------------------

#: the ways a published repo lies about certificates, signatures and histories
HOSTILE = (
    "traversal",
    "absolute",
    "signature-traversal",
    "mismatch",
    "edited",
    "gap",
    "history-name",
    "unsigned",
)


def publish(repo: str, extra: dict[str, bytes], tmp) -> None:
    """A Hub repo holding one real signature (the snapshot's dane) and ``extra`` files, the card
    recording every file's SHA-256: a pull of it is refused for what the files say, never for a
    checksum."""
    from xamm_data.hub import snapshot
    from xamm_models.machines.hub import push_signatures
    from xamm_models.machines.signatures import SignatureRegistry

    reg = SignatureRegistry(tmp / "published-signatures")
    reg.add(SignatureRegistry(snapshot.signatures_root()).get("dane:cpu", kind="physics"))
    push_signatures(repo, registry=reg, extra=extra)


def cert_bytes(reg: CertificateRegistry, n: int, **edit) -> bytes:
    """Certificate ``n`` of newbox as published, with ``edit`` applied."""
    import json

    doc = json.loads(reg.path("newbox", n).read_text())
    return (json.dumps({**doc, **edit}, indent=2) + "\n").encode()


def signature_bytes(**edit) -> bytes:
    """The snapshot's dane physics signature as published, with ``edit`` applied."""
    import json

    from xamm_data.hub import snapshot

    doc = json.loads((snapshot.signatures_root() / "dane" / "cpu.physics@1.json").read_text())
    return json.dumps({**doc, **edit}).encode()


def hostile_files(case: str, made: CertificateRegistry) -> dict[str, bytes]:
    """The files a hostile repo publishes for ``case`` (one of :data:`HOSTILE`), from a good
    chain of three newbox certificates."""
    good = {f"certificates/newbox/certificate@{n}.json": cert_bytes(made, n) for n in (1, 2, 3)}
    one = "certificates/newbox/certificate@1.json"
    return {
        "traversal": {**good, one: cert_bytes(made, 1, machine="../../escape")},
        "absolute": {one: cert_bytes(made, 1, machine="/tmp/escape")},
        "signature-traversal": {
            "signatures/dane/cpu.physics@7.json": signature_bytes(machine="../../escape", version=7)
        },
        "mismatch": {"certificates/other/certificate@1.json": good[one]},
        "edited": {
            **good,
            "certificates/newbox/certificate@2.json": cert_bytes(made, 2, verdict="pass"),
        },
        "gap": {k: v for k, v in good.items() if not k.endswith("@2.json")},
        "history-name": {**good, "histories/Bad Name.json": b"[]\n"},
        "unsigned": good,
    }[case]
