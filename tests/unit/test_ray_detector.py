"""Whether Ray 2.60's NCCL hang detector watches a run, before any verdict (issue 22).

Ray decides where the trainer is built (``RAY_TRAIN_ENABLE_NCCL_HANG_DETECTOR`` in the
process that calls ``fit()``) and ships the ``NCCLRASCallback`` it built, with the settings
it parsed, to the controller, which hands it to each worker group. The RunProbe reads it
there (``wire.train_hooks.nccl_hang_detector``); the record goes through the Ledger and the
KV store (validated as untrusted input), the pipeline words it once with the run's verdict
so far, and the faces show that line. The detector itself needs GPUs and NCCL: here it is
a stand-in of the same class name and module, with the attributes Ray 2.60.0's
``__init__`` sets.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from raytop.faces.text import status_text
from raytop.model import Cluster, Snapshot, TrainRun, Worker, untrusted_kv
from raytop.model.nccl_ras import RayHangDetector, RayHangVerdict
from raytop.model.untrusted import Invalid
from raytop.pipeline.derive import with_ray_detector
from raytop.pipeline.run_checkpoints import RunCheckpoints
from raytop.probe import run_probe
from raytop.probe.run_probe import RunProbe, RunRecorder
from raytop.sources.checkpoints import CheckpointSnapshots
from raytop.sources.ledger_source import LedgerReader
from raytop.wire import train_hooks
from raytop.wire.kv_keys import INDEX_KEY, PAGE_PREFIX, RUN_PREFIX
from tests.fakes import FakeKv

ON = {"state": "on", "ray": "2.60.0", "action": "observe", "poll_s": 15.0, "confirm_s": 600.0,
      "disabled": False}  # fmt: skip
OFF = {"state": "off", "ray": "2.60.0", "action": None, "poll_s": None, "confirm_s": None,
       "disabled": False}  # fmt: skip


def ray_detector_class():
    """A class Ray would call ``NCCLRASCallback``, in Ray's module (the wire looks for both)."""

    class NCCLRASCallback:
        def __init__(self, action="observe", poll=15.0, confirm=600.0) -> None:
            self._action, self._poll_interval_s, self._confirm_duration_s = action, poll, confirm
            self._is_ras_degraded = False

    NCCLRASCallback.__module__ = train_hooks.NCCL_RAS_MODULE
    return NCCLRASCallback


class WorkerGroup:
    """What Train's ``WorkerGroup.__init__`` keeps of its callbacks."""

    def __init__(self, *callbacks: object) -> None:
        self._callbacks = list(callbacks)


# -- in the controller: the wire reads Ray's own object --------------------------------------


def test_the_detector_among_the_callbacks_is_on_with_the_settings_ray_parsed() -> None:
    detector = ray_detector_class()(action="fail", poll=5.0, confirm=120.0)
    record, found = train_hooks.nccl_hang_detector(WorkerGroup(object(), detector))
    assert found is detector
    assert record == {**ON, "ray": record["ray"], "action": "fail", "poll_s": 5.0,
                      "confirm_s": 120.0}  # fmt: skip
    detector._is_ras_degraded = True
    assert train_hooks.nccl_hang_detector_disabled(detector)
    assert train_hooks.nccl_hang_detector(WorkerGroup(detector))[0]["disabled"] is True


def test_a_class_of_the_same_name_elsewhere_is_not_rays_detector(monkeypatch) -> None:
    impostor = type("NCCLRASCallback", (), {"_action": "fail"})
    monkeypatch.setattr(train_hooks.importlib.util, "find_spec", lambda name: object())
    record, found = train_hooks.nccl_hang_detector(WorkerGroup(impostor()))
    assert record["state"] == "off" and found is None
    assert train_hooks.nccl_hang_detector(object()) == (None, None)  # no callbacks: unknown


def test_a_ray_without_the_module_has_no_detector_never_on(monkeypatch) -> None:
    monkeypatch.setattr(train_hooks.importlib.util, "find_spec", lambda name: None)
    record, _ = train_hooks.nccl_hang_detector(WorkerGroup())
    assert record["state"] == "unavailable" and record["action"] is None


def test_the_installed_ray_line_has_the_detector_from_2_60_on() -> None:
    """On the installed Ray itself (real ``find_spec``): a line before 2.60 has no
    detector; 2.60 and later have it, and a worker group without Ray's callback is "off",
    never "unavailable"."""
    import ray

    record, _ = train_hooks.nccl_hang_detector(WorkerGroup())
    has_it = tuple(int(p) for p in ray.__version__.split(".")[:2]) >= (2, 60)
    assert (record["state"], record["ray"]) == ("off" if has_it else "unavailable",
                                                ray.__version__)  # fmt: skip


