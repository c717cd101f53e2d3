"""Clamp long texts by keeping the head (55%) and the tail (45%) around a visible marker.

Defined beside the vector texts (``storage.vector_text``), which clamp the same way.
"""

from __future__ import annotations

from stratamem.core.storage.vector_text import MARKER, truncate_middle

__all__ = ["MARKER", "truncate_middle"]
