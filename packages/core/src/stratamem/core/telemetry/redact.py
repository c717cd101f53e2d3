"""Redaction of secrets before anything is written: secret-looking keys at any depth, bearer tokens
and key-like strings inside text. Runs as a structlog processor on every log line."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "[REDACTED]"

#: Key words that mark a value as secret (matched per word of the key, any case, any nesting).
DEFAULT_SECRET_WORDS: frozenset[str] = frozenset(
    {
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "authorization",
        "cookie",
        "credential",
        "credentials",
    }
)

_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{4,}")
_SK = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}")
_QUERY = re.compile(
    r"(?i)([?&;\s](?:api[_-]?key|access[_-]?token|token|secret|password)=)[^&\s\"']+"
)
#: every pattern above needs one of these words: a string without any is returned as is (one
#: search instead of four substitutions; nearly every logged value is such a string)
_MAYBE = re.compile(r"(?i)bearer|basic|[spr]k-|api[_-]?key|token|secret|password")
_INLINE = re.compile(
    r"(?i)(\b(?:api[_-]?key|access[_-]?token|secret|password)\s*[:=]\s*[\"']?)[^\s\"',}&;]{3,}"
)


def _normal(word: str) -> str:
    return re.sub(r"[^a-z0-9]", "", word.lower())


class Redactor:
    """``redact(value)`` returns a copy with secret values masked; the input is never changed."""

    def __init__(self, extra_keys: Iterable[str] = ()) -> None:
        self.words = set(DEFAULT_SECRET_WORDS)
        self.exact: set[str] = set()
        #: key -> verdict; log records reuse a small set of keys, so each is analysed once
        self._verdicts: dict[str, bool] = {}
        self.add_keys(extra_keys)

    def add_keys(self, keys: Iterable[str]) -> None:
        self._verdicts = {}
        for k in keys:
            n = _normal(str(k))
            if n:
                self.exact.add(n)
                if "_" not in str(k) and "-" not in str(k):
                    self.words.add(n)

    def is_secret_key(self, key: object) -> bool:
        text = str(key)
        got = self._verdicts.get(text)
        if got is None:
            got = self._verdicts[text] = self._secret(text)
            if len(self._verdicts) > 4096:
                self._verdicts = {}
        return got

    def _secret(self, text: str) -> bool:
        whole = _normal(text)
        if whole in self.exact or whole in self.words or whole == "tokens":
            return True
        words = [_normal(w) for w in _WORDS.findall(text)]
        joined = ["".join(words[i : i + 2]) for i in range(len(words) - 1)]
        return any(w in self.words for w in (*words, *joined))

    def redact_text(self, text: str) -> str:
        if not _MAYBE.search(text):
            return text
        text = _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)
        text = _SK.sub(lambda m: f"{m.group(1)}-{MASK}", text)
        text = _QUERY.sub(lambda m: m.group(1) + MASK, text)
        return _INLINE.sub(lambda m: m.group(1) + MASK, text)

    def redact(self, value: Any, _depth: int = 0) -> Any:
        if _depth > 32:
            return value
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, Mapping):
            return {
                k: (
                    MASK
                    if self.is_secret_key(k) and v not in (None, "")
                    else self.redact(v, _depth + 1)
                )
                for k, v in value.items()
            }
        if isinstance(value, (list, tuple, set, frozenset)):
            items = [self.redact(v, _depth + 1) for v in value]
            return tuple(items) if isinstance(value, tuple) else items
        return value

    def __call__(self, logger: Any, method_name: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = self.redact(event_dict)
        return out


def redact(value: Any, extra_keys: Iterable[str] = ()) -> Any:
    """One-off redaction with the default words plus ``extra_keys``."""
    return Redactor(extra_keys).redact(value)
