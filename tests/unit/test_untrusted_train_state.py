"""What Ray's dashboard says of Train V2's runs (model.untrusted_train_state): the answer
recorded from a real cluster's ``GET /api/train/v2/runs/v1`` (Ray 2.58.1; a run started with
``RAY_TRAIN_ENABLE_STATE_TRACKING=1``, 2 workers, ``max_failures=1``, rank 1 raised in the
first attempt, the second running) is accepted as Ray wrote it, keys raytop does not use
ignored; every other shape, a time that is not a whole number of nanoseconds, a status
Train has not, an answer over a cap, is refused with a message naming where. And how
``model.train_state`` says an attempt in raytop's words."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from raytop.model import untrusted, untrusted_train_state
from raytop.model.train_state import StateAttempt, attempt_of, error_of

RECORDED = json.loads(
    (Path(__file__).parents[1] / "data" / "dashboard" / "train_v2_runs.json").read_bytes()
)
RUN = RECORDED["train_runs"][0]


def answer(change) -> dict:
    """The recorded answer with ``change(run)`` applied to its one run."""
    data = copy.deepcopy(RECORDED)
    change(data["train_runs"][0])
    return data


def invalid(data) -> str:
    with pytest.raises(untrusted.Invalid) as exc:
        untrusted_train_state.train_runs(data)
    return str(exc.value)


def test_the_recorded_answer_gives_the_run_its_attempts_and_workers_as_train_wrote_them():
    (run,) = untrusted_train_state.train_runs(copy.deepcopy(RECORDED))
    assert (run.run_id, run.name, run.controller_actor_id, run.status) == (
        RUN["id"], "state-tracked-run", RUN["controller_actor_id"], "RUNNING"
    )  # fmt: skip
    assert run.started_at == RUN["start_time_ns"] / 1e9 and run.ended_at is None
    errored, running = run.attempts
    assert (errored.status, running.status) == ("ERRORED", "RUNNING")
    assert errored.attempt_id == RUN["attempts"][0]["attempt_id"]
    assert errored.ended_at is not None and errored.started_at < errored.ended_at
    assert errored.detail.startswith("[Rank 1 Error Snippet]:\nTraceback")
    assert running.ended_at is None and running.size == 2
    assert [(w.world_rank, w.local_rank, w.node_rank, w.pid) for w in running.workers] == [
        (0, 0, 0, RUN["attempts"][1]["workers"][0]["pid"]),
        (1, 1, 0, RUN["attempts"][1]["workers"][1]["pid"]),
    ]
    worker = running.workers[0]
    assert worker.node_id == RUN["attempts"][1]["workers"][0]["node_id"]
    assert worker.gpu_ids == () and worker.resources == {"CPU": 1.0}


def test_keys_raytop_does_not_use_are_ignored_and_an_empty_state_is_no_runs():
    def extra(run):
        run["added_by_a_later_ray"] = {"x": [1, 2]}
        run["run_settings"] = "anything"
        run["job_details"] = None
        worker = run["attempts"][1]["workers"][0]
        worker["processStats"] = {"cpuPercent": "not even a number"}
        worker["status"] = "PENDING_CREATION"  # the GCS's live state, not Train's
        worker.pop("actor_id")
        worker.pop("node_ip")

    (run,) = untrusted_train_state.train_runs(answer(extra))
    assert run.attempts[1].workers[0].pid == RUN["attempts"][1]["workers"][0]["pid"]
    assert untrusted_train_state.train_runs({"train_runs": []}) == ()


def test_a_pending_attempt_has_its_size_and_no_workers():
    def pending(run):
        detail = "Scheduling 2 workers, each requiring: {'CPU': 1}."
        run["attempts"][1].update(status="PENDING", workers=[], status_detail=detail)

    (run,) = untrusted_train_state.train_runs(answer(pending))
    assert (run.attempts[1].size, run.attempts[1].workers) == (2, ())


def set_key(path: str, value):
    """A change setting ``path`` (dotted, with list indices) of the run to ``value``
    (``...``: removing it)."""

    def change(run):
        *parents, last = path.split(".")
        node = run
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        key = int(last) if last.isdigit() else last
        if value is ...:
            del node[key]
        else:
            node[key] = value

    return change


@pytest.mark.parametrize(
    ("path", "value", "said"),
    [
        ("id", ..., "train_runs[0]: missing key 'id'"),
        ("id", "RUN-1", "train_runs[0].id: 'RUN-1' is not a hex id"),
        ("name", "two\nlines", "train_runs[0].name: expected one printable line"),
        ("name", "", "train_runs[0].name: expected a non-empty string"),
        ("controller_actor_id", 7, "train_runs[0].controller_actor_id: expected a string"),
        ("status", "DONE", "train_runs[0].status: 'DONE' is not one of ABORTED, ERRORED"),
        ("start_time_ns", 1.5, "train_runs[0].start_time_ns: expected an integer, got a number"),
        ("start_time_ns", float("nan"), "train_runs[0].start_time_ns: expected an integer"),
        ("start_time_ns", float("inf"), "train_runs[0].start_time_ns: expected an integer"),
        ("start_time_ns", -1, "train_runs[0].start_time_ns: -1 is below 0"),
        ("start_time_ns", 2**64, "train_runs[0].start_time_ns: 18446744073709551616 is over"),
        ("end_time_ns", 5, "train_runs[0].end_time_ns: 5 is before start_time_ns"),
        ("attempts", None, "train_runs[0].attempts: expected a list, got null"),
        ("attempts", {}, "train_runs[0].attempts: expected a list, got a dict"),
        ("attempts.0", [], "train_runs[0].attempts[0]: expected a dict, got a list"),
        ("attempts.0.run_id", "ab", "train_runs[0].attempts[0].run_id: not the run it is listed"),
        ("attempts.0.status", "RESTARTING", "train_runs[0].attempts[0].status: 'RESTARTING' is"),
        ("attempts.0.status_detail", ["x"], "attempts[0].status_detail: expected a string"),
        ("attempts.1.end_time_ns", 1, "train_runs[0].attempts[1].end_time_ns: 1 is before"),
        ("attempts.1.resources.0.resources.CPU", float("nan"),
         "attempts[1].resources[0].resources.CPU: nan is not a finite amount"),
        ("attempts.1.workers", "all", "train_runs[0].attempts[1].workers: expected a list"),
        ("attempts.1.workers.1.world_rank", 0, "attempts[1].workers: a world rank is listed twice"),
        ("attempts.1.workers.0.world_rank", "0",
         "attempts[1].workers[0].world_rank: expected an integer, got a string"),
        ("attempts.1.workers.0.world_rank", 10_000, "world_rank: 10000 is over the cap of 9999"),
        ("attempts.1.workers.0.pid", 0, "train_runs[0].attempts[1].workers[0].pid: 0 is below 1"),
        ("attempts.1.workers.0.pid", True, "attempts[1].workers[0].pid: expected an integer"),
        ("attempts.1.workers.0.node_id", "../etc", "workers[0].node_id: '../etc' is not a hex id"),
        ("attempts.1.workers.0.gpu_ids", [-1], "workers[0].gpu_ids[0]: expected a GPU index"),
        ("attempts.1.workers.0.resources", {"resources": [1]},
         "workers[0].resources.resources: expected a dict, got a list"),
    ],
)  # fmt: skip
def test_a_bad_entry_makes_the_answer_bad_naming_where(path, value, said):
    assert said in invalid(answer(set_key(path, value)))


def test_a_bad_top_level_is_named():
    assert invalid([]) == "top level: expected a dict, got a list"
    assert invalid({}) == "train_runs: expected a list, got null"
    assert invalid({"train_runs": [1]}) == "train_runs[0]: expected a dict, got a number"


def test_counts_over_their_caps_are_refused(monkeypatch):
    monkeypatch.setattr(untrusted_train_state, "MAX_TRAIN_RUNS", 1)
    two = copy.deepcopy(RECORDED)
    two["train_runs"].append(copy.deepcopy(RUN))
    assert invalid(two) == "train_runs: 2 entries, over the cap of 1"
    monkeypatch.setattr(untrusted_train_state, "MAX_RUN_ATTEMPTS", 1)
    assert invalid(copy.deepcopy(RECORDED)) == (
        "train_runs[0].attempts: 2 entries, over the cap of 1"
    )
    monkeypatch.setattr(untrusted_train_state, "MAX_RUN_ATTEMPTS", 10)
    monkeypatch.setattr(untrusted_train_state, "MAX_RANKS", 1)
    assert invalid(copy.deepcopy(RECORDED)) == (
        "train_runs[0].attempts[0].resources: 2 entries, over the cap of 1"
    )


def test_an_answer_over_its_size_cap_is_refused_unparsed():
    raw = json.dumps(RECORDED).encode()
    with pytest.raises(untrusted.Refused, match="over the 1,000 bytes cap"):
        untrusted.parse(raw, 1000)
    assert len(raw) < untrusted_train_state.MAX_TRAIN_STATE_BYTES


# -- an attempt in raytop's words -------------------------------------------------------------


def attempt(status: str, detail: str | None = None, ended_at: float | None = 110.0):
    return StateAttempt("a1", status, 100.0, ended_at, detail, 2)


def test_attempt_statuses_are_raytops():
    said = {s: attempt_of(attempt(s), 1).status
            for s in ("PENDING", "RUNNING", "FINISHED", "ERRORED", "ABORTED")}  # fmt: skip
    assert said == {"PENDING": "running", "RUNNING": "running", "FINISHED": "finished",
                    "ERRORED": "errored", "ABORTED": "aborted"}  # fmt: skip


def test_an_attempt_lasts_to_its_end_or_to_now_while_running():
    ended = attempt_of(attempt("FINISHED"), 3)
    assert (ended.index, ended.attempt_id, ended.started_at, ended.ended_at) == (
        3, "a1", 100.0, 110.0
    )  # fmt: skip
    assert ended.duration_s == 10.0 and ended.error is None and ended.error_class is None
    running = attempt_of(attempt("RUNNING", ended_at=None), 1)
    assert (running.ended_at, running.duration_s, running.lasted(130.0)) == (None, None, 30.0)


def test_the_recorded_error_is_its_class_and_its_message():
    detail = RUN["attempts"][0]["status_detail"]
    assert error_of(detail) == ("RuntimeError", "injected failure at step 1")
    said = attempt_of(attempt("ERRORED", detail), 1)
    assert (said.error_class, said.error) == ("RuntimeError", "injected failure at step 1")


def test_errors_of_several_ranks_say_the_first_blocks():
    detail = (
        "[Rank 0,2 Error Snippet]:\nTraceback (most recent call last):\n"
        '  File "loop.py", line 3, in loop\n    boom()\n'
        "ValueError: bad shape\n  (4, 2) vs (4, 3)\n"
        "[Rank 1 Error Snippet]:\nTraceback (most recent call last):\nKeyError: 'x'\n"
    )
    assert error_of(detail) == ("ValueError", "(4, 2) vs (4, 3)")


def test_an_error_with_no_traceback_is_its_last_line_and_no_class():
    assert error_of("[Rank 3 Error Snippet]:\nworker died\nexit code 9") == (None, "exit code 9")
    reason = "Run aborted due to user interrupt (SIGINT)."
    said = attempt_of(attempt("ABORTED", reason), 1)
    assert (said.error_class, said.error) == (None, reason)
    assert error_of(None) == (None, None) and error_of(" \n") == (None, None)
    # A running attempt's detail ("Scheduling 2 workers…") is no error.
    assert attempt_of(attempt("PENDING", "Scheduling 2 workers"), 1).error is None


def test_an_error_is_one_line_of_at_most_300_characters():
    detail = "Traceback (most recent call last):\n" + "RuntimeError: " + "x" * 1000
    error_class, error = error_of(detail)
    assert error_class == "RuntimeError" and error == "x" * 300
    wrapped = "Traceback (most recent call last):\nray.exceptions.RayTaskError(OSError): disk"
    assert error_of(wrapped) == ("ray.exceptions.RayTaskError(OSError)", "disk")
