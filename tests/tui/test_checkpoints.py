"""Pilot tests of the Run screen's checkpoints: rows, states, collisions, live updates."""

from __future__ import annotations

from dataclasses import replace

import pytest

from raytop.model import CheckpointRecord, Finding, Severity
from raytop.tui.format import fmt_seconds
from raytop.tui.screens.run import RunScreen
from raytop.tui.widgets.checkpoint_table import (
    COLLISION,
    MAX_SHOWN,
    NO_CHECKPOINTS,
    CheckpointPanel,
    CheckpointTable,
    fmt_ranks,
    shorten_left,
)
from raytop.tui.widgets.table_cells import StyledCell

from .conftest import (
    CKPT_COLLIDED,
    CKPT_UPLOADED,
    CKPT_UPLOADING,
    NOW,
    RUN_ID,
    RUN_PATH,
    with_checkpoints,
)
from .helpers import cell, cursor_key, row_keys, show, text_of, wait_until

NEWEST_FIRST = [CKPT_UPLOADING, CKPT_UPLOADED, CKPT_COLLIDED]


async def open_checkpoints(app, pilot, snapshot) -> CheckpointTable:
    await show(pilot, snapshot)
    await pilot.press("enter")
    await pilot.pause()
    assert isinstance(app.screen, RunScreen)
    return app.screen.query_one(CheckpointTable)


async def cursor_on_uploaded(app, pilot, snapshot) -> CheckpointTable:
    """The checkpoints table, focused, its cursor on the middle (uploaded) row."""
    table = await open_checkpoints(app, pilot, snapshot)
    table.focus()
    await pilot.press("down")
    assert cursor_key(table) == CKPT_UPLOADED
    return table


def component(table: CheckpointTable, key: str, column: str) -> str:
    value = table.get_cell(key, column)
    assert isinstance(value, StyledCell)
    return value.component


def by_name(snapshot, name: str) -> CheckpointRecord:
    (run,) = snapshot.experiments[0].runs
    return next(c for c in run.checkpoints if c.dir_name == name)


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_one_row_per_checkpoint_newest_first(make_app, checkpointed, size) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        table = await open_checkpoints(app, pilot, checkpointed)
        assert table.display
        assert not app.screen.query_one("#checkpoints-empty").display
        assert row_keys(table) == NEWEST_FIRST
        assert [cell(table, k, "state") for k in NEWEST_FIRST] == [
            "uploading",
            "uploaded",
            "committed",
        ]
        assert [component(table, k, "state") for k in NEWEST_FIRST] == [
            "checkpoint-table--warn",
            "checkpoint-table--muted",
            "checkpoint-table--ok",
        ]
        assert [cell(table, k, "ranks") for k in NEWEST_FIRST] == ["0,1", "0", "0,1"]
        assert [cell(table, k, "size") for k in NEWEST_FIRST] == ["1.2G", "48M", "96M"]
        assert [cell(table, k, "mode") for k in NEWEST_FIRST] == ["ASYNC+fn", "SYNC", "SYNC"]
        # The uploading one: how long it has been going by the (frozen) clock; it started
        # 74.2s before the snapshot, taken 2s ago.
        assert [cell(table, k, "upload") for k in NEWEST_FIRST] == ["76.2s", "3.0s", "3.4s"]
        # Only the checkpoint two ranks wrote model.pt into is marked, in the error colour.
        assert [cell(table, k, "collision") for k in NEWEST_FIRST] == ["", "", COLLISION]
        assert component(table, CKPT_COLLIDED, "collision") == "checkpoint-table--error"
        # Fixed widths that fit: no horizontal scrolling at either size.
        assert table.virtual_size.width <= table.scrollable_content_region.width
        title = str(app.screen.query_one(CheckpointPanel).border_title)
        assert title == f"checkpoints (3) · {RUN_PATH}"


async def test_wide_terminal_shows_full_names_report_and_files(make_app, checkpointed) -> None:
    app = make_app()
    async with app.run_test(size=(140, 36)) as pilot:
        table = await open_checkpoints(app, pilot, checkpointed)
        assert table.columns_shown == (
            "checkpoint",
            "report",
            "state",
            "ranks",
            "files",
            "size",
            "mode",
            "upload",
            "rate",
            "barrier",
            "collision",
        )
        assert [cell(table, k, "checkpoint") for k in NEWEST_FIRST] == NEWEST_FIRST
        # Throughput once uploaded; the longest rank's wait in that report's barrier.
        assert [cell(table, k, "rate") for k in NEWEST_FIRST] == ["-", "16M/s", "28M/s"]
        assert [cell(table, k, "barrier") for k in NEWEST_FIRST] == ["-", "1.5s", "0.4s"]
        assert [cell(table, k, "report") for k in NEWEST_FIRST] == ["5", "4", "3"]
        assert [cell(table, k, "files") for k in NEWEST_FIRST] == ["4", "2", "2"]


async def test_80_columns_drop_files_and_report_and_shorten_names(make_app, checkpointed) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = await open_checkpoints(app, pilot, checkpointed)
        shown = table.columns_shown
        assert "files" not in shown and "report" not in shown
        for key in ("checkpoint", "state", "ranks", "size", "mode", "upload", "collision"):
            assert key in shown
        name = cell(table, CKPT_UPLOADING, "checkpoint")
        assert name.startswith("…") and name.endswith("13-00-02.518209")
        assert len(name) == table.columns["checkpoint"].width


