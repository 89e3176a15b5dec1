"""The fast .cali parser gives exactly what caliperreader gives, on every real file."""

from __future__ import annotations

import caliperreader
import pytest
from conftest import FIXTURES

from xamm_ingest.readers.cali_format import CaliFormatError, parse_cali


def _same(path):
    ref = caliperreader.CaliperReader()
    ref.read(str(path))
    mine = parse_cali(path.read_bytes().decode("utf-8"))
    assert mine.records == ref.records, path
    assert mine.globals == dict(ref.globals), path
    for key in {k for rec in ref.records for k in rec} - {"path"}:
        md = ref.attribute(key).metadata()
        assert {k: v for k, v in mine.metadata(key).items() if k.startswith("attribute.")} == {
            k: v for k, v in md.items() if k.startswith("attribute.")
        }, (path, key)


def _real_cali_files(shared_data) -> list:
    files = sorted(shared_data.glob("**/*.cali"))
    if not files:
        pytest.fail(f"no .cali file under {shared_data}; the shared data is incomplete")
    return files


# every 97th file (about 110 of the ~10,900): RAJAPerf and application profiles alike
FAST_SAMPLE = 97


def test_matches_caliperreader_on_a_sample_of_the_real_files(shared_data):
    files = _real_cali_files(shared_data)
    sample = files[::FAST_SAMPLE]
    assert {f.relative_to(shared_data).parts[0] for f in sample} >= {"LLNL+thicket-tutorial"}
    for f in sample:
        _same(f)


def test_matches_caliperreader_on_every_real_file(shared_data):
    for f in _real_cali_files(shared_data):
        _same(f)


def test_matches_caliperreader_on_fixture_with_escapes():
    _same(FIXTURES / "rajaperf_sample" / "run-1" / "Base_Seq-default.cali")


@pytest.mark.parametrize(
    "text,where",
    [
        ("__rec=node,id=12,attr=8,data=x,parent=3\n__rec=ctx,ref=999\n", "line 2"),
        ("__rec=node,id=12,attr=8\n", "line 1"),
        ("__rec=node,id=12,attr=8,data=x,parent=3\n__rec=ctx,attr=12=13,data=1\n", "line 2"),
        # a node defined twice could close a cycle (13 -> 14 -> 13) and loop forever when expanded
        (
            "__rec=node,id=12,attr=8,data=x,parent=3\n__rec=node,id=13,attr=12,data=a\n__rec=node,id=14,attr=12,data=b,parent=13\n"
            "__rec=node,id=13,attr=12,data=c,parent=14\n__rec=ctx,ref=14\n",
            "line 4: node 13 is defined twice",
        ),
        # its own parent
        (
            "__rec=node,id=12,attr=8,data=x,parent=12\n",
            "line 1: node 12 refers to undefined node 12",
        ),
    ],
)
def test_malformed_records_name_the_line(text, where):
    with pytest.raises(CaliFormatError, match=where):
        parse_cali(text)


def test_a_line_with_escapes_splits_as_the_tokenizer_splits_it():
    """The coded split of escaped lines against the tokenizer on 20,000 seeded lines drawn from
    the characters that matter (separators, backslashes, the control characters the coding uses,
    letters), each escape kind among them."""
    import random

    from xamm_ingest.readers.cali_format import _split_escaped, _split_tokens

    rng = random.Random(66)
    alphabet = ["a", "b", ",", "=", "\\", "\\,", "\\=", "\\\\", "\\x", "\x01", "\x03", "é"]
    coded = 0
    for _ in range(20_000):
        line = "__rec=node,data=" + "".join(rng.choices(alphabet, k=rng.randint(1, 12)))
        if "\\" not in line:
            continue
        assert _split_escaped(line) == _split_tokens(line), repr(line)
        rest = line.replace("\\\\", "").replace("\\,", "").replace("\\=", "")
        coded += "\\" not in rest and "\x01" not in line and "\x03" not in line
    assert coded > 2_000  # lines the coded split answers, not only the tokenizer


def test_metadata_of_a_name_two_attributes_share_is_the_first_ones():
    """Caliper names each attribute once; in a stream that names two alike, the metadata of the
    name is the first attribute's, and an attribute defined after a first lookup is found."""
    head = (
        "__rec=node,id=12,attr=10,data=1,parent=3\n"  # prop node: a string attribute
        "__rec=node,id=13,attr=8,data=t,parent=12\n"
        "__rec=node,id=14,attr=10,data=1,parent=5\n"  # prop node: a double attribute
        "__rec=node,id=15,attr=8,data=t,parent=14\n"
    )
    prof = parse_cali(head)
    assert prof.metadata("t")["type"] == "string"
    assert prof.metadata("u") == {}
    prof = parse_cali(head + "__rec=node,id=16,attr=8,data=u,parent=14\n")
    assert prof.metadata("t")["type"] == "string"
    assert prof.metadata("u")["type"] == "double"
    prof.attr_name[17] = "v"  # an attribute named after the first lookup
    prof.node_parent[17] = 14
    assert prof.metadata("v")["type"] == "double"


