"""Flight Recorder dumps as raytop reads them: the restricted unpickler
(``model.untrusted_pickle``) on dumps torch 2.13 really wrote (tests/data/flight_recorder,
recorded by ``record_dumps.py`` there: gloo on CPU fills the same Flight Recorder and its
in-process dump is the pickle ProcessGroupNCCL writes to its dump file), pickles built to
run code (refused, never run), the parser, the "who is missing" summary, and the reader of
a dump folder (``sources.flight_recorder``)."""

from __future__ import annotations

import json
import os
import pickle
import pickletools
import shutil
from pathlib import Path

import pytest

from raytop.diagnose.collectives import group_progress
from raytop.model.flight_recorder import RankDump, parse_dump
from raytop.model.untrusted import Invalid
from raytop.model.untrusted_pickle import _NoClasses, load_plain_pickle
from raytop.sources.flight_recorder import read_dumps

DATA = Path(__file__).parent.parent / "data" / "flight_recorder"


def recorded(rank: int, folder: Path = DATA) -> RankDump:
    return parse_dump(load_plain_pickle((folder / f"rank_{rank}").read_bytes()), rank)


# -- what torch wrote ----------------------------------------------------------------------


def test_torchs_own_dump_is_plain_data_and_loads():
    raw = (DATA / "rank_0").read_bytes()
    assert {op.name for op, _, _ in pickletools.genops(raw)} <= {
        "PROTO", "BINPUT", "BINGET", "BINUNICODE", "MARK", "BININT1", "BININT2", "BININT",
        "EMPTY_LIST", "APPENDS", "EMPTY_DICT", "SETITEMS", "NONE", "TUPLE2", "LONG1",
        "NEWTRUE", "NEWFALSE", "STOP",
    }  # fmt: skip
    data = load_plain_pickle(raw)
    assert data == pickle.loads(raw)  # the same dict the plain module builds, minus the risk
    assert data["version"] == "2.10"
    assert set(data) == {"version", "pg_config", "comm_lib_version", "pg_status", "entries"}
    first = data["entries"][0]
    assert first["profiling_name"] == "gloo:all_reduce"
    assert first["process_group"] == ("0", "default_pg")


def test_the_recorded_hang_names_the_missing_rank():
    dumps = [recorded(0), recorded(1)]
    assert [(e.pg_name, e.collective_seq_id, e.retired) for e in dumps[0].entries] == [
        ("0", 1, True),
        ("0", 2, True),
        ("0", 3, True),
        ("1", 1, True),
        ("0", 4, False),
    ]
    default, pair = group_progress(dumps)
    assert default.name == "0" and default.desc == "default_pg"
    assert default.newest == 4 and default.newest_op == "gloo:all_reduce"
    assert default.missing == (1,)
    # gloo marks completions from its own thread: the dump, taken at once, lags behind.
    assert [(r.rank, r.last_enqueued, r.last_completed) for r in default.ranks] == [
        (0, 4, 1), (1, 3, 2)]  # fmt: skip
    assert default.message == (
        "group 0 (default_pg): rank 1 missing from collective #4 (gloo:all_reduce); "
        "rank 0 entered it"
    )
    assert pair.missing == () and pair.message == (
        "group 1 (pair): every rank completed collective #1 (gloo:all_reduce)"
    )


def test_torchs_json_dump_reads_the_same():
    """pg_status values are strings there and process_group a list (torch's JSON form)."""
    dumps = [parse_dump(json.loads((DATA / "json" / f"rank_{r}").read_text()), r) for r in (0, 1)]
    assert dumps[0].status[0].last_enqueued == 4
    assert [g.message for g in group_progress(dumps)] == [
        g.message for g in group_progress([recorded(0), recorded(1)])
    ]


# -- what an attacker would write ----------------------------------------------------------


