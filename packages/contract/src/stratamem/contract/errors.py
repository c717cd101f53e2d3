"""Stable error codes and the one exception type every Stratamem surface raises.

Codes are snake_case strings; adding one is compatible, renaming or removing one is breaking.
The gRPC mapping lives here too so that server and client agree on it.
"""

from __future__ import annotations

import enum
from typing import Any

import grpc


class ErrorCode(enum.StrEnum):
    # generic
    INVALID_ARGUMENT = "invalid_argument"
    NOT_FOUND = "not_found"
    ALREADY_EXISTS = "already_exists"
    CONFLICT = "conflict"
    INTERNAL = "internal"
    UNSUPPORTED = "unsupported"
    # lifecycle
    NOT_INITIALIZED = "not_initialized"
    ALREADY_SHUT_DOWN = "already_shut_down"
    # config / filesystem
    CONFIG_INVALID = "config_invalid"
    CONFIG_MISSING = "config_missing"
    CONFIG_WRITE_FAILED = "config_write_failed"
    PATH_NOT_WRITABLE = "path_not_writable"
    # domain
    SESSION_NOT_FOUND = "session_not_found"
    EPISODE_NOT_FOUND = "episode_not_found"
    TRACE_NOT_FOUND = "trace_not_found"
    POLICY_NOT_FOUND = "policy_not_found"
    WORLD_MODEL_NOT_FOUND = "world_model_not_found"
    SKILL_NOT_FOUND = "skill_not_found"
    FEEDBACK_NOT_FOUND = "feedback_not_found"
    # llm / embedding
    LLM_UNAVAILABLE = "llm_unavailable"
    LLM_RATE_LIMITED = "llm_rate_limited"
    LLM_TIMEOUT = "llm_timeout"
    LLM_OUTPUT_MALFORMED = "llm_output_malformed"
    EMBEDDING_UNAVAILABLE = "embedding_unavailable"
    EMBEDDING_DIMENSION_MISMATCH = "embedding_dimension_mismatch"
    # algorithm
    INSUFFICIENT_EVIDENCE = "insufficient_evidence"
    VERIFICATION_FAILED = "verification_failed"
    # transport
    UNKNOWN_METHOD = "unknown_method"
    PROTOCOL_ERROR = "protocol_error"
    TRANSPORT_CLOSED = "transport_closed"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    CANCELLED = "cancelled"
    UNAUTHENTICATED = "unauthenticated"
    PERMISSION_DENIED = "permission_denied"
    HOME_LOCKED = "home_locked"
    # hub (reserved)
    HUB_AUTH_FAILED = "hub_auth_failed"
    HUB_UNREACHABLE = "hub_unreachable"
    # workspace memory contract
    READ_ONLY = "read_only"
    READ_FAILED = "read_failed"
    WRITE_FAILED = "write_failed"
    QUOTA_EXCEEDED = "quota_exceeded"
    BACKEND_UNAVAILABLE = "backend_unavailable"


class StratamemError(Exception):
    """A typed failure with a stable ``code``; ``details`` is JSON-serialisable context."""

    def __init__(
        self, code: ErrorCode | str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        self.code = ErrorCode(code)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        super().__init__(f"[{self.code.value}] {message}")

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code.value, "message": self.message, "details": self.details}


