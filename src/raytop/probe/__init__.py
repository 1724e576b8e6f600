"""Code that runs inside Ray processes (the Tune driver, Train workers).

``raytop.probe.ReportProbe`` is the name to give ``RAY_TRAIN_CALLBACKS``; it is imported
lazily so that importing this package stays cheap where the probe is not used.
"""


def __getattr__(name: str):
    if name == "ReportProbe":
        from raytop.probe.report_probe import ReportProbe

        return ReportProbe
    raise AttributeError(name)
