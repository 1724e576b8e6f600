"""The validating layer (model.untrusted): each validator accepts what raytop's own writers
write and refuses, with a message naming where and what, every other shape; the readers
over it (storage, home, ledger, trial registrations) turn a refusal into one warning."""

from __future__ import annotations

import json
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raytop.home import registered_experiments
from raytop.jsonfile import write_json_atomic
from raytop.model import untrusted, untrusted_beats, untrusted_kv
from raytop.model.progress import MAX_METRIC_HISTORY
from raytop.model.records import MAX_REPORT_HISTORY
from raytop.model.untrusted_ledger_page import ledger_page
from raytop.sources.local_storage import LocalStorage
from raytop.sources.placement_source import PlacementReader
from raytop.sources.storage import Storages
from raytop.wire.kv_keys import TRIAL_PREFIX
from tests.fakes import FakeKv

RANK = {"rank": 0, "entered": 3, "exited": 3, "local_rank": 0, "node_rank": 0,
        "node_id": "n1", "pid": 11, "last_enter_at": 90.0, "last_exit_at": 90.5,
        "received_at": 100.0, "cpu_percent": 5.0, "rss_bytes": 1000, "gpu_memory_bytes": None,
        "gpu_ids": [], "usual_interval_s": 1.0, "done": False, "dropped": 0,
        "run_path": "/tmp/x", "sent_at": 99.0, "run_id": "r", "attempt_id": "a",
        "checkpoints": [{"dir_name": "checkpoint_1", "report": 1, "mode": "SYNC",
                         "custom_upload": False, "files": {"model.pt": 10}, "sync_s": None,
                         "start": 95.0, "end": 96.0, "error": None}],
        "syncs": [[1, 95.0, 95.5]]}  # fmt: skip
PAGE = {"run_id": "r", "run_name": "exp-t1", "attempt_id": "a", "world_size": 1,
        "placement_group_id": None, "first_seen_at": 10.0, "ranks": {"0": RANK},
        "version": 3}  # fmt: skip


def invalid(validator, value) -> str:
    with pytest.raises(untrusted.Invalid) as exc:
        validator(value)
    return str(exc.value)


def test_what_the_ledger_writes_is_accepted():
    page = ledger_page(json.loads(json.dumps(PAGE)))
    assert page["ranks"]["0"]["pid"] == 11 and page["ranks"]["0"]["stack"] is None
    absent = ledger_page({**PAGE, "ranks": {"0": {"rank": 0, "entered": None}}})
    assert absent["ranks"]["0"]["entered"] == 0 and absent["ranks"]["0"]["checkpoints"] == []
    index = {"started_at": 1.0, "published_at": 2.0, "pages": {"r.a": 3}}
    # a ledger older than the RunProbe publishes no run records, one older than beats none
    assert untrusted_kv.ledger_index(index) == {**index, "runs": {}, "beats": {}}
    assert untrusted_kv.ledger_index({**index, "runs": {"r": 4}})["runs"] == {"r": 4}
    assert untrusted_kv.ledger_index({**index, "beats": {"r.a": 5}})["beats"] == {"r.a": 5}


def test_beats_are_checked_and_a_bad_activity_drops_only_itself():
    beat = {"received_at": 5.0, "cpu_percent": 97.5, "rss_bytes": 2**30,
            "gpu_memory_bytes": None, "activity": {"kind": "nonsense"}}  # fmt: skip
    beats = untrusted_beats.ledger_beats({"ranks": {"3": beat, "4": {}}})
    unsent = dict.fromkeys(("gpu_util_percent", "gpu_memory_used_bytes", "optimizer_steps",
                            "step_rate"))  # an older probe's beat, or no GPU, no torch  # fmt: skip
    assert beats["3"] == {**beat, "activity": None, **unsent}
    assert beats["4"] == {**dict.fromkeys(beat), **unsent}  # a probe that sent no figures yet
    for bad, message in (
        ({"ranks": {"x": beat}}, "key 'x' is not a rank number"),
        ({"ranks": {"3": {**beat, "cpu_percent": "hot"}}}, "ranks.3.cpu_percent"),
        ({"ranks": {"3": {**beat, "rss_bytes": 1.5}}}, "ranks.3.rss_bytes"),
        ({"ranks": [beat]}, "ranks"),
    ):
        assert message in invalid(untrusted_beats.ledger_beats, bad)


