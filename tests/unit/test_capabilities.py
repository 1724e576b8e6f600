"""What the installed Ray has of the private APIs raytop calls (``wire.capabilities``):
every capability is found on the installed Ray (a misspelled name fails here), and each
reader, on a stand-in Ray lacking what it calls (a fake module in ``sys.modules``), says
what is missing in the snapshot's warnings instead of raising or reading nothing
silently. No cluster: the GCS clients get stand-in connections (a listening socket, a
fake client)."""

from __future__ import annotations

import importlib
import socket
import sys
import types
from importlib.machinery import ModuleSpec
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

import raytop.cli as cli
from raytop.pipeline.collect import SnapshotCollector
from raytop.sources.jobs import JobsReader
from raytop.sources.placement_source import PlacementReader
from raytop.sources.remote_hosts import RemoteHosts
from raytop.sources.train_state import TrainState
from raytop.wire import capabilities as caps
from raytop.wire import cluster_kv, train_hooks, tune_schedulers
from raytop.wire.dashboard import DashboardClient, DashboardUnreachable
from raytop.wire.gcs import GcsKv, GcsReader, RayLacks, local_cluster_address
from raytop.wire.version import ray_line, ray_version
from tests.fakes import FakeKv


@pytest.fixture(autouse=True)
def fresh_checks():
    """Each test sees the checks run again (``has`` is memoised per process)."""
    caps.has.cache_clear()
    yield
    caps.has.cache_clear()


class Lacking:
    """A Ray object with every attribute of ``real`` but ``gone``, and ``overrides``."""

    def __init__(self, real, gone=None, **overrides):
        self._real, self._gone, self._overrides = real, gone, overrides

    def __getattr__(self, name):
        if name == self._gone:
            raise AttributeError(name)
        if name in self._overrides:
            return self._overrides[name]
        return getattr(self._real, name)


def ray_module(monkeypatch, module: str, **replaced) -> types.ModuleType:
    """``sys.modules[module]`` replaced by a copy with ``replaced`` attributes (None: gone)."""
    real = importlib.import_module(module)
    fake = types.ModuleType(module)
    fake.__dict__.update(real.__dict__)
    for name, value in replaced.items():
        if value is None:
            delattr(fake, name)
        else:
            setattr(fake, name, value)
    monkeypatch.setitem(sys.modules, module, fake)
    return fake


def without(monkeypatch, module: str, cls: str, gone: str) -> None:
    """A stand-in Ray whose ``module.cls`` lacks ``gone``."""
    real = getattr(importlib.import_module(module), cls)
    ray_module(monkeypatch, module, **{cls: Lacking(real, gone)})


def warning(name: str) -> str:
    return f"this Ray ({ray_version()}) has no {name}: {caps.CAPABILITIES[name].without}"


@pytest.fixture
def listening():
    """An address where something accepts connections (the GCS clients' socket check)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield f"127.0.0.1:{server.getsockname()[1]}"


def test_every_capability_is_on_the_installed_ray():
    missing = [n for n, c in caps.CAPABILITIES.items() if not c.choice and not caps.has(n)]
    assert missing == []
    assert caps.lacking(caps.CAPABILITIES) == []
    assert len(caps.CAPABILITIES) > 60


def test_the_choices_follow_what_each_line_has():
    """Ray 2.58 and 2.59 compare against ``MedianStoppingRule._median_result``; 2.60 has
    none. Every supported line can leave fields out of its job table."""
    assert caps.has(caps.MEDIAN_RESULT) == (ray_line(ray_version()) in ("2.58", "2.59"))
    assert caps.has(caps.JOB_TABLE_SKIPS)


def a_train_head_without_v2_runs(monkeypatch, tmp_path) -> None:
    """A stand-in Ray whose dashboard's Train module serves no Train V2 runs."""
    source = tmp_path / "train_head.py"
    source.write_text("class TrainHead:\n    def get_train_v1_runs(self): ...\n")
    route = "ray.dashboard.modules.train.train_head"
    module = types.ModuleType(route)
    module.__spec__ = ModuleSpec(route, None, origin=str(source))
    monkeypatch.setitem(sys.modules, route, module)


def get_all_job_info(self, *, job_or_submission_id=None, timeout=None):
    """A job table call that cannot leave fields out."""


