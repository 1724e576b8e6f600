"""Builds the one ``Snapshot`` every face shows: cluster + experiments + findings."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

from raytop.diagnose import diagnose
from raytop.home import read_registry
from raytop.model import Cluster, HostStats, LedgerStatus, Node, PlacementGroup, Snapshot, TrainRun
from raytop.model.thresholds import Thresholds
from raytop.model.train_state import StateRun
from raytop.model.workloads import OlderExperiments
from raytop.pipeline import joins
from raytop.pipeline.captures import capture_targets, save_capture
from raytop.pipeline.flight_recorder import request_dumps
from raytop.pipeline.history import History
from raytop.pipeline.kept_groups import KeptGroups
from raytop.pipeline.kept_runs import KeptRuns
from raytop.pipeline.kept_trials import KeptTrials
from raytop.pipeline.ledger_commands import LedgerCommands
from raytop.pipeline.no_probe import NoProbeReasons
from raytop.pipeline.others import OtherRuns
from raytop.pipeline.run_checkpoints import RunCheckpoints
from raytop.pipeline.stacks_request import Readers, ask_stacks
from raytop.pipeline.uninstrumented import KeptProbed, uninstrumented_runs, with_job_entrypoints
from raytop.process_identity import running_experiments
from raytop.sources.checkpoints import CheckpointSnapshots
from raytop.sources.history import LOCAL_RELIST_S, ExperimentFolders, same_place
from raytop.sources.host import HostProbe
from raytop.sources.ledger_source import LedgerReader
from raytop.sources.placement_source import PlacementReader
from raytop.sources.pyspy import Tracebacks
from raytop.sources.remote_hosts import NodeSummarySource, RemoteHosts
from raytop.sources.storage import Storages
from raytop.sources.train_state import TrainRunsSource, TrainState
from raytop.sources.trainer_env import TrainerEnvReader
from raytop.sources.tune_dir import ExperimentReader
from raytop.sources.tune_home import TuneHome, default_roots
from raytop.wire.capabilities import READING, lacking
from raytop.wire.dashboard import DashboardClient
from raytop.wire.gcs import ClusterUnreachable, GcsKv, GcsReader, KeptNodes, ray_version
from raytop.wire.version import unsupported_warning

HISTORY_ONLY = "no cluster: history from storage"


def default_experiments(warnings: list[str] | None = None) -> list[tuple[str, Path | None]]:
    """What a bare ``raytop`` shows: every launched experiment whose driver still runs,
    and the most recently launched one either way. ``warnings`` gets the registry's."""
    entries, problems = read_registry()
    if warnings is not None:
        warnings += problems
    chosen = running_experiments(entries)
    if entries and entries[-1] not in chosen:
        chosen.append(entries[-1])
    return [(e["path"], Path(e["raytop_dir"])) for e in chosen]


