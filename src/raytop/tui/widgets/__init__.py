"""Widgets of the overview, each fed plain model objects ("attributes down")."""
