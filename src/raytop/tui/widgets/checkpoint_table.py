"""The checkpoints of one Train run, newest first: who wrote them, how they travel, where
they are, and a ``COLLISION`` when ranks wrote different contents under one file name into
one checkpoint.

Keyed by checkpoint folder name and diff-updated, so a checkpoint that goes from
uploading to committed changes in place and the cursor stays on it.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from raytop.model import CheckpointRecord, Finding, TrainRun
from raytop.tui.format import fmt_bytes, fmt_seconds, shown
from raytop.tui.widgets.keyed_table import ColumnSpec, KeyedTable
from raytop.tui.widgets.stall_banner import RunFindings
from raytop.tui.widgets.table_cells import StyledCell, left, number

MAX_SHOWN = 20  # the newest ones; older checkpoints only matter through their findings
COLLISION = "COLLISION"
NO_CHECKPOINTS = "no checkpoints reported yet"
CHECKPOINT_KINDS = (
    "checkpoint_collision",
    "checkpoint_failed",
    "checkpoint_missing",
    "checkpoint_partial",
    "checkpoint_slow",
    "checkpoint_uncompared",
    "checkpoint_replicated",
)

_COLUMNS = (
    ColumnSpec("checkpoint", "checkpoint", 16),
    ColumnSpec("report", "report", 6, "right"),
    ColumnSpec("state", "state", 11),
    ColumnSpec("ranks", "ranks", 5),
    ColumnSpec("files", "files", 5, "right"),
    ColumnSpec("size", "size", 5, "right"),
    ColumnSpec("mode", "mode", 8),
    ColumnSpec("upload", "upload", 6, "right"),
    ColumnSpec("rate", "rate", 7, "right"),
    ColumnSpec("barrier", "barrier", 7, "right"),
    ColumnSpec("collision", "", len(COLLISION)),
)
# Dropped first when the table is too narrow (at 80 columns: files, report, rate, barrier).
_DROP_ORDER = ("files", "report", "rate", "barrier", "size", "mode", "ranks")

# State -> tone (a component class); states not listed are drawn plain.
TONES = {
    "uploading": "warn",
    "validation_timed_out": "warn",
    "failed": "error",
    "missing": "error",
    "validation_failed": "error",
    "committed": "ok",
    "validated": "ok",
    "uploaded": "muted",
    "validating": "muted",
    "pruned": "muted",
}
_LABELS = {"validation_failed": "val failed", "validation_timed_out": "val timeout"}


def shorten_left(text: str, width: int) -> str:
    """``checkpoint_2026-01-01_13-00-02.518209`` → ``…13-00-02.518209``: the end of a
    folder name is what tells checkpoints apart."""
    if len(text) <= width:
        return text
    return "…" + text[len(text) - width + 1 :] if width > 1 else "…"


def fmt_ranks(ranks: Sequence[int]) -> str:
    """``(0,)`` → ``0``; ``(0, 1)`` → ``0,1``; ``(0, 1, 2, 3, 6)`` → ``0-3,6``."""
    runs: list[list[int]] = []
    for rank in sorted(ranks):
        if runs and rank == runs[-1][-1] + 1:
            runs[-1].append(rank)
        else:
            runs.append([rank])
    parts = (f"{r[0]}-{r[-1]}" if len(r) > 2 else ",".join(map(str, r)) for r in runs)
    return ",".join(parts) or "-"


def fmt_mode(c: CheckpointRecord) -> str:
    """``SYNC``, ``ASYNC``, ``NO_UPLOAD``; ``+fn`` when the user's function uploads."""
    return f"{c.mode or '-'}{'+fn' if c.custom_upload else ''}"


def fmt_rate(bytes_per_s: float | None) -> str:
    """``12_900_000`` → ``12M/s``; ``None`` (not uploaded, or nothing to time) → ``-``."""
    return "-" if bytes_per_s is None else f"{fmt_bytes(bytes_per_s)}/s"


def barrier_time(c: CheckpointRecord) -> float | None:
    """The longest wait of any rank in that report's barrier: how long training stood."""
    return max(c.sync_s.values()) if c.sync_s else None


def upload_time(c: CheckpointRecord, now: float) -> float | None:
    """Its upload's duration; while uploading, how long it has been going by now."""
    if c.state != "uploading" or c.uploading_since is None:
        return c.upload_s
    return max(c.upload_s or 0.0, now - c.uploading_since)


