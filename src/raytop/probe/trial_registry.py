"""Each raytop trial says who it is, so placement groups get an owner.

The Tune trial actor writes ``trial/<actor id>`` into the GCS KV store: its experiment,
trial id and the placement group it runs in. raytop then names a trial's group, and a Train
worker group by its creator (the TrainController, owned by that trial actor).
"""

from __future__ import annotations

import json
import time

from raytop.wire.cluster_kv import kv_put_in_cluster
from raytop.wire.kv_keys import TRIAL_PREFIX


def register_trial(experiment: str, trial_id: str) -> None:
    """Best effort: a trial that cannot register still trains."""
    try:
        # heavy: Ray, already loaded in the trial this runs in
        import ray

        ctx = ray.get_runtime_context()
        record = {
            "experiment": experiment,
            "trial_id": trial_id,
            "actor_id": ctx.get_actor_id(),
            "pg_id": ctx.get_placement_group_id(),
            "registered_at": time.time(),
        }
        kv_put_in_cluster(TRIAL_PREFIX + record["actor_id"], json.dumps(record).encode())
    except Exception:
        pass
