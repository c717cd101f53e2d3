"""What kind of message a user turn is (task, memory probe, chitchat, meta) and which tiers it needs (§5.1.2)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from stratamem.core.routing.llm_json import CompletionLLM, ask_json, clamp01

INTENT_KINDS = ("task", "memory_probe", "chitchat", "meta", "unknown")
STRONG = 0.85
TIERS: dict[str, tuple[int, ...]] = {
    "task": (1, 2, 3),
    "unknown": (1, 2, 3),
    "memory_probe": (1, 2),
    "chitchat": (),
    "meta": (),
}


@dataclass(frozen=True, slots=True)
class Intent:
    kind: str
    confidence: float
    tiers: tuple[int, ...]
    reason: str = ""


def _intent(kind: str, confidence: float, reason: str) -> Intent:
    return Intent(kind, confidence, TIERS[kind], reason)


_META = re.compile(r"^\s*/(?:memos|memory|memo)\b", re.I)
_GREETING = re.compile(
    r"^\s*(?:hi|hello|hey|yo|sup|thanks|thank\s+you|ok|okay|cool|nice"
    r"|你好|在吗|在不在|谢谢|谢啦|好的|收到|ok\s*的|好啊)"
    r"(?:\s*(?:there|again|so\s+much|a\s+lot|all|everyone|man|buddy))?"
    r"[\s!.,~?？！。，…:)(\-]*$",
    re.I,
)
_PAST = re.compile(
    r"\bwhat\s+did\s+(?:i|we)\s+(?:say|tell|mention|decide|talk|discuss|agree)|\bdo\s+you\s+remember\b"
    r"|\blast\s+time\b|\bearlier\s+we\b|\bpreviously\s+we\b|\bwe\s+talked\s+about\b"
    r"|我们.{0,12}(?:聊|说|讨论)过|你还记得|上次|之前.{0,12}(?:提|说|聊|讨论)|回忆|回顾|总结一下我们|帮我想",
    re.I,
)
_IMPERATIVE = re.compile(
    r"^\s*(?:(?:please|pls)\b|(?:write|build|create|fix|debug|run|install|refactor|add|remove|delete"
    r"|generate|set\s+up|analy[sz]e|review|test|deploy|implement|translate|explain)\b"
    r"|(?:帮我|请|麻烦|给我|替我)\s*(?:写|做|改|修|查|生成|创建|翻译|解释|看|分析|部署|安装|运行|删|加))",
    re.I,
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_ASCII_WORD = re.compile(r"[A-Za-z0-9_']+")


def _word_count(text: str) -> int:
    return len(_CJK.findall(text)) + len(_ASCII_WORD.findall(text))


def heuristic_intent(text: str) -> Intent | None:
    """The first matching rule (memos-core order), or ``None``."""
    if _META.search(text):
        return _intent("meta", 0.98, "slash_command")
    if len(text.strip()) <= 48 and _GREETING.search(text):
        return _intent("chitchat", 0.9, "greeting")
    if _PAST.search(text):
        return _intent("memory_probe", 0.88, "past_reference")
    if _IMPERATIVE.search(text):
        return _intent("task", 0.75, "imperative")
    if _word_count(text) >= 40:
        return _intent("task", 0.6, "long_message")
    return None


def classify_intent(text: str) -> Intent:
    """Deterministic intent: the first rule, else ``unknown`` 0.4 (which retrieves all tiers)."""
    if not text or not text.strip():
        return _intent("chitchat", 0.9, "empty")
    return heuristic_intent(text) or _intent("unknown", 0.4, "no_rule")


_PROMPT = (
    "Classify the user's message. Answer only JSON "
    '{{"intent": "task|memory_probe|chitchat|meta", "confidence": 0..1}}.\nMESSAGE: {text}\n'
)


async def classify_intent_async(
    text: str, *, llm: CompletionLLM | None = None, timeout_s: float = 6.0
) -> Intent:
    """Heuristics; below 0.85 ask the LLM if there is one, else keep the weak heuristic or ``unknown``."""
    base = classify_intent(text)
    if base.confidence >= STRONG or llm is None:
        return base
    verdict = await ask_json(llm, _PROMPT.format(text=text[:3000]), timeout_s=timeout_s)
    kind = str((verdict or {}).get("intent", ""))
    if verdict is None or kind not in TIERS:
        return base
    return _intent(kind, clamp01(verdict.get("confidence")), "llm")