def test_the_line_pattern_splits_as_str_split_and_a_record_is_its_fields():
    """Seeded random streams of record pieces, separators, CR, backslashes and odd digits: the
    parser's line pattern gives one match per ``str.split("\\n")`` line, a node record's four
    fields and a ctx record's three rebuild the line exactly (with at most one CR after them),
    and any other line comes whole."""
    import random

    from xamm_ingest.readers.cali_format import _LINE

    rng = random.Random(20261129)
    kinds = set()
    pieces = [
        "__rec=node,", "id=", "attr=", "data=", ",parent=", "__rec=ctx,ref=", "12", "0", "٣",
        "x", " ", ",", "=", "\\", "\\,", "\\=", "\\\\", "\r", "\n", "\n", "\x0b", "\x1c", "é",
    ]  # fmt: skip
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        if rng.random() < 0.5:  # a well-formed node record among the pieces
            text += f"\n__rec=node,id={rng.randint(0, 99)},attr=8,data=a b" + rng.choice(
                ["", ",parent=3", "\r", ",parent=3\r"]
            )
        if rng.random() < 0.5:  # and a ctx record as Caliper writes it
            text += "\n__rec=ctx" + rng.choice(["", ",ref=12", ",ref=12=3"]) + ",attr=8=9,data="
            text += rng.choice(["1=2", "a b=", "", "1=2\r"])
        lines = text.split("\n")
        got = _LINE.findall(text)
        assert len(got) == len(lines), repr(text)
        for (nid, attr, data, parent, refs, listed, values, other), line in zip(got, lines):
            if nid:
                rebuilt = f"__rec=node,id={nid},attr={attr},data={data}"
                rebuilt += f",parent={parent}" if parent else ""
                assert not (refs or listed or values or other), repr(line)
            elif listed:
                rebuilt = "__rec=ctx" + (f",ref={refs}" if refs else "")
                rebuilt += f",attr={listed},data={values}"
                assert not (attr or data or parent or other), repr(line)
            else:
                assert other == line and not (attr or data or parent or refs or values), repr(line)
                continue
            assert line in (rebuilt, rebuilt + "\r"), repr(line)
            kinds.add("node" if nid else "ctx")
    assert kinds == {"node", "ctx"}


def test_a_node_record_reads_alike_by_the_line_pattern_and_by_the_general_split():
    """Seeded node records with escapes, control characters and odd values: read as written (the
    line pattern's fields) and with their fields in another order (which only the general split
    reads), the same node comes out, or the same error for the same reason."""
    import random

    rng = random.Random(11292026)
    pieces = ["a", "b c", "\\,", "\\=", "\\\\", "\\", ",", "=", "\x01", "\x03", "\r", "é", "7"]
    for _ in range(2000):
        data = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        parent = rng.choice(["", ",parent=3", ",parent=", ",parent=x"])
        nid = rng.choice(["12", "40", "007", "٣4"])
        plain = f"__rec=node,id={nid},attr=8,data={data}{parent}\n"
        moved = f"__rec=node,attr=8,id={nid},data={data}{parent}\n"
        got = []
        for text in (plain, moved):
            try:
                prof = parse_cali(text)
                got.append((dict(prof.node_data), dict(prof.attr_name)))
            except CaliFormatError as e:
                got.append(str(e))
        assert got[0] == got[1], (plain, got)


def test_a_ctx_or_globals_record_reads_alike_as_caliper_writes_it_and_by_the_general_split():
    """Seeded ``ctx`` and ``globals`` records over a real profile's nodes, with odd references,
    attribute lists and values: written as Caliper writes them (``ref``, ``attr``, ``data``: the
    fields read from the line's text) and with their fields in another order (which only the
    general split reads), the same records and globals come out, or the same error."""
    import random

    text = (FIXTURES / "rajaperf_sample" / "run-1" / "Base_Seq-default.cali").read_text()
    nodes = [line for line in text.splitlines() if line.startswith("__rec=node,")]
    preamble = "\n".join(nodes) + "\n"
    prof = parse_cali(preamble)
    attrs = sorted(prof.attr_name)
    ids = sorted(prof.node_attr)
    rng = random.Random(11302026)
    pieces = ["1.5", "x", "", "b c", "-0", "nan", "é", "\\,", "\\=", "=", "\x0b"]

    def ref() -> str:
        return "=".join(
            rng.choice([*map(str, rng.sample(ids, 2)), "٣", "999999", ""])
            for _ in range(rng.randint(1, 2))
        )

    for _ in range(1500):
        kind = rng.choice(["ctx", "ctx", "globals"])
        fields = {}
        if rng.random() < 0.8:
            fields["ref"] = ref()
        if rng.random() < 0.85:
            listed = [str(rng.choice(attrs)) for _ in range(rng.randint(1, 4))]
            fields["attr"] = "=".join(listed)
            n = len(listed) if rng.random() < 0.9 else len(listed) + rng.choice([-1, 1])
            fields["data"] = "=".join(rng.choice(pieces) for _ in range(max(n, 1)))
            if rng.random() < 0.05:
                del fields[rng.choice(["attr", "data"])]
        order = [k for k in ("ref", "attr", "data") if k in fields]
        got = []
        for keys in (order, order[::-1]):
            line = ",".join([f"__rec={kind}", *(f"{k}={fields[k]}" for k in keys)])
            try:
                p = parse_cali(preamble + line + "\n")
                got.append((p.records, p.globals))
            except CaliFormatError as e:
                got.append(str(e))
        assert got[0] == got[1], (fields, got)


