"""Entry point of the dsh adapter in the ``stratamem`` plugin group."""

from __future__ import annotations
