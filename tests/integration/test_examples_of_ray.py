"""Ray's own examples, run as their authors wrote them, come out clean (issue 21).

The examples shipped in Ray's wheel that run on a CPU with nothing to download, submitted
as jobs (``ray job submit``) to a cluster that carries raytop's probe in its environment
(``probed_cluster``), as a user of a KubeRay cluster would submit them: raytop sees every
one, and raises no ERROR or WARNING finding on any (a finding needs positive evidence;
an alarm on canonical code is a bug), and ``raytop check`` exits 0 once they are done.
This module runs first on that cluster (its name sorts first): ``check`` judges every
run the cluster's ledger keeps, and a later test's collision is an ERROR on purpose.

Which examples, and why the others are not here (Ray 2.58.1's wheel, checked by reading
each):
- here: under ``ray.tune.examples``, ``custom_checkpointing_with_callback``,
  ``custom_func_checkpointing``, ``logging_example`` and ``tune_basic_example``
  (``--smoke-test``);
- in their own tests on the same cluster: ``ray.train.examples.pytorch.torch_linear_example``
  (every rank saves the same ``model.pt``: replicated state, ``test_foreign_checkpoints``)
  and ``async_hyperband_example`` (``test_foreign_experiments``);
- not run: ``hyperband_example``, ``hyperband_function_example``, ``pbt_example`` and
  ``pbt_function``, whose ``--smoke-test`` calls ``ray.init(num_cpus=N)``, which Ray
  refuses on an existing cluster (as a job they end at once), and which without it run
  for hundreds of iterations; ``torch_quick_start`` and ``torch_fashion_mnist_example``
  (download Fashion-MNIST), ``torch_regression_example`` (reads a CSV from S3), and the
  examples that need a library Ray does not bring (optuna, hyperopt, ax, bayesopt, bohb,
  nevergrad, GPy, xgboost, lightgbm, mlflow, keras, tensorflow, transformers) or a
  dataset (mnist, cifar10).

Each job gets a HOME of its own: examples share experiment names (``hyperband_test``) and
write under ``~/ray_results``; raytop reads each home's ``ray_results`` (``--storage``).
Two of them are one name: the second is submitted only once the first's Tune run has saved
its state, and a second later. Two Tune runs of one name that start in the same second on
one node share Ray's staging folder, and each one's storage then holds the other's trials
and experiment state (docs/RAY_FACTS.md, ``tune-staging-collision``): the suite saw
``custom_func_checkpointing``'s folder with ``logging_example``'s state, its trials pending.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from functools import partial

from tests.conftest import job_status, run_raytop, submit_job, wait_for

EXAMPLES = (
    "custom_checkpointing_with_callback",
    "custom_func_checkpointing",
    "logging_example",
    "tune_basic_example",
)
ENDED = ("SUCCEEDED", "FAILED", "STOPPED")
PYTHON = shlex.quote(sys.executable)  # the venv's, whatever the cluster's PATH holds


# Examples whose Tune run is named as an earlier one's: each submitted after that one.
AFTER = {"logging_example": "custom_func_checkpointing"}


def test_rays_own_tune_examples_raise_no_alarm(probed_cluster, tmp_path):
    homes, jobs = [], {}

    def state_saved(name: str) -> bool:
        return any((tmp_path / name / "ray_results").glob("*/experiment_state-*.json"))

    for name in sorted(EXAMPLES, key=lambda n: n in AFTER):
        if name in AFTER:
            wait_for(partial(state_saved, AFTER[name]), 120, f"{AFTER[name]}'s Tune state")
            time.sleep(1.1)  # Ray names its staging folder to the second
        home = tmp_path / name
        home.mkdir()
        homes.append(home)
        entrypoint = f"{PYTHON} -m ray.tune.examples.{name} --smoke-test"
        jobs[name] = submit_job(probed_cluster, entrypoint, env={"HOME": str(home)})

    def all_ended() -> dict[str, str] | None:
        statuses = {name: job_status(probed_cluster, job) for name, job in jobs.items()}
        return statuses if all(s in ENDED for s in statuses.values()) else None

    statuses = wait_for(all_ended, 300, "every example to end")
    assert set(statuses.values()) == {"SUCCEEDED"}, statuses
    storage = [arg for home in homes for arg in ("--storage", str(home / "ray_results"))]
    # raytop's own home and HOME of this test: the worker's home lists the runs other
    # tests launched on this worker, and HOME's ~/ray_results is read by default.
    (tmp_path / "raytop_home").mkdir()
    alone = {"RAYTOP_HOME": str(tmp_path / "raytop_home"), "HOME": str(tmp_path)}
    shown = run_raytop("status", "--json", "--address", probed_cluster.address, *storage,
                       env=alone)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    snapshot = json.loads(shown.stdout)
    experiments = snapshot["experiments"]  # two examples share a name: a list
    assert len(experiments) == len(EXAMPLES), [e["path"] for e in experiments]
    for exp in experiments:  # each found, with a real status
        why = {k: exp.get(k) for k in ("path", "state_read", "state_reason", "warnings")}
        why["trials"] = [(t["trial_id"], t["status"]) for t in exp["trials"]]
        assert exp["status"] == "FINISHED", (exp["name"], exp["status"], why)
        assert exp["trials"] and all(t["status"] == "TERMINATED" for t in exp["trials"])
        assert not [w for w in exp["warnings"] if "no trial of" in w], why  # no other run's
    alarms = [f for f in snapshot["findings"] if f["severity"] in ("error", "warning")]
    assert alarms == [], json.dumps(alarms, indent=1)[:4000]
    check = run_raytop("check", "--address", probed_cluster.address, *storage, env=alone)
    assert check.returncode == 0, check.stdout + check.stderr
