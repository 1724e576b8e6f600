"""The Textual face of raytop: the only package that imports ``textual``.

Import ``raytop.tui.app`` lazily (from the CLI, after any ``TEXTUAL_*`` environment
variables are set): Textual reads its constants at import time.
"""
