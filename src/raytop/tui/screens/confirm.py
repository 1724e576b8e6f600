"""A yes/no question before raytop changes anything: ``y``/Enter confirms, ``n``/Escape
cancels. Dismisses with True only on an explicit yes; anything else means no."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from raytop.tui.format import shown, shown_lines


class ConfirmModal(ModalScreen[bool]):
    BINDINGS = [
        Binding("y,enter", "confirm", "yes", id="raytop.confirm"),
        Binding("n,escape", "cancel", "no", id="raytop.cancel"),
    ]

    def __init__(
        self, question: str, *, title: str = "confirm", yes: str = "yes",
        warnings: tuple[str, ...] = (),
    ) -> None:  # fmt: skip
        """``question`` and each of ``warnings`` (a line each, ``⚠``) name what would
        change: made visible line by line (``tui.format.shown_lines``)."""
        super().__init__()
        self.question = question
        self.warnings = warnings
        self._title = title
        self._yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog") as dialog:
            dialog.border_title = shown(self._title)
            dialog.border_subtitle = "y/enter: yes · n/esc: no"
            lines = [self.question, *(f"⚠ {warning}" for warning in self.warnings)]
            yield Static(shown_lines(lines), id="confirm-question")
            yield Static(
                Content.assemble(
                    Content.styled("y", "bold $accent"),
                    f" {self._yes}   ",
                    Content.styled("n", "bold $accent"),
                    " cancel (default)",
                ),
                id="confirm-keys",
            )

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
