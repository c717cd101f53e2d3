"""Deterministic classifier of user feedback text (memos-core §5.9): explicit or implicit, no LLM.

Each new user turn is classified as possible implicit feedback on the previous turn of its session.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_I = re.I


@dataclass(frozen=True, slots=True)
class FeedbackClass:
    shape: str  # preference|correction|constraint|negative|positive|confusion|instruction|unknown
    confidence: float
    prefer: str | None = None
    avoid: str | None = None

    @property
    def polarity(self) -> str:
        if self.shape == "positive":
            return "positive"
        if self.shape in ("negative", "correction"):
            return "negative"
        return "neutral"


_STRONG_PREF = [
    re.compile(
        r"\b(?:use|try)\s+(?P<p>.{2,80}?)\s+instead\s+of\s+(?P<a>.{2,80}?)(?:[.!?\n]|$)", _I
    ),
    re.compile(r"\bprefer\s+(?P<p>.{2,80}?)\s+(?:over|to)\s+(?P<a>.{2,80}?)(?:[.!?\n]|$)", _I),
    re.compile(
        r"\b(?:don'?t|do not|never)\s+(?:use\s+)?(?P<a>.{2,80}?)[,;]\s*use\s+(?P<p>.{2,80}?)(?:[.!?\n]|$)",
        _I,
    ),
    re.compile(r"用(?P<p>.{1,40}?)(?:代替|替代|而不是)(?P<a>.{1,40}?)(?:[。！？\n]|$)"),
    re.compile(r"别(?P<a>.{1,40}?)[，,]\s*用(?P<p>.{1,40}?)(?:[。！？\n]|$)"),
]
_SOFT_PREF = re.compile(
    r"\b(?:prefer|instead|should use|next time use|switch to)\b|下次用|改用|而不是", _I
)
_CORRECTION_STRONG = re.compile(
    r"^\s*(?:no[,.!]|nope|wrong|that'?s (?:wrong|incorrect|not right)|incorrect)|不对|错了", _I
)
_CORRECTION_SOFT = re.compile(
    r"\b(?:actually|not quite|you missed|should have|should be)\b|其实|应该", _I
)
_CONSTRAINT = re.compile(
    r"\b(?:always|never|must(?: not)?|make sure|don'?t ever|only ever)\b|必须|不要|不能|一定要", _I
)
_NEGATIVE = re.compile(
    r"\b(?:didn'?t work|doesn'?t work|still (?:fails|failing|broken)|broken|useless|bad answer|"
    r"not helpful|failed|wrong again|that broke)\b|没用|不行|失败",
    _I,
)
_POSITIVE = re.compile(
    r"\b(?:thanks?|thank you|great|perfect|works(?: now)?|worked|awesome|excellent|nice|"
    r"exactly|well done|good job|that fixed it|solved)\b|谢谢|好的|完美|可以了|成功",
    _I,
)
_CONFUSION = re.compile(
    r"\b(?:i don'?t understand|confus\w*|what do you mean|unclear|huh)\b|不明白|什么意思", _I
)
_INSTRUCTION = re.compile(
    r"^\s*(?:please\s+)?(?:now|next|then|also|add|remove|change|make|run|write)\b", _I
)


def _clip(s: str) -> str:
    return " ".join(s.split()).strip(" \"'`")[:200]


def classify_feedback(text: str) -> FeedbackClass:
    """The first matching shape in the reference's order; empty text is unknown with confidence 0."""
    t = (text or "").strip()
    if not t:
        return FeedbackClass("unknown", 0.0)
    for pat in _STRONG_PREF:
        m = pat.search(t)
        if m:
            return FeedbackClass("preference", 0.8, _clip(m.group("p")), _clip(m.group("a")))
    if _CORRECTION_STRONG.search(t):
        return FeedbackClass("correction", 0.75)
    if _SOFT_PREF.search(t):
        return FeedbackClass("preference", 0.55)
    if _NEGATIVE.search(t):
        return FeedbackClass("negative", 0.75)
    if _CONSTRAINT.search(t):
        return FeedbackClass("constraint", 0.7)
    if _CORRECTION_SOFT.search(t):
        return FeedbackClass("correction", 0.5)
    if _CONFUSION.search(t):
        return FeedbackClass("confusion", 0.7)
    if _POSITIVE.search(t):
        return FeedbackClass("positive", 0.75)
    if _INSTRUCTION.search(t):
        return FeedbackClass("instruction", 0.55)
    return FeedbackClass("unknown", 0.3)


def implicit_feedback(text: str, min_confidence: float = 0.7) -> FeedbackClass | None:
    """A new user turn read as feedback on the previous turn: only clear positive/negative shapes."""
    fc = classify_feedback(text)
    if fc.polarity == "neutral" or fc.confidence < min_confidence:
        return None
    return fc