async def test_the_collision_finding_is_listed_under_the_checkpoints(
    make_app, checkpointed
) -> None:
    other_run = Finding(
        kind="checkpoint_failed",
        severity=Severity.ERROR,
        subject="run other",
        message="upload of checkpoint_x failed: another run's",
        evidence={"run_id": "other", "dir_name": "checkpoint_x"},
        run_id="other",
    )
    snap = replace(checkpointed, findings=(*checkpointed.findings, other_run))
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await open_checkpoints(app, pilot, snap)
        findings = text_of(app, "CheckpointFindings")
        assert findings.startswith(
            f"ERROR   ranks 0, 1 all wrote model.pt into {CKPT_COLLIDED}: one overwrote"
        )
        assert "another run" not in findings
        # Not repeated among the ledger's findings above the ranks.
        assert "model.pt" not in text_of(app, "#run-findings")
        (collision,) = [f for f in checkpointed.findings if f.kind == "checkpoint_collision"]
        assert collision.evidence["run_id"] == RUN_ID
        assert collision.evidence["dir_name"] == CKPT_COLLIDED


async def test_a_finished_upload_updates_in_place_and_keeps_the_cursor(
    make_app, checkpointed, checkpoint_run
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = await cursor_on_uploaded(app, pilot, checkpointed)
        cleared: list[bool] = []
        clear = table.clear

        def spy(columns: bool = False) -> CheckpointTable:
            cleared.append(columns)
            return clear(columns)

        table.clear = spy  # type: ignore[method-assign]
        (run,) = checkpointed.experiments[0].runs
        done = replace(
            by_name(checkpointed, CKPT_UPLOADING),
            state="committed",
            upload_s=81.5,
            uploading_since=None,
        )
        checkpoints = (*run.checkpoints[:2], done)
        await show(pilot, with_checkpoints(checkpointed, checkpoint_run, *checkpoints, dt=1.0))
        assert cell(table, CKPT_UPLOADING, "state") == "committed"
        assert component(table, CKPT_UPLOADING, "state") == "checkpoint-table--ok"
        assert cell(table, CKPT_UPLOADING, "upload") == "81.5s"
        assert row_keys(table) == NEWEST_FIRST
        assert cleared == []  # changed cells rewritten, no rebuild
        assert table.cursor_row == 1
        assert cursor_key(table) == CKPT_UPLOADED


async def test_a_new_checkpoint_goes_on_top_and_the_cursor_follows_its_row(
    make_app, checkpointed, checkpoint_run
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = await cursor_on_uploaded(app, pilot, checkpointed)
        (run,) = checkpointed.experiments[0].runs
        newer = CheckpointRecord("checkpoint_2025-12-31_13-00-11.004201", "uploading",
                                 report_index=6, ranks=(0,), mode="SYNC",
                                 uploading_since=NOW - 1.0)  # fmt: skip
        await show(pilot, with_checkpoints(checkpointed, checkpoint_run, *run.checkpoints, newer))
        assert row_keys(table) == [newer.dir_name, *NEWEST_FIRST]
        assert cursor_key(table) == CKPT_UPLOADED
        assert table.cursor_row == 2


async def test_a_running_upload_time_ticks_with_the_clock(make_app, checkpointed) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = await open_checkpoints(app, pilot, checkpointed)
        app.clock = lambda: NOW + 10
        await wait_until(pilot, lambda: cell(table, CKPT_UPLOADING, "upload") == "86.2s")
        assert cell(table, CKPT_UPLOADED, "upload") == "3.0s"


async def test_no_checkpoints_yet(make_app, stalled, checkpointed) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = await open_checkpoints(app, pilot, stalled)
        empty = app.screen.query_one("#checkpoints-empty")
        assert empty.display and not table.display
        assert text_of(app, "#checkpoints-empty") == NO_CHECKPOINTS
        assert not app.screen.query_one("CheckpointFindings").display
        assert str(app.screen.query_one(CheckpointPanel).border_title) == "checkpoints"

        await show(pilot, checkpointed)
        assert table.display and not empty.display
        assert row_keys(table) == NEWEST_FIRST


async def test_only_the_newest_checkpoints_are_listed(
    make_app, checkpointed, checkpoint_run
) -> None:
    many = [
        CheckpointRecord(f"checkpoint_{i:06d}", "committed", report_index=i, ranks=(0,))
        for i in range(MAX_SHOWN + 5)
    ]
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        snap = with_checkpoints(checkpointed, checkpoint_run, *many)
        table = await open_checkpoints(app, pilot, snap)
        assert table.row_count == MAX_SHOWN
        assert row_keys(table)[0] == f"checkpoint_{MAX_SHOWN + 4:06d}"
        assert row_keys(table)[-1] == "checkpoint_000005"
        title = str(app.screen.query_one(CheckpointPanel).border_title)
        assert title.startswith(f"checkpoints (last {MAX_SHOWN} of {MAX_SHOWN + 5})")


# -- formatting ------------------------------------------------------------------------------


def test_shorten_left_keeps_the_end_of_the_name() -> None:
    assert shorten_left("checkpoint_2025-12-31_13-00-02.518209", 16) == "…13-00-02.518209"
    assert shorten_left("checkpoint_000005", 20) == "checkpoint_000005"
    assert shorten_left("checkpoint_000005", 1) == "…"


def test_fmt_ranks_writes_runs_as_ranges() -> None:
    assert fmt_ranks((0,)) == "0"
    assert fmt_ranks((1, 0)) == "0,1"
    assert fmt_ranks((0, 1, 2, 3, 6)) == "0-3,6"
    assert fmt_ranks(()) == "-"


def test_fmt_seconds() -> None:
    assert fmt_seconds(None) == "-"
    assert fmt_seconds(3.42) == "3.4s"
    assert fmt_seconds(999.96) == "1000s"
