"""Lossless conversion between the DTOs and their ``stratamem.v1`` messages, dispatched by type.

Each DTO maps to the message of the same name, field by field; JSON-valued fields travel as
JSON text in the message's ``<name>_json`` field. The mapping is derived once per class from the
type hints and the descriptors, on the class's first use: a thin client's fresh process builds
only the classes it sends and receives (a ``stratamem search``: 9 of 40; all of them at import
took ~12-16 ms of its ~200, bench/results/startup-session19.md). A DTO field without a wire field
(or vice versa) fails there; ``test_codec`` builds every class.
"""

from __future__ import annotations

import dataclasses
import json
import keyword
import types
import typing
from typing import Any, TypeVar, Union

from google.protobuf.message import DecodeError, Message

from stratamem.contract import dtos
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.v1 import host_llm_pb2, types_pb2

__all__ = [
    "DTO_TYPES",
    "decode",
    "decode_json",
    "encode",
    "encode_json",
    "from_bytes",
    "from_proto",
    "message_class",
    "to_bytes",
    "to_proto",
]

T = TypeVar("T")
M = TypeVar("M", bound=Message)

#: Every DTO class that has a wire message (all dataclasses of :mod:`stratamem.contract.dtos`).
DTO_TYPES: tuple[type[Any], ...] = tuple(
    obj
    for name in dtos.__all__
    if isinstance(obj := getattr(dtos, name), type) and dataclasses.is_dataclass(obj)
)

_MESSAGES: dict[str, type[Message]] = {}
for _module in (types_pb2, host_llm_pb2):
    for _name in _module.DESCRIPTOR.message_types_by_name:
        _MESSAGES[_name] = getattr(_module, _name)


#: ``json.dumps`` with these arguments builds a new encoder per call; one is enough
_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def encode_json(value: Any) -> str:
    """Canonical JSON text for the wire (standard JSON: no NaN/Infinity, unicode kept)."""
    try:
        return _JSON.encode(value)
    except (TypeError, ValueError) as exc:
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT, f"value is not JSON-serialisable: {exc}"
        ) from exc