def test_a_missing_method_parameter_field_or_route_is_missing(monkeypatch, tmp_path):
    choices_lacking = [n for n in caps.CAPABILITIES if not caps.has(n)]  # this line's (2.60)
    caps.has.cache_clear()
    inner = importlib.import_module("ray._raylet").InnerGcsClient
    ray_module(monkeypatch, "ray._raylet",
               InnerGcsClient=Lacking(inner, "internal_kv_keys",
                                      get_all_job_info=get_all_job_info))  # fmt: skip
    pb2 = importlib.import_module("ray.core.generated.gcs_pb2")
    fields = {k: v for k, v in pb2.ActorTableData.DESCRIPTOR.fields_by_name.items() if k != "pid"}
    descriptor = SimpleNamespace(fields_by_name=fields)
    ray_module(monkeypatch, "ray.core.generated.gcs_pb2",
               ActorTableData=Lacking(pb2.ActorTableData, DESCRIPTOR=descriptor))  # fmt: skip
    a_train_head_without_v2_runs(monkeypatch, tmp_path)
    gone = ["ActorTableData.pid", "GcsClient.internal_kv_keys", "TrainHead.get_train_v2_runs"]
    found_lacking = [n for n in caps.CAPABILITIES if not caps.has(n)]
    assert found_lacking == [*gone[:2], caps.JOB_TABLE_SKIPS, gone[2], *choices_lacking]
    assert caps.lacking(caps.CAPABILITIES) == [warning(n) for n in gone]  # a choice: none
    assert caps.lacking(caps.READING) == [warning(n) for n in gone]
    assert caps.first_lack(caps.KV_KEYS) == (
        f"this Ray ({ray_version()}) has no GcsClient.internal_kv_keys: cluster KV unlisted: "
        "no submitted jobs that never connected"
    )


class FakeGcsClient:
    """What ``GcsKv`` calls on Ray's ``GcsClient``, recorded."""

    def __init__(self, table=None):
        self.calls = []
        self.table = table or {}

    def get_all_job_info(self, **kwargs):
        self.calls.append(("get_all_job_info", kwargs))
        return self.table

    def internal_kv_keys(self, *args, **kwargs):
        self.calls.append(("internal_kv_keys", kwargs))
        return []

    def internal_kv_multi_get(self, *args, **kwargs):
        self.calls.append(("internal_kv_multi_get", kwargs))
        return {}


def kv_with_client(client) -> GcsKv:
    kv = GcsKv("127.0.0.1:1")
    kv._client = client
    return kv


def a_job() -> dict:
    pb2 = importlib.import_module("ray.core.generated.gcs_pb2")
    entry = pb2.JobTableData(job_id=bytes.fromhex("01000000"), driver_pid=4242,
                             start_time=1000, entrypoint="python train.py")  # fmt: skip
    entry.config.ray_namespace = "anon"
    return {b"\x01": entry}


def test_the_jobs_of_a_ray_that_cannot_list_keys_are_the_tables(monkeypatch):
    without(monkeypatch, "ray._raylet", "InnerGcsClient", "internal_kv_keys")
    client = FakeGcsClient(a_job())
    kv = kv_with_client(client)
    with pytest.raises(RayLacks, match="has no GcsClient.internal_kv_keys: cluster KV unlisted"):
        kv.keys_from("job", "_ray_internal_job_info_")
    jobs = JobsReader(kv).read()
    assert [j.job_id for j in jobs] == ["01000000"]
    assert "internal_kv_keys" not in [name for name, _ in client.calls]


def test_a_ray_with_no_job_table_raises_the_named_warning(monkeypatch):
    without(monkeypatch, "ray._raylet", "InnerGcsClient", "get_all_job_info")
    client = FakeGcsClient(a_job())
    with pytest.raises(RayLacks) as raised:
        JobsReader(kv_with_client(client)).read()
    assert str(raised.value) == warning("GcsClient.get_all_job_info")
    assert client.calls == []


def test_the_job_table_is_read_whole_where_ray_cannot_leave_fields_out(monkeypatch):
    client = FakeGcsClient(a_job())
    kv_with_client(client).job_table()
    assert client.calls[-1][1] == {"timeout": 5.0, "skip_submission_job_info_field": True,
                                   "skip_is_running_tasks_field": True}  # fmt: skip
    inner = importlib.import_module("ray._raylet").InnerGcsClient
    ray_module(monkeypatch, "ray._raylet",
               InnerGcsClient=Lacking(inner, get_all_job_info=get_all_job_info))  # fmt: skip
    caps.has.cache_clear()
    assert [j["job_id"] for j in kv_with_client(client).job_table()] == ["01000000"]
    assert client.calls[-1][1] == {"timeout": 5.0}


