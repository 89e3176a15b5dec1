"""A fast reader of Caliper's ``.cali`` text format.

It yields what ``caliperreader.CaliperReader`` yields (snapshot records with the same keys and
string values, ``path`` for nested attributes, the globals, each attribute's metadata) and is
checked against it in the tests, but instead of scanning lines a character at a time it takes
node records (most lines of a profile) from one regular expression matched over the whole stream
and splits the other records with ``str.split``, which makes it several times faster. Other
records holding a backslash escape take the exact (slow) path.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from itertools import islice

from xamm_data.errors import XammError

# caliperreader's bootstrap: node ids 0-7 and 11 are the types, 8-10 the meta attributes
_TYPES = {
    0: "usr",
    1: "int",
    2: "uint",
    3: "string",
    4: "addr",
    5: "double",
    6: "bool",
    7: "type",
    11: "ptr",
}
ATTR_NAME, ATTR_TYPE, ATTR_PROP = 8, 9, 10
HIDDEN, NESTED, GLOBAL = 128, 256, 512


#: of the nodes above one a record names, which keep their expansion (:meth:`CaliProfile._expand`)
KEEP_EVERY = 4


class CaliFormatError(XammError, ValueError):
    """The text is not a well-formed .cali stream; the message names the line."""


_TOKEN = re.compile(r"((?:\\.|[^,=\\])*)([,=]|$)")
_UNESCAPE = re.compile(r"\\(.)")
# what ``_UNESCAPE.sub`` puts for an escape: the escaped character, picked by a C call (a template
# such as ``r"\1"`` is expanded by Python code at every match)
_ESCAPED = operator.itemgetter(1)


# an escaped backslash, comma or equals sign as one control character while the line is split
_CODED = "\x01\x02\x03"
_DECODE = str.maketrans({"\x01": ",", "\x02": "=", "\x03": "\\"})


def _split_escaped(line: str) -> dict[str, list[str]]:
    """A line with escapes, split as :func:`_split_tokens` splits it: the three escapes Caliper
    writes coded to control characters, the line split as a plain one, the codes decoded (a line
    with another escape, a lone backslash or those characters already takes the tokenizer)."""
    coded = line.replace("\\\\", "\x03").replace("\\,", "\x01").replace("\\=", "\x02")
    if "\\" in coded or any(c in line for c in _CODED):
        return _split_tokens(line)
    out = {}
    for field in coded.split(","):
        parts = field.split("=")
        out[parts[0].translate(_DECODE)] = [p.translate(_DECODE) for p in parts[1:]]
    return out


def _split_tokens(line: str) -> dict[str, list[str]]:
    result: dict[str, list[str]] = {}
    entry: list[str] = []
    for m in _TOKEN.finditer(line):
        tok, sep = m.group(1), m.group(2)
        entry.append(_UNESCAPE.sub(_ESCAPED, tok) if "\\" in tok else tok)
        if sep != "=":
            result[entry[0]] = entry[1:]
            entry = []
            if not sep:
                break
    return result


def _split(line: str) -> dict[str, list[str]]:
    if "\\" in line:
        return _split_escaped(line)
    out = {}
    for field in line.split(","):
        parts = field.split("=")
        out[parts[0]] = parts[1:]
    return out


class CaliProfile:
    """Records, globals and attribute metadata of one ``.cali`` stream."""

    def __init__(self):
        self.node_attr: dict[int, int] = {}
        self.node_data: dict[int, str] = {}
        self.node_parent: dict[int, int | None] = {}
        self.attr_name: dict[int, str] = {
            ATTR_NAME: "cali.attribute.name",
            ATTR_TYPE: "cali.attribute.type",
            ATTR_PROP: "cali.attribute.prop",
        }
        self._attr_flags: dict[int, tuple[bool, bool]] = {}
        self._expanded: dict[int, dict] = {}
        # attribute id (as text) -> name, None if hidden
        self._value_keys: dict[str, str | None] = {}
        # (length, keys, picker) of a record's attribute list, by the list (a tuple) or its text
        self._plans: dict[tuple[str, ...] | str, tuple[int, list[str], Callable | None]] = {}
        self.records: list[dict] = []
        self.globals: dict = {}

    # attribute properties come from the attribute node's ancestors
    def _flags(self, attr_id: int) -> tuple[bool, bool]:
        f = self._attr_flags.get(attr_id)
        if f is None:
            prop = 0
            n = self.node_parent.get(attr_id)
            while n is not None:
                if n not in self.node_attr:
                    raise CaliFormatError(
                        f"attribute {attr_id} refers to undefined node {n} (a line is missing?)"
                    )
                if self.node_attr.get(n) == ATTR_PROP:
                    prop = int(self.node_data[n])
                    break
                n = self.node_parent.get(n)
            f = (bool(prop & HIDDEN), bool(prop & NESTED))
            self._attr_flags[attr_id] = f
        return f

    def metadata(self, name: str) -> dict:
        """The attribute's metadata entries (e.g. ``attribute.unit``, ``attribute.alias``)."""
        # a name may repeat: its first id counts (a reader asks for one or two names: a scan
        # costs less than a dict of every name; indexOf scans the names in C, islice the ids)
        names = self.attr_name
        try:
            aid = next(islice(names, operator.indexOf(names.values(), name), None))
        except ValueError:
            return {}
        out = {}
        attr_of, data, parent_of = self.node_attr, self.node_data, self.node_parent
        node = parent_of.get(aid)
        while node is not None:
            a = attr_of.get(node)
            if a in names and a != ATTR_PROP:
                out[names[a]] = data[node]
            if node in _TYPES:
                out["type"] = _TYPES[node]
            node = parent_of.get(node)
        return out

    def _own(self, nid: int) -> dict:
        """Node ``nid``'s attributes (:meth:`_expand`) as a dict of the caller's own, its path list
        too: a record's."""
        exp = self._expanded.get(nid)
        out = dict(exp) if exp is not None else self._expand(nid, keep=False)
        if "path" in out:
            out["path"] = list(out["path"])
        return out

    def _expand(self, nid: int, keep: bool = True) -> dict:
        """Node ``nid``'s attributes and its ancestors', kept for the next node that asks (unless
        ``keep`` is false: the dict is then the caller's, but for its lists)."""
        rec = self._expanded.get(nid)
        if rec is not None:
            return rec
        chain = []
        node = nid
        while node is not None and node not in self._expanded:
            if node not in self.node_attr:
                raise CaliFormatError(f"reference to undefined node {node} (a line is missing?)")
            chain.append(node)
            node = self.node_parent.get(node)
        # a list in an expanded node is never changed in place (a value added makes a new list,
        # and a record takes a copy of its path), so the nodes share them and only the dicts are
        # copied; the node asked for keeps the dict built for it, and of the nodes above it its
        # parent (where its siblings start) and every KEEP_EVERY-th keep a copy: a later walk
        # up ends within KEEP_EVERY nodes, and a long chain (the globals, one node per value) is
        # not copied once per node
        rec = dict(self._expanded[node]) if node is not None else {}
        known = self._attr_flags
        for at in range(len(chain) - 1, -1, -1):
            n = chain[at]
            a = self.node_attr[n]
            if a not in self.attr_name:
                raise CaliFormatError(f"node {n} refers to unknown attribute {a}")
            hidden, nested = known.get(a) or self._flags(a)
            if not hidden:
                key, data = self.attr_name[a], self.node_data[n]
                val = rec.get(key)
                rec[key] = (
                    data
                    if val is None
                    else (val + [data] if isinstance(val, list) else [val, data])
                )
                if nested:
                    rec["path"] = rec.get("path", []) + [data]
            if at == 1 or (at and at % KEEP_EVERY == 0):
                self._expanded[n] = dict(rec)
        if keep:
            self._expanded[nid] = rec
        return rec

    def _snapshot(self, fields: dict[str, list[str]]) -> dict:
        out = self._referenced(fields.get("ref", ()))
        attrs, data = fields.get("attr"), fields.get("data")
        if attrs and data is not None:
            if len(attrs) != len(data):
                raise CaliFormatError(f"{len(attrs)} attributes but {len(data)} values")
            self._add_values(out, self._plan_of(tuple(attrs), attrs), data)
        return out

    def _snapshot_written(self, refs: str | None, attrs: str | None, data: str | None) -> dict:
        """:meth:`_snapshot` of a record in the form Caliper writes (``ref=``, ``attr=`` and
        ``data=`` fields, in that order, without escapes), from the fields' text: the same
        record, without splitting the line into lists first."""
        if refs is None:
            out = {}
        elif "=" in refs:
            out = self._referenced(refs.split("="))
        else:  # nearly every record: one node's attributes
            out = self._own(int(refs))
        if attrs is not None and data is not None:
            self._add_values(out, self._plans.get(attrs) or self._plan_of(attrs), data.split("="))
        return out

    def _referenced(self, refs: Iterable[str]) -> dict:
        """The attributes of the nodes ``refs`` name (ids as text), with a path of its own."""
        out: dict = {}
        for ref in refs:
            exp = self._expand(int(ref))
            out.update(exp)
            if "path" in exp:
                out["path"] = list(exp["path"])
        return out

    def _plan_of(self, key: tuple[str, ...] | str, listed: list[str] | None = None) -> tuple:
        """The plan of an attribute list (``listed``; the text ``key`` split when not given), kept
        by ``key``: the list as a tuple, or as written."""
        plan = self._plans.get(key)
        if plan is None:
            listed = str(key).split("=") if listed is None else listed
            plan = self._plans[key] = (len(listed), *self._value_plan(listed))
        return plan

    @staticmethod
    def _add_values(out: dict, plan: tuple, values: list[str]) -> None:
        """A record's values into ``out`` by its attribute list's plan (:meth:`_plan_of`)."""
        n, names, kept = plan
        if n != len(values):
            raise CaliFormatError(f"{n} attributes but {len(values)} values")
        out.update(zip(names, values if kept is None else kept(values)))

    def _value_plan(self, attrs: list[str]) -> tuple[list[str], Callable | None]:
        """(the key of each value a record listing ``attrs`` keeps, what picks those values from
        the record's, or None when it keeps them all): a hidden attribute's value is left out, and
        records repeat a handful of attribute lists."""
        keys = self._value_keys
        for a in attrs:
            if a not in keys:
                aid = int(a)
                if aid not in self.attr_name:
                    raise CaliFormatError(f"value for unknown attribute {aid}")
                keys[a] = None if self._flags(aid)[0] else self.attr_name[aid]
        at = [i for i, a in enumerate(attrs) if keys[a] is not None]
        names = [k for a in attrs if (k := keys[a]) is not None]
        if len(at) == len(attrs):
            return names, None
        if len(at) > 1:
            return names, operator.itemgetter(*at)
        return names, lambda values: [values[i] for i in at]


