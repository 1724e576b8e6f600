"""Every string of the snapshot written by an adversary, on every screen: nothing of it
reaches the terminal raw (``tui.format.shown``, ``KeyedTable``'s cells and headers,
``RaytopApp.notify``).

``tests.hostile`` appends an OSC 2, a CSI, a newline followed by a forged line, a C1
CSI, a bidi override, a zero-width space and a lone surrogate to every string the user
reads. What the screens draw is read where Textual hands it to the terminal (the
compositor's strips): no control or invisible character may be in it, and the forged
line may only appear after a visible ``\\n``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.text import Text
from textual.content import Content
from textual.screen import ModalScreen

from raytop.model import (
    Cluster,
    Experiment,
    ExperimentStatus,
    Finding,
    Severity,
    Snapshot,
    Trial,
)
from raytop.model.resume import StoredExperiment
from raytop.tui.format import shown, shown_lines
from raytop.tui.screens.confirm import ConfirmModal
from raytop.tui.screens.placement import PlacementScreen
from raytop.tui.screens.rank import RankScreen
from raytop.tui.screens.resume import ResumeScreen
from raytop.tui.screens.run import RunScreen
from raytop.tui.screens.runs import RunsScreen
from raytop.tui.screens.stacks import StacksScreen
from raytop.tui.widgets.table_cells import StyledCell, shown_cell
from tests.hostile import HOSTILE_CHARS, TAIL, hostile, raw_in

from .conftest import STORED, FakeResumeControls, lr_search_preview
from .helpers import show, wait_until


def screen_text(app) -> str:
    """What the screen on top sends to the terminal, as text: its strips' segments. A
    modal dialog's own region only: the screen under it is checked on its own, and its
    text beside the dialog's lines would read as part of them."""
    strips = app.screen._compositor.render_strips()
    lines = ["".join(s.text for s in strip if not s.control) for strip in strips]
    if isinstance(app.screen, ModalScreen) and app.screen.children:
        region = app.screen.children[0].region
        lines = [line[region.x : region.right] for line in lines[region.y : region.bottom]]
    return "\n".join(lines)


def assert_clean(app, where: str) -> None:
    text = screen_text(app)
    assert "PWNED" in text or where.startswith("quiet"), f"{where}: nothing hostile was shown"
    assert raw_in(text) == [], f"{where}: {raw_in(text)[:5]}"


class HostileControls(FakeResumeControls):
    """Lists and previews hostile experiments under any path typed in."""

    def experiments_under(self, storage_path: str) -> list[StoredExperiment]:
        self._record("experiments_under", storage_path)
        return [hostile(e) for e in STORED]

    def resume_preview(self, experiment_path: str, errored: str):
        self._record("resume_preview", experiment_path, errored)
        return replace(hostile(lr_search_preview("restart")), path=experiment_path)


@pytest.fixture
def everything(checkpointed: Snapshot, placement: Snapshot, with_stacks: Snapshot) -> Snapshot:
    """One snapshot with a stalled run, its checkpoints and stacks, placement groups,
    nodes and runs of no experiment; the driver alive (so ``x`` asks), every string
    hostile."""
    experiment = replace(
        with_stacks.experiments[0],
        runs=tuple(
            replace(run, checkpoints=checkpointed.experiments[0].runs[0].checkpoints)
            for run in with_stacks.experiments[0].runs
        ),
        warnings=("experiment_state-x.json is unreadable",),
        driver_alive=True,
        driver_pid=4242,
    )
    snapshot = replace(
        placement,
        experiments=(experiment,),
        findings=checkpointed.findings,
        warnings=("experiments.json: not valid JSON",),
    )
    return hostile(snapshot)


async def test_no_screen_shows_hostile_text_raw(make_app, everything) -> None:
    controls = HostileControls()
    app = make_app(everything, controls=controls)
    async with app.run_test(size=(120, 40)) as pilot:
        await show(pilot, everything)
        assert_clean(app, "overview")

        app.notify("a notice naming " + TAIL, title="title " + TAIL)
        await pilot.pause()
        assert_clean(app, "overview with a notice")

        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert_clean(app, "stop confirmation")
        await pilot.press("n")

        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RunScreen))
        assert_clean(app, "run screen")

        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, RankScreen))
        assert_clean(app, "rank screen")
        await pilot.press("escape")

        run = everything.experiments[0].runs[0]
        app.push_screen(StacksScreen(run, missing=(1,), ask_native=lambda: None))
        await wait_until(pilot, lambda: isinstance(app.screen, StacksScreen))
        await pilot.pause()
        assert_clean(app, "stacks screen")
        await pilot.press("escape", "escape")

        await pilot.press("p")
        await wait_until(pilot, lambda: isinstance(app.screen, PlacementScreen))
        assert_clean(app, "placement screen")
        await pilot.press("escape")

        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen))
        assert_clean(app, "runs screen")
        await pilot.press("escape")

        await pilot.press("u")
        await wait_until(pilot, lambda: isinstance(app.screen, ResumeScreen))
        await pilot.press("r", "enter")
        await wait_until(pilot, lambda: controls.called("resume_preview"))
        await pilot.pause(0.3)
        assert_clean(app, "resume screen")
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert_clean(app, "resume confirmation")


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_the_overview_at_each_width(make_app, everything, size) -> None:
    app = make_app(everything)
    async with app.run_test(size=size) as pilot:
        await show(pilot, everything)
        assert_clean(app, f"overview {size}")


