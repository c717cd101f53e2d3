import grpc
import pytest

from stratamem.contract.errors import ErrorCode, StratamemError, code_for_status, grpc_status_for


def test_every_code_maps_to_a_specific_grpc_status() -> None:
    for code in ErrorCode:
        assert grpc_status_for(code) is not grpc.StatusCode.UNKNOWN, code


def test_error_carries_its_stable_code_and_details() -> None:
    err = StratamemError("session_not_found", "no session s1", {"session_id": "s1"})
    assert err.code is ErrorCode.SESSION_NOT_FOUND
    assert err.to_dict() == {
        "code": "session_not_found",
        "message": "no session s1",
        "details": {"session_id": "s1"},
    }


def test_unknown_code_is_rejected() -> None:
    with pytest.raises(ValueError):
        StratamemError("no_such_code", "x")


def test_status_maps_back_to_a_code() -> None:
    assert code_for_status(grpc.StatusCode.NOT_FOUND) is ErrorCode.NOT_FOUND