def test_the_probe_sends_the_detector_once_and_again_when_ray_stops_it(monkeypatch) -> None:
    probe = RunProbe()
    probe._recorder = RunRecorder("r", "exp-t1", {})
    sent: list[dict] = []
    monkeypatch.setattr(probe, "_send", lambda: sent.append(probe._recorder.message()))
    monkeypatch.setattr(run_probe, "worker_group_attempt_id", lambda group: None)
    detector = ray_detector_class()()
    probe.after_worker_group_start(WorkerGroup(detector))
    assert [m["hang_detector"]["state"] for m in sent] == ["on"]
    probe.after_worker_group_poll_status(None)
    probe.after_worker_group_start(WorkerGroup(detector))  # the next attempt: unchanged
    assert len(sent) == 1
    detector._is_ras_degraded = True
    probe.after_worker_group_poll_status(None)
    probe.after_worker_group_poll_status(None)
    assert len(sent) == 2 and sent[-1]["hang_detector"]["disabled"] is True
    assert probe.dropped == 0


def test_the_recorder_keeps_what_it_knew_when_the_callbacks_do_not_read() -> None:
    rec = RunRecorder("r", "exp-t1", {})
    assert rec.message()["hang_detector"] is None
    assert rec.detector(dict(ON)) and not rec.detector(dict(ON)) and not rec.detector(None)
    assert rec.message()["hang_detector"] == ON


# -- the record as untrusted input ------------------------------------------------------------


def test_good_records_read_back_and_an_off_ones_settings_are_dropped() -> None:
    assert untrusted_kv.run_hang_detector({"hang_detector": ON}) == ON
    junk = {**OFF, "action": "\x1b[2J", "poll_s": "x"}
    assert untrusted_kv.run_hang_detector({"hang_detector": junk}) == OFF
    assert untrusted_kv.run_hang_detector({}) is None  # an older probe


@pytest.mark.parametrize("bad, where", [
    ({"state": "exploded"}, "hang_detector.state: 'exploded' is not one of"),
    ({"action": "panic"}, "hang_detector.action: 'panic' is not one of"),
    ({"action": None}, "hang_detector.action"),
    ({"poll_s": 0}, "hang_detector.poll_s: 0 s is not in"),
    ({"confirm_s": -600}, "hang_detector.confirm_s"),
    ({"confirm_s": 1e12}, "hang_detector.confirm_s"),
    ({"poll_s": "15"}, "hang_detector.poll_s: expected a finite number"),
    ({"disabled": "yes"}, "hang_detector.disabled: expected true or false"),
    ({"ray": "x" * 41}, "hang_detector.ray: 41 characters"),
])  # fmt: skip
def test_bad_records_are_refused_naming_where(bad, where) -> None:
    with pytest.raises(Invalid) as exc:
        untrusted_kv.run_hang_detector({"hang_detector": {**ON, **bad}})
    assert where in str(exc.value)
    with pytest.raises(Invalid, match="hang_detector: expected a dict"):
        untrusted_kv.run_hang_detector({"hang_detector": ["on"]})


def ledger(detector: object) -> FakeKv:
    record = {"run_id": "r", "run_name": "exp-t1", "failure_config": {}, "sent_at": 1.0,
              "attempts": [{"index": 1, "attempt_id": "a1", "status": "running",
                            "started_at": 10.0, "ended_at": None, "error_class": None,
                            "error": None, "failure_class": None, "first_report": None,
                            "restored": None}],
              "hang_detector": detector}  # fmt: skip
    page = {"run_id": "r", "run_name": "exp-t1", "attempt_id": "a1", "world_size": 1,
            "first_seen_at": 20.0, "version": 1, "ranks": {}}  # fmt: skip
    return FakeKv({
        INDEX_KEY: json.dumps({"started_at": 1.0, "published_at": 100.0,
                               "pages": {"r.a1": 1}, "runs": {"r": 1}}).encode(),
        PAGE_PREFIX + "r.a1": json.dumps(page).encode(),
        RUN_PREFIX + "r": json.dumps(record).encode(),
    })  # fmt: skip


def test_the_reader_carries_the_detector_on_the_run() -> None:
    (run,), status = LedgerReader(ledger(ON)).read(now=100.0)
    assert run.ray_detector == RayHangDetector(**ON) and not status.warnings
    (run,), _ = LedgerReader(ledger(None)).read(now=100.0)
    assert run.ray_detector is None