@pytest.mark.parametrize(
    ("page", "message"),
    [
        ([], "top level: expected a dict, got a list"),
        ("page", "top level: expected a dict, got a string"),
        ({**PAGE, "world_size": "2"}, "world_size: expected an integer, got a string"),
        ({**PAGE, "world_size": 10**9}, "world_size: 1000000000 is over the cap of 10000"),
        ({k: v for k, v in PAGE.items() if k != "run_id"}, "top level: missing key 'run_id'"),
        ({**PAGE, "ranks": {"0": {**RANK, "pid": "abc"}}},
         "ranks.0.pid: expected an integer, got a string"),
        ({**PAGE, "ranks": {"x": RANK}}, "ranks: key 'x' is not a rank number"),
        ({**PAGE, "ranks": {"0": {**RANK, "syncs": [[1, 2]]}}},
         "ranks.0.syncs[0]: expected [report, start, end] (numbers), got a list"),
        ({**PAGE, "ranks": {"0": {**RANK, "checkpoints": [{"dir_name": 3}]}}},
         "ranks.0.checkpoints[0].dir_name: expected a string, got a number"),
        ({**PAGE, "ranks": {"0": {**RANK, "done": "yes"}}},
         "ranks.0.done: expected true or false, got a string"),
        ({**PAGE, "first_seen_at": float("nan")},
         "first_seen_at: expected a finite number, got a number"),
    ],
)  # fmt: skip
def test_a_bad_ledger_page_names_where(page, message):
    assert invalid(ledger_page, page) == message


def report_times_of(value) -> list:
    page = ledger_page({**PAGE, "ranks": {"0": {**RANK, "report_times": value}}})
    entered, exited = page["ranks"]["0"]["report_times"]
    assert len(entered) == len(exited)
    return list(zip(entered, exited, strict=True))


def test_a_ranks_report_history_is_read_capped_and_finite():
    assert report_times_of([[90.0, 90.5], [95, None]]) == [(90.0, 90.5), (95.0, None)]
    assert ledger_page(PAGE)["ranks"]["0"]["report_times"] == (
        (),
        (),
    )  # older probe
    # Over the cap: the newest kept, oldest first.
    many = [[float(t), t + 0.5] for t in range(100)]
    kept = report_times_of(many)
    assert len(kept) == MAX_REPORT_HISTORY and kept[0] == (68.0, 68.5) and kept[-1][0] == 99.0
    # A non-finite time drops its entry (through real JSON text: NaN / Infinity).
    raw = json.loads("[[1.0, NaN], [2.0, 2.5], [Infinity, null], [3.0, -Infinity]]")
    assert report_times_of(raw) == [(2.0, 2.5)]
    # An integer too large for a float, a bool, a null entry time: the entry goes, quietly.
    raw = json.loads(f"[[{10**400}, 1.0], [true, 1.0], [null, 2.0], [4.0, {10**400}], [5, 6]]")
    assert report_times_of(raw) == [(5.0, 6.0)]


@pytest.mark.parametrize(
    "bad", ["x", {"0": 1}, [[1.0]], [[1.0, 2.0, 3.0]], [["1", 2.0]], [[1.0, "2"]], [3.0], 7]
)
def test_a_bad_report_history_drops_the_field_not_the_rank(bad):
    page = ledger_page({**PAGE, "ranks": {"0": {**RANK, "report_times": bad}}})
    assert page["ranks"]["0"]["report_times"] == ((), ()) and page["ranks"]["0"]["pid"] == 11


