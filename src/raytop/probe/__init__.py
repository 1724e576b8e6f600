"""Code that runs inside Ray processes (the Tune driver, Train workers).

``raytop.probe.ReportProbe`` and ``raytop.probe.RunProbe`` are the names to give
``RAY_TRAIN_CALLBACKS``; they are imported lazily so that importing this package stays
cheap where the probes are not used.
"""


def __getattr__(name: str):
    if name == "ReportProbe":
        # heavy: the probes import Ray; importing the package must stay cheap
        from raytop.probe.report_probe import ReportProbe

        return ReportProbe
    if name == "RunProbe":
        # heavy: the probes import Ray; importing the package must stay cheap
        from raytop.probe.run_probe import RunProbe

        return RunProbe
    raise AttributeError(name)
