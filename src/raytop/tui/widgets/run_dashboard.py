"""The overview's dashboard: one trial's Train run at a glance, beside or under the trials.

Six panels, in the order they are given room when lines are short: the run's phase (and
for how long), the rank strip (every rank's report count, or a histogram with the
laggards named), where the ranks' time goes (goodput and its shares), the trial's metric
over its iterations (a wide sparkline of ``Trial.metric_history``), its latest
checkpoints, where its bundles are, and the trial's every param with its full value (the
trials table shows only the swept ones). What each panel says is decided in
``raytop.model.dashboard`` (the time shares: ``widgets.share_bar``); this widget paints
it in the lines it is given.
"""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Static

from raytop.model import PlacementGroup, TrainRun, Trial
from raytop.model.dashboard import (
    ERRORED,
    FINISHED,
    PAUSED,
    SCHEDULING,
    STARTING,
    TRAINING,
    UNFINISHED,
    WAITING,
    Phase,
    RankCell,
    RankStrip,
    bundle_places,
    latest_checkpoints,
    rank_cells,
    rank_strip,
)
from raytop.model.format import fmt_duration, fmt_params, fmt_value
from raytop.tui.format import (
    chart,
    fit_words,
    fmt_bytes,
    fmt_rate,
    shown,
    shown_lines,
    sparkline,
    wrap_words,
)
from raytop.tui.glyphs import UNICODE, glyphs_of
from raytop.tui.widgets.checkpoint_table import TONES, fmt_mode, state_label
from raytop.tui.widgets.share_bar import bar_content, bar_text, run_time_line

_PHASE_STYLE = {
    WAITING: "bold $text-muted",
    SCHEDULING: "bold $text-warning",
    STARTING: "bold $text-warning",
    TRAINING: "bold $text-success",
    PAUSED: "bold $text-muted",
    FINISHED: "bold $text-primary",
    ERRORED: "bold $text-error",
    UNFINISHED: "bold $text-warning",
}
_RANK_STYLE = {
    "training": "$text-success",
    "waiting": "$text-warning",
    "behind": "bold $text-warning",
    "silent": "bold $text-error",
    "dead": "bold $text-error",
    "done": "$text-muted",
}
_TONE_STYLE = {"ok": "$text-success", "warn": "$text-warning", "error": "bold $text-error"}
_LABEL_WIDTH = 7  # "ranks  ", "ckpts  ", "place  "


def describe_phase(trial: Trial, run: TrainRun | None, phase: Phase, since: str) -> Content:
    """``t2 · training for 1m02s · report 12 · 2 rank(s)``."""
    # raytop's runs are named <experiment>-<trial id>: then the trial id says it all.
    named = run is not None and trial.trial_id not in run.run_name
    who = f"{trial.trial_id} · {run.run_name}" if named and run else trial.trial_id
    attempt = f" · attempt {run.attempt_index}" if run and run.attempt_index > 1 else ""
    return Content.assemble(
        Content.styled(who, "bold"),
        "  ",
        Content.styled(phase.name, _PHASE_STYLE.get(phase.name, "bold")),
        f" {since} · {phase.detail}{attempt}",
    )


def _label(text: str) -> Content:
    return Content.styled(f"{text:<{_LABEL_WIDTH}}", "$text-muted")


def _rank_cell(cell: RankCell, width: int) -> Content:
    style = "bold reverse $text-error" if cell.stalled else _RANK_STYLE.get(cell.state, "")
    return Content.styled(f"{cell.text:<{width}}", style)


