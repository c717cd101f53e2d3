"""How a typed ``StratamemError`` crosses the wire: gRPC status + the stable code and JSON details.

The code and details travel as trailing metadata (``stratamem-error-code`` / ``-details``) so that
``RemoteCore`` re-raises the very same error; any other exception becomes ``internal``.
"""

from __future__ import annotations

import json
from typing import Any

import grpc

from stratamem.contract.errors import (
    ERROR_CODE_METADATA_KEY,
    ERROR_DETAILS_METADATA_KEY,
    ErrorCode,
    StratamemError,
    grpc_status_for,
)

#: Upper bound for the JSON details put into trailing metadata (metadata is limited to ~8 KiB).
MAX_DETAILS_BYTES = 4096


def trailers_for(err: StratamemError) -> tuple[tuple[str, str], ...]:
    try:
        details = json.dumps(err.details, default=str, ensure_ascii=True)
    except (TypeError, ValueError):
        details = "{}"
    if len(details) > MAX_DETAILS_BYTES:
        details = json.dumps({"truncated": True})
    return ((ERROR_CODE_METADATA_KEY, err.code.value), (ERROR_DETAILS_METADATA_KEY, details))


def status_for(err: StratamemError) -> grpc.StatusCode:
    if isinstance(err, OutOfRange):
        return grpc.StatusCode.OUT_OF_RANGE
    return grpc_status_for(err.code)


def as_stratamem_error(exc: BaseException) -> StratamemError:
    if isinstance(exc, StratamemError):
        return exc
    return StratamemError(ErrorCode.INTERNAL, f"{type(exc).__name__}: {exc}"[:500])


async def abort(context: Any, err: StratamemError) -> None:
    """Answer the call with ``err`` (raises, as ``grpc.aio`` abort does)."""
    context.set_trailing_metadata(trailers_for(err))
    await context.abort(status_for(err), err.message[:2000])


class OutOfRange(StratamemError):
    """A resume point that no longer exists (stale seq, foreign epoch): gRPC ``OUT_OF_RANGE``."""

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(
            ErrorCode.INVALID_ARGUMENT, message, {"reason": "out_of_range", **(details or {})}
        )