def test_a_ctx_record_the_line_pattern_takes_reads_as_the_record_parser_reads_its_line():
    """Seeded ``ctx`` lines in the form the line pattern takes as fields (odd ids, empty and
    doubled ``=``, one or two references, values with spaces, ``=``, control characters, LF or
    CRLF endings): parsed in a stream, each gives the record :func:`_other_record` makes of the
    line as written, or the same error."""
    import random

    from xamm_ingest.readers import cali_format

    text = (FIXTURES / "rajaperf_sample" / "run-1" / "Base_Seq-default.cali").read_text()
    nodes = [line for line in text.splitlines() if line.startswith("__rec=node,")]
    preamble = "\n".join(nodes) + "\n"
    ids = sorted(parse_cali(preamble).node_attr)
    attrs = sorted(parse_cali(preamble).attr_name)
    rng = random.Random(1130)
    pieces = ["1.5", "x", "", "b c", "-0", "nan", "é", "\x0b", "\x01", ",", "\\,"]
    taken = 0
    for _ in range(1500):
        odd = rng.random() < 0.3  # an empty or unknown id, or a value too many or too few
        refs = "=".join(
            rng.choice([str(rng.choice(ids))] * 4 + ["", "99999"] * odd)
            for _ in range(rng.randint(0, 2))
        )
        k = rng.randint(1, 3)
        listed = "=".join(rng.choice([str(rng.choice(attrs))] * 4 + [""] * odd) for _ in range(k))
        k += rng.choice([-1, 1]) if odd and rng.random() < 0.3 else 0
        values = "=".join(rng.choice(pieces) for _ in range(max(k, 1)))
        line = "__rec=ctx" + (f",ref={refs}" if refs else "") + f",attr={listed},data={values}"
        got = []
        try:
            got.append(parse_cali(preamble + line + rng.choice(["\n", "\r\n"])).records)
        except CaliFormatError as e:  # the stream's message names the line
            got.append(str(e).split(": ", 1)[1])
        prof = parse_cali(preamble)
        try:
            cali_format._other_record(prof, line)
            got.append(prof.records)
        except CaliFormatError as e:
            got.append(str(e))
        except (ValueError, IndexError, KeyError) as e:  # as the stream words them
            got.append(f"malformed record ({type(e).__name__}: {e})")
        assert got[0] == got[1], (line, got)
        taken += isinstance(got[0], list)
    assert 100 < taken < 1400


def test_each_record_holds_its_own_path_list():
    """Records of the same region share their expanded node: changing one record's path leaves the
    others' as parsed (each region's records written twice, as passes or ranks write them, one
    node referenced alone or with another)."""
    text = (FIXTURES / "rajaperf_sample" / "run-1" / "Base_Seq-default.cali").read_text()
    ctx = [line for line in text.splitlines() if line.startswith("__rec=ctx,ref=")]
    alone = [line for line in ctx if "=" not in line.split(",")[1][4:]]  # one node alone
    # and records of the nodes above those, which their expansion kept
    parents = parse_cali(text).node_parent
    above = {parents[int(line.split(",")[1][4:])] for line in alone} - {None}
    extra = [f"__rec=ctx,ref={n},attr=32,data=1.0" for n in sorted(above)]
    assert alone and extra
    prof = parse_cali(text + "\n".join(ctx + extra) + "\n")
    paths = [r["path"] for r in prof.records if "path" in r]
    assert len(paths) > 2 and len({id(p) for p in paths}) == len(paths)
    kept = {id(e["path"]) for e in prof._expanded.values() if "path" in e}
    assert not kept & {id(p) for p in paths}
    before = [list(p) for p in paths]
    paths[0].append("changed")
    assert [list(p) for p in paths[1:]] == before[1:]


