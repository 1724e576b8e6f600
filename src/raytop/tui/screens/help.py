"""The ``?`` modal: the keys, and the reassurance that quitting leaves the run alone."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

_ABOUT = (
    "raytop only watches. Quitting closes this window: the Ray run keeps going.\n"
    "Run `raytop` again to re-attach."
)
_ABOUT_STOPS = (
    "raytop changes the run only when you confirm a stop (x, t) or a resume (u); "
    "neither deletes anything.\n"
    "Quitting closes this window: the Ray run keeps going. Run `raytop` again to re-attach."
)


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,question_mark", "dismiss", "close", id="raytop.close-help"),
    ]

    def __init__(
        self, keys: Sequence[tuple[str, str]], *, read_only: bool, can_stop: bool = False
    ) -> None:
        super().__init__()
        self._keys = keys
        self._read_only = read_only
        self._can_stop = can_stop

    def compose(self) -> ComposeResult:
        width = max((len(key) for key, _ in self._keys), default=0)
        lines = [
            Content.assemble(Content.styled(f"{key:>{width}}", "bold $accent"), "  ", text)
            for key, text in self._keys
        ]
        about = _ABOUT_STOPS if self._can_stop else _ABOUT
        if self._read_only:
            about += "\nRead-only mode: raytop will not change the run."
        with Vertical(id="help-dialog") as dialog:
            dialog.border_title = "raytop help"
            dialog.border_subtitle = "esc to close"
            yield Static(Content("\n").join(lines), id="help-keys")
            yield Static(Content(about), id="help-about")