GRPC_STUBS = "ray.core.generated.gcs_service_pb2_grpc"


@pytest.mark.parametrize(("read", "gone"), [
    ("nodes", "NodeInfoGcsServiceStub"),
    ("actors", "ActorInfoGcsServiceStub"),
    ("placement_groups", "PlacementGroupInfoGcsServiceStub"),
])  # fmt: skip
def test_a_gcs_read_ray_cannot_make_raises_the_named_warning(monkeypatch, listening, read, gone):
    ray_module(monkeypatch, GRPC_STUBS, **{gone: None})
    with pytest.raises(RayLacks) as raised:
        getattr(GcsReader(listening), read)()
    assert str(raised.value) == warning(gone)


def test_a_ray_without_the_actor_request_raises_the_named_warning_before_building_it(
    monkeypatch, listening
):
    """The actor filter is built of Ray's messages only after the capability check."""
    fake = ray_module(monkeypatch, "ray.core.generated.gcs_service_pb2",
                      GetAllActorInfoRequest=None)  # fmt: skip
    monkeypatch.setattr(importlib.import_module("ray.core.generated"), "gcs_service_pb2", fake)
    with pytest.raises(RayLacks) as raised:
        GcsReader(listening).actors()
    assert str(raised.value) == warning("GetAllActorInfoRequest")


def test_a_ray_whose_reply_lacks_its_rows_field_raises_the_named_warning(monkeypatch, listening):
    """A field renamed in a reply is caught before the read, not read as no rows."""
    real = importlib.import_module("ray.core.generated.gcs_service_pb2")
    reply = SimpleNamespace(fields_by_name={"status": None, "node_list": None})
    service = SimpleNamespace(
        methods_by_name={"GetAllNodeInfo": SimpleNamespace(output_type=reply)}
    )
    descriptor = Lacking(real.DESCRIPTOR, services_by_name={"NodeInfoGcsService": service})
    ray_module(monkeypatch, "ray.core.generated.gcs_service_pb2", DESCRIPTOR=descriptor)
    with pytest.raises(RayLacks) as raised:
        GcsReader(listening).nodes()
    assert str(raised.value) == warning("GetAllNodeInfo")


def test_a_ray_with_no_node_table_is_a_snapshot_warning_not_a_traceback(
    monkeypatch, listening, tmp_path
):
    monkeypatch.setenv("RAYTOP_HOME", str(tmp_path))
    ray_module(monkeypatch, GRPC_STUBS, NodeInfoGcsServiceStub=None)
    snapshot = SnapshotCollector(listening, experiments=[], tune_home=[]).collect()
    said = warning("NodeInfoGcsServiceStub")
    assert said in snapshot.warnings
    assert (snapshot.cluster.connected, snapshot.cluster.error) == (False, said)


def test_placement_groups_are_read_without_registrations_ray_cannot_fetch():
    class Kv(FakeKv):
        def multi_get(self, keys):
            raise RayLacks("this Ray has no GcsClient.internal_kv_multi_get")

    group = {"pg_id": "aa", "state": "CREATED", "creator_job_id": "01000000",
             "creator_actor_id": "", "bundles": [], "name": "", "strategy": "PACK",
             "scheduling_state": "FINISHED", "attempts": 1, "created_at": None,
             "creator_dead": False, "detached": False}  # fmt: skip
    reader = SimpleNamespace(placement_groups=lambda: [group])
    trial = {
        "address": "127.0.0.1:2",
        "owner": "127.0.0.1:1",
        "pg_id": "aa",
    }  # a driver's actor: asked for
    groups = PlacementReader(reader, Kv()).read([], (), {"a1": trial})
    assert [g.pg_id for g in groups] == ["aa"]


def test_a_ray_with_no_dashboard_address_key_is_a_note_naming_it(monkeypatch):
    ray_module(monkeypatch, "ray._private.ray_constants", DASHBOARD_ADDRESS=None)
    client = DashboardClient(FakeKv())
    hosts = RemoteHosts(client)
    assert hosts.stats() == {}
    assert hosts.note == (f"Ray's dashboard address could not be read "
                          f"({warning('ray_constants.DASHBOARD_ADDRESS')})")  # fmt: skip