def test_declared_resources_are_read_and_a_bad_map_drops_the_field():
    def declared(value):
        page = ledger_page({**PAGE, "ranks": {"0": {**RANK, "declared": value}}})
        assert page["ranks"]["0"]["pid"] == 11  # the rank stays, whatever the field holds
        return page["ranks"]["0"]["declared"]

    assert declared({"CPU": 1, "GPU": 0.5}) == {"CPU": 1.0, "GPU": 0.5}
    assert ledger_page(PAGE)["ranks"]["0"]["declared"] == {}  # an older probe
    too_many = {f"r{i}": 1.0 for i in range(untrusted_kv.MAX_DECLARED + 1)}
    for bad in ([1], "CPU", {"CPU": "1"}, {"CPU": True}, {"CPU": -1}, {"CPU": float("nan")},
                {"": 1.0}, {"x" * 200: 1.0}, too_many):  # fmt: skip
        assert declared(bad) == {}, bad


def test_the_restored_checkpoint_is_a_plain_folder_name_or_dropped():
    def restored(value):
        page = ledger_page({**PAGE, "ranks": {"0": {**RANK, "restored_from": value}}})
        assert page["ranks"]["0"]["pid"] == 11  # the rank stays, whatever the field holds
        return page["ranks"]["0"]["restored_from"]

    assert restored("checkpoint_000003") == "checkpoint_000003"
    assert ledger_page(PAGE)["ranks"]["0"]["restored_from"] is None  # older probe
    for bad in ("", "../../etc", "a/b", "a\\b", "..", "x" * 256, "a\nb", 3, ["c"], {"c": 1}):
        assert restored(bad) is None, bad


def test_too_many_ranks_or_pages_are_refused():
    ranks = {str(r): {**RANK, "rank": r} for r in range(untrusted.MAX_RANKS + 1)}
    assert "over the cap of 10000" in invalid(ledger_page, {**PAGE, "ranks": ranks})
    pages = {f"r.{i}": 1 for i in range(untrusted.MAX_LEDGER_PAGES + 1)}
    index = {"started_at": 1.0, "published_at": 2.0, "pages": pages}
    assert f"pages: {len(pages)} entries" in invalid(untrusted_kv.ledger_index, index)
    beats = {"started_at": 1.0, "published_at": 2.0, "pages": {}, "beats": pages}
    assert f"beats: {len(pages)} entries" in invalid(untrusted_kv.ledger_index, beats)


def test_parse_refuses_oversize_and_deep_nesting():
    with pytest.raises(untrusted.Refused, match="over the 10 bytes cap"):
        untrusted.parse(b"[" * 11, 10)
    too_deep = r"^nested too deep \(over 64 levels\): not read$"
    with pytest.raises(untrusted.TooDeep, match=too_deep):
        untrusted.parse("[" * 100_000 + "]" * 100_000, untrusted.MiB)


def test_parse_caps_the_depth_itself_not_the_brackets_in_strings():
    """A depth Python's json takes is still refused over the cap, as ``TooDeep``: a
    ``Refused``, which the storage keeps its last good copy for and does not re-read as
    torn. The cap itself, brackets inside strings and 4,000-digit integers still parse."""
    deep = [
        "[" * 65 + "]" * 65,  # parses in Python: only the explicit cap refuses it
        '{"a": ' * 65 + "1" + "}" * 65,
        ("[" * 65 + "]" * 65).encode("utf-16"),  # json.loads reads UTF-16 too
        '[{"x": "]]]}}}\\\\", "y": [' + "[" * 62 + "]" * 62 + "]}]",
    ]
    for raw in deep:
        with pytest.raises(untrusted.TooDeep) as caught:
            untrusted.parse(raw, untrusted.MiB)
        assert isinstance(caught.value, untrusted.Refused)
    fine = [
        json.loads("[" * 64 + "]" * 64),
        ["[" * 100, "{" * 100, '"\\' * 40 + "[[[", {"k[": "]{", "\\": ['\\"[[']}],
        {"n": int("9" * 4000)},
    ]
    for value in fine:
        raw = json.dumps(value)
        assert untrusted.parse(raw, 64 * untrusted.MiB) == value
        assert untrusted.parse(raw.encode(), 64 * untrusted.MiB) == value


