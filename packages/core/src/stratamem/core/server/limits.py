"""Explicit wire limits, enforced before a request reaches the core (``invalid_argument``).

gRPC's own receive cap sits above ``MAX_REQUEST_BYTES`` so that an oversized request gets a typed
``invalid_argument`` instead of a bare transport error; only beyond ``TRANSPORT_MAX_BYTES`` does the
transport refuse it (``RESOURCE_EXHAUSTED``) without reading it.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from stratamem.contract.errors import ErrorCode, StratamemError

#: Largest request message the service accepts (serialized bytes).
MAX_REQUEST_BYTES = 4 * 1024 * 1024
#: The transport's hard receive / send cap (above MAX_REQUEST_BYTES, see module docstring).
TRANSPORT_MAX_BYTES = 16 * 1024 * 1024
#: Longest string field (characters) in any request.
MAX_STRING_CHARS = 1_000_000
#: Most elements in one repeated field / map of a request.
MAX_REPEATED = 10_000
#: Deepest message nesting in a request.
MAX_DEPTH = 32

#: Channel / server options that apply the transport caps.
TRANSPORT_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_receive_message_length", TRANSPORT_MAX_BYTES),
    ("grpc.max_send_message_length", TRANSPORT_MAX_BYTES),
]


def _bad(message: str, **details: Any) -> StratamemError:
    return StratamemError(ErrorCode.INVALID_ARGUMENT, message, details)


def check_request(msg: Message) -> None:
    """Raise ``invalid_argument`` when ``msg`` breaks a wire limit."""
    size = msg.ByteSize()
    if size > MAX_REQUEST_BYTES:
        raise _bad(
            f"request of {size} bytes exceeds the {MAX_REQUEST_BYTES}-byte limit",
            limit="max_request_bytes",
            size=size,
            max=MAX_REQUEST_BYTES,
        )
    _walk(msg, msg.DESCRIPTOR.name, 0)


def _check_value(fd: FieldDescriptor, value: Any, path: str, depth: int) -> None:
    if fd.type == FieldDescriptor.TYPE_MESSAGE:
        _walk(value, path, depth + 1)
    elif fd.type == FieldDescriptor.TYPE_STRING and len(value) > MAX_STRING_CHARS:
        raise _bad(
            f"field {path} is {len(value)} characters long; the limit is {MAX_STRING_CHARS}",
            field=path,
            limit="max_string_chars",
            max=MAX_STRING_CHARS,
        )


def _walk(msg: Message, path: str, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise _bad(f"message nesting deeper than {MAX_DEPTH}", field=path, limit="max_depth")
    for fd, value in msg.ListFields():
        sub = f"{path}.{fd.name}"
        if fd.is_repeated:
            if len(value) > MAX_REPEATED:
                raise _bad(
                    f"field {sub} has {len(value)} elements; the limit is {MAX_REPEATED}",
                    field=sub,
                    limit="max_repeated",
                    max=MAX_REPEATED,
                )
            if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
                value_fd = fd.message_type.fields_by_name["value"]
                for key, item in value.items():
                    if isinstance(key, str) and len(key) > MAX_STRING_CHARS:
                        raise _bad(f"a key of {sub} is too long", field=sub)
                    _check_value(value_fd, item, f"{sub}[]", depth)
            else:
                for item in value:
                    _check_value(fd, item, f"{sub}[]", depth)
        else:
            _check_value(fd, value, sub, depth)
