"""Analyses and transforms of accy (installed as ``accy.passes``)."""