def test_driver_and_cluster_records():
    driver = {"pid": 123, "pid_create_time": 1.5, "host": "h", "spec": "s.toml",
              "address": "a:1", "experiment_name": "e", "experiment_path": "/p",
              "metric": "loss", "mode": "min", "started_at": 2.0}  # fmt: skip
    assert untrusted.driver_record(driver) is driver
    assert invalid(untrusted.driver_record, {**driver, "pid": "abc"}) == (
        "pid: expected an integer, got a string"
    )
    assert invalid(untrusted.driver_record, {**driver, "pid": 0}) == "pid: 0 is below 1"
    assert invalid(untrusted.driver_record, [123]) == "top level: expected a dict, got a list"
    cluster = {"address": "127.0.0.1:6379", "pid": 5, "pid_create_time": 1.0,
               "started_at": 1.0, "log": "/x"}  # fmt: skip
    assert untrusted.cluster_record(cluster) is cluster
    assert invalid(untrusted.cluster_record, {"pid": 5}) == "top level: missing key 'address'"


def test_storage_keeps_the_last_good_copy_on_a_shape_error(tmp_path):
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps(PAGE))
    storage = LocalStorage(tmp_path, watch=False)
    good = ledger_page(PAGE)
    assert storage.read_json("ledger.json", validate=ledger_page) == (
        good,
        None,
    )
    path.write_text(json.dumps({**PAGE, "world_size": "two"}))
    data, warning = storage.read_json("ledger.json", validate=ledger_page)
    assert data == good
    assert warning == (
        "ledger.json: world_size: expected an integer, got a string; using the last good copy"
    )


def test_storage_refuses_an_oversize_file_and_a_fifo_unread(tmp_path):
    (tmp_path / "big.json").write_text("[" + "0," * 1000 + "0]")
    storage = LocalStorage(tmp_path, watch=False)
    data, warning = storage.read_json("big.json", max_bytes=100)
    assert data is None and warning.startswith("big.json: 2,003 bytes, over the 100 bytes cap")
    os.mkfifo(tmp_path / "fifo.json")  # opening it for a blocking read would hang
    data, warning = storage.read_json("fifo.json")
    assert data is None and "fifo.json: not a regular file" in warning


def test_a_symlink_loop_is_an_unreadable_entry_not_a_crash(tmp_path):
    (tmp_path / "good.json").write_text("{}")
    os.symlink(tmp_path / "loop-b", tmp_path / "loop-a")
    os.symlink(tmp_path / "loop-a", tmp_path / "loop-b")
    storages = Storages()
    storage, rel = storages.locate(str(tmp_path / "loop-a"))  # Path.resolve would raise
    assert storage.read_json(rel or "x.json")[0] is None
    top = storages.root(str(tmp_path))
    names = {e.name: e.is_dir for e in top.listing("")}
    assert names == {"good.json": False, "loop-a": False, "loop-b": False}
    data, warning = top.read_json("loop-a")
    assert data is None and "loop-a is unreadable" in warning


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe binary", b"[", b"{}", b'"experiments"', b"[1, 2]", b"null", b"[" * 100_000],
)
def test_a_malformed_experiments_json_reads_as_nothing_recorded(tmp_path, monkeypatch, content):
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path))
    (tmp_path / "experiments.json").write_bytes(content)
    assert registered_experiments() == []


def test_bad_entries_of_experiments_json_are_left_out(tmp_path, monkeypatch):
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path))
    good = {"name": "e", "path": "/p", "raytop_dir": "/p/.raytop"}
    entries = [good, {"name": "x"}, "e", {**good, "path": 3}]
    (tmp_path / "experiments.json").write_text(json.dumps(entries))
    assert registered_experiments() == [good]


