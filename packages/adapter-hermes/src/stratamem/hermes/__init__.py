"""Stratamem adapter for the hermes host (host ordering lives here)."""

__version__ = "0.1.0"
