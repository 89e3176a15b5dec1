"""Parquet files nested deeper than polars' reader survives are refused by name before polars opens
them, on every surface that reads a Parquet file a user, a Hub or a store hands over: polars ends
the process (a segmentation fault) on a schema some hundreds of levels deep.

Each deep case runs in this process: a file the check let through would end the test's worker,
which fails the test."""

from __future__ import annotations

import hashlib
import io

import polars as pl
import pyarrow.parquet as pq
import pytest
from conftest import FIXTURES
from deltalake import DeltaTable
from parquet_footer_writer import chain, element, parquet_file

from xamm_data import load_dataset
from xamm_data.store.files import CorruptDataError, footer_metadata, read_part
from xamm_data.store.locations import TableLocation
from xamm_data.store.parquet_depth import (
    MAX_DEPTH,
    ParquetDepthError,
    UnreadableParquetError,
    checked_depth,
    read_parquet,
    schema_depth,
)
from xamm_data.store.rows import read_parquet_checked
from xamm_data.store.store import CorruptLogError, Store
from xamm_ingest import read_profiles, read_rajaperf
from xamm_ingest.readers.table_regions import read_table_regions
from xamm_models.profile_input import ProfileInputError, read_profiles_file
from xamm_models.stored import load_app_samples

DEEP = 100_000
SAID = f"its schema nests more than {MAX_DEPTH} levels deep"


def _footer(data: bytes) -> bytes:
    n = int.from_bytes(data[-8:-4], "little")
    return data[-8 - n : -8]


def _pyarrow_depth(data: bytes) -> int:
    """Levels below the root, as pyarrow's reader of the footer lists each leaf's path."""
    md = pq.read_metadata(io.BytesIO(data))
    return max(len(md.schema.column(i).path.split(".")) for i in range(md.num_columns))


FRAMES = {
    "flat": pl.DataFrame({"a": [1.0], "b": ["x"]}),
    "list": pl.DataFrame({"a": [[1, 2]]}),
    "struct": pl.DataFrame({"a": [{"b": 1, "c": {"d": "e"}}]}),
    "list of structs": pl.DataFrame({"regions": [[{"name": "main", "time": 1.0}]]}),
    "struct of lists of structs": pl.DataFrame({"a": [{"b": [{"c": [1]}]}]}),
}


@pytest.mark.parametrize("shape", FRAMES)
def test_the_depth_read_from_the_footer_is_pyarrows(shape):
    """The depth counted from the footer's flat schema list is the one pyarrow's own reader
    gives, on files polars writes (an xamm table's list of structs nests four levels)."""
    buf = io.BytesIO()
    FRAMES[shape].write_parquet(buf)
    data = buf.getvalue()
    assert schema_depth(_footer(data)) == _pyarrow_depth(data)
    if shape == "list of structs":
        assert schema_depth(_footer(data)) == 4


@pytest.mark.parametrize(
    "options", [{}, {"compression": "zstd", "write_page_index": True}, {"version": "1.0"}]
)
def test_the_depth_of_pyarrow_s_files_of_every_kind_of_column_is_pyarrow_s(options):
    """Decimals, zoned times, dictionaries, maps, fixed-size binaries and nested lists written by
    pyarrow (statistics, page indexes, the older format): the footer is walked to the depth
    pyarrow reads."""
    import datetime
    import decimal

    import pyarrow as pa

    table = pa.table(
        {
            "dec": pa.array([decimal.Decimal("1.23")], pa.decimal128(10, 2)),
            "ts": pa.array([datetime.datetime(2020, 1, 1)], pa.timestamp("us", tz="UTC")),
            "dict": pa.array(["a"]).dictionary_encode(),
            "map": pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64())),
            "fixed": pa.array([b"abcd"], pa.binary(4)),
            "nested": pa.array([{"a": [{"b": [1, 2]}]}]),
        }
    )
    buf = io.BytesIO()
    pq.write_table(table, buf, **options)
    data = buf.getvalue()
    assert schema_depth(_footer(data)) == _pyarrow_depth(data) == 7
    checked_depth(data)


@pytest.mark.parametrize("metadata_first", [False, True])
@pytest.mark.parametrize("depth", [1, 3, MAX_DEPTH])
def test_a_footer_written_by_the_format_s_definition_reads_the_same_in_polars(
    depth, metadata_first
):
    """The test's footer writer is faithful: polars and pyarrow read its schema (in any field
    order), at the depth it was written, and the check passes it."""
    data = parquet_file(chain(depth), metadata_first=metadata_first)
    assert schema_depth(_footer(data)) == depth
    if depth <= 3:
        assert _pyarrow_depth(data) == depth
    checked_depth(data)
    assert read_parquet(data).height == 0


@pytest.mark.parametrize("metadata_first", [False, True])
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 400, DEEP])
def test_a_schema_nested_past_the_limit_is_refused_before_polars(tmp_path, depth, metadata_first):
    path = tmp_path / "deep.parquet"
    path.write_bytes(parquet_file(chain(depth), metadata_first=metadata_first))
    for source in (path, str(path), path.read_bytes()):
        with pytest.raises(ParquetDepthError, match=SAID):
            read_parquet(source)
    with pytest.raises(ParquetDepthError, match=f"^{path}: {SAID}"):
        checked_depth(path)
    with pytest.raises(ParquetDepthError, match=f"^hub repo x: {SAID}"):
        read_parquet_checked(path.read_bytes(), "app_profiles", name="hub repo x")
    with pytest.raises(ParquetDepthError, match=SAID):
        footer_metadata(path)