def test_expanding_a_deep_node_keeps_its_parent_and_every_few_nodes_above():
    """A record's node under a 50-deep chain of regions, and 200 more below the chain's end (each
    under a child of its own, as a call tree fans out below a deep common prefix): the chain keeps
    an expansion at least every ``KEEP_EVERY`` nodes, so a walk up from any later node ends within
    that many, but not one per node (a long chain is not copied once per node); each record's
    path is the chain it hangs from."""
    from xamm_ingest.readers.cali_format import KEEP_EVERY

    head = [
        "__rec=node,id=12,attr=10,data=276,parent=3",
        "__rec=node,id=13,attr=8,data=region,parent=12",
        "__rec=node,id=14,attr=8,data=time,parent=5",
    ]
    chain = list(range(100, 150))
    lines = head + [f"__rec=node,id={n},attr=13,data=r{n}" + (f",parent={n - 1}" if n > 100 else "")
                    for n in chain]  # fmt: skip
    leaves = []
    for i in range(200):
        child, leaf = 1000 + 2 * i, 1001 + 2 * i
        lines += [f"__rec=node,id={child},attr=13,data=c{i},parent={chain[-1]}"]
        lines += [f"__rec=node,id={leaf},attr=13,data=g{i},parent={child}"]
        leaves.append(leaf)
    lines += [f"__rec=ctx,ref={n},attr=14,data=1.5" for n in leaves]
    prof = parse_cali("\n".join(lines) + "\n")
    kept = [n for n in chain if n in prof._expanded]
    gaps = [b - a for a, b in zip([chain[0] - 1, *kept], [*kept, chain[-1] + 1])]
    assert kept and max(gaps) <= KEEP_EVERY, kept
    assert len(kept) <= len(chain) // KEEP_EVERY + 2, kept
    want = [f"r{n}" for n in chain]
    assert [r["path"] for r in prof.records] == [[*want, f"c{i}", f"g{i}"] for i in range(200)]


def test_a_file_of_nothing_but_whitespace_is_refused_as_empty_and_only_such_a_file(tmp_path):
    """``load_cali`` calls a file empty exactly when ``bytes.strip()`` leaves nothing of it (ASCII
    whitespace only: a NEL or NBSP byte is content), on seeded byte strings."""
    import random

    from xamm_ingest.errors import IngestError
    from xamm_ingest.readers.caliper_files import load_cali

    rng = random.Random(11)
    alphabet = [b" ", b"\t", b"\r", b"\n", b"\x0b", b"\x0c", b"\x85", b"\xa0", b"x", b"\x00"]
    empties = 0
    for i in range(300):
        data = b"".join(rng.choices(alphabet[: rng.randint(6, 10)], k=rng.randint(0, 6))) + b"\n"
        f = tmp_path / f"{i}.cali"
        f.write_bytes(data)
        with pytest.raises(IngestError) as e:
            load_cali(f)  # none of them is a profile: refused one way or another
        empty = "empty file" in str(e.value)
        assert empty == (not data.strip()), data
        empties += empty
    assert 20 < empties < 280


def test_the_written_form_is_taken_exactly_where_ids_joined_by_single_equals_signs_are():
    """The fast form of a ``ctx`` or ``globals`` line (id lists as runs of digits and ``=``, then
    checked) takes exactly the lines, with the same fields, that the form with ids written
    ``[0-9]+(?:=[0-9]+)*`` takes, on seeded lines of ids, empty ids, doubled and trailing ``=``."""
    import random
    import re

    from xamm_ingest.readers import cali_format

    strict = re.compile(
        r"__rec=(ctx|globals)(?:,ref=([0-9]+(?:=[0-9]+)*))?"
        r"(?:,attr=([0-9]+(?:=[0-9]+)*),data=([^,\\]*))?"
    )
    rng = random.Random(3)

    def ids() -> str:
        return "".join(rng.choice(["1", "23", "=", "=", ""]) for _ in range(rng.randint(0, 5)))

    taken = 0
    for _ in range(3000):
        line = f"__rec={rng.choice(['ctx', 'globals', 'node'])}"
        if rng.random() < 0.7:
            line += f",ref={ids()}"
        if rng.random() < 0.8:
            data = rng.choice(["1.5=x", "", "a,b", "a\\\\,b", "2"])
            line += f",attr={ids()},data={data}"
        if rng.random() < 0.05:
            line += rng.choice([",", "=", ",x=1"])
        want = strict.fullmatch(line)
        m = cali_format._WRITTEN.fullmatch(line)
        got = m if m is not None and cali_format._ids(m[2]) and cali_format._ids(m[3]) else None
        assert (got is None) == (want is None), line
        if want is not None:
            assert got.groups() == want.groups(), line
            taken += 1
    assert 300 < taken < 2700
