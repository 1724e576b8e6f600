"""The pipeline, one floor above ``sources``: read through the sources, derive (the
run/trial join, rank states with the collector's thresholds, why-pending, the checkpoint
pipeline), diagnose, and hand every face the same ``Snapshot``. Faces only display it."""
