"""Resume: choose an experiment under a storage path, see what a resume would do to each
of its trials, and resume it after a yes.

Pushed from the overview with ``u``. Top to bottom: the storage path (suggested: the
folder of the experiment on the overview; Enter lists it), the experiments there, newest
first, and the preview of the highlighted one: per trial its status, latest checkpoint
and what the resume does, then the warnings (restarting errored trials can exceed
``max_concurrent_trials``). ``e`` cycles what happens to errored trials (the CLI's
``--errored``: resume, restart, skip); ``a`` (or Enter on the preview) resumes after a
confirmation: a detached driver runs ``Tuner.restore`` with the spec saved at launch.

Every call goes through the injected ``ResumeControls`` in a daemon thread
(``background.run_in_background``: they read storage; ``resume`` may start a cluster) and
answers with a message; an answer that no
longer matches what is chosen is dropped. Listing and previewing only read, so they work
read-only too; resuming is then refused and marked, as the stops are.

It shows no snapshot, so it is not a ``SnapshotScreen``: the overview under it catches
up when it is back on view.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.content import Content
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Input, Static

from raytop.model.format import one_line
from raytop.model.resume import ERRORED_CHOICES, ResumePreview, StoredExperiment
from raytop.tui.background import run_in_background
from raytop.tui.controls import ResumeControls
from raytop.tui.format import shown, shown_lines
from raytop.tui.messages import (
    ExperimentsListed,
    ListingFailed,
    PreviewFailed,
    PreviewReady,
    ResumeDone,
    ResumeFailed,
)
from raytop.tui.screens.base import mark_bindings
from raytop.tui.screens.confirm import ConfirmModal
from raytop.tui.widgets.key_footer import KeyFooter
from raytop.tui.widgets.resume_tables import (
    ResumePreviewTable,
    StoredExperimentTable,
    experiment_note,
)

RESUME_IDS = frozenset({"raytop.resume-start"})
READ_ONLY = "read-only: resuming is disabled"
NO_CONTROLS = "no controls in this session: resuming is disabled"
CANNOT_LIST = "no controls in this session: cannot list experiments"
TYPE_A_PATH = "type a storage path (a folder of experiments), then Enter"
DEFAULT_ERRORED = "skip"  # as ``raytop resume``
_HIGHLIGHT_DELAY_S = 0.25  # the preview follows the cursor once it rests


class ResumeScreen(Screen[None]):
    """The storage path, its experiments and the preview of the highlighted one."""

    AUTO_FOCUS = None  # each visit chooses: the list, or the path when there is none
    BINDINGS = [
        Binding("escape,backspace", "back", "back", id="raytop.back"),
        Binding(
            "a",
            "resume",
            "resume…",
            id="raytop.resume-start",
            tooltip="Resume the previewed experiment, after a yes.",
        ),
        Binding(
            "e",
            "cycle_errored",
            "errored",
            id="raytop.resume-errored",
            tooltip="Errored trials: resume them, restart them, or skip them.",
        ),
        Binding(
            "r",
            "relist",
            "list again",
            id="raytop.resume-refresh",
            tooltip="Read the storage path's experiments again.",
        ),
    ]

    def __init__(self, *, storage: str, read_only: bool, controls: ResumeControls | None) -> None:
        super().__init__()
        self._controls = controls
        self._read_only = read_only
        self._storage = storage  # what the path input holds when a visit starts
        self._suggested = storage
        self._listing: str | None = None  # the storage whose answer is awaited or shown
        self._chosen: str | None = None  # the experiment path whose preview is wanted
        self._errored = DEFAULT_ERRORED
        self._preview: ResumePreview | None = None  # only the one for (chosen, errored)
        self._preview_error: str | None = None  # why that one cannot be resumed
        self._resuming: ResumePreview | None = None  # in flight: never a second one
        self._visiting = False
        self._highlight_timer: Timer | None = None
        self._refusal = READ_ONLY if read_only else NO_CONTROLS if controls is None else None
        if self._refusal is not None:
            mark_bindings(self, RESUME_IDS, "read-only" if read_only else "no controls")

    def compose(self) -> ComposeResult:
        with Horizontal(id="resume-bar"):
            yield Static(Content.styled("Resume", "bold"), id="resume-title")
            yield Input(
                self._storage,
                placeholder="storage path, e.g. ~/ray_results",
                compact=True,
                id="resume-storage",
            )
            yield Static("read-only" if self._read_only else "", id="resume-mode")
        yield StoredExperimentTable(id="resume-experiments")
        yield Static(id="resume-list-note")
        with Horizontal(id="resume-heading-line"):
            yield Static(id="resume-heading")
            yield Static(id="resume-errored")
        yield ResumePreviewTable(id="resume-preview")
        yield Static(id="resume-detail")
        yield Static(id="resume-warnings")
        yield KeyFooter()

    # -- visits -------------------------------------------------------------------------

    def suggest_storage(self, storage: str) -> None:
        """The overview's folder for the next visit; kept unless the user typed another."""
        if self._storage == self._suggested:
            self._storage = storage
        self._suggested = storage

    def on_screen_resume(self) -> None:
        # A visit starts (not: a confirmation closed): list afresh, the disk moves on.
        if self._visiting:
            return
        self._visiting = True
        self.query_one("#resume-storage", Input).value = self._storage
        self._show_heading()
        self._list(self._storage)
        focus = "#resume-experiments" if self._storage else "#resume-storage"
        self.query_one(focus).focus()

    def action_back(self) -> None:
        self._visiting = False
        self.dismiss()

    def action_relist(self) -> None:
        self._list(self.query_one("#resume-storage", Input).value.strip())

    @on(Input.Submitted, "#resume-storage")
    def _storage_submitted(self, event: Input.Submitted) -> None:
        self._storage = event.value.strip()
        self._list(self._storage)
        self.query_one("#resume-experiments").focus()

    # -- listing ------------------------------------------------------------------------

    def _list(self, storage: str) -> None:
        if self._controls is None or not storage:
            self._listing = None
            self.query_one(StoredExperimentTable).show_experiments(())
            self._choose(None)
            self._note(TYPE_A_PATH if self._controls else CANNOT_LIST, error=not self._controls)
            return
        self._listing = storage
        self._note(f"listing {storage} …")
        controls = self._controls
        run_in_background(
            self,
            lambda: ExperimentsListed(storage, tuple(controls.experiments_under(storage))),
            lambda exc: ListingFailed(storage, one_line(exc)),
            name="raytop-resume",
        )

    def on_experiments_listed(self, message: ExperimentsListed) -> None:
        if message.storage != self._listing:
            return  # an older path's answer
        experiments = message.experiments
        table = self.query_one(StoredExperimentTable)
        table.show_experiments(experiments)
        if self._chosen not in {e.path for e in experiments}:
            # A new list: start on the newest one raytop can resume (the newest is often
            # the run on the overview, still running).
            resumable = [i for i, e in enumerate(experiments) if experiment_note(e) == "resumable"]
            table.move_cursor(row=resumable[0] if resumable else 0)
        if experiments:
            count = f"{len(experiments)} experiment{'' if len(experiments) == 1 else 's'}"
            self._note(f"{count} in {message.storage}, newest first")
        else:
            self._note(f"no Tune experiments in {message.storage}")
        # Its state may have changed since the last preview (e.g. it runs now): re-fetch.
        self._choose(table.selected_path, refetch=True)

    def on_listing_failed(self, message: ListingFailed) -> None:
        if message.storage != self._listing:
            return
        self.query_one(StoredExperimentTable).show_experiments(())
        self._note(message.error, error=True)
        self._choose(None)

    def _note(self, text: str, *, error: bool = False) -> None:
        note = self.query_one("#resume-list-note", Static)
        note.set_class(error, "-error")
        note.update(shown(text))

    # -- the preview --------------------------------------------------------------------

    @on(DataTable.RowHighlighted, "#resume-experiments")
    def _experiment_highlighted(self) -> None:
        """Follow the cursor once it rests, not every row it passes (each is a read)."""
        if self._highlight_timer is not None:
            self._highlight_timer.stop()
        table = self.query_one(StoredExperimentTable)
        self._highlight_timer = self.set_timer(
            _HIGHLIGHT_DELAY_S, lambda: self._choose(table.selected_path)
        )

    @on(DataTable.RowSelected, "#resume-experiments")
    def _experiment_selected(self, event: DataTable.RowSelected) -> None:
        if self._highlight_timer is not None:
            self._highlight_timer.stop()
        self._choose(event.row_key.value)
        self.query_one(ResumePreviewTable).focus()

    @on(DataTable.RowSelected, "#resume-preview")
    def _preview_selected(self) -> None:
        self.action_resume()

    def action_cycle_errored(self) -> None:
        index = ERRORED_CHOICES.index(self._errored)
        self._errored = ERRORED_CHOICES[(index + 1) % len(ERRORED_CHOICES)]
        self._choose(self._chosen, refetch=True)

    def _choose(self, path: str | None, *, refetch: bool = False) -> None:
        """Fetch the preview of ``path`` with the current errored choice (unless it is
        the one shown); the rows of another experiment go at once."""
        if path == self._chosen and not refetch:
            return
        if path != self._chosen:
            self.query_one(ResumePreviewTable).show_rows(())
        self._chosen = path
        self._preview = None
        self._preview_error = None
        self._show_preview()
        if path is None or self._controls is None:
            return
        controls, errored = self._controls, self._errored
        run_in_background(
            self,
            lambda: PreviewReady(path, errored, controls.resume_preview(path, errored)),
            lambda exc: PreviewFailed(path, errored, one_line(exc)),
            name="raytop-resume",
        )

    def on_preview_ready(self, message: PreviewReady) -> None:
        if (message.path, message.errored) != (self._chosen, self._errored):
            return  # another experiment or choice is wanted now
        self._preview = message.preview
        self.query_one(ResumePreviewTable).show_rows(message.preview.rows)
        self._show_preview()

    def on_preview_failed(self, message: PreviewFailed) -> None:
        if (message.path, message.errored) != (self._chosen, self._errored):
            return
        self._preview_error = message.error
        self.query_one(ResumePreviewTable).show_rows(())
        self._show_preview()

    @on(DataTable.RowHighlighted, "#resume-preview")
    def _show_detail(self) -> None:
        """Under the table: the highlighted trial in full (its cells may be cut), or that
        the preview is on its way."""
        detail = self.query_one("#resume-detail", Static)
        row = self.query_one(ResumePreviewTable).selected_row
        stored = self._stored(self._chosen)
        if self._preview is not None and row is not None:
            text = Content.assemble(
                Content.styled(row.trial_id, "bold"), f" {row.status}: {row.action}"
            )
            # The latest checkpoint, unless the action already names it.
            if row.checkpoint != "-" and row.checkpoint.split(" (")[0] not in row.action:
                text += f" · latest {row.checkpoint}"
        elif stored is not None and self._preview_error is None and self._preview is None:
            text = Content.styled(f"previewing {stored.name} …", "$text-muted")
        else:
            text = None
        detail.display = text is not None
        detail.update(shown(text) if text is not None else "")

    def _show_preview(self) -> None:
        """The heading, the detail line, the warnings (or why it cannot be resumed) and
        the keys, for the current (chosen, errored, preview)."""
        self._show_heading()
        self._show_detail()
        if self._preview_error is not None:
            self._show_warnings((self._preview_error,), error=True)
        else:
            self._show_warnings(self._preview.warnings if self._preview else ())
        self.refresh_bindings()

    def _stored(self, path: str | None) -> StoredExperiment | None:
        table = self.query_one(StoredExperimentTable)
        return next((e for e in table.experiments if e.path == path), None)

    def _show_heading(self) -> None:
        """``torch_sweep · INTERRUPTED`` (cut short if need be), and always whole on the
        right: ``errored trials (e):  resume  restart [skip]``."""
        stored = self._stored(self._chosen)
        if stored is None:
            heading = Content.styled("no experiment chosen", "$text-muted")
        else:
            heading = Content.assemble(Content.styled(stored.name, "bold"), f" · {stored.status}")
        if self._resuming is not None and self._resuming.path == self._chosen:
            heading += Content.styled(" · resuming …", "bold $text-warning")
        self.query_one("#resume-heading", Static).update(shown(heading))
        choices: list[Content | str] = ["errored trials (e):"]
        for choice in ERRORED_CHOICES:
            style = "bold reverse $accent" if choice == self._errored else "$text-muted"
            choices += [" ", Content.styled(f" {choice} ", style)]
        self.query_one("#resume-errored", Static).update(Content.assemble(*choices))

    def _show_warnings(self, lines: tuple[str, ...], *, error: bool = False) -> None:
        box = self.query_one("#resume-warnings", Static)
        box.display = bool(lines)
        box.set_class(error, "-error")
        box.update(shown_lines(f"⚠ {line}" for line in lines))

    # -- resuming -----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "resume":
            # Listed when it cannot work (pressing says why); else once a preview is in.
            return self._refusal is not None or self._preview is not None
        return True

    def action_resume(self) -> None:
        if self._refusal is not None:
            self.notify(self._refusal, severity="warning")
            return
        preview = self._preview
        if preview is None:
            return
        if self._resuming is not None:
            self.notify(f"already resuming {self._resuming.name}…", markup=False)
            return
        question = (
            f"Resume experiment {preview.name} with errored trials: {preview.errored}? "
            "A detached driver runs Tuner.restore with the spec saved at launch. "
            "Nothing is deleted."
        )

        def answered(yes: bool | None) -> None:
            if not yes or self._controls is None:
                return
            if self._resuming is not None:  # a second yes while the first is in flight
                self.notify(f"already resuming {self._resuming.name}…", markup=False)
                return
            self._resuming = preview
            self._show_heading()
            self.notify(f"resuming {preview.name}…", markup=False)
            controls = self._controls
            run_in_background(
                self,
                lambda: ResumeDone(preview.path, controls.resume(preview.path, preview.errored)),
                lambda exc: ResumeFailed(preview.path, one_line(exc)),
                name="raytop-resume",
            )

        modal = ConfirmModal(
            question, title=f"resume {preview.name}", yes="resume", warnings=preview.warnings
        )
        self.app.push_screen(modal, answered)

    def on_resume_done(self, message: ResumeDone) -> None:
        self._resuming = None
        self._show_heading()
        self.notify(message.message, title="resume", markup=False)
        self._list(self._listing or self._storage)  # it runs now: the list says so

    def on_resume_failed(self, message: ResumeFailed) -> None:
        name = self._resuming.name if self._resuming else message.path
        self._resuming = None
        self._show_heading()
        # The error is the control's text, not markup ("[Errno 3] …" must print as is).
        title = f"could not resume {name}"
        self.notify(message.error, title=title, severity="error", markup=False)
