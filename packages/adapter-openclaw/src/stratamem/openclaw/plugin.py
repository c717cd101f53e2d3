"""Entry point of the openclaw adapter in the ``stratamem`` plugin group."""

from __future__ import annotations
