"""Typed failures of the workspace memory contract: the eight upper-case backend codes.

``MemoryBackendError`` subclasses ``StratamemError`` so every surface reports a stable snake_case code.
"""

from __future__ import annotations

import enum
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError


class MemoryBackendErrorCode(enum.StrEnum):
    NOT_FOUND = "NOT_FOUND"
    READ_ONLY = "READ_ONLY"
    READ_FAILED = "READ_FAILED"
    WRITE_FAILED = "WRITE_FAILED"
    UNSUPPORTED = "UNSUPPORTED"
    CONFLICT = "CONFLICT"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
    BACKEND_UNAVAILABLE = "BACKEND_UNAVAILABLE"


#: contract code -> stable Stratamem code
STABLE_CODES: dict[MemoryBackendErrorCode, ErrorCode] = {
    MemoryBackendErrorCode.NOT_FOUND: ErrorCode.NOT_FOUND,
    MemoryBackendErrorCode.READ_ONLY: ErrorCode.READ_ONLY,
    MemoryBackendErrorCode.READ_FAILED: ErrorCode.READ_FAILED,
    MemoryBackendErrorCode.WRITE_FAILED: ErrorCode.WRITE_FAILED,
    MemoryBackendErrorCode.UNSUPPORTED: ErrorCode.UNSUPPORTED,
    MemoryBackendErrorCode.CONFLICT: ErrorCode.CONFLICT,
    MemoryBackendErrorCode.QUOTA_EXCEEDED: ErrorCode.QUOTA_EXCEEDED,
    MemoryBackendErrorCode.BACKEND_UNAVAILABLE: ErrorCode.BACKEND_UNAVAILABLE,
}


class MemoryBackendError(StratamemError):
    """A backend failure: ``backend_code`` is the contract's code, ``code`` the stable one."""

    def __init__(
        self,
        code: MemoryBackendErrorCode | str,
        backend: str,
        message: str = "",
        details: dict[str, Any] | None = None,
    ) -> None:
        self.backend_code = MemoryBackendErrorCode(code)
        self.backend = backend
        merged = {"backend": backend, "backend_code": self.backend_code.value, **(details or {})}
        super().__init__(
            STABLE_CODES[self.backend_code],
            message or f"memory backend {backend!r}: {self.backend_code.value}",
            merged,
        )


def invalid(message: str, **details: Any) -> StratamemError:
    """Bad input from a caller: ``invalid_argument`` with JSON-able details."""
    return StratamemError(ErrorCode.INVALID_ARGUMENT, message, details)