def test_a_home_that_is_a_file_or_missing_records_nothing_and_is_not_created(tmp_path, monkeypatch):
    (tmp_path / "home").write_text("not a folder")
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "home"))
    assert registered_experiments() == []
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path / "absent"))
    assert registered_experiments() == []
    assert not (tmp_path / "absent").exists()  # reading never creates it
    write_json_atomic(tmp_path / "absent" / "x.json", {})  # writers create what they write
    assert (tmp_path / "absent" / "x.json").exists()


class FakeGcs:
    def placement_groups(self):
        return []


def test_bad_trial_registrations_are_warnings_naming_the_key():
    good = {"experiment": "e", "trial_id": "t1", "actor_id": "a1", "pg_id": "pg1"}
    kv = FakeKv({
        TRIAL_PREFIX + "a1": json.dumps(good).encode(),
        TRIAL_PREFIX + "a2": b"[1]",
        TRIAL_PREFIX + "a3": b"\xff",
        TRIAL_PREFIX + "a4": json.dumps({**good, "trial_id": 5}).encode(),
        TRIAL_PREFIX + "a5": b"0" * (untrusted.MAX_KV_VALUE_BYTES + 1),
    })  # fmt: skip
    reader = PlacementReader(FakeGcs(), kv)
    actors = {
        f"a{i}": {"address": f"10.0.0.1:{i}", "owner": "10.0.0.9:1", "pg_id": "pg"}
        for i in range(1, 6)
    }
    assert reader._registrations(actors, 0.0) == {"a1": good}
    assert sorted(reader.warnings) == [
        "trial/a2: top level: expected a dict, got a list",
        "trial/a3: not text (binary bytes?)",
        "trial/a4: trial_id: expected a string, got a number",
        "trial/a5: 1,048,577 bytes (1.0 MiB), over the 1,048,576 bytes (1.0 MiB) cap: not read",
    ]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, None),
        ('[{"name": "e", "path": "/p", "raytop_dir": "/p/.raytop"}]', None),
        ('[{"name": "e", "pa', "unreadable, torn or not JSON"),
        ('{"a": 1}', "expected a list"),
        ('["x", {"name": 5}]', "[0]: expected a dict, got a string (and 1 more): left out"),
    ],
)
def test_the_registry_reads_with_a_warning_naming_it(tmp_path, monkeypatch, content, expected):
    from raytop.home import read_registry

    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path))
    if content is not None:
        (tmp_path / "experiments.json").write_text(content)
    entries, warnings = read_registry()
    if expected is None:
        assert warnings == []
        assert len(entries) == (1 if content else 0)
    else:
        (warning,) = warnings
        assert warning.startswith(str(tmp_path / "experiments.json")) and expected in warning


def _row(**more) -> dict:
    return {"trial_id": "t1", "status": "RUNNING", **more}


def test_a_probe_row_carries_the_metric_history_and_max_iterations():
    row = untrusted.probe_trial(_row(metric_history=[2, 1.5, 0.25], max_iterations=5), "trials[0]")
    assert row["metric_history"] == (2.0, 1.5, 0.25) and row["max_iterations"] == 5
    # absent or null: none (rows of an older raytop)
    assert untrusted.probe_trial(_row(), "t")["metric_history"] == ()
    assert (
        untrusted.probe_trial(_row(metric_history=None, max_iterations=None), "t")["max_iterations"]
        is None
    )
    full = [0.5] * MAX_METRIC_HISTORY
    assert len(untrusted.probe_trial(_row(metric_history=full), "t")["metric_history"]) == 64


