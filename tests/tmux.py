"""raytop in a real terminal: a tmux pane of its own, its screen and title read back."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
import uuid


class Pane:
    """``command`` in a new pane of ``size``, with this process's RAYTOP_HOME and PATH
    (and ``env`` on top); ``EXITED=<code>`` is printed under it when it ends."""

    def __init__(
        self, command: list[str], size=(100, 30), env: dict[str, str] | None = None
    ) -> None:
        self.name = f"raytop-e2e-{uuid.uuid4().hex[:8]}"
        given = {k: os.environ[k] for k in ("RAYTOP_HOME", "PATH", "PYTHONPATH") if k in os.environ}
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in {**given, **(env or {})}.items())
        # The tmux server inherits this process's environment, which under pytest holds
        # COLUMNS=80 and LINES=24: a program that reads its size from them (Textual does,
        # by shutil.get_terminal_size) would draw 80x24 in any pane. The pane's own size.
        shell = (f"env -u COLUMNS -u LINES {env} TERM=xterm-256color {shlex.join(command)}; "
                 "echo EXITED=$?; sleep 60")  # fmt: skip
        # A tmux server of its own (-L): no race with another pane's server shutting down.
        self.tmux = ["tmux", "-L", self.name]
        subprocess.run(
            [*self.tmux, "new-session", "-d", "-s", self.name, "-x", str(size[0]),
             "-y", str(size[1]), shell],
            check=True,
        )  # fmt: skip

    def screen(self) -> str:
        return subprocess.run(
            [*self.tmux, "capture-pane", "-p", "-t", self.name], capture_output=True, text=True
        ).stdout

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-t", self.name, *keys], check=True)

    def wait_for(self, predicate, timeout: float, what: str) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen()
            if predicate(text):
                return text
            time.sleep(0.5)
        raise AssertionError(f"timed out waiting for {what}; screen:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)

    def title(self) -> str:
        """The pane's title: what a program can set with an OSC 2 sequence."""
        return subprocess.run(
            [*self.tmux, "display-message", "-p", "-t", self.name, "#{pane_title}"],
            capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