def state_label(state: str) -> str:
    return _LABELS.get(state, state)


class CheckpointTable(KeyedTable):
    """One row per checkpoint (keyed by its folder name), the newest first."""

    COMPONENT_CLASSES = KeyedTable.COMPONENT_CLASSES | {
        f"checkpoint-table--{tone}" for tone in ("ok", "warn", "error", "muted")
    }

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._run: TrainRun | None = None
        self._now = 0.0

    def show_run(self, run: TrainRun | None, now: float) -> None:
        """Make the rows match the run's newest ``MAX_SHOWN`` checkpoints."""
        self._run = run
        self._now = now
        shown = list(reversed(run.checkpoints[-MAX_SHOWN:])) if run else []
        columns = self._columns(shown)
        widths = {column.key: column.width for column in columns}
        self.sync_rows({c.dir_name: self._cells(c, widths) for c in shown}, columns)

    def tick(self, now: float) -> None:
        """The clock moved: the running uploads' times grow."""
        self.show_run(self._run, now)

    def on_resize(self) -> None:
        # Which columns fit depends on our width: rebuild them if that changed.
        self.show_run(self._run, self._now)

    def _cells(self, c: CheckpointRecord, widths: dict[str, int]) -> tuple[object, ...]:
        upload, barrier = upload_time(c, self._now), barrier_time(c)
        everything: dict[str, object] = {
            "checkpoint": left(shorten_left(c.dir_name, widths["checkpoint"])),
            "report": number(str(c.report_index), c.report_index)
            if c.report_index is not None
            else number("-", None),
            "state": StyledCell(
                state_label(c.state), f"checkpoint-table--{TONES.get(c.state, 'plain')}", self
            ),
            "ranks": left(fmt_ranks(c.ranks)),
            "files": number(str(c.files), c.files),
            "size": number(fmt_bytes(c.bytes), c.bytes),
            "mode": left(fmt_mode(c)),
            "upload": number(fmt_seconds(upload), upload),
            "rate": number(fmt_rate(c.throughput_bps), c.throughput_bps),
            "barrier": number(fmt_seconds(barrier), barrier),
            "collision": StyledCell(
                COLLISION if c.collisions else "", "checkpoint-table--error", self
            ),
        }
        return tuple(everything[key] for key in widths)

    def _columns(self, shown: Sequence[CheckpointRecord]) -> tuple[ColumnSpec, ...]:
        """The folder name column takes the width left, up to the longest name."""
        longest = max((len(c.dir_name) for c in shown), default=0)
        narrowest = _COLUMNS[0].width
        return self.fit_columns(
            _COLUMNS, drop=_DROP_ORDER, grow={"checkpoint": max(longest, narrowest)}
        )


class CheckpointFindings(RunFindings):
    """The checkpoint findings of the run (collisions, failed, slow, missing uploads)."""

    MAX_LINES = 4  # its CSS max-height


def describe_title(run: TrainRun | None) -> str:
    """``checkpoints (3) · /storage/run``; ``last 20 of 57`` when older ones are hidden."""
    count = len(run.checkpoints) if run else 0
    title = "checkpoints" if not count else f"checkpoints ({count})"
    if count > MAX_SHOWN:
        title = f"checkpoints (last {MAX_SHOWN} of {count})"
    if run and run.run_path:
        title += f" · {run.run_path}"
    return title


class CheckpointPanel(Vertical):
    """Run screen: the checkpoints table (or that there are none yet) and its findings."""

    def compose(self) -> ComposeResult:
        yield CheckpointTable()
        yield Static(NO_CHECKPOINTS, id="checkpoints-empty")
        yield CheckpointFindings()

    def show(self, run: TrainRun | None, findings: Sequence[Finding], now: float) -> None:
        table = self.query_one(CheckpointTable)
        has_rows = bool(run and run.checkpoints)
        self.border_title = shown(describe_title(run))
        table.display = has_rows
        self.query_one("#checkpoints-empty", Static).display = not has_rows
        table.show_run(run, now)
        self.query_one(CheckpointFindings).show(findings)

    def tick(self, now: float) -> None:
        self.query_one(CheckpointTable).tick(now)