def test_a_bad_detector_is_a_warning_naming_it_and_the_attempts_still_show() -> None:
    (run,), status = LedgerReader(ledger({**ON, "state": "\x1b]2;pwned\x07"})).read(now=100.0)
    assert run.ray_detector is None and [a.index for a in run.attempts] == [1]
    (warning,) = status.warnings
    assert warning.startswith(RUN_PREFIX + "r: hang_detector.state:")


# -- derived once, with the verdict so far -------------------------------------------------------

VERDICT = RayHangVerdict(confirmed_at=2_000.0, folder="/r/run/hang_detector", communicators=1,
                         lagging=())  # fmt: skip


def run_with(detector: dict | None, verdict: RayHangVerdict | None = None, **extra) -> TrainRun:
    workers = (Worker(rank=0, reports_entered=3, reports_exited=3, heartbeat_at=1_999.0),)
    return TrainRun(run_id="r", run_name="exp-t1", attempt_id="a1", world_size=1,
                    workers=workers, ray_hang=verdict,
                    ray_detector=RayHangDetector(**detector) if detector else None,
                    **extra)  # fmt: skip


@pytest.mark.parametrize("detector, verdict, line", [
    (ON, None, "Ray's NCCL hang detector: on (observe, polls every 15s, confirms after "
               "10m00s), no verdict yet"),
    ({**ON, "action": "fail"}, None, "on (fail, polls every 15s, confirms after 10m00s)"),
    (ON, VERDICT, "on (observe, polls every 15s, confirms after 10m00s), confirmed a hang: "
                  "its evidence in /r/run/hang_detector"),
    ({**ON, "disabled": True}, None, "but Ray stopped it for the rest of this run (ncclras"),
    (OFF, None, "Ray's NCCL hang detector: off (RAY_TRAIN_ENABLE_NCCL_HANG_DETECTOR was not "
                "1 or true where the trainer was built)"),
    ({**OFF, "state": "unavailable", "ray": "2.59.0"}, None,
     "Ray's NCCL hang detector: not available on this Ray (2.59.0; it came in 2.60)"),
])  # fmt: skip
def test_the_pipeline_words_the_detector_once(detector, verdict, line) -> None:
    derived = with_ray_detector(run_with(detector, verdict)).ray_detector
    assert line in derived.line
    assert "no verdict yet" not in derived.line or verdict is None and not derived.disabled
    assert with_ray_detector(run_with(None)).ray_detector is None


def test_the_collection_step_words_it_after_reading_the_verdict(tmp_path) -> None:
    folder = tmp_path / "run"
    (folder / "hang_detector" / "stack_traces").mkdir(parents=True)
    (folder / "hang_detector" / "stack_traces" / "rank_0.log").write_text("stack\n")
    step = RunCheckpoints(CheckpointSnapshots(), LedgerReader(FakeKv()))
    hung = step.of(run_with(ON, run_path=str(folder)))
    assert hung.ray_hang is not None
    assert hung.ray_detector.line.endswith(f"its evidence in {folder / 'hang_detector'}")
    quiet = step.of(run_with(ON, run_path=str(tmp_path / "other")))
    assert quiet.ray_detector.line.endswith("no verdict yet")


# -- the faces: status, status --json ---------------------------------------------------------


def snapshot_of(*runs: TrainRun) -> Snapshot:
    return Snapshot(taken_at=100.0, cluster=Cluster("127.0.0.1:6379", True), runs=runs)


def test_status_names_each_live_run_the_detector_watches() -> None:
    on = with_ray_detector(run_with(ON))
    off = with_ray_detector(replace(run_with(OFF), run_id="r2", run_name="other"))
    text = status_text(snapshot_of(on, off))
    assert ("run exp-t1 attempt 1: Ray's NCCL hang detector: on (observe, polls every 15s, "
            "confirms after 10m00s), no verdict yet") in text  # fmt: skip
    assert text.count("NCCL hang detector") == 1  # off: nothing said here
    gone = replace(on, gone=True)
    assert "NCCL hang detector" not in status_text(snapshot_of(gone))


def test_the_detector_travels_through_status_json_and_back() -> None:
    snapshot = snapshot_of(with_ray_detector(run_with({**ON, "disabled": True}, VERDICT)))
    data = json.loads(json.dumps(snapshot.to_json()))
    detector = data["runs"][0]["ray_detector"]
    assert set(detector) == {"state", "ray", "action", "poll_s", "confirm_s", "disabled", "line"}
    assert detector["state"] == "on" and detector["line"].startswith("Ray's NCCL hang detector")
    again = Snapshot.from_json(data)
    assert again.runs[0].ray_detector == snapshot.runs[0].ray_detector
    assert Snapshot.from_json(snapshot_of(run_with(None)).to_json()).runs[0].ray_detector is None
