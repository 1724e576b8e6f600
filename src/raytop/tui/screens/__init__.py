"""raytop's screens: the overview and the help modal."""