@pytest.mark.parametrize(
    ("more", "message"),
    [
        ({"metric_history": [1.0, "0.5"]}, "trials[0].metric_history[1]: expected a finite number"),
        ({"metric_history": [float("nan")]}, "trials[0].metric_history[0]: expected a finite"),
        ({"metric_history": [float("inf")]}, "trials[0].metric_history[0]: expected a finite"),
        ({"metric_history": [True]}, "trials[0].metric_history[0]: expected a finite number"),
        ({"metric_history": [None]}, "trials[0].metric_history[0]: expected a finite number"),
        ({"metric_history": [0.5] * (MAX_METRIC_HISTORY + 1)}, "65 entries, over the cap of 64"),
        ({"metric_history": {"0": 1.0}}, "trials[0].metric_history: expected a list"),
        ({"metric_history": "1,2"}, "trials[0].metric_history: expected a list"),
        ({"max_iterations": 0}, "trials[0].max_iterations: 0 is below 1"),
        ({"max_iterations": -3}, "trials[0].max_iterations: -3 is below 1"),
        ({"max_iterations": 2.5}, "trials[0].max_iterations: expected an integer"),
        ({"max_iterations": "5"}, "trials[0].max_iterations: expected an integer"),
        ({"max_iterations": True}, "trials[0].max_iterations: expected an integer"),
    ],
)
def test_a_bad_history_or_max_iterations_makes_the_row_bad(more, message):
    with pytest.raises(untrusted.Invalid, match=re.escape(message)):
        untrusted.probe_trials({"trials": [_row(**more)]})


def test_a_rewritten_probe_table_rechecks_only_its_changed_rows():
    """With a reader's memo, rows equal to last time's keep their checked copy; a changed
    row is checked again (a bad one makes the table bad, the memo stays as it was)."""
    rows = [_row(trial_id=f"t{i}", iterations=i, metrics={"loss": 1.0 / (i + 1)}) for i in range(4)]
    known: dict = {}
    first = untrusted.probe_trials(json.loads(json.dumps({"trials": rows})), known)
    assert first == untrusted.probe_trials({"trials": rows})
    rows[2] = {**rows[2], "iterations": 7}
    second = untrusted.probe_trials(json.loads(json.dumps({"trials": rows})), known)
    assert second == untrusted.probe_trials({"trials": rows}) and second[2]["iterations"] == 7
    assert [a is b for a, b in zip(first, second, strict=True)] == [True, True, False, True]
    rows[1] = {**rows[1], "metric_history": ["bad"]}
    with pytest.raises(untrusted.Invalid, match=re.escape("trials[1].metric_history[0]")):
        untrusted.probe_trials(json.loads(json.dumps({"trials": rows})), known)
    assert {k: v[1] for k, v in known.items()} == {r["trial_id"]: r for r in second}


def test_an_integer_too_large_for_a_float_is_a_named_error_never_an_overflow():
    """JSON allows integers of any size; ``math.isfinite`` raises OverflowError on one too
    large for a float, which no reader catches: every check says what it is instead."""
    huge = json.loads("1" + "0" * 400)
    assert not untrusted.is_finite_number(huge) and untrusted.is_finite_number(10**300)
    assert "started_at: expected a finite number" in invalid(
        untrusted_kv.ledger_index, {"started_at": huge, "published_at": 1.0, "pages": {}}
    )
    (beat,) = untrusted_beats.ledger_beats({"ranks": {"0": {"cpu_percent": 5}}}).values()
    assert beat["cpu_percent"] == 5
    assert "ranks.0.cpu_percent" in invalid(
        untrusted_beats.ledger_beats, {"ranks": {"0": {"cpu_percent": huge}}}
    )
    from raytop.model.progress import _finite

    assert _finite([1.0, huge, 2]) == [1.0, 2.0]


def _depth(value) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


_tricky = st.text(alphabet='[]{}"\\ab\n/', max_size=6)
_json = st.recursive(
    st.none() | st.integers() | _tricky,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_tricky, inner, max_size=3),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=_json, cap=st.integers(min_value=1, max_value=8), ascii_only=st.booleans())
def test_parse_refuses_exactly_what_nests_over_the_cap(value, cap, ascii_only):
    """Brackets, quotes and backslashes inside strings never count; nesting always does."""
    raw = json.dumps(value, ensure_ascii=ascii_only)
    if _depth(value) > cap:
        with pytest.raises(untrusted.TooDeep):
            untrusted.parse(raw, untrusted.MiB, max_depth=cap)
    else:
        assert untrusted.parse(raw, untrusted.MiB, max_depth=cap) == value
