"""A small in-memory server speaking the subset of the Hugging Face Hub HTTP API that xamm uses.

It serves the real ``huggingface_hub`` client in tests, on 127.0.0.1 only: repo creation, repo
info by revision, file trees, preupload (every file uploaded "regular"), NDJSON commits, tags, refs
and ``resolve`` downloads (HEAD and GET with ``X-Repo-Commit`` and ``ETag``; Parquet, safetensors
and xgboost files reported as LFS files are: ETag and ``X-Linked-Etag`` their SHA-256).
``HubState.tamper`` makes it serve altered files (:class:`Tamper`). Each commit gets a new 40-hex
id; branches and tags map to commits, so ``revision=`` pins exactly like on the Hub.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse


@dataclass
class Commit:
    sha: str
    files: dict[str, bytes]
    message: str
    parent: str | None


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool = False
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)

    def resolve(self, rev: str) -> Commit | None:
        rev = unquote(rev)
        sha = self.branches.get(rev) or self.tags.get(rev) or (rev if rev in self.commits else None)
        return self.commits.get(sha) if sha else None


class HubState:
    def __init__(self):
        self.repos: dict[tuple[str, str], Repo] = {}
        self.lock = threading.Lock()
        self.counter = 0
        self.requests: list[tuple[str, str]] = []
        self.tamper: Tamper | None = None
        self.refuse_writes = False

    def new_sha(self, seed: bytes) -> str:
        self.counter += 1
        return hashlib.sha1(seed + str(self.counter).encode()).hexdigest()

    def create(self, repo_type: str, repo_id: str, private: bool) -> Repo | None:
        key = (repo_type, repo_id)
        if key in self.repos:
            return None
        repo = Repo(repo_type, repo_id, private)
        init = Commit(
            self.new_sha(repo_id.encode()),
            {".gitattributes": b"*.parquet filter=lfs\n"},
            "initial commit",
            None,
        )
        repo.commits[init.sha] = init
        repo.branches["main"] = init.sha
        self.repos[key] = repo
        return repo


def _oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


# stored in LFS, as the Hub's default .gitattributes says
LFS = (".parquet", ".safetensors", ".ubj")


def _etag(path: str, data: bytes) -> dict[str, str]:
    """The Hub's download headers: an LFS file's ETag is its SHA-256 (also X-Linked-Etag), a regular
    one's its git blob id."""
    if path.endswith(LFS):
        sha = hashlib.sha256(data).hexdigest()
        return {"ETag": f'"{sha}"', "X-Linked-Etag": f'"{sha}"', "X-Linked-Size": str(len(data))}
    return {"ETag": f'"{_oid(data)}"'}


@dataclass
class Tamper:
    """What a dishonest (or broken) server does to the files it serves: ``fn(path, bytes, repo,
    commit)`` gives the bytes served for a file of ``repo`` whose path ends with ``suffix``. The
    headers describe the served bytes (a consistent liar), or with ``in_transit`` the bytes the
    server holds (corruption on the way)."""

    repo: str
    fn: object
    suffix: str = ""
    paths: tuple[str, ...] = ()
    in_transit: bool = False

    def matches(self, path: str) -> bool:
        return path in self.paths if self.paths else path.endswith(self.suffix)


_TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}
_API = re.compile(r"^/api/(?P<t>models|datasets|spaces)/(?P<repo>[^/]+/[^/]+)(?P<rest>/.*)?$")
_RESOLVE = re.compile(
    r"^/(?:(?P<t>datasets|spaces)/)?(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$"
)