_NODE_FIELDS = {"__rec", "id", "attr", "data", "parent"}
_CTX_FIELDS = {"__rec", "ref", "attr", "data"}


def _bootstrapped() -> CaliProfile:
    """A profile holding Caliper's predefined nodes (the types and the three meta attributes)."""
    prof = CaliProfile()
    for i in (0, 1, 2, 3, 4, 5, 6, 7, 11):
        prof.node_attr[i], prof.node_data[i], prof.node_parent[i] = ATTR_TYPE, _TYPES[i], None
    for i in (ATTR_NAME, ATTR_TYPE, ATTR_PROP):
        prof.node_attr[i], prof.node_data[i] = ATTR_NAME, prof.attr_name[i]
    prof.node_parent[ATTR_NAME], prof.node_parent[ATTR_TYPE], prof.node_parent[ATTR_PROP] = 3, 7, 1
    return prof


def _node_fields(line: str) -> tuple[int, int, str, int | None]:
    """A node record with escapes or fields in another order: (id, attr, data, parent)."""
    f = _split(line)
    if not set(f) <= _NODE_FIELDS or len(f.get("data", ())) != 1:
        raise CaliFormatError(
            f"node record with fields {sorted(f)}; expected {sorted(_NODE_FIELDS)} "
            "and one data value"
        )
    parent = int(f["parent"][0]) if "parent" in f else None
    return int(f["id"][0]), int(f["attr"][0]), f["data"][0], parent