def describe_ranks(strip: RankStrip, width: int, spark: str) -> list[Content]:
    """The strip's lines: cells in rows, or a histogram and the laggards."""
    if strip.cells:
        per_line = max(1, (width - _LABEL_WIDTH) // strip.cell_width)
        lines = []
        for start in range(0, len(strip.cells), per_line):
            row = strip.cells[start : start + per_line]
            label = _label("ranks" if start == 0 else "")
            lines.append(Content.assemble(label, *(_rank_cell(c, strip.cell_width) for c in row)))
        return lines
    lines = []
    bar_room = max(4, min(30, width - _LABEL_WIDTH - 24))
    for i, bar in enumerate(strip.bars):
        blocks = spark[-1] * max(1, round(bar.share * bar_room))
        lines.append(Content.assemble(
            _label("ranks" if i == 0 else ""),
            f"{bar.reports:>6} reports ",
            Content.styled(f"{blocks:<{bar_room}}", "$text-accent"),
            f" {bar.ranks} rank{'s' if bar.ranks != 1 else ''}",
        ))  # fmt: skip
    if strip.laggards or strip.more_laggards:
        more = f" +{strip.more_laggards} more" if strip.more_laggards else ""
        cells = (_rank_cell(c, strip.cell_width) for c in strip.laggards)
        lines.append(Content.assemble(_label("look"), *cells, more))
    return lines


_TREND_WIDTH = 32  # at most: a point per iteration up to 32, then means of runs of them
_CHART_ROWS = 20  # the trend chart's rows at most, when the panel has lines to spare


def describe_trend(
    trial: Trial, metric: str | None, width: int, spark: str, arrow: str
) -> list[Content]:
    """``trend  ▇▆▅▄▃▂▁▁ loss 2.3→0.4213 · 12/20``: the metric's history, first to last
    value, and the iterations done of those expected; nothing without a history."""
    history = trial.metric_history
    if not history:
        return []
    tail = f" {metric or 'metric'} {fmt_value(history[0])}{arrow}{fmt_value(history[-1])}"
    if trial.max_iterations is not None:
        tail += f" · {trial.iterations}/{trial.max_iterations}"
    room = max(4, min(_TREND_WIDTH, width - _LABEL_WIDTH - len(tail)))
    line = sparkline(history, room, spark)
    return [Content.assemble(_label("trend"), Content.styled(line, "$text-accent"), tail)]


def describe_trend_chart(
    trial: Trial, metric: str | None, width: int, height: int, spark: str, arrow: str
) -> list[Content]:
    """The tall form of the trend, for lines nothing else needs: its line, then the
    metric's history as a chart ``height`` rows tall, its highest and lowest value
    beside the top and bottom rows."""
    history = trial.metric_history
    line = describe_trend(trial, metric, width, spark, arrow)
    if len(history) < 2 or height < 2:
        return line
    room = max(4, width - _LABEL_WIDTH - 12)
    per = max(1, min(4, room // len(history)))  # a short history: each point a few columns
    rows = ["".join(c * per for c in row) for row in chart(history, room, height, spark)]
    edges = {0: fmt_value(max(history)), height - 1: fmt_value(min(history))}
    return line + [
        Content.assemble(_label(""), Content.styled(row, "$text-accent"), f" {edges.get(i, '')}")
        for i, row in enumerate(rows)
    ]


def describe_checkpoints(run: TrainRun, count: int) -> list[Content]:
    """``ckpts  #12 committed 1.2M SYNC  #13 uploading 3.1M ASYNC``: newest first."""
    shown = latest_checkpoints(run, count)
    if not shown:
        return [Content.assemble(_label("ckpts"), Content.styled("none yet", "$text-muted"))]
    parts: list[Content | str] = [_label("ckpts")]
    for c in shown:
        index = "?" if c.report_index is None else str(c.report_index)
        tone = _TONE_STYLE.get(TONES.get(c.state, ""), "")
        parts += [
            f"#{index} ",
            Content.styled(state_label(c.state), tone),
            f" {fmt_bytes(c.bytes)} {fmt_mode(c)}  ",
        ]
    return [Content.assemble(*parts)]


def describe_placement(
    groups: Sequence[PlacementGroup], run: TrainRun | None, arrow: str
) -> list[Content]:
    """``place  b0→a3f9c2d1 GPU 0  b1→a3f9c2d1 GPU 1``; unplaced bundles say so."""
    places = bundle_places(groups, run)
    if not places:
        return []
    parts: list[Content | str] = [_label("place")]
    for index, node, gpus in places:
        if node is None:
            parts += [f"b{index}{arrow}", Content.styled("unplaced", "$text-warning"), "  "]
        else:
            gpu = f" GPU {','.join(gpus)}" if gpus else ""
            parts.append(f"b{index}{arrow}{node[:8]}{gpu}  ")
    return [Content.assemble(*parts)]


def describe_params(trial: Trial, width: int, ellipsis: str) -> list[Content]:
    """``params batch_size=32 epochs=8 lr=0.01``: every param, in up to 3 lines."""
    if not trial.config:
        return []
    line = Content.assemble(_label("params"), shown(fmt_params(trial.config)))
    return wrap_words(line, width, 3, ellipsis, indent=_LABEL_WIDTH)


def describe_rank_rows(cells: Sequence[RankCell], block: str, ascii_: bool) -> list[Content]:
    """The tall form: a header, then a line per rank with its report rate (the rank's one
    rate, rounded as the rank table and the rank screen round it: ``fmt_rate``, its unit
    in the header), and its time-share bar once a rank has shares."""
    bars = any(c.shares for c in cells)
    time = f"{'time':<{_ROW_BAR}}  " if bars else ""
    head = f"{'rank':>6} {'reports':>7} {'behind':>6} {'last rep':>8} {'rate/min':>8}  {time}state"
    lines = [Content.styled(head, "$text-muted")]
    for c in cells:
        rate = fmt_rate(c.rate_per_min).removesuffix("/m")
        style = "bold reverse $text-error" if c.stalled else _RANK_STYLE.get(c.state, "")
        letters = bar_text(c.shares, _ROW_BAR)
        bar = bar_content(letters, block, ascii_) if letters else " " * _ROW_BAR
        lines.append(Content.assemble(
            f"{'r' + str(c.rank):>6} {c.reports:>7} {c.behind or '':>6} "
            f"{fmt_duration(c.age_s):>8} {rate:>8}  ",
            *((bar, "  ") if bars else ()),
            Content.styled("stalled" if c.stalled else c.state, style),
        ))  # fmt: skip
    return lines


_ROW_BAR = 10  # a rank row's time-share bar


def describe_checkpoint_rows(run: TrainRun, count: int) -> list[Content]:
    """The tall form: a line per checkpoint, newest first."""
    lines = [Content.styled("checkpoints (newest first)", "$text-muted")]
    for c in latest_checkpoints(run, count):
        index = "?" if c.report_index is None else str(c.report_index)
        tone = _TONE_STYLE.get(TONES.get(c.state, ""), "")
        took = "" if c.upload_s is None else f" {c.upload_s:.1f}s"
        lines.append(Content.assemble(
            f"  #{index:<4} ", Content.styled(f"{state_label(c.state):<11}", tone),
            f" {fmt_bytes(c.bytes):>5} {fmt_mode(c)}{took}",
        ))  # fmt: skip
    return lines


def describe_bundle_rows(
    groups: Sequence[PlacementGroup], run: TrainRun | None, arrow: str
) -> list[Content]:
    """The tall form: a line per bundle."""
    places = bundle_places(groups, run)
    lines = [Content.styled("placement (bundle → node, GPU)", "$text-muted")] if places else []
    for index, node, gpus in places:
        if node is None:
            lines.append(
                Content.assemble(f"  b{index} ", Content.styled("unplaced", "$text-warning"))
            )
        else:
            gpu = f"  GPU {','.join(gpus)}" if gpus else ""
            lines.append(Content(f"  b{index} {arrow} {node[:12]}{gpu}"))
    return lines


class RunDashboard(Vertical):
    """Shows one trial's run in at most ``lines`` lines; hidden without a trial."""

    def compose(self) -> ComposeResult:
        yield Static(id="dash-phase", markup=False)
        yield Static(id="dash-ranks", markup=False)
        yield Static(id="dash-time", markup=False)
        yield Static(id="dash-trend", markup=False)
        yield Static(id="dash-checkpoints", markup=False)
        yield Static(id="dash-placement", markup=False)
        yield Static(id="dash-params", markup=False)

    def show(
        self,
        trial: Trial | None,
        run: TrainRun | None,
        groups: Sequence[PlacementGroup],
        phase: Phase | None,
        since: str,
        *,
        lines: int,
        stalled: Sequence[int] = (),
        metric: str | None = None,
        ages_at: float = 0.0,
    ) -> int:
        """Fill the panels within ``lines``: each first in its compact form, by priority
        (phase, ranks, the metric's trend, checkpoints, placement, params); then, while
        lines are left, the ranks, checkpoints and bundles each get a line of their own. A
        panel without room is hidden, and no line is cut mid-word. Returns the lines
        filled (the screen gives the rest to the trials). ``ages_at``: the time the ranks'
        ages are said as of (``Snapshot.ages_at``)."""
        self.display = trial is not None and phase is not None and lines > 0
        if trial is None or phase is None or lines <= 0:
            return 0
        glyphs = glyphs_of(self)
        width = max(20, self.size.width or self.app.size.width) - 2  # padding
        ranks: list[Content] = []
        checkpoints: list[Content] = []
        if run is not None and run.workers:
            room = max(1, min(lines - 1, 6))
            strip = rank_strip(run, ages_at, width - _LABEL_WIDTH, room, stalled)
            ranks = describe_ranks(strip, width, glyphs.spark)
        if run is not None:
            checkpoints = describe_checkpoints(run, 3)
        placement = describe_placement(groups, run, glyphs.arrow)
        trend = describe_trend(trial, metric, width, glyphs.spark, glyphs.arrow)
        ascii_ = glyphs.bar_full != UNICODE.bar_full
        time_line = None
        if run is not None:
            time_line = run_time_line(run, width - _LABEL_WIDTH, glyphs.bar_full, ascii_)
        time = [Content.assemble(_label("time"), time_line)] if time_line else []
        params = describe_params(trial, width, glyphs.ellipsis)
        panels = [ranks, time, trend, checkpoints, placement, params]
        phase_line = describe_phase(trial, run, phase, since)
        phase_lines = wrap_words(shown(phase_line), width, 2 if lines >= 4 else 1, glyphs.ellipsis)
        budget = lines - len(phase_lines)
        for i, panel in enumerate(panels):  # compact forms, by priority
            panels[i] = panel[: max(0, budget)]
            budget -= len(panels[i])
        # The tall forms, each as (its line count, how to build it): built only when it
        # fits (a run of 2,000 ranks has 2,001 lines of ranks, never on screen).
        bundles = len(bundle_places(groups, run))
        tall = [
            (1 + len(run.workers) if run and run.workers else 0,
             lambda: describe_rank_rows(
                 rank_cells(run, ages_at, stalled), glyphs.bar_full, ascii_)),
            (0, list),  # the time shares have one form
            (0, list),  # the trend has one form
            (1 + min(5, len(run.checkpoints)) if run and run.checkpoints else 0,
             lambda: describe_checkpoint_rows(run, 5)),
            (1 + bundles if bundles else 0,
             lambda: describe_bundle_rows(groups, run, glyphs.arrow)),
            (0, list),  # the params have one form
        ]  # fmt: skip
        for i, (count, build) in enumerate(tall):  # then the tall ones, while they fit whole
            if count and len(panels[i]) and count - len(panels[i]) <= budget:
                budget -= count - len(panels[i])
                panels[i] = build()
        if panels[2] and budget >= 3:  # the lines left: the metric's trend as a chart
            height = min(budget, _CHART_ROWS)
            panels[2] = describe_trend_chart(trial, metric, width, height, glyphs.spark,
                                             glyphs.arrow)  # fmt: skip
        self._put("#dash-phase", phase_lines, width, glyphs.ellipsis)
        for selector, panel in zip(
            (
                "#dash-ranks",
                "#dash-time",
                "#dash-trend",
                "#dash-checkpoints",
                "#dash-placement",
                "#dash-params",
            ),
            panels,
            strict=True,
        ):
            self._put(selector, panel, width, glyphs.ellipsis)
        return len(phase_lines) + sum(len(panel) for panel in panels)

    def _put(self, selector: str, lines: list[Content], width: int, ellipsis: str) -> None:
        panel = self.query_one(selector, Static)
        panel.display = bool(lines)
        if lines:
            panel.update(shown_lines(fit_words(shown(line), width, ellipsis) for line in lines))
