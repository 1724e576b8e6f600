"""raytop: a terminal supervisor for Ray Train and Ray Tune runs."""

__version__ = "0.1.0"