# A ``ctx`` or ``globals`` record as Caliper writes it (``__rec``, then ``ref``, ``attr`` and
# ``data``, each at most once and in that order; ids in ASCII digits; no escape): the other records
# of a profile, taken field by field without splitting the line into lists. The id lists are
# matched as runs of digits and ``=`` (one repeat of a class, where a repeated group costs the
# regular expression engine a step per id) and checked to be ids joined by single ``=``
# (:func:`_ids`): together, the lines ``[0-9]+(?:=[0-9]+)*`` would match
_WRITTEN = re.compile(r"__rec=(ctx|globals)(?:,ref=([0-9=]+))?(?:,attr=([0-9=]+),data=([^,\\]*))?")


def _ids(listed: str | None) -> bool:
    """Whether an id list the line gives (or none) is ids joined by single ``=``."""
    return listed is None or (listed[0] != "=" != listed[-1] and "==" not in listed)


def _other_record(prof: CaliProfile, line: str) -> None:
    """A ``ctx`` or ``globals`` record into ``prof``; other record kinds are skipped."""
    m = _WRITTEN.fullmatch(line)
    if m is not None and _ids(m[2]) and _ids(m[3]):  # nearly every one
        kind, refs, attrs, data = m.groups()
        if kind == "ctx":
            prof.records.append(prof._snapshot_written(refs, attrs, data))
        else:
            prof.globals = prof._snapshot_written(refs, attrs, data)
        return
    f = _split(line)
    kind = f.get("__rec", [None])[0]
    if kind in ("ctx", "globals") and not set(f) <= _CTX_FIELDS:
        raise CaliFormatError(
            f"{kind} record with fields {sorted(f)}; expected {sorted(_CTX_FIELDS)}"
        )
    if kind == "ctx":
        prof.records.append(prof._snapshot(f))
    elif kind == "globals":
        prof.globals = prof._snapshot(f)
    elif kind is None:
        raise CaliFormatError("no __rec field")


