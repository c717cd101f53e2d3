"""Stratamem's wire contract: DTOs, errors, events and the ``MemoryCore`` protocol.

Depends on grpcio and protobuf only; generated code lives in ``stratamem.v1`` and
``stratamem.hosts.<host>.v1``.
"""

from stratamem.contract.dtos import *  # noqa: F403
from stratamem.contract.dtos import __all__ as _dto_names
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.events import CATALOGUE, EVENT_TYPES, EventType
from stratamem.contract.protocol import MemoryCore

__version__ = "0.1.0"

__all__ = [
    *_dto_names,
    "CATALOGUE",
    "EVENT_TYPES",
    "ErrorCode",
    "EventType",
    "MemoryCore",
    "StratamemError",
    "__version__",
]
