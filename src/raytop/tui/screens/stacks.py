"""Every rank's Python stack side by side: where the missing rank's code is.

One scrollable panel per rank in a horizontal scroller (at 80 columns two panels fit;
more scroll sideways). The ranks the others wait for come first, then the waiting ones.
A rank's state is the pipeline's (``Worker.state``, derived with the collector's
thresholds), as in the Run screen's table.

A rank busy in C code (a collective, a C++ loader) answers only the call into C: ``n``
asks every rank again, for its native stack too (py-spy in each worker: C/C++ frames
merged with the Python ones), and each panel shows it under the Python stack, or the one
line saying why there is none (py-spy not on the image, ptrace refused).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import HorizontalScroll, VerticalScroll
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static

from raytop.model import TrainRun, Worker
from raytop.tui.format import shown, shown_lines
from raytop.tui.widgets.key_footer import KeyFooter

NO_ANSWER = "no answer (process gone or busy in C code)"
_LIBRARY_MARKERS = ("site-packages", "dist-packages", "/lib/python")
# '"/home/ray/.venv/lib/python3.11/site-packages/torch/x.py"' -> '"…/torch/x.py"'
_PACKAGES_PREFIX = re.compile(r'"[^"]*/(?:site|dist)-packages/')


def order_ranks(run: TrainRun, missing: Sequence[int]) -> list[int]:
    """Missing ranks (and ranks the ledger never saw) first, then the ranks waiting in
    report, then the rest, each group by rank."""
    workers = {w.rank: w for w in run.workers}
    ranks = set(workers) | set(missing) | set(range(run.world_size))

    def key(rank: int) -> tuple[int, int]:
        w = workers.get(rank)
        if rank in missing or w is None:
            return (0, rank)
        if w.state == "waiting":
            return (1, rank)
        return (2, rank)

    return sorted(ranks, key=key)


def describe_stack(stack: str) -> Content:
    """The stack with library frames muted (and their install prefix cut), so the user's
    own frames stand out in a narrow panel."""
    lines: list[Content] = []
    library = False
    for line in stack.rstrip("\n").splitlines():
        stripped = line.lstrip()
        if stripped.startswith('File "'):
            library = any(marker in stripped for marker in _LIBRARY_MARKERS)
            line = _PACKAGES_PREFIX.sub('"…/', line, count=1)
        elif not line.startswith(" "):  # a header ("Thread …", "Traceback …")
            library = False
            lines.append(Content.styled(line, "bold"))
            continue
        lines.append(Content.styled(line, "$text-muted") if library else Content(line))
    return shown_lines(lines)


def panel_title(rank: int, worker: Worker | None) -> str:
    if worker is None:
        return f"rank {rank} · never reported"
    pid = f"pid {worker.pid}" if worker.pid is not None else "pid ?"
    return f"rank {rank} · {pid} · {worker.state}"


def native_text(stack: str) -> Content:
    """A native stack (py-spy's dump) under its heading; its frames stay as py-spy wrote
    them (innermost first in each thread)."""
    heading = Content.styled("native (py-spy)", "bold")
    return shown_lines([heading, *stack.rstrip("\n").splitlines()])


class StacksScreen(Screen[None]):
    """The stacks carried by ``run.workers`` (``Worker.stack``, ``Worker.native_stack``),
    one panel per rank. ``ask_native`` (from the screen that asked) asks again with native
    stacks; its answer comes back through ``show``."""

    BINDINGS = [
        Binding("escape,backspace", "close", "close", id="raytop.close-stacks"),
        Binding(
            "n",
            "native",
            "native",
            id="raytop.native-stacks",
            tooltip="Ask every rank again, for its native stack too (py-spy in each worker: "
            "C/C++ frames; a request in the cluster's KV store).",
        ),
    ]

    def __init__(
        self,
        run: TrainRun,
        *,
        missing: Sequence[int] = (),
        ask_native: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        self.run = run
        self.missing = list(missing)
        self.order = order_ranks(run, self.missing)
        self._ask_native = ask_native

    def show(self, run: TrainRun, missing: Sequence[int] = ()) -> None:
        """A newer answer for the same run (``n``): draw it in place."""
        self.run = run
        self.missing = list(missing)
        self.order = order_ranks(run, self.missing)
        self.call_later(self._redraw)

    async def _redraw(self) -> None:
        await self.recompose()
        self._scroll_panels()

    def compose(self) -> ComposeResult:
        run = self.run
        workers = {w.rank: w for w in run.workers}
        answered = sum(1 for r in self.order if workers.get(r) and workers[r].stack)
        yield Static(
            shown(
                Content.assemble(
                    "stacks of run ",
                    Content.styled(run.run_name, "bold"),
                    f" · attempt {run.attempt_index} · {answered}/{len(self.order)} ranks answered",
                )
            ),
            id="stacks-title",
        )
        with HorizontalScroll(id="stacks"):
            for rank in self.order:
                worker = workers.get(rank)
                classes = ["stack-panel"]
                if rank in self.missing or worker is None:
                    classes.append("-missing")
                elif worker is not None and worker.state == "waiting":
                    classes.append("-waiting")
                stack = worker.stack if worker is not None else None
                native = worker.native_stack if worker is not None else None
                if not stack:
                    classes.append("-no-answer")
                with VerticalScroll(id=f"stack-{rank}", classes=" ".join(classes)) as panel:
                    panel.border_title = shown(panel_title(rank, worker))
                    if stack:
                        yield Static(describe_stack(stack), classes="stack-text")
                    else:
                        yield Static(Content(NO_ANSWER), classes="stack-text")
                    if native is not None:
                        yield Static(native_text(native), classes="stack-text native-text")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._scroll_panels()

    def _scroll_panels(self) -> None:
        # Where the code is now is the innermost frame: at the end of a Python stack, at
        # the top of a native one (py-spy prints innermost first), so a native stack's
        # heading goes to the top with the Python stack's end just above it.
        for panel in self.query(".stack-panel").results(VerticalScroll):
            native = panel.query(".native-text")
            if native:
                panel.scroll_to_widget(native.first(), top=True, animate=False)
            else:
                panel.scroll_end(animate=False, immediate=False)

    def action_close(self) -> None:
        self.dismiss()

    def action_native(self) -> None:
        if self._ask_native is None:
            self.notify("native stacks aren't available here", severity="warning")
            return
        self._ask_native()
