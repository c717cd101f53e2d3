"""Stratamem adapter for the dsh host (host ordering lives here)."""

__version__ = "0.1.0"