_GRPC_STATUS: dict[ErrorCode, grpc.StatusCode] = {
    ErrorCode.INVALID_ARGUMENT: grpc.StatusCode.INVALID_ARGUMENT,
    ErrorCode.CONFIG_INVALID: grpc.StatusCode.INVALID_ARGUMENT,
    ErrorCode.PROTOCOL_ERROR: grpc.StatusCode.INVALID_ARGUMENT,
    ErrorCode.EMBEDDING_DIMENSION_MISMATCH: grpc.StatusCode.FAILED_PRECONDITION,
    ErrorCode.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    ErrorCode.SESSION_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    ErrorCode.EPISODE_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    ErrorCode.TRACE_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    ErrorCode.POLICY_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    ErrorCode.WORLD_MODEL_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    ErrorCode.SKILL_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    ErrorCode.FEEDBACK_NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    ErrorCode.CONFIG_MISSING: grpc.StatusCode.NOT_FOUND,
    ErrorCode.ALREADY_EXISTS: grpc.StatusCode.ALREADY_EXISTS,
    ErrorCode.CONFLICT: grpc.StatusCode.ABORTED,
    ErrorCode.UNSUPPORTED: grpc.StatusCode.UNIMPLEMENTED,
    ErrorCode.UNKNOWN_METHOD: grpc.StatusCode.UNIMPLEMENTED,
    ErrorCode.NOT_INITIALIZED: grpc.StatusCode.FAILED_PRECONDITION,
    ErrorCode.ALREADY_SHUT_DOWN: grpc.StatusCode.UNAVAILABLE,
    ErrorCode.TRANSPORT_CLOSED: grpc.StatusCode.UNAVAILABLE,
    ErrorCode.BACKEND_UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    ErrorCode.LLM_UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    ErrorCode.EMBEDDING_UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    ErrorCode.HUB_UNREACHABLE: grpc.StatusCode.UNAVAILABLE,
    ErrorCode.HOME_LOCKED: grpc.StatusCode.FAILED_PRECONDITION,
    ErrorCode.LLM_RATE_LIMITED: grpc.StatusCode.RESOURCE_EXHAUSTED,
    ErrorCode.QUOTA_EXCEEDED: grpc.StatusCode.RESOURCE_EXHAUSTED,
    ErrorCode.LLM_TIMEOUT: grpc.StatusCode.DEADLINE_EXCEEDED,
    ErrorCode.DEADLINE_EXCEEDED: grpc.StatusCode.DEADLINE_EXCEEDED,
    ErrorCode.CANCELLED: grpc.StatusCode.CANCELLED,
    ErrorCode.UNAUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
    ErrorCode.HUB_AUTH_FAILED: grpc.StatusCode.UNAUTHENTICATED,
    ErrorCode.PERMISSION_DENIED: grpc.StatusCode.PERMISSION_DENIED,
    ErrorCode.READ_ONLY: grpc.StatusCode.PERMISSION_DENIED,
    ErrorCode.PATH_NOT_WRITABLE: grpc.StatusCode.PERMISSION_DENIED,
    ErrorCode.CONFIG_WRITE_FAILED: grpc.StatusCode.INTERNAL,
    ErrorCode.READ_FAILED: grpc.StatusCode.INTERNAL,
    ErrorCode.WRITE_FAILED: grpc.StatusCode.INTERNAL,
    ErrorCode.INTERNAL: grpc.StatusCode.INTERNAL,
    ErrorCode.LLM_OUTPUT_MALFORMED: grpc.StatusCode.INTERNAL,
    ErrorCode.INSUFFICIENT_EVIDENCE: grpc.StatusCode.FAILED_PRECONDITION,
    ErrorCode.VERIFICATION_FAILED: grpc.StatusCode.FAILED_PRECONDITION,
}

_FROM_STATUS: dict[grpc.StatusCode, ErrorCode] = {
    grpc.StatusCode.INVALID_ARGUMENT: ErrorCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND: ErrorCode.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS: ErrorCode.ALREADY_EXISTS,
    grpc.StatusCode.ABORTED: ErrorCode.CONFLICT,
    grpc.StatusCode.UNIMPLEMENTED: ErrorCode.UNSUPPORTED,
    grpc.StatusCode.UNAVAILABLE: ErrorCode.TRANSPORT_CLOSED,
    grpc.StatusCode.DEADLINE_EXCEEDED: ErrorCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED: ErrorCode.CANCELLED,
    grpc.StatusCode.UNAUTHENTICATED: ErrorCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED: ErrorCode.PERMISSION_DENIED,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ErrorCode.QUOTA_EXCEEDED,
    grpc.StatusCode.FAILED_PRECONDITION: ErrorCode.INVALID_ARGUMENT,
    grpc.StatusCode.OUT_OF_RANGE: ErrorCode.INVALID_ARGUMENT,
}


def grpc_status_for(code: ErrorCode | str) -> grpc.StatusCode:
    """The gRPC status code a server answers with for ``code``."""
    return _GRPC_STATUS.get(ErrorCode(code), grpc.StatusCode.UNKNOWN)


def code_for_status(status: grpc.StatusCode) -> ErrorCode:
    """Best stable code for a bare gRPC status (used when no ``stratamem-error-code`` trailer came)."""
    return _FROM_STATUS.get(status, ErrorCode.INTERNAL)


#: Trailing-metadata keys that carry the stable code and JSON details across the wire.
ERROR_CODE_METADATA_KEY = "stratamem-error-code"
ERROR_DETAILS_METADATA_KEY = "stratamem-error-details"
