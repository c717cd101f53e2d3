"""Stratamem adapter for the openclaw host (host ordering lives here)."""

__version__ = "0.1.0"