def decode_json(text: str) -> Any:
    """Parse JSON text from the wire; bad JSON is a ``protocol_error``."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise StratamemError(ErrorCode.PROTOCOL_ERROR, f"invalid JSON on the wire: {exc}") from exc


# -- plans: how each DTO field maps onto its message field -----------------------------------

_SCALAR = "scalar"  # str/int/float/bool, optional ones use proto3 presence
_MESSAGE = "message"  # a nested DTO (``X`` or ``X | None``)
_REPEATED = "repeated"  # tuple[scalar, ...]
_REPEATED_MESSAGE = "repeated_message"  # tuple[DTO, ...]
_MAP = "map"  # dict[str, scalar]
_STRING_LIST = "string_list"  # tuple[str, ...] | None, carried by a StringList message
_JSON_OBJECT = "json_object"  # dict[str, JsonValue] in ``<name>_json`` ("" = {})
_JSON_ANY = "json_any"  # JsonValue in ``<name>_json`` ("" or unset = None)


@dataclasses.dataclass(frozen=True, slots=True)
class _FieldPlan:
    name: str
    wire: str
    kind: str
    optional: bool
    has_default: bool
    item: type[Any] | None = None  # nested DTO class for message kinds


def _strip_optional(hint: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1 and len(args) != len(typing.get_args(hint)):
            return args[0], True
    return hint, False


def _plan_field(cls: type[Any], f: dataclasses.Field[Any], hint: Any, desc: Any) -> _FieldPlan:
    inner, optional = _strip_optional(hint)
    has_default = (
        f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    )
    where = f"{cls.__name__}.{f.name}"
    wire = desc.fields_by_name.get(f.name)
    if wire is None:
        json_field = desc.fields_by_name.get(f"{f.name}_json")
        if json_field is None:
            raise TypeError(f"{where} has no field in message {desc.full_name}")
        kind = _JSON_OBJECT if typing.get_origin(inner) is dict else _JSON_ANY
        return _FieldPlan(f.name, json_field.name, kind, optional, has_default)
    if wire.message_type is not None and wire.message_type.GetOptions().map_entry:
        return _FieldPlan(f.name, wire.name, _MAP, optional, has_default)
    origin = typing.get_origin(inner)
    if origin is tuple:
        (item, _ellipsis) = typing.get_args(inner)
        if wire.message_type is not None and wire.message_type.name == "StringList":
            return _FieldPlan(f.name, wire.name, _STRING_LIST, optional, has_default)
        if isinstance(item, type) and dataclasses.is_dataclass(item):
            return _FieldPlan(f.name, wire.name, _REPEATED_MESSAGE, optional, has_default, item)
        return _FieldPlan(f.name, wire.name, _REPEATED, optional, has_default)
    if dataclasses.is_dataclass(inner):
        assert isinstance(inner, type)
        return _FieldPlan(f.name, wire.name, _MESSAGE, optional, has_default, inner)
    if optional and not wire.has_presence:
        raise TypeError(f"{where} is optional but {desc.full_name}.{wire.name} has no presence")
    return _FieldPlan(f.name, wire.name, _SCALAR, optional, has_default)


def _plan(cls: type[Any]) -> tuple[_FieldPlan, ...]:
    msg_cls = _MESSAGES.get(cls.__name__)
    if msg_cls is None:
        raise TypeError(f"DTO {cls.__name__} has no stratamem.v1 message")
    desc = msg_cls.DESCRIPTOR
    hints = typing.get_type_hints(cls, vars(dtos))
    plans = tuple(_plan_field(cls, f, hints[f.name], desc) for f in dataclasses.fields(cls))
    unmapped = set(desc.fields_by_name) - {p.wire for p in plans}
    if unmapped:
        raise TypeError(f"message {desc.full_name} fields {sorted(unmapped)} have no DTO field")
    return plans


class _PerClass(dict[type[Any], Any]):
    """Something derived from a DTO class (its plan, encoder, decoder), made on first lookup."""

    def __init__(self, make: Any) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, cls: type[Any]) -> Any:
        if cls not in _DTO_SET:
            raise KeyError(cls)
        value = self._make(cls)  # two threads may both make it: the same value, either kept
        self[cls] = value
        return value


_DTO_SET = frozenset(DTO_TYPES)
_PLANS: dict[type[Any], tuple[_FieldPlan, ...]] = _PerClass(_plan)
_DTO_BY_MESSAGE: dict[str, type[Any]] = {cls.__name__: cls for cls in DTO_TYPES}


# -- encoding -----------------------------------------------------------------------------------


def message_class(dto_type: type[Any]) -> type[Message]:
    """The generated message class for a DTO class."""
    if dto_type not in _DTO_SET:
        raise StratamemError(ErrorCode.INVALID_ARGUMENT, f"{dto_type!r} is not a Stratamem DTO")
    return _MESSAGES[dto_type.__name__]


def _fill(msg: Any, dto: Any) -> None:
    _ENCODERS[type(dto)](msg, dto)


def encode(dto: Any, msg_type: type[M]) -> M:
    """Typed :func:`to_proto`: encode ``dto`` and check it gives a ``msg_type`` message."""
    msg = to_proto(dto)
    if not isinstance(msg, msg_type):
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT,
            f"{type(dto).__name__} does not encode to {msg_type.__name__}",
        )
    return msg


def to_proto(dto: Any) -> Message:
    """The ``stratamem.v1`` message for a DTO; bad values raise ``invalid_argument``."""
    msg_cls = message_class(type(dto))
    msg = msg_cls()
    try:
        _fill(msg, dto)
    except StratamemError:
        raise
    except (TypeError, ValueError, AttributeError) as exc:
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT,
            f"cannot encode {type(dto).__name__}: {exc}",
            {"dto": type(dto).__name__},
        ) from exc
    return msg


# -- decoding -----------------------------------------------------------------------------------


def _read(msg: Any, cls: type[Any]) -> Any:
    return _DECODERS[cls](msg)


def _required(cls: type[Any], name: str, wire: str) -> StratamemError:
    return StratamemError(
        ErrorCode.INVALID_ARGUMENT, f"{cls.__name__}.{name} is required", {"field": wire}
    )


def _json_object(cls: type[Any], wire: str, text: str) -> dict[str, Any]:
    value = decode_json(text) if text else {}
    if not isinstance(value, dict):
        raise StratamemError(
            ErrorCode.PROTOCOL_ERROR,
            f"{cls.__name__}.{wire} must be a JSON object",
            {"field": wire},
        )
    return value


# -- per-class straight-line code, compiled once from the plans --------------------------------
#
# Every call on the wire encodes and decodes through these (a search reply is a dozen nested
# messages): one generated function per DTO class instead of a loop dispatching on each field's
# kind per value, the same mapping, about three times faster (bench/results/grpc-overhead-
# session4.md). The plans stay the single description of the mapping.


def _attr(obj: str, name: str) -> str:
    ok = name.isidentifier() and not keyword.iskeyword(name)
    return f"{obj}.{name}" if ok else f"getattr({obj}, {name!r})"


def _set(obj: str, name: str, value: str) -> str:
    ok = name.isidentifier() and not keyword.iskeyword(name)
    return f"{obj}.{name} = {value}" if ok else f"setattr({obj}, {name!r}, {value})"


def _encoder_source(cls: type[Any]) -> list[str]:
    lines = [f"def enc_{cls.__name__}(msg, dto):"]
    for p in _PLANS[cls]:
        v, w = _attr("dto", p.name), _attr("msg", p.wire)
        item = f"ENC[{p.item.__name__}]" if p.item is not None else ""
        if p.kind == _SCALAR and not p.optional:
            lines.append(f"    {_set('msg', p.wire, v)}")
            continue
        lines.append(f"    v = {v}")
        if p.kind == _SCALAR:
            lines += ["    if v is not None:", f"        {_set('msg', p.wire, 'v')}"]
        elif p.kind == _MESSAGE:  # present even when every field is at its default
            lines += ["    if v is not None:", f"        sub = {w}", "        sub.SetInParent()"]
            lines.append(f"        {item}(sub, v)")
        elif p.kind == _REPEATED:
            lines.append(f"    {w}.extend(v)")
        elif p.kind == _REPEATED_MESSAGE:
            lines += [f"    target = {w}", "    for x in v:", f"        {item}(target.add(), x)"]
        elif p.kind == _MAP:
            lines.append(f"    {w}.update(v)")
        elif p.kind == _STRING_LIST:
            lines += ["    if v is not None:", f"        sub = {w}", "        sub.SetInParent()"]
            lines.append("        sub.values.extend(v)")
        elif p.kind == _JSON_OBJECT:
            lines += ["    if v:", f"        {_set('msg', p.wire, 'encode_json(dict(v))')}"]
        else:  # any-valued JSON: None travels as unset / ""
            lines += ["    if v is not None:", f"        {_set('msg', p.wire, 'encode_json(v)')}"]
    return [*lines, "    return None"]


def _decoder_source(cls: type[Any]) -> list[str]:
    name = cls.__name__
    lines = [f"def dec_{name}(msg):", "    kw = {}"]
    for p in _PLANS[cls]:
        w, key = _attr("msg", p.wire), repr(p.name)
        item = f"DEC[{p.item.__name__}]" if p.item is not None else ""
        if p.kind == _SCALAR and p.optional:
            lines.append(f"    kw[{key}] = {w} if msg.HasField({p.wire!r}) else None")
        elif p.kind == _SCALAR:
            lines.append(f"    kw[{key}] = {w}")
        elif p.kind == _MESSAGE:
            lines += [f"    if msg.HasField({p.wire!r}):", f"        kw[{key}] = {item}({w})"]
            if p.optional:
                lines += ["    else:", f"        kw[{key}] = None"]
            elif not p.has_default:
                lines += ["    else:", f"        raise required({name}, {key}, {p.wire!r})"]
        elif p.kind == _REPEATED:
            lines.append(f"    kw[{key}] = tuple({w})")
        elif p.kind == _REPEATED_MESSAGE:
            lines.append(f"    kw[{key}] = tuple([{item}(x) for x in {w}])")
        elif p.kind == _MAP:
            lines.append(f"    kw[{key}] = dict({w})")
        elif p.kind == _STRING_LIST:
            lines.append(f"    kw[{key}] = tuple({w}.values) if msg.HasField({p.wire!r}) else None")
        elif p.kind == _JSON_OBJECT:
            lines.append(f"    kw[{key}] = json_object({name}, {p.wire!r}, {w})")
        else:
            lines += [f"    text = {w}", f"    kw[{key}] = decode_json(text) if text else None"]
    return [*lines, f"    return {name}(**kw)"]


def _compiled(prefix: str, source: Any) -> Any:
    def make(cls: type[Any]) -> Any:
        src = "\n".join(source(cls)) + "\n"
        exec(compile(src, f"<stratamem.contract.codec {cls.__name__}>", "exec"), _SCOPE)
        return _SCOPE[f"{prefix}_{cls.__name__}"]

    return make


_ENCODERS: dict[type[Any], Any] = _PerClass(_compiled("enc", _encoder_source))
_DECODERS: dict[type[Any], Any] = _PerClass(_compiled("dec", _decoder_source))
_SCOPE: dict[str, Any] = {
    **{cls.__name__: cls for cls in DTO_TYPES},
    "ENC": _ENCODERS,
    "DEC": _DECODERS,
    "encode_json": encode_json,
    "decode_json": decode_json,
    "json_object": _json_object,
    "required": _required,
}


def from_proto(msg: Message) -> Any:
    """The DTO for a ``stratamem.v1`` message (by message type)."""
    cls = _DTO_BY_MESSAGE.get(msg.DESCRIPTOR.name)
    if cls is None or msg.DESCRIPTOR.full_name != f"stratamem.v1.{cls.__name__}":
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT, f"{msg.DESCRIPTOR.full_name} has no Stratamem DTO"
        )
    return _read(msg, cls)


def decode(msg: Message, cls: type[T]) -> T:
    """Typed :func:`from_proto`: decode ``msg`` and check it is a ``cls``."""
    value = from_proto(msg)
    if not isinstance(value, cls):
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT,
            f"{msg.DESCRIPTOR.full_name} does not decode to {cls.__name__}",
        )
    return value


def to_bytes(dto: Any) -> bytes:
    """Serialized message bytes of a DTO."""
    data: bytes = to_proto(dto).SerializeToString()
    return data


def from_bytes(cls: type[T], data: bytes) -> T:
    """Parse bytes of ``cls``'s message into a DTO; malformed bytes are a ``protocol_error``."""
    msg = message_class(cls)()
    try:
        msg.ParseFromString(data)
    except DecodeError as exc:
        raise StratamemError(ErrorCode.PROTOCOL_ERROR, f"malformed {cls.__name__}: {exc}") from exc
    return decode(msg, cls)