class RunsACommand:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_pickle_that_calls_os_system_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "ran"
    for protocol in (0, 2, 5):
        evil = pickle.dumps({"version": "2.10", "entries": [RunsACommand(marker)]}, protocol)
        with pytest.raises(Invalid, match=r"^refused: the pickle imports or calls code"):
            load_plain_pickle(evil)
        # Even past the opcode check, the unpickler itself names no class.
        with pytest.raises(Invalid, match="refused: the pickle names"):
            _NoClasses(__import__("io").BytesIO(evil)).load()
    assert not marker.exists()


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"cos\nsystem\n(S'true'\ntR.", "imports or calls code (opcode GLOBAL at byte 0)"),
        (b"\x80\x02cbuiltins\neval\nq\x00.", "imports or calls code (opcode GLOBAL at byte 2)"),
        (b"\x80\x02P1\n.", "imports or calls code (opcode PERSID"),
        (pickle.dumps({1, 2}, 4), "builds a type other than plain data (opcode EMPTY_SET"),
        (pickle.dumps(frozenset({1}), 4), "builds a type other than plain data"),
        (pickle.dumps(bytearray(b"x"), 5), "builds a type other than plain data"),
    ],
)
def test_anything_but_plain_data_is_refused_with_one_line(data, why):
    with pytest.raises(Invalid) as caught:
        load_plain_pickle(data)
    assert why in str(caught.value) and "\n" not in str(caught.value)


def test_torn_empty_and_oversized_pickles_are_refused():
    raw = (DATA / "rank_0").read_bytes()
    with pytest.raises(Invalid, match="^not a pickle"):
        load_plain_pickle(raw[: len(raw) // 2])
    with pytest.raises(Invalid, match="^empty"):
        load_plain_pickle(b"")
    with pytest.raises(Invalid, match="over the .* cap: not read"):
        load_plain_pickle(raw, max_bytes=100)
    with pytest.raises(Invalid, match="not a readable pickle"):
        load_plain_pickle(b"\x80\x02]q\x00]q\x01a\x85q\x02}q\x03h\x02K\x01s.")  # {[[]]: 1}


def test_shared_and_cyclic_data_loads_in_one_walk():
    shared = ["x"] * 3
    cyclic: list = [shared, shared]
    cyclic.append(cyclic)
    data = load_plain_pickle(pickle.dumps(cyclic, 2))
    assert data[2] is data and data[0] is data[1]
    with pytest.raises(Invalid, match="entries.*expected a dict"):
        parse_dump({"version": "2.10", "entries": data}, 0)


# -- NCCL's states and membership -----------------------------------------------------------


def nccl_entry(record_id: int, seq: int, state: str, pg=("0", "default_pg"), pg_id: int = 0):
    """Constructed, not recorded (no GPU here): an entry with the keys torch 2.13's
    ``FlightRecorder<>::getCollectiveTrace`` writes (FlightRecorderDetail.hpp)."""
    return {
        "record_id": record_id, "pg_id": pg_id, "process_group": pg,
        "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq,
        "profiling_name": "nccl:all_reduce", "time_created_ns": 1, "input_sizes": [[4]],
        "input_dtypes": ["Float"], "output_sizes": [[4]], "output_dtypes": ["Float"],
        "state": state, "time_discovered_started_ns": None,
        "time_discovered_completed_ns": None, "retired": state == "completed",
        "timeout_ms": 600000, "is_p2p": False, "thread_id": "1", "thread_name": "python",
    }  # fmt: skip


def nccl_dump(*entries, status=None):
    """A dump as ProcessGroupNCCL writes it on a timeout (constructed from the field names
    of FlightRecorder.hpp: version, pg_config with the ranks as a string, pg_status)."""
    return {
        "version": "2.10", "comm_lib_version": "2.27.5",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}},
        "pg_status": status or {},
        "entries": list(entries),
    }  # fmt: skip