# One match a line, on LF only as ``str.split("\n")`` splits (``splitlines()`` would also split on
# \x0b, \x1c ... which a corrupt file may hold): a node record,
# ``__rec=node,id=N,attr=A,data=D[,parent=P]`` (most lines of a profile), as its four fields,
# its data as written (the escapes Caliper writes, ``\\``, ``\,`` and ``\=``, kept); a ``ctx``
# record with values as Caliper writes it (:data:`_WRITTEN`), as its three fields, its id lists
# still to be checked (:func:`_ids`); any other line whole
_LINE = re.compile(
    r"^(?:__rec=node,id=([0-9]+),attr=([0-9]+),"
    r"data=([^,=\\\r\n]*(?:\\[\\,=][^,=\\\r\n]*)*)(?:,parent=([0-9]+))?\r?$"
    r"|__rec=ctx(?:,ref=([0-9=]+))?,attr=([0-9=]+),data=([^,\\\r\n]*)\r?$"
    r"|([^\n]*)$)",
    re.MULTILINE,
)


def _ctx_record(prof: CaliProfile, refs: str, listed: str, values: str) -> None:
    """A ``ctx`` record the line pattern took as its fields (``refs`` empty where the line has
    none) into ``prof``; where an id list is not ids joined by single ``=``, the line as written
    goes to :func:`_other_record`, which says what is wrong."""
    if _ids(refs or None) and _ids(listed):
        prof.records.append(prof._snapshot_written(refs or None, listed, values))
    else:
        ref_field = f",ref={refs}" if refs else ""
        _other_record(prof, f"__rec=ctx{ref_field},attr={listed},data={values}")


def parse_cali(text: str) -> CaliProfile:
    """Parse a whole ``.cali`` stream. Raises :class:`CaliFormatError` naming the bad line."""
    prof = _bootstrapped()
    node_attr, node_data, node_parent, attr_name = (
        prof.node_attr,
        prof.node_data,
        prof.node_parent,
        prof.attr_name,
    )
    lines = enumerate(_LINE.findall(text), 1)
    for lineno, (nid_text, attr_text, data, parent_text, refs, listed, values, line) in lines:
        try:
            if listed:  # a ctx record (most lines that are not nodes)
                _ctx_record(prof, refs, listed, values)
                continue
            if nid_text:
                nid, attr = int(nid_text), int(attr_text)
                parent = int(parent_text) if parent_text else None
                if "\\" in data:
                    data = _UNESCAPE.sub(_ESCAPED, data)
            else:
                line = line[:-1] if line.endswith("\r") else line
                if not line:
                    continue
                if not line.startswith("__rec=node,"):
                    _other_record(prof, line)
                    continue
                nid, attr, data, parent = _node_fields(line)  # escapes, or fields in another order
            # Caliper writes each node once; a second definition could close a cycle
            if nid in node_attr:
                raise CaliFormatError(f"node {nid} is defined twice (corrupt file?)")
            if attr not in node_attr or (parent is not None and parent not in node_attr):
                raise CaliFormatError(
                    f"node {nid} refers to undefined node "
                    f"{attr if attr not in node_attr else parent} "
                    "(nodes are written before their use: a line is missing or corrupt)"
                )
            node_attr[nid], node_data[nid], node_parent[nid] = attr, data, parent
            if attr == ATTR_NAME:
                attr_name[nid] = data
        except CaliFormatError as e:
            raise CaliFormatError(f"line {lineno}: {e}") from None
        except (ValueError, IndexError, KeyError) as e:
            raise CaliFormatError(
                f"line {lineno}: malformed record ({type(e).__name__}: {e})"
            ) from None
    return prof
