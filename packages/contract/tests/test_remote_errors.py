"""RemoteCore maps a failed call back to the same StratamemError: the stable code and details from the
trailers win; a bare status falls back to the documented status→code mapping."""

from __future__ import annotations

import grpc
from grpc.aio import AioRpcError, Metadata

from stratamem.contract.errors import ERROR_CODE_METADATA_KEY, ERROR_DETAILS_METADATA_KEY
from stratamem.contract.remote import error_from_rpc


def _err(
    status: grpc.StatusCode, trailers: tuple[tuple[str, str], ...], details: str
) -> AioRpcError:
    return AioRpcError(status, Metadata(), Metadata(*trailers), details)


def test_the_trailer_code_and_details_are_restored() -> None:
    exc = error_from_rpc(
        _err(
            grpc.StatusCode.NOT_FOUND,
            (
                (ERROR_CODE_METADATA_KEY, "session_not_found"),
                (ERROR_DETAILS_METADATA_KEY, '{"session_id": "s"}'),
            ),
            "session 's' not found",
        )
    )
    assert exc.code == "session_not_found"
    assert exc.details == {"session_id": "s"}
    assert exc.message == "session 's' not found"


def test_a_bare_status_or_garbage_trailers_fall_back_to_the_status_mapping() -> None:
    assert error_from_rpc(_err(grpc.StatusCode.UNAUTHENTICATED, (), "no")).code == "unauthenticated"
    assert error_from_rpc(_err(grpc.StatusCode.UNAVAILABLE, (), "down")).code == "transport_closed"
    odd = error_from_rpc(
        _err(
            grpc.StatusCode.DEADLINE_EXCEEDED,
            ((ERROR_CODE_METADATA_KEY, "not-a-code"), (ERROR_DETAILS_METADATA_KEY, "[1, 2")),
            "late",
        )
    )
    assert odd.code == "deadline_exceeded" and odd.details == {}
