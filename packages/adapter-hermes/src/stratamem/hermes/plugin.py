"""Entry point of the hermes adapter in the ``stratamem`` plugin group."""

from __future__ import annotations