def test_a_ray_whose_dashboard_serves_no_train_runs_is_not_asked(monkeypatch, tmp_path):
    a_train_head_without_v2_runs(monkeypatch, tmp_path)
    kv = FakeKv(namespaces={"dashboard": {"dashboard": b"127.0.0.1:1"}})
    client = DashboardClient(kv)
    with pytest.raises(DashboardUnreachable) as raised:
        client.train_runs()
    assert str(raised.value) == (
        f"is not asked for Train's runs ({warning('TrainHead.get_train_v2_runs')})"
    )
    assert kv.gets_from == []  # nothing asked, not even where the dashboard listens
    assert TrainState(client).runs() == {}
    assert warning("TrainHead.get_train_v2_runs") in caps.lacking(caps.READING)


def test_a_ray_with_no_bootstrap_address_lookup_says_so(monkeypatch):
    ray_module(monkeypatch, "ray._private.services", find_bootstrap_address=None)
    with pytest.raises(RayLacks) as raised:
        local_cluster_address()
    assert str(raised.value) == warning("services.find_bootstrap_address")


def test_in_cluster_kv_calls_name_what_ray_lacks(monkeypatch):
    ray_module(monkeypatch, "ray.experimental.internal_kv", _internal_kv_get=None)
    with pytest.raises(RuntimeError) as raised:
        cluster_kv.kv_get_in_cluster("cmd/stacks")
    assert str(raised.value) == warning("internal_kv._internal_kv_get")


class Median:
    """What ``median_comparison`` calls on a median stopping rule: running means 1, 3 and
    NaN for the others, 0 the trial's best; Ray's ``_median_result`` answers 7."""

    def _trials_beyond_time(self, now):
        return ["me", "a", "b", "c"]

    def _running_mean(self, trial, now):
        return {"a": 1.0, "b": 3.0, "c": float("nan")}[trial]

    def _best_result(self, trial):
        return 0.0

    def _median_result(self, trials, now):
        assert trials == ["a", "b", "c"]
        return 7.0


def test_the_median_is_rays_own_where_it_has_one_else_of_the_finite_means(monkeypatch):
    module = "ray.tune.schedulers.median_stopping_rule"
    real = importlib.import_module(module).MedianStoppingRule
    with_it = Lacking(real, _median_result=Median._median_result)
    ray_module(monkeypatch, module, MedianStoppingRule=with_it)
    seen = tune_schedulers.median_comparison(Median(), "me", 1.0)
    assert (seen.median, seen.others) == (7.0, 3)
    ray_module(monkeypatch, module, MedianStoppingRule=Lacking(real, "_median_result"))
    caps.has.cache_clear()
    seen = tune_schedulers.median_comparison(Median(), "me", 1.0)
    assert (seen.median, seen.others) == (2.0, 2)


def test_asha_with_no_cutoff_is_told_without_it(monkeypatch):
    without(monkeypatch, "ray.tune.schedulers.async_hyperband", "_Bracket", "cutoff")
    bracket = SimpleNamespace(_rungs=[(1, {"t0": 0.5})], cutoff=lambda recorded: 0.5)
    scheduler = SimpleNamespace(_trial_info={"t1": bracket})
    assert tune_schedulers.asha_rung(scheduler, "t1", 1.0) is None
    caps.has.cache_clear()
    monkeypatch.undo()
    assert tune_schedulers.asha_rung(scheduler, "t1", 1.0) == tune_schedulers.Rung(1.0, 0.5)


def _upload_checkpoint(checkpoint_dir_name, checkpoint=None, checkpoint_upload_fn=None):
    """Train's upload, as the probe's hook sees it from its caller's frame."""
    return hook()


def hook():
    return train_hooks.upload_call_details()


def test_the_upload_frame_is_read_only_on_a_ray_whose_upload_has_those_arguments(monkeypatch):
    assert _upload_checkpoint("checkpoint_000001").dir_name == "checkpoint_000001"
    context = "ray.train.v2._internal.execution.context"
    without(monkeypatch, context, "TrainContext", "_upload_checkpoint")
    caps.has.cache_clear()
    assert _upload_checkpoint("checkpoint_000001") is None


def test_a_command_this_ray_lacks_a_call_for_is_one_line_exit_2(monkeypatch):
    """``status --stacks`` on a Ray with no KV write: a refusal naming it, not an internal
    error."""
    said = warning("GcsClient.internal_kv_put")

    def print_status(*args, **kwargs):
        raise RayLacks(said)

    monkeypatch.setattr(cli, "print_status", print_status)
    result = CliRunner().invoke(cli.main, ["status", "--stacks"])
    assert (result.exit_code, result.stderr.splitlines()) == (2, [f"raytop: error: {said}"])
