"""The faces without Textual: the command line's shared options, read-only list and
error guard (``command_line``), plain text for a terminal or a log (``text``), the
answers of ``raytop check`` (``check``), and the terminal plumbing the TUI runs under
(``terminal``). Faces read snapshots and findings; they import model, diagnose and the
pipeline, never the TUI."""
