"""Round-trip properties of the codec: every DTO survives DTO → message → bytes → message → DTO."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any, Union

import pytest
from google.protobuf.message_factory import GetMessageClass
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratamem.contract import dtos
from stratamem.contract.codec import (
    DTO_TYPES,
    decode,
    decode_json,
    encode,
    encode_json,
    from_bytes,
    from_proto,
    message_class,
    to_bytes,
    to_proto,
)
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.v1 import host_llm_pb2, memory_pb2, types_pb2, workspace_pb2

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
FLOATS = st.floats(allow_nan=False)
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)  # beyond int64: JSON text keeps it
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def strategy_for(hint: Any) -> st.SearchStrategy[Any]:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return st.one_of(*(strategy_for(a) for a in typing.get_args(hint)))
    if hint is type(None):
        return st.none()
    if hint is Any:
        return JSON
    if hint is str:
        return TEXT
    if hint is bool:
        return st.booleans()
    if hint is int:
        return INT64
    if hint is float:
        return FLOATS
    if origin is tuple:
        item, _ = typing.get_args(hint)
        return st.lists(strategy_for(item), max_size=3).map(tuple)
    if origin is dict:
        _key, value = typing.get_args(hint)
        return st.dictionaries(TEXT, strategy_for(value), max_size=3)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return dto_strategy(hint)
    raise AssertionError(f"no strategy for {hint!r}")


def dto_strategy(cls: type[Any]) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls, vars(dtos))
    return st.builds(cls, **{f.name: strategy_for(hints[f.name]) for f in dataclasses.fields(cls)})


def all_message_classes() -> list[type[Any]]:
    out = []
    for module in (types_pb2, memory_pb2, workspace_pb2, host_llm_pb2):
        out.extend(getattr(module, name) for name in module.DESCRIPTOR.message_types_by_name)
    return out


F = Any  # FieldDescriptor


def _scalar_strategy(field: F) -> st.SearchStrategy[Any]:
    t = field.type
    if t == field.TYPE_STRING:
        return TEXT
    if t == field.TYPE_BOOL:
        return st.booleans()
    if t in (field.TYPE_INT64, field.TYPE_SINT64, field.TYPE_SFIXED64):
        return INT64
    if t in (field.TYPE_INT32, field.TYPE_SINT32, field.TYPE_SFIXED32, field.TYPE_ENUM):
        return st.integers(-(2**31), 2**31 - 1)
    if t == field.TYPE_DOUBLE:
        return FLOATS
    if t == field.TYPE_BYTES:
        return st.binary(max_size=8)
    raise AssertionError(f"no strategy for field {field.full_name}")


@st.composite
def random_message(draw: st.DrawFn, cls: type[Any], depth: int = 0) -> Any:
    """Any message of ``cls`` with random fields set, driven by its descriptor."""
    msg = cls()
    oneof_done: set[str] = set()
    for field in cls.DESCRIPTOR.fields:
        if depth > 3 or not draw(st.booleans()):
            continue
        oneof = field.containing_oneof
        if oneof is not None and not oneof.name.startswith("_"):
            if oneof.name in oneof_done:
                continue
            oneof_done.add(oneof.name)
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            key_f, value_f = field.message_type.fields
            entries = draw(
                st.dictionaries(_scalar_strategy(key_f), _scalar_strategy(value_f), max_size=3)
            )
            getattr(msg, field.name).update(entries)
        elif field.message_type is not None:
            sub_cls = GetMessageClass(field.message_type)
            if _repeated(field):
                subs = draw(st.lists(random_message(sub_cls, depth + 1), max_size=2))
                getattr(msg, field.name).extend(subs)
            else:
                getattr(msg, field.name).CopyFrom(draw(random_message(sub_cls, depth + 1)))
                getattr(msg, field.name).SetInParent()
        elif _repeated(field):
            getattr(msg, field.name).extend(draw(st.lists(_scalar_strategy(field), max_size=3)))
        else:
            setattr(msg, field.name, draw(_scalar_strategy(field)))
    return msg


def _repeated(field: F) -> bool:
    return bool(field.is_repeated)


DTO_IDS = [cls.__name__ for cls in DTO_TYPES]
MESSAGE_CLASSES = all_message_classes()


def test_every_dto_has_a_message_of_the_same_name() -> None:
    assert len(DTO_TYPES) >= 40
    for cls in DTO_TYPES:
        assert message_class(cls).DESCRIPTOR.full_name == f"stratamem.v1.{cls.__name__}"


@pytest.mark.parametrize("cls", DTO_TYPES, ids=DTO_IDS)
@SETTINGS
@given(data=st.data())
def test_dto_round_trips_through_message_bytes(cls: type[Any], data: st.DataObject) -> None:
    dto = data.draw(dto_strategy(cls))
    msg = to_proto(dto)
    wire = msg.SerializeToString()
    parsed = type(msg)()
    parsed.ParseFromString(wire)
    assert parsed == msg
    back = from_proto(parsed)
    assert type(back) is cls
    assert back == dto
    assert from_bytes(cls, to_bytes(dto)) == dto
    assert decode(encode(back, message_class(cls)), cls) == dto


@pytest.mark.parametrize("cls", MESSAGE_CLASSES, ids=[c.DESCRIPTOR.name for c in MESSAGE_CLASSES])
@SETTINGS
@given(data=st.data())
def test_every_message_round_trips_through_bytes(cls: type[Any], data: st.DataObject) -> None:
    msg = data.draw(random_message(cls))
    parsed = cls()
    parsed.ParseFromString(msg.SerializeToString())
    assert parsed == msg
    assert parsed.SerializeToString(deterministic=True) == msg.SerializeToString(deterministic=True)


@SETTINGS
@given(value=JSON)
def test_json_values_round_trip_exactly_including_big_ints_and_unicode(value: Any) -> None:
    assert decode_json(encode_json(value)) == value
    decoded = decode_json(encode_json(value))
    assert json.dumps(decoded, sort_keys=True) == json.dumps(value, sort_keys=True)


def test_optional_scalars_keep_none_apart_from_zero() -> None:
    none = dtos.Feedback(id="f", ts=0, episode_id=None, raw=None)
    empty = dtos.Feedback(id="f", ts=0, episode_id="", raw="")
    zero = dtos.SkillGetOptions(turn_id=0)
    assert from_proto(to_proto(none)) == none
    assert from_proto(to_proto(empty)) == empty
    assert to_proto(none) != to_proto(empty)
    assert from_proto(to_proto(zero)).turn_id == 0
    assert from_proto(to_proto(dtos.SkillGetOptions())).turn_id is None


def test_trace_patch_tags_distinguish_unchanged_from_cleared() -> None:
    unchanged = from_proto(to_proto(dtos.TracePatch(summary="s")))
    cleared = from_proto(to_proto(dtos.TracePatch(tags=())))
    assert unchanged.tags is None
    assert cleared.tags == ()


def test_defaulted_nested_messages_come_back_as_their_defaults() -> None:
    msg = types_pb2.Trace(id="t", episode_id="e", session_id="s", ts=1, turn_id=1)
    trace = from_proto(msg)
    assert trace.owner == dtos.Ownership()
    assert trace.share is None


def test_unicode_and_nested_json_survive_the_wire() -> None:
    call = dtos.ToolCall(name="grep", input={"q": "naïve 🙂", "n": [1, 2**70, {"x": None}]})
    assert from_bytes(dtos.ToolCall, to_bytes(call)) == call


def test_missing_required_nested_message_is_an_invalid_argument() -> None:
    with pytest.raises(StratamemError) as err:
        from_proto(types_pb2.RetrievalResult())
    assert err.value.code is ErrorCode.INVALID_ARGUMENT


@pytest.mark.parametrize(
    "dto",
    [
        dtos.TurnEndAck(trace_id="t", episode_id="e", journal_seq=2**63),
        dtos.ToolCall(name="x", input={"bad": float("nan")}),
        dtos.ToolCall(name="x", input={"bad": object()}),
        dtos.Namespace(agent_kind="\ud800"),
        dtos.TurnEndAck(trace_id=None, episode_id="e"),  # type: ignore[arg-type]
    ],
    ids=["int64-overflow", "nan-json", "unserialisable-json", "lone-surrogate", "none-scalar"],
)
def test_unencodable_values_raise_invalid_argument(dto: Any) -> None:
    with pytest.raises(StratamemError) as err:
        to_proto(dto)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT


def test_non_object_json_for_an_object_field_is_a_protocol_error() -> None:
    msg = types_pb2.Session(id="s", agent="a", meta_json="[1]")
    with pytest.raises(StratamemError) as err:
        from_proto(msg)
    assert err.value.code is ErrorCode.PROTOCOL_ERROR
    with pytest.raises(StratamemError) as err:
        from_proto(types_pb2.Session(id="s", agent="a", meta_json="{oops"))
    assert err.value.code is ErrorCode.PROTOCOL_ERROR


def test_malformed_bytes_are_a_protocol_error() -> None:
    with pytest.raises(StratamemError) as err:
        from_bytes(dtos.Trace, b"\xff\xff\xff")
    assert err.value.code is ErrorCode.PROTOCOL_ERROR


def test_request_messages_are_not_dtos() -> None:
    with pytest.raises(StratamemError):
        from_proto(memory_pb2.GetTraceRequest(trace_id="t"))
    with pytest.raises(StratamemError):
        to_proto(object())
    with pytest.raises(StratamemError):
        encode(
            dtos.Trace(id="t", episode_id="e", session_id="s", ts=0, turn_id=0), types_pb2.Policy
        )