def test_thrift_structures_nested_past_the_format_s_are_refused():
    """A footer whose Thrift structures nest deeper than parquet-format's own (a leaf's
    ``logicalType`` holding structs 100,000 deep) is refused: polars' Thrift reader is not asked
    to follow it."""
    data = parquet_file([element("schema", 1), element("x", logical_nesting=DEEP)])
    with pytest.raises(ParquetDepthError, match="footer nests Thrift structures"):
        checked_depth(data)


@pytest.mark.parametrize("damage", ["truncated", "no magic", "length past the file"])
def test_a_file_without_a_footer_is_left_to_polars_to_refuse(damage):
    """What holds no footer at all is polars' to report (its error, never a crash)."""
    data = bytearray(parquet_file(chain(3)))
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "no magic":
        data[-4:] = b"XXXX"
    else:
        data[-8:-4] = (len(data) * 2).to_bytes(4, "little")
    checked_depth(bytes(data))
    with pytest.raises(pl.exceptions.PolarsError):
        pl.read_parquet(bytes(data))


@pytest.mark.parametrize("damage", ["garbage", "no schema", "shifted a byte", "over the magic"])
def test_a_footer_that_cannot_be_walked_is_refused(damage):
    """A footer the check cannot walk as parquet-format's ``FileMetaData`` is refused: another
    reader may walk such bytes further, down to a schema it would not survive."""
    data = bytearray(parquet_file(chain(DEEP)))
    n = int.from_bytes(data[-8:-4], "little")
    if damage == "garbage":
        data[4:-8] = b"\xff" * (len(data) - 12)
    elif damage == "no schema":
        data = bytearray(b"PAR1" + b"\x15\x02\x00" + (3).to_bytes(4, "little") + b"PAR1")
    elif damage == "shifted a byte":
        data[-8:-4] = (n - 1).to_bytes(4, "little")
    else:  # a length reaching over the leading magic: a footer all the same, to a reader
        data[-8:-4] = (n + 1).to_bytes(4, "little")
    with pytest.raises(
        ParquetDepthError, match="not the FileMetaData parquet-format defines|nests"
    ):
        checked_depth(bytes(data))


def test_a_store_data_file_nested_too_deep_is_corrupt_data_named_by_table_and_file(tmp_path):
    """A committed data file (its SHA-256 in its name, as xamm writes them) whose schema nests too
    deep: the store refuses it as corrupt before polars reads a byte of it."""
    data = parquet_file(chain(DEEP))
    rel = f"machine=quartz/part-{hashlib.sha256(data).hexdigest()}.parquet"
    (tmp_path / "benchmark_runs" / "machine=quartz").mkdir(parents=True)
    (tmp_path / "benchmark_runs" / rel).write_bytes(data)
    loc = TableLocation.of(tmp_path, "benchmark_runs")
    with pytest.raises(CorruptDataError, match=f"benchmark_runs / quartz: .*{rel}: {SAID}"):
        read_part(loc, rel, table="benchmark_runs", machine="quartz")


MAPPING = '[columns]\napp = "application"\nmachine = "system"\nruntime_s = "time_ms"\n'


def test_every_reader_of_a_user_s_parquet_file_refuses_a_deep_one_naming_it(tmp_path):
    """``xamm-ingest table``, ``xamm predict`` on a table of regions, a profiles file and a run
    config's application samples: each names the file and says why."""
    path = tmp_path / "deep.parquet"
    path.write_bytes(parquet_file(chain(DEEP)))
    (tmp_path / "mapping.toml").write_text(MAPPING)
    rep = read_profiles("table", path, mapping=tmp_path / "mapping.toml")
    [why] = [r.reason for r in rep.rejected]
    assert why.startswith(f"{path}: cannot read as Parquet: {SAID}")
    with pytest.raises(ValueError, match=f"^{path}: cannot read it as a table .*{SAID}"):
        read_table_regions(path)
    with pytest.raises(ProfileInputError, match=f"^{path}: cannot read it as Parquet .*{SAID}"):
        read_profiles_file(path)
    with pytest.raises(ParquetDepthError, match=f"^{path}: {SAID}"):
        load_app_samples(path)


def test_a_store_checkpoint_nested_too_deep_is_refused_before_delta_rs_opens_the_table(tmp_path):
    """A checkpoint (the Parquet file delta-rs reads before the entries after it) whose schema
    nests 100,000 deep ends delta-rs's reader too: the store names it and opens nothing."""
    Store(tmp_path).write(
        read_rajaperf(FIXTURES / "rajaperf_sample", workers=1).frame, "benchmark_runs"
    )
    DeltaTable(str(tmp_path / "benchmark_runs")).create_checkpoint()
    [checkpoint] = (tmp_path / "benchmark_runs" / "_delta_log").glob("*.checkpoint.parquet")
    checkpoint.write_bytes(parquet_file(chain(DEEP)))
    with pytest.raises(CorruptLogError, match=f"benchmark_runs: .*{checkpoint.name}: {SAID}"):
        load_dataset("example-node", store=tmp_path)


def test_a_file_polars_cannot_read_is_named_where_the_caller_names_none(tmp_path):
    """A run config's samples (and what else reads with ``read_parquet`` and no name of its own)
    get the file's name with polars' reason; a caller that names the file itself (``name=""``)
    gets polars' own error to wrap."""
    path = tmp_path / "samples.parquet"
    path.write_bytes(b"PAR1 not a Parquet file PAR1"[:-4] + b"XXXX")
    with pytest.raises(UnreadableParquetError, match=f"^{path}: cannot read it as Parquet"):
        load_app_samples(path)
    with pytest.raises(pl.exceptions.PolarsError):
        read_parquet(path, "")