class SnapshotCollector:
    """``collect()`` never raises for a lost cluster: the snapshot says disconnected."""

    def __init__(
        self,
        address: str | None,
        *,
        embedded: bool = False,
        experiments: list[tuple[str, Path | None]] | None = None,
        unreachable_reason: str | None = None,
        thresholds: Thresholds | None = None,
        watch: bool = False,
        gcs: tuple[Any, Any] | None = None,
        storage_roots: list[str] | None = None,
        dashboard: NodeSummarySource | None = None,
        train_runs: TrainRunsSource | None = None,
        tune_home: list[str] | None = None,
    ) -> None:
        """``gcs``: (reader, kv) standing in for ``wire.gcs.GcsReader`` / ``GcsKv`` of ``address``
        (tests with recorded shapes, no cluster); ``dashboard`` for
        ``wire.dashboard.DashboardClient`` (with ``gcs``, none unless given), which also serves
        Train's own state of its runs unless ``train_runs`` stands in for that (without either,
        runs with no probe are what the actor table says). ``storage_roots`` (``--storage``):
        every Tune experiment folder under each is shown too, with its history from storage
        (``pipeline.history``); with no cluster the snapshot says "no cluster: history from
        storage", not a fault. ``tune_home``: Tune's default storage folders, whose live and
        recent experiments are shown too (``sources.tune_home``; default: ``default_roots()``
        when no experiment is named, none when some are; ``[]``: none)."""
        self.address = address
        self.embedded = embedded
        self.thresholds = thresholds or Thresholds()
        self._unreachable_reason = unreachable_reason
        if gcs is not None:
            self._reader, kv = gcs
        else:
            self._reader = GcsReader(address, follow=watch) if address else None
            kv = GcsKv(address) if address else None
            if dashboard is None and kv is not None:
                dashboard = DashboardClient(kv)
        self._ledger = LedgerReader(kv) if kv else None
        self._commands = LedgerCommands(kv) if kv else None  # stacks and dump requests
        self._host = HostProbe()
        self._no_probe = NoProbeReasons(
            TrainerEnvReader(), self._host.is_local, kv.multi_get if kv else None
        )
        self._placement = PlacementReader(self._reader, kv) if kv else None
        # One watch (local) or poll (remote) per storage root, shared by every reader;
        # ``watch`` for faces that collect again and again (TUI, follow), not one-shots.
        self._storages = Storages(watch)
        self._snapshots = CheckpointSnapshots(self._storages)
        self._checkpoints = RunCheckpoints(self._snapshots, self._ledger) if kv else None
        self._kept = KeptRuns()  # each run's states and findings, while it is the same
        self._trials = KeptTrials()  # the trials' reasons to wait and the best, the same
        self._groups_kept = KeptGroups()  # why each group waits, its findings, the same
        self._probed = KeptProbed()  # the probed workers' pids, while the runs are the same
        self._nodes = KeptNodes()  # each node, while its row's values are the same
        self._lock = threading.Lock()
        # Nodes elsewhere: Ray's figures, asked of its dashboard only while there are some.
        self._remote = RemoteHosts(dashboard) if dashboard is not None else None
        self._dashboard = dashboard  # also asked for the stacks of workers elsewhere
        self._host_warnings: list[str] = []  # a bad dashboard answer, this collection
        # Train's own state of the runs with no probe, asked only while there are some.
        if train_runs is None and isinstance(dashboard, DashboardClient):
            train_runs = dashboard
        self._train_state = TrainState(train_runs) if train_runs is not None else None
        self._train_warnings: list[str] = []  # a bad answer of it, this collection
        # Named experiments narrow the view: then runs of no watched experiment are left out.
        self._only_named = experiments is not None
        self._warnings: list[str] = []  # raytop's own records, read once here
        # Said in every snapshot: a Ray line raytop does not support, run on the user's word
        # (wire.version), and what this Ray lacks of what the readers call (wire.capabilities).
        self._ray_warning = unsupported_warning()
        self._warnings += [self._ray_warning] if self._ray_warning else []
        self._warnings += lacking(READING) if gcs is None and address else []
        chosen = experiments if experiments is not None else default_experiments(self._warnings)
        self._experiments = [ExperimentReader(path, rdir, self._storages) for path, rdir in chosen]
        self._history_roots = list(storage_roots or [])
        self._folders = ExperimentFolders(self._history_roots, LOCAL_RELIST_S if watch else 0.0)
        self._history = History(self._storages, self._snapshots)
        self._from_storage: dict[int, str] = {}  # reader index → the folder found under a root
        self._history_warnings: list[str] = []
        if tune_home is None:
            tune_home = [] if self._only_named else default_roots()
        self._tune_home = TuneHome(tune_home, LOCAL_RELIST_S if watch else 0.0)
        self._others = OtherRuns(kv, self._host.is_local)

    def show_all_experiments(self, on: bool = True) -> None:
        """Read every experiment folder of Tune's default storage (``on``), not only the
        live and recent ones: a key of the TUI, once a user asks for the older ones."""
        self._tune_home.show_all = on

    def _discover(self) -> None:
        """Readers for the experiment folders now under the storage roots and Tune's
        default storage (once each)."""
        paths: list[str] = []
        if self._history_roots:
            paths, self._history_warnings = self._folders.find()
        if self._tune_home.roots:
            paths += self._tune_home.find(self._others.alive_since())
        if not paths:
            return
        seen = {same_place(r.path): i for i, r in enumerate(self._experiments)}
        for path in paths:
            key = same_place(path)
            if key not in seen:
                seen[key] = len(self._experiments)
                self._experiments.append(ExperimentReader(path, None, self._storages))
            self._from_storage.setdefault(seen[key], path)

    def _with_host(self, nodes: tuple[Node, ...]) -> tuple[tuple[Node, ...], str | None]:
        """The nodes on this host get its OS figures (``sources.host``: fresh); the other
        alive nodes Ray's, from its dashboard (``sources.remote_hosts``), asked only when
        there are such nodes. Also the one-line note on why those have none, if so."""
        alive = [n for n in nodes if n.alive]
        local = {n.node_id for n in alive if self._host.is_local(n.address)}
        elsewhere = [n for n in alive if n.node_id not in local]
        here = self._host.stats() if local else None
        there: dict[str, HostStats] = {}
        note = None
        if elsewhere and self._remote is not None:
            there = self._remote.stats()
            self._host_warnings = [self._remote.warning] if self._remote.warning else []
            if self._remote.note:
                note = f"no host figures for {len(elsewhere)} node(s) elsewhere: "
                note += self._remote.note
        figures = {n.node_id: there[n.node_id] for n in elsewhere if n.node_id in there}
        if here is not None:
            figures.update(dict.fromkeys(local, here))
        if not figures:
            return nodes, note
        # Only alive nodes are in ``figures``: a dead one keeps host None.
        placed = tuple(
            dataclasses.replace(n, host=figures[n.node_id]) if n.node_id in figures else n
            for n in nodes
        )
        return placed, note

    def _cluster(self) -> Cluster:
        cluster = self._gcs_cluster()
        if cluster.connected or not self._history_roots:
            return cluster
        why = cluster.error if self._reader is not None else self._unreachable_reason
        return dataclasses.replace(
            cluster, history_only=True, error=HISTORY_ONLY + (f" ({why})" if why else "")
        )

    def _gcs_cluster(self) -> Cluster:
        if self._reader is None:
            why = self._unreachable_reason or "no Ray cluster found (none named, none running)"
            return Cluster(address=None, connected=False, error=why)
        try:
            nodes = self._nodes.of(self._reader.nodes())
        except ClusterUnreachable as exc:
            return Cluster(address=self.address, connected=False, error=str(exc),
                           embedded=self.embedded)  # fmt: skip
        nodes, host_note = self._with_host(nodes)
        return Cluster(
            address=self.address,
            connected=True,
            embedded=self.embedded,
            ray_version=ray_version(),
            ray_unsupported=self._ray_warning is not None,
            nodes=nodes,
            host_note=host_note,
        )

    def _runs(self, cluster: Cluster) -> tuple[tuple[TrainRun, ...], LedgerStatus | None]:
        if self._ledger is None or not cluster.connected:
            return (), None
        try:
            runs, status = self._ledger.read(wall := time.time())
        except ClusterUnreachable as exc:
            return (), LedgerStatus(False, error=str(exc))
        at = status.known_at(wall)  # ages as of the ledger's last publish
        derive, thresholds = self._kept.derive, self.thresholds
        derived = tuple(derive(self._checkpoints.of(r), thresholds, at) for r in runs)
        self._checkpoints.forget_unseen()
        self._kept.forget_unseen()  # a run judged is one derived: its id is seen here
        return derived, status

    def _actors(self, cluster: Cluster) -> dict[str, dict[str, Any]]:
        if self._reader is None or not cluster.connected:
            return {}
        try:
            return self._reader.actors()
        except ClusterUnreachable:
            return {}

    def _groups(self, cluster, experiments, runs, actors, others) -> tuple[PlacementGroup, ...]:
        if self._placement is None or not cluster.connected:
            return ()
        try:
            groups = self._placement.read(experiments, runs, actors, others=others)
        except ClusterUnreachable:
            return ()
        return self._groups_kept.with_why_pending(groups, cluster.nodes, self._placement.aged_from)

    def _uninstrumented(self, runs, actors, ledger) -> tuple[TrainRun, ...]:
        """Train runs in the actor table with no probe report (``pipeline.uninstrumented``),
        completed from Train's own state when it has them (``sources.train_state``). The
        probed workers' beats are as of the ledger's last publish: a silent ledger does
        not make its live runs look unprobed."""
        if self._placement is None or not actors:
            return ()
        ours = self._placement.raytop_trial_at(actors)
        now = time.time()
        return uninstrumented_runs(
            actors, runs, lambda owner: owner in ours,
            train_state=self._train_runs if self._train_state is not None else None, now=now,
            beats_known_at=ledger.known_at(now) if ledger is not None else now,
            probed_processes=self._probed.of,
        )  # fmt: skip

    def _train_runs(self) -> dict[str, StateRun]:
        """Train's own runs by controller (asked only for a run with no probe shown)."""
        if self._train_state is None:
            return {}
        known = self._train_state.runs()
        warning = self._train_state.warning
        self._train_warnings = [warning] if warning else []
        return known

    def collect(self) -> Snapshot:
        # The TUI's poller and a stacks request may collect at the same time; the readers
        # keep caches and one GCS client each, so collections take turns.
        with self._lock:
            return self._collect()

    def _collect(self) -> Snapshot:
        self._host_warnings = []
        self._storages.new_read()
        if self._placement is not None:
            self._placement.new_read()
        cluster = self._cluster()
        jobs = self._others.read_jobs(cluster.connected)
        self._discover()
        experiments = [reader.read() for reader in self._experiments]
        self._snapshots.warnings.clear()
        self._snapshots.warnings_by_run.clear()
        runs, ledger = self._runs(cluster)
        actors = self._actors(cluster)
        now = time.time()
        experiments, how_ended, others = self._others.drivers(
            experiments, self._experiments, actors, now
        )
        groups = self._groups(cluster, experiments, runs, actors, others)
        if ledger is not None and self._placement is not None and self._placement.warnings:
            # Bad trial registrations are KV values too: said where the ledger's are.
            ledger = dataclasses.replace(
                ledger, warnings=(*ledger.warnings, *self._placement.warnings)
            )
        experiments, unmatched = joins.attach_runs(experiments, runs, self._kept.with_trial)
        experiments = [
            self._history.complete(e, self._from_storage[i]) if i in self._from_storage else e
            for i, e in enumerate(experiments)
        ]
        by_run = self._snapshots.warnings_by_run
        experiments = [joins.with_run_warnings(e, by_run) for e in experiments]
        self._train_warnings = []
        foreign = () if self._only_named else self._uninstrumented(runs, actors, ledger)
        foreign = with_job_entrypoints(foreign, {j.job_id: j.entrypoint for j in jobs if j.job_id})
        foreign = self._no_probe.judge(foreign, actors, jobs, cluster.nodes, now)
        experiments = self._trials.join(experiments, groups)  # reasons to wait, the best
        creators = self._placement.creators if self._placement is not None else {}
        # Every run on the cluster is a row of the one list, even when the view is narrowed.
        listed = self._others.rows(
            experiments, self._experiments, how_ended, (*unmatched, *foreign), groups,
            creators, actors, now, self._trials.counts,
        )  # fmt: skip
        snapshot = Snapshot(
            taken_at=now,
            cluster=cluster,
            experiments=tuple(experiments),
            runs=() if self._only_named else (*unmatched, *foreign),
            ledger=ledger,
            placement_groups=groups,
            warnings=tuple(
                dict.fromkeys(  # a bad dashboard address is both sources' warning: once
                    self._warnings
                    + self._history_warnings
                    + self._host_warnings
                    + self._train_warnings
                    + self._others.warnings
                    + self._no_probe.warnings
                )
            ),
            jobs=jobs,
            workloads=listed,
            older_experiments=tuple(
                OlderExperiments(r, n) for r, n in self._tune_home.older.items() if n
            ),
        )
        kept = self._kept.judge, self._groups_kept.findings, self._trials.judge
        findings = diagnose(snapshot, self.thresholds, *kept)
        return dataclasses.replace(snapshot, findings=findings)

    def close(self) -> None:
        """Stop watching storage: the TUI and ``run --no-tui`` call it when they are done
        with a watching collector, so its watcher threads do not outlive it."""
        self._storages.close()
        if isinstance(self._reader, GcsReader):  # and its GCS's change signals
            self._reader.close()

    def request_stacks(
        self,
        run_id: str | None = None,
        timeout_s: float = 5.0,
        native: bool = False,
        read_only: bool = False,
    ) -> Snapshot:
        """Every live rank's Python stack (and, ``native``, its native one) of ``run_id``
        (or of every run), asked as ``pipeline.stacks_request`` says: the first snapshot in
        which every asked rank answered, or the last one at the timeout (the others have no
        stack), the answers saved as a capture (``pipeline.captures``; ``stacks_capture``
        says where, or that ``read_only`` kept it from being written)."""
        if self._commands is None:
            return self.collect()
        dashboard = self._dashboard if isinstance(self._dashboard, Tracebacks) else None
        readers = Readers(self.collect, self._commands, self._host.is_local, dashboard)
        snapshot, request = ask_stacks(readers, run_id, timeout_s, native)
        targets = capture_targets(snapshot, [r.raytop_dir for r in self._experiments], run_id)
        capture = save_capture(
            snapshot, targets, request=request, native=native, read_only=read_only
        )
        return dataclasses.replace(snapshot, stacks_capture=capture)

    def request_flight_recorder(
        self, run_id: str | None = None, timeout_s: float = 20.0, read_only: bool = False
    ) -> Snapshot:
        """Ask the ranks of the runs raytop launched on GPUs to make PyTorch's Flight
        Recorder dump (not under ``read_only``), wait up to ``timeout_s`` for the dumps,
        and return the snapshot with ``flight_recorder`` saying who is missing from which
        collective (``pipeline.flight_recorder``)."""
        snapshot, report = request_dumps(
            self._commands, self.collect, lambda: [r.raytop_dir for r in self._experiments],
            run_id=run_id, timeout_s=timeout_s, read_only=read_only,
        )  # fmt: skip
        return dataclasses.replace(snapshot, flight_recorder=report)
