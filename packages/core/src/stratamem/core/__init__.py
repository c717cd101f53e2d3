"""Stratamem core: the agent-agnostic memory engine (never imports an adapter)."""

__version__ = "0.1.0"
