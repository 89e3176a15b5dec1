"""Publishing AMM signatures to, and pulling them from, one Hugging Face Hub repo.

The repo holds one file per ``machine:device@version`` and kind
(``signatures/<machine>/<device>@<v>.json``; ``<device>.physics@<v>.json`` for physics signatures,
as in the local registry) and a card listing them. Pulling adds each file to the local registry,
which refuses a version that differs from one it already has: published versions never change.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

from huggingface_hub import CommitOperationAdd, DatasetCardData, hf_hub_download
from pydantic import ValidationError

from xamm_data._version import __version__
from xamm_data.errors import TamperedError
from xamm_data.hub.files import check_hub_etag, read_verified, sha256
from xamm_data.hub.publish import api, card_metadata, hub_endpoint, hub_errors
from xamm_data.identifiers import is_name
from xamm_models.errors import ImmutableSignatureError
from xamm_models.machines.signatures import Signature, SignatureRegistry

#: folders of a signature repo that hold files other than signatures (pushed through ``extra``)
EXTRA_DIRS = ("certificates/", "histories/")
_FILE = re.compile(r"^signatures/(?P<m>[^/]+)/(?P<d>cpu|gpu)(\.(?P<k>[a-z]+))?@(?P<v>\d+)\.json$")


def repo_path(s: Signature) -> str:
    """Where a signature lives in the repo: the registry's own file name (kinds other than attention
    carry theirs)."""
    stem = s.device if s.kind == "attention" else f"{s.device}.{s.kind}"
    return f"signatures/{s.machine}/{stem}@{s.version}.json"


def _card(repo_id: str, sigs: list[Signature], files: dict[str, str]) -> str:
    data = DatasetCardData(
        license="other",
        pretty_name="xamm AMM signatures",
        tags=["xamm", "hpc", "amm"],
        xamm={"xamm_version": __version__, "files": dict(sorted(files.items()))},
    )
    lines = [
        f"# {repo_id}",
        "",
        "Abstract Machine Model signatures (xAMM Algorithm 1), one immutable file per version.",
        "",
        "| signature | aggregation | normalise | kernels | coverage | "
        "samples | embedder | data sha256 | created |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in sorted(sigs, key=lambda s: (s.machine, s.device, s.version)):
        lines.append(
            f"| `{s.ref}` | {s.aggregation} | {s.normalise} | "
            f"{len(s.kernels)} | {s.coverage:.2f} | {s.n_samples} | "
            f"{s.embedder_id}@{s.embedder_revision} | {s.data_sha256[:12]} | "
            f"{s.created} |"
        )
    extra = sorted(f for f in files if f.startswith(EXTRA_DIRS))
    if extra:
        lines += ["", "Acceptance certificates and machine histories:", ""]
        lines += [f"- `{f}`" for f in extra]
    lines += [
        "",
        "```python",
        "from xamm_models.machines.hub import pull_signatures",
        f"pull_signatures({repo_id!r})",
        "```",
        "",
    ]
    return f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines)


def push_signatures(
    repo_id: str,
    *,
    refs: list[str] | None = None,
    registry: SignatureRegistry,
    token=None,
    revision: str = "main",
    extra: dict[str, bytes] | None = None,
    replaceable: tuple[str, ...] = (),
) -> str:
    """Publish signatures to a Hub repo; a published version is never changed.

    Args:
        repo_id: the Hub repo.
        refs: the signatures to push (default: every local one).
        registry: the local registry.
        token: a Hub token.
        revision: the branch to commit to.
        extra: other files to publish beside them (repo path -> bytes), checksummed in the card
            like the signatures: a machine's certificates and history.
        replaceable: path prefixes of ``extra`` files a push may replace (a history grows); any
            other published file never changes.

    Returns:
        The commit.
    """
    reg = registry
    sigs = [reg.get(r) for r in refs] if refs else reg.all()
    if not sigs:
        raise FileNotFoundError(
            f"no signatures in {reg.root} to push; build them with `xamm amm build`"
        )
    with hub_errors(f"push {len(sigs)} signature(s) to {repo_id}"):
        return _push(repo_id, sigs, token, revision, extra or {}, replaceable)


def _extra_ops(repo_id, extra, remote, recorded, revision, token, replaceable):
    """The commit operations and SHA-256s of the extra files that are new or may be replaced
    (``recorded``: the SHA-256s the repo's card holds)."""
    ops, shas = [], {}
    for path, data in sorted(extra.items()):
        if path in remote and not path.startswith(replaceable):
            local = _download(repo_id, path, revision, token)
            if read_verified(local, recorded.get(path), f"{repo_id}@{revision}: {path}") != data:
                raise ValueError(f"{path} is published on {repo_id} with other content; "
                                 "published files never change")  # fmt: skip
            continue
        ops.append(CommitOperationAdd(path_in_repo=path, path_or_fileobj=io.BytesIO(data)))
        shas[path] = sha256(data)
    return ops, shas


def _push(repo_id: str, sigs, token, revision: str, extra: dict, replaceable) -> str:
    hub = api(token)
    hub.create_repo(repo_id, repo_type="dataset", exist_ok=True)
    listed = hub.list_repo_files(repo_id, repo_type="dataset", revision=revision)
    others = [f for f in listed if not _FILE.match(f) and f.startswith(EXTRA_DIRS)]
    remote = {}
    for f in listed:
        m = _FILE.match(f)
        if m:
            remote[f] = m
    ops, published, shas = [], [], {}
    for s in sigs:
        path = repo_path(s)
        text = (s.model_dump_json(indent=2) + "\n").encode()
        if path in remote:
            old = _pull_one(repo_id, path, revision, token)
            if old.model_dump(exclude={"created"}) != s.model_dump(exclude={"created"}):
                raise ValueError(
                    f"{s.ref} is published on {repo_id} with other content; published "
                    "versions never change"
                )
            published.append(old)
            continue
        ops.append(CommitOperationAdd(path_in_repo=path, path_or_fileobj=io.BytesIO(text)))
        published.append(s)
        shas[path] = sha256(text)
    for f in remote:
        if all(f != repo_path(s) for s in published):
            published.append(_pull_one(repo_id, f, revision, token))
    recorded = _recorded(repo_id, revision, token) if remote or others else {}
    more, more_shas = _extra_ops(
        repo_id, extra, set(others), recorded, revision, token, replaceable
    )
    ops += more
    kept = {f: recorded[f] for f in [*remote, *others] if f in recorded}
    shas = {**kept, **shas, **more_shas}
    ops.append(
        CommitOperationAdd(
            path_in_repo="README.md",
            path_or_fileobj=io.BytesIO(_card(repo_id, published, shas).encode()),
        )
    )
    return hub.create_commit(
        repo_id,
        ops,
        repo_type="dataset",
        revision=revision,
        commit_message=f"xamm {__version__}: publish {len(ops) - 1} signature(s)",
    ).oid


def _download(repo_id: str, path: str, revision: str, token) -> str:
    return hf_hub_download(
        repo_id, path, repo_type="dataset", revision=revision, endpoint=hub_endpoint(), token=token
    )


def _recorded(repo_id: str, revision: str, token) -> dict[str, str]:
    """The SHA-256 of each signature file, as the repo's card at ``revision`` recorded it at
    push."""
    card = _download(repo_id, "README.md", revision, token)
    text = Path(card).read_bytes()
    check_hub_etag(card, text, f"{repo_id}@{revision}: README.md")
    return card_metadata(text, f"{repo_id}@{revision}: README.md", "files")


def _pull_one(
    repo_id: str, path: str, revision: str, token, recorded: dict[str, str] | None = None
) -> Signature:
    """One published signature, its bytes checked against the card's record (fetched when not
    given)."""
    recorded = _recorded(repo_id, revision, token) if recorded is None else recorded
    local = _download(repo_id, path, revision, token)
    data = read_verified(local, recorded.get(path), f"{repo_id}@{revision}: {path}")
    try:
        return Signature.model_validate_json(data)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"]) or "(file)"
        raise TamperedError(
            f"{repo_id}@{revision}: {path}: not a signature xamm can keep ({where}: {err['msg']})"
        ) from None


def pull_files(repo_id: str, prefix: str, *, revision: str = "main", token=None) -> dict:
    """Every file of a Hub repo under ``prefix`` (``certificates/``, ``histories/``), each
    checked against the SHA-256 the repo's card recorded at push.

    Args:
        repo_id: the Hub repo.
        prefix: a folder of the repo.
        revision: the revision to pull (pin a commit).
        token: a Hub token.

    Returns:
        Repo path -> bytes.
    """
    with hub_errors(f"pull {prefix} from {repo_id}@{revision}"):
        files = sorted(
            f
            for f in api(token).list_repo_files(repo_id, repo_type="dataset", revision=revision)
            if f.startswith(prefix)
        )
        recorded = _recorded(repo_id, revision, token) if files else {}
        return {
            f: read_verified(
                _download(repo_id, f, revision, token),
                recorded.get(f),
                f"{repo_id}@{revision}: {f}",
            )
            for f in files
        }


def _agrees(path: str, s: Signature) -> Signature:
    """``s`` when its content names the machine, device, kind and version its repo path does."""
    m = _FILE.match(path)
    want = (m["m"], m["d"], m["k"] or "attention", int(m["v"])) if m else None
    if want != (s.machine, s.device, s.kind, s.version):
        raise TamperedError(f"{path}: the file holds {s.machine}:{s.device}@{s.version} "
                            f"({s.kind}), not what its path names")  # fmt: skip
    return s


def fetch_signatures(repo_id: str, *, revision: str = "main", token=None) -> list[Signature]:
    """Every signature of a Hub repo, each checked against the SHA-256 the repo's card recorded
    and against its path; nothing is registered (:func:`pull_signatures` registers).

    Args:
        repo_id: the Hub repo.
        revision: the revision to pull (pin a commit).
        token: a Hub token.

    Returns:
        The signatures.
    """
    with hub_errors(f"pull signatures from {repo_id}@{revision}"):
        files = sorted(
            f
            for f in api(token).list_repo_files(repo_id, repo_type="dataset", revision=revision)
            if f.startswith("signatures/")
        )
        bad = [f for f in files if not _FILE.match(f) or not is_name(f.split("/")[1])]
        if bad:
            raise TamperedError(
                f"{repo_id}@{revision}: {bad[0]} is not a signature file name "
                "(signatures/<machine>/<device>[.<kind>]@<version>.json)"
            )
        recorded = _recorded(repo_id, revision, token) if files else {}
        return [_agrees(f, _pull_one(repo_id, f, revision, token, recorded)) for f in files]


def check_registrable(registry: SignatureRegistry, sigs: list[Signature]) -> None:
    """Refuse, before anything is registered, a pulled version that differs from the one held
    here (published versions never change)."""
    for s in sigs:
        assert s.version is not None
        p = registry.path(s.machine, s.device, s.version, s.kind)
        if p.is_file():
            held = Signature.model_validate_json(p.read_text())
            if held.model_dump(exclude={"created"}) != s.model_dump(exclude={"created"}):
                raise ImmutableSignatureError(f"{s.ref} is held here with other inputs ({p}); "
                                              "nothing was pulled")  # fmt: skip


def pull_signatures(
    repo_id: str, *, revision: str = "main", registry: SignatureRegistry, token=None
) -> list[Signature]:
    """Add every signature of a Hub repo to the local registry, each file checked against
    the SHA-256 the repo's card recorded at push.

    Args:
        repo_id: the Hub repo.
        revision: the revision to pull (pin a commit).
        registry: the local registry.
        token: a Hub token.

    Returns:
        The signatures pulled.
    """
    pulled = fetch_signatures(repo_id, revision=revision, token=token)
    check_registrable(registry, pulled)
    return [registry.add(s) for s in pulled]
