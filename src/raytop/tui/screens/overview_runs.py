"""The overview's keys for every other run on the cluster: Enter on a row of the one list
(``WorkloadTable``; the screen's handler calls ``_choose_workload``: Textual finds message
handlers on its own classes only), ``n`` for the whole list (``RunsScreen``), ``h`` to
read the older experiment folders of Tune's default storage too.

A mixin of ``OverviewScreen``: it asks the screen for its experiments, shows one
(``_experiment_name``, ``_redraw``) and opens a Train run's ranks (``_push_run``).
"""

from __future__ import annotations

from raytop.model import Experiment
from raytop.model.workloads import KIND_EXPERIMENT, KIND_TRAIN_RUN
from raytop.tui.screens.runs import RunsScreen
from raytop.tui.widgets.trial_table import TrialTable
from raytop.tui.widgets.workload_table import KIND_WORDS, WorkloadTable


class RunsActions:
    """Enter on the one list, ``n`` and ``h``."""

    _older_shown: bool
    _experiment_name: str | None

    def _experiment(self) -> Experiment | None:
        raise NotImplementedError

    def _experiments(self) -> tuple[Experiment, ...]:
        raise NotImplementedError

    def _push_run(self, run_id: str) -> None:
        raise NotImplementedError

    def _redraw(self) -> None:
        raise NotImplementedError

    def _runs_offered(self, action: str) -> bool:
        """``n`` while the cluster runs more than the experiment on view; ``h`` while
        Tune's default storage has folders left unread (until pressed)."""
        body = self._state.body  # type: ignore[attr-defined]
        if body is None:
            return False
        if action == "show_older":
            return bool(body.older_experiments) and not self._older_shown
        shown = self._experiment()
        on_view = shown.path if shown else None
        return bool(body.runs) or any(w.key != on_view for w in body.workloads)

    def action_open_runs(self) -> None:
        screen = RunsScreen(
            collector=self._collector,
            state=self._state,
            clock=self._clock,
            read_only=self._read_only,
        )
        self.app.push_screen(screen)

    def action_show_older(self) -> None:
        older = self._state.body.older_experiments if self._state.body else ()
        show_all = getattr(self._collector, "show_all_experiments", None)
        if not older or show_all is None:
            return
        show_all(True)
        self._older_shown = True
        self.notify(f"reading {sum(o.count for o in older)} older experiment folder(s)…")
        self.app.action_refresh_now()  # type: ignore[attr-defined]
        self.refresh_bindings()

    def _choose_workload(self) -> None:
        """An experiment's row shows that experiment; a Train run's opens its ranks; a
        job's says what it is (there is nothing more of it to open)."""
        row = self.query_one(WorkloadTable).selected
        if row is None:
            return
        experiments = self._experiments()
        chosen = next((e for e in experiments if e.path == row.key), None)
        if row.kind == KIND_EXPERIMENT and chosen is not None:
            self._experiment_name = chosen.name
            self._redraw()
            self.query_one(TrialTable).focus()
        elif row.kind == KIND_TRAIN_RUN:
            self._push_run(row.key)
        else:
            said = f"{row.status} ({row.how_ended})" if row.how_ended else row.status
            self.notify(f"{KIND_WORDS.get(row.kind, row.kind)} {row.name}: {said}; "
                        f"{row.origin_label}", markup=False)  # fmt: skip