def test_the_text_faces_too(everything) -> None:
    """The same snapshot through every plain-text face the CLI prints: ``status``,
    ``status --stacks``, ``run --no-tui``'s progress line and ``check``'s lines."""
    from raytop.faces import check
    from raytop.faces.text import progress_line, resume_preview_lines, stacks_text, status_text

    outputs = {
        "status": status_text(everything),
        "stacks": stacks_text(everything),
        "progress": progress_line(everything),
        "check": "\n".join(check.health(everything)[0]),
        "teardown": "\n".join(check.teardown(list(everything.findings), 1)[0]),
        "resume": "\n".join(resume_preview_lines(hostile(lr_search_preview("restart")))),
    }
    for face, text in outputs.items():
        assert "PWNED" in text, f"{face}: nothing hostile was shown"
        assert raw_in(text) == [], f"{face}: {raw_in(text)[:5]}"


hostile_text = st.text(
    st.one_of(st.sampled_from(HOSTILE_CHARS), st.characters(exclude_categories=())), max_size=30
)


@settings(max_examples=200, deadline=None)
@given(hostile_text, hostile_text)
def test_generated_text_never_leaves_shown_raw(a, b):
    """``shown`` (the TUI's sanitiser) on generated text in every container it is given:
    one printable line out, the styles still inside it."""
    content = Content.assemble(Content.styled(a, "bold"), " · ", b)
    rich = Text(a, style="red")
    rich.append(b, style="bold")
    for line in (shown(content), shown(rich), shown(a), shown_cell(rich),
                 shown_cell(StyledCell(a, "x", None)), shown_cell(a)):  # fmt: skip
        plain = str(line) if isinstance(line, StyledCell) else line.plain
        assert "\n" not in plain and all(c.isprintable() for c in plain), repr(plain)
        spans = getattr(line, "spans", ())
        assert all(0 <= s.start <= s.end <= len(plain) for s in spans)
    panel = shown_lines([content, rich, a])
    assert panel.plain.count("\n") == 2


@settings(max_examples=100, deadline=None)
@given(hostile_text, hostile_text, hostile_text)
def test_generated_text_never_leaves_the_text_faces_raw(trial_id, key, value):
    from raytop.faces.text import progress_line, status_text

    trial = Trial(trial_id or "t", "RUNNING", config={key: value}, metrics={"loss": 1.0})
    experiment = Experiment(
        name=value, path=f"/r/{key}", status=ExperimentStatus.RUNNING, metric="loss",
        mode="min", trials=(trial,), warnings=(f"{key}: unreadable",),
    )  # fmt: skip
    finding = Finding("barrier_stall", Severity.ERROR, trial_id, f"rank {value} waits")
    snapshot = Snapshot(taken_at=0.0, cluster=Cluster(None, False, error=key),
                        experiments=(experiment,), findings=(finding,))  # fmt: skip
    for text in (status_text(snapshot), progress_line(snapshot)):
        assert all(c.isprintable() or c == "\n" for c in text), repr(text)
    lines = status_text(snapshot).split("\n")
    assert len(lines) == len(status_text(hostile_free(snapshot)).split("\n"))


def hostile_free(snapshot: Snapshot) -> Snapshot:
    """The same snapshot with plain names: how many lines an honest one prints."""
    experiment = snapshot.experiments[0]
    trial = replace(experiment.trials[0], trial_id="t", config={"k": "v"})
    experiment = replace(experiment, name="e", path="/r/k", trials=(trial,), warnings=("w",))
    finding = replace(snapshot.findings[0], subject="t", message="m")
    cluster = replace(snapshot.cluster, error="e")
    return replace(snapshot, cluster=cluster, experiments=(experiment,), findings=(finding,))
