"""Pure functions over a snapshot that say what is wrong, in words (``model.Finding``).

Imports only ``raytop.model``: fast to test, reusable by every face.
"""

from raytop.diagnose.findings import diagnose

__all__ = ["diagnose"]
