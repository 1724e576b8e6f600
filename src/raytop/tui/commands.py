"""The command palette's raytop entries: every key of the screen under it, as a command.

``ctrl+p`` lists what the footer lists, each with the sentence the help screen gives, so
an action can be found by name ("stop", "placement") without knowing its key. The
commands are built from the screen's active bindings when the palette opens: a command
is offered exactly when its key would act (a disabled key is a disabled command), and
running it is pressing the key (``run_action`` on the node that owns the binding)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from textual.app import SystemCommand

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen

# Textual's own entries that raytop replaces: its theme picker lists Textual's themes,
# which lack raytop's colour variables (raytop's `c` cycles raytop's own); "quit (q)"
# is already one of the screen's keys.
REPLACED_SYSTEM_TITLES = frozenset({"Theme", "Quit"})


def key_commands(app: App[object], screen: Screen[object]) -> Iterator[SystemCommand]:
    """One command per shown key of ``screen`` (the footer's keys), in footer order."""
    seen: set[str] = set()
    for node, binding, enabled, _tooltip in screen.active_bindings.values():
        if not (binding.show and binding.description and enabled):
            continue
        if binding.action in seen or binding.action == "command_palette":
            continue
        seen.add(binding.action)
        title = f"{binding.description} ({app.get_key_display(binding)})"
        help_text = binding.tooltip or binding.description

        async def run(action: str = binding.action, owner: object = node) -> None:
            await app.run_action(action, owner)  # type: ignore[arg-type]

        yield SystemCommand(title, help_text, run)