def test_nccl_ranks_missing_from_the_newest_collective_and_ranks_with_no_dump():
    status = {"0": {"last_enqueued_collective": 7, "last_started_collective": 7,
                    "last_completed_collective": 6}}  # fmt: skip
    rank0 = nccl_dump(nccl_entry(5, 6, "completed"), nccl_entry(6, 7, "started"), status=status)
    rank1 = nccl_dump(nccl_entry(5, 6, "completed"), nccl_entry(6, 7, "started"))
    rank2 = nccl_dump(nccl_entry(5, 6, "completed"))  # never entered #7
    dumps = [parse_dump(load_plain_pickle(pickle.dumps(d, 2)), r)
             for r, d in enumerate((rank0, rank1, rank2))]  # fmt: skip
    (group,) = group_progress(dumps)
    assert group.missing == (2,) and group.no_dump == (3,)
    assert [(r.rank, r.last_started, r.last_completed) for r in group.ranks] == [
        (0, 7, 6), (1, 7, 6), (2, 6, 6)]  # fmt: skip
    assert group.message == (
        "group 0 (default_pg): rank 2 missing from collective #7 (nccl:all_reduce); "
        "ranks 0, 1 entered it; no dump from rank 3"
    )
    # All entered, one not completed (a stuck network, not a missing rank):
    rank2 = nccl_dump(nccl_entry(5, 6, "completed"), nccl_entry(6, 7, "completed"))
    rank3 = nccl_dump(nccl_entry(5, 6, "completed"), nccl_entry(6, 7, "completed"))
    dumps = [parse_dump(d, r) for r, d in enumerate((rank0, rank1, rank2, rank3))]
    assert group_progress(dumps)[0].message == (
        "group 0 (default_pg): every dumped rank entered collective #7 (nccl:all_reduce); "
        "2 of 4 saw it complete"
    )


@pytest.mark.parametrize(
    ("dump", "why"),
    [
        ([], "top level: expected a dict, got a list"),
        ({"entries": []}, "version: expected a string"),
        ({"version": "2.10", "entries": [{"process_group": "0"}]},
         "entries[0].process_group: expected a (name, description) pair"),
        ({"version": "2.10", "entries": [nccl_entry(0, 1, "lost")]},
         "entries[0].state: 'lost' is not one of scheduled, started, completed"),
        ({"version": "2.10", "entries": [{**nccl_entry(0, 1, "started"),
                                          "collective_seq_id": -3}]},
         "entries[0].collective_seq_id: -3 is below 0"),
        ({"version": "2.10", "pg_status": {"0": {"last_enqueued_collective": "many"}}},
         "pg_status.0.last_enqueued_collective: expected an integer, got a string"),
    ],
)  # fmt: skip
def test_a_dump_of_the_wrong_shape_says_where(dump, why):
    with pytest.raises(Invalid) as caught:
        parse_dump(dump, 0)
    assert why in str(caught.value)


# -- the folder reader ---------------------------------------------------------------------


def test_the_reader_takes_rank_files_only_and_warns_per_bad_file(tmp_path):
    shutil.copy(DATA / "rank_0", tmp_path / "rank_0")
    shutil.copy(DATA / "json" / "rank_1", tmp_path / "rank_1")
    marker = tmp_path / "ran"
    (tmp_path / "rank_2").write_bytes(pickle.dumps(RunsACommand(marker), 2))
    (tmp_path / "rank_3").write_bytes(b"{torn")
    os.mkfifo(tmp_path / "rank_4")  # a FIFO would block a plain open: never opened
    os.symlink(DATA / "rank_0", tmp_path / "rank_5")
    (tmp_path / "rank_6.pipe").write_text("")
    (tmp_path / "notes.txt").write_text("")
    dumps, warnings = read_dumps(tmp_path)
    assert [d.rank for d in dumps] == [0, 1]
    assert warnings == [
        f"{tmp_path / 'rank_2'}: refused: the pickle imports or calls code "
        "(opcode GLOBAL at byte 2)",
        f"{tmp_path / 'rank_3'}: not valid JSON (Expecting property name enclosed in double "
        "quotes: line 1 column 2 (char 1))",
    ]
    assert not marker.exists()
    assert group_progress(dumps)[0].missing == (1,)
