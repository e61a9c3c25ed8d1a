"""Dialect definitions of accy (installed as ``accy.dialects``)."""
