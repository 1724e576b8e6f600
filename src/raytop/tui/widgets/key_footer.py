"""The footer every screen uses: all of the screen's keys, on one line, at any width.

Textual's compact ``Footer`` lists the keys that act on the screen, but a line wider
than the terminal is cut at the right, which at 80 columns hides the app's own keys. This
one keeps every key: when the keys and their words do not fit, the best-known keys give
up their words first (``^p palette`` → ``^p``, then ``? help``, ``q quit``, ``c theme``,
``r refresh``), and the help screen (``?``) still spells each one out."""

from __future__ import annotations

from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel  # not re-exported; stable since 0.86

# The actions whose words go first when the line is too long, best known first.
TERSE_FIRST = ("command_palette", "help", "quit", "cycle_theme", "refresh_now", "back", "close")


def _width(widget: FooterKey | FooterLabel) -> int:
    """Columns the widget takes in the compact footer (with its one-column margin)."""
    if isinstance(widget, FooterLabel):
        return len(str(widget.content)) + 1
    words = len(widget.description) + 1 if widget.description else 0
    return len(widget.key_display) + words + 1


class KeyFooter(Footer):
    """A compact ``Footer`` that drops words, never keys, to fit its width."""

    def __init__(self) -> None:
        super().__init__(compact=True)

    async def recompose(self) -> None:
        await super().recompose()
        self._fit()

    def on_resize(self) -> None:
        self.call_after_refresh(self.recompose)

    def _fit(self) -> None:
        width = self.size.width
        if not width:
            return
        parts = list(self.query(FooterKey)) + list(self.query(FooterLabel))
        needed = sum(_width(part) for part in parts)
        for action in TERSE_FIRST:
            if needed <= width:
                return
            for key in parts:
                if isinstance(key, FooterKey) and key.action == action and key.description:
                    needed -= len(key.description) + 1
                    key.description = ""
                    key.refresh(layout=True)
