"""The faces without Textual: plain text for a terminal or a log (``text``), the answers
of ``raytop check`` (``check``), and the terminal plumbing the TUI runs under
(``terminal``). Faces read snapshots and findings; they import model, diagnose and the
pipeline, never the TUI."""