class Handler(BaseHTTPRequestHandler):
    state: HubState
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    # -- helpers -----------------------------------------------------------------------
    def _send(
        self,
        code: int,
        body: bytes = b"",
        ctype: str = "application/json",
        headers: dict | None = None,
        head: bool = False,
    ):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if not head and self.command != "HEAD":  # a HEAD reply never has a body, errors included
            self.wfile.write(body)

    def _json(self, code: int, obj, headers: dict | None = None):
        self._send(code, json.dumps(obj).encode(), headers=headers)

    def _error(self, code: int, msg: str, error_code: str | None = None):
        headers = {"X-Error-Message": msg}
        if error_code:
            headers["X-Error-Code"] = error_code
        self._json(code, {"error": msg}, headers=headers)

    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _repo(self, t: str, repo_id: str) -> Repo | None:
        return self.state.repos.get((_TYPES[t], repo_id))

    def _api_repo(self, path: str) -> tuple[Repo, str] | None:
        """The repo and the rest of an /api/<type>s/<ns>/<name>... path; on failure the error is
        sent."""
        m = _API.match(path)
        if not m:
            self._error(404, f"no route for {path}")
            return None
        repo = self._repo(m["t"], m["repo"])
        if repo is None:
            self._error(404, "Repository not found", "RepoNotFound")
            return None
        return repo, m["rest"] or ""

    def _info(self, repo: Repo, commit: Commit) -> dict:
        return {
            "id": repo.repo_id,
            "_id": repo.repo_id,
            "sha": commit.sha,
            "private": repo.private,
            "lastModified": "2026-01-01T00:00:00.000Z",
            "tags": [],
            "downloads": 0,
            "likes": 0,
            "siblings": [{"rfilename": p, "size": len(b)} for p, b in sorted(commit.files.items())],
        }

    # -- verbs -------------------------------------------------------------------------
    def do_HEAD(self):
        self._get(head=True)

    def do_GET(self):
        self._get(head=False)

    def _get(self, head: bool):
        url = urlparse(self.path)
        path = url.path
        self.state.requests.append(("HEAD" if head else "GET", path))
        m = _RESOLVE.match(path)
        if m and not path.startswith("/api/"):
            repo = self.state.repos.get((_TYPES.get(m["t"] or "models", "model"), m["repo"]))
            if repo is None:
                return self._error(404, "Repository not found", "RepoNotFound")
            commit = repo.resolve(m["rev"])
            if commit is None:
                return self._error(404, "Invalid rev id", "RevisionNotFound")
            fpath = unquote(m["path"])
            if fpath not in commit.files:
                return self._error(404, "Entry not found", "EntryNotFound")
            original = commit.files[fpath]
            data = original
            t = self.state.tamper
            if t is not None and t.repo == m["repo"] and t.matches(fpath):
                data = t.fn(fpath, original, repo, commit)
            # headers of what the server holds
            described = original if t is not None and t.in_transit else data
            return self._send(
                200,
                data,
                "application/octet-stream",
                head=head,
                headers={
                    "X-Repo-Commit": commit.sha,
                    "Accept-Ranges": "bytes",
                    **_etag(fpath, described),
                },
            )
        found = self._api_repo(path)
        if found is None:
            return None
        repo, rest = found
        if rest in ("", "/"):
            return self._json(200, self._info(repo, repo.commits[repo.branches["main"]]))
        if rest.startswith("/revision/"):
            commit = repo.resolve(rest[len("/revision/") :])
            if commit is None:
                return self._error(404, "Invalid rev id", "RevisionNotFound")
            return self._json(200, self._info(repo, commit))
        if rest.startswith("/tree/"):
            parts = rest[len("/tree/") :].split("/", 1)
            commit = repo.resolve(parts[0])
            if commit is None:
                return self._error(404, "Invalid rev id", "RevisionNotFound")
            prefix = unquote(parts[1]).rstrip("/") + "/" if len(parts) > 1 and parts[1] else ""
            recursive = parse_qs(url.query).get("recursive", ["false"])[0].lower() in ("1", "true")
            entries, dirs = [], set()
            for p, b in sorted(commit.files.items()):
                if not p.startswith(prefix):
                    continue
                sub = p[len(prefix) :]
                if "/" in sub:
                    d = prefix + sub.split("/", 1)[0]
                    if d not in dirs:
                        dirs.add(d)
                        entries.append(
                            {"type": "directory", "path": d, "oid": _oid(d.encode()), "size": 0}
                        )
                    if not recursive:
                        continue
                entry = {"type": "file", "path": p, "oid": _oid(b), "size": len(b)}
                if p.endswith(LFS):
                    entry["lfs"] = {
                        "oid": hashlib.sha256(b).hexdigest(),
                        "size": len(b),
                        "pointerSize": 134,
                    }
                entries.append(entry)
            return self._json(200, entries)
        if rest == "/refs":
            return self._json(
                200,
                {
                    "branches": [
                        {"name": b, "ref": f"refs/heads/{b}", "targetCommit": s}
                        for b, s in repo.branches.items()
                    ],
                    "tags": [
                        {"name": t, "ref": f"refs/tags/{t}", "targetCommit": s}
                        for t, s in repo.tags.items()
                    ],
                    "converts": [],
                },
            )
        return self._error(404, f"no route for {path}")

    def do_POST(self):
        url = urlparse(self.path)
        path = url.path
        self.state.requests.append(("POST", path))
        body = self._body()
        if self.state.refuse_writes:  # a token without write access
            return self._error(401, "Invalid credentials in Authorization header", "Unauthorized")
        if path == "/api/repos/create":
            req = json.loads(body or b"{}")
            repo_type = req.get("type") or "model"
            repo_id = (
                f"{req['organization']}/{req['name']}" if req.get("organization") else req["name"]
            )
            if "/" not in repo_id:
                repo_id = f"user/{repo_id}"
            with self.state.lock:
                repo = self.state.create(repo_type, repo_id, bool(req.get("private")))
            prefix = "" if repo_type == "model" else f"{repo_type}s/"
            url = f"http://{self.headers['Host']}/{prefix}{repo_id}"
            if repo is None:  # the Hub answers 409 with the existing repo's url
                return self._json(
                    409,
                    {"error": "You already created this repo", "url": url},
                    headers={"X-Error-Message": "You already created this repo"},
                )
            return self._json(200, {"url": url, "name": repo_id})
        if path == "/api/validate-yaml":
            return self._validate_yaml(json.loads(body or b"{}"))
        found = self._api_repo(path)
        if found is None:
            return None
        repo, rest = found
        if rest.startswith("/preupload/"):
            commit = repo.resolve(rest[len("/preupload/") :])
            req = json.loads(body)
            files = []
            for f in req["files"]:
                old = commit.files.get(f["path"]) if commit else None
                files.append(
                    {
                        "path": f["path"],
                        "uploadMode": "regular",
                        "shouldIgnore": False,
                        "oid": _oid(old) if old is not None else None,
                    }
                )
            return self._json(200, {"files": files, "commitOid": commit.sha if commit else None})
        if rest.startswith("/commit/"):
            branch = unquote(rest[len("/commit/") :])
            with self.state.lock:
                head_sha = repo.branches.get(branch)
                if head_sha is None:
                    return self._error(404, f"Invalid rev id: {branch}", "RevisionNotFound")
                files = dict(repo.commits[head_sha].files)
                message = ""
                for line in body.splitlines():
                    if not line.strip():
                        continue
                    item = json.loads(line)
                    key, value = item["key"], item["value"]
                    if key == "header":
                        message = value.get("summary", "")
                    elif key == "file":
                        files[value["path"]] = base64.b64decode(value["content"])
                    elif key == "deletedFile":
                        files.pop(value["path"], None)
                    elif key == "deletedFolder":
                        for p in [
                            p for p in files if p.startswith(value["path"].rstrip("/") + "/")
                        ]:
                            files.pop(p)
                    else:
                        return self._error(400, f"unsupported commit operation {key!r}")
                sha = self.state.new_sha(body)
                repo.commits[sha] = Commit(sha, files, message, head_sha)
                repo.branches[branch] = sha
            prefix = "" if repo.repo_type == "model" else f"{repo.repo_type}s/"
            base = f"http://{self.headers['Host']}/{prefix}{repo.repo_id}"
            return self._json(
                200, {"commitUrl": f"{base}/commit/{sha}", "commitOid": sha, "pullRequestUrl": None}
            )
        if rest.startswith("/tag/"):
            commit = repo.resolve(rest[len("/tag/") :])
            req = json.loads(body or b"{}")
            if commit is None:
                return self._error(404, "Invalid rev id", "RevisionNotFound")
            if req["tag"] in repo.tags:
                return self._error(409, "Tag already exists")
            repo.tags[req["tag"]] = commit.sha
            return self._json(200, {})
        return self._error(404, f"no route for {path}")

    def _validate_yaml(self, req: dict):
        """Parse the card's YAML header as the Hub does; a dataset card's configs need names and
        data_files."""
        import yaml

        content = req.get("content", "")
        m = re.match(r"^---\n(.*?)\n---", content, flags=re.S)
        if not m:
            return self._json(
                200, {"errors": [], "warnings": [{"message": "empty or missing yaml metadata"}]}
            )
        try:
            meta = yaml.safe_load(m.group(1)) or {}
        except yaml.YAMLError as e:
            return self._json(400, {"errors": [{"message": f"invalid YAML: {e}"}]})
        errors = []
        for i, cfg in enumerate(meta.get("configs") or []):
            if "config_name" not in cfg or "data_files" not in cfg:
                errors.append({"message": f"configs[{i}] needs config_name and data_files"})
        return self._json(400 if errors else 200, {"errors": errors, "warnings": []})


class LocalHub:
    """Run the server in a thread on 127.0.0.1 (an ephemeral port); ``endpoint`` is its base URL."""

    def __init__(self):
        self.state = HubState()
        handler = type("BoundHandler", (Handler,), {"state": self.state})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> LocalHub:
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
