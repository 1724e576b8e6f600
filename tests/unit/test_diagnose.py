from raytop.diagnose import diagnose
from raytop.model import Cluster, Experiment, ExperimentStatus, Snapshot, Trial


def experiment(*trials: Trial, status=ExperimentStatus.RUNNING, metric="loss") -> Experiment:
    return Experiment("exp", "/p", status, metric, "min", tuple(trials), driver_pid=7)


def diagnose_of(cluster, experiments):
    return diagnose(Snapshot(0.0, cluster, tuple(experiments)))


def kinds(findings) -> list[str]:
    return [f.kind for f in findings]


CONNECTED = Cluster("h:1", True)


def test_healthy_run_has_no_findings():
    trial = Trial("t1", "RUNNING", metrics={"loss": 1.0}, iterations=2)
    assert diagnose_of(CONNECTED, (experiment(trial),)) == ()


def test_pending_trial_without_results_is_not_missing_its_metric():
    assert diagnose_of(CONNECTED, (experiment(Trial("t1", "PENDING")),)) == ()


def test_metric_never_reported_names_what_was_reported():
    trial = Trial("t1", "TERMINATED", metrics={"score": 0, "step": 2}, iterations=3)
    (finding,) = diagnose_of(CONNECTED, (experiment(trial),))
    assert finding.kind == "metric_missing"
    assert "'loss'" in finding.message and "score" in finding.message
    assert finding.evidence["reported"] == ["score", "step"]


def test_lost_cluster_is_a_finding():
    findings = diagnose_of(Cluster("h:1", False, error="gone"), ())
    assert kinds(findings) == ["cluster_unreachable"]
    assert findings[0].message == "gone"


def test_errored_trial_and_exited_driver():
    failed = Trial("t1", "ERROR", metrics={"loss": 1.0}, iterations=1, num_failures=2, error="OOM")
    pending = Trial("t2", "PENDING")
    findings = diagnose_of(
        CONNECTED, (experiment(failed, pending, status=ExperimentStatus.INTERRUPTED),)
    )
    assert kinds(findings) == ["trial_error", "driver_exited"]
    assert "OOM" in findings[0].message
    assert findings[1].evidence["unfinished"] == ["t2"]
