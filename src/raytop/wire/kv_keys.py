"""The GCS internal-KV namespace and the keys raytop's two sides agree on.

raytop never joins the cluster as a driver; it and the code inside the cluster talk
through the GCS KV store instead. Each key has one writer and one reader:

- ``ledger/index`` and ``ledger/page/<run_id>.<attempt_id>``: the Ledger actor publishes
  its index (start time, last publish time, each page's version) and the pages that
  changed; raytop's ledger reader fetches the index and only the changed pages.
- ``ledger/run/<run_id>``: the Ledger publishes each Train run's failure config and
  attempts (``model.records.RunAttempts``, from the RunProbe in the controller); the
  index lists their versions under ``runs``.
- ``cmd/stacks``: raytop asks for stacks (``model.records.StackRequest``); every probe's
  flush thread polls it and answers in its next report.
- ``cmd/flight_recorder``: raytop asks the ranks of a run it launched on GPUs to make
  PyTorch's Flight Recorder dump (``model.records.FlightRecorderRequest``); each probe
  writes to its rank's dump pipe and answers in its next report what happened.
- ``trial/<actor id>``: each raytop trial registers its experiment, trial id and placement
  group; raytop's placement reader names the groups' owners from them.
"""

from __future__ import annotations

KV_NAMESPACE = "raytop"

INDEX_KEY = "ledger/index"
PAGE_PREFIX = "ledger/page/"
RUN_PREFIX = "ledger/run/"
STACKS_COMMAND_KEY = "cmd/stacks"
FLIGHT_RECORDER_COMMAND_KEY = "cmd/flight_recorder"
TRIAL_PREFIX = "trial/"


def page_key(run_id: str, attempt_id: str) -> str:
    """A ledger page's name (after ``PAGE_PREFIX``): one attempt of one Train run."""
    return f"{run_id}.{attempt_id}"
