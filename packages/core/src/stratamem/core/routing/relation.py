"""How a new user message relates to the open topic: revision, follow-up or a new task (memos-core §5.1.1).

Rules r1–r7 are pure regex/overlap heuristics; the optional LLM only breaks ties below 0.85.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from stratamem.core.routing.llm_json import CompletionLLM, ask_json, clamp01

RELATION_KINDS = ("revision", "follow_up", "new_task", "unknown")
STRONG = 0.85
LLM_NEW_TASK_MIN = 0.8
MAX_GAP_MS = 2 * 3_600_000
IDLE_GAP_MS = 30 * 60_000


@dataclass(frozen=True, slots=True)
class Relation:
    kind: str
    confidence: float
    reason: str


_R1 = re.compile(
    r"^\s*(?:不对|错了|重做|改一下|再来一次|重新|而不是"
    r"|no,?\s+that'?s\s+(?:wrong|not\s+right)|wrong\b|incorrect\b"
    r"|not\s+(?:what|quite|right|correct)\b|redo\b|try\s+again\b)",
    re.I,
)
_R3 = re.compile(r"^\s*[那这它其还哪啥]")
_R4 = re.compile(
    r"再帮?我|下一个|另一个类似|\b(?:next|then|also|another\s+(?:similar|one)|more\s+of\s+(?:that|this))\b",
    re.I,
)
_R5 = re.compile(
    r"换个.{0,6}?(?:话题|问题|任务|主题|场景)|换下一?个|^\s*下一?个.{0,12}任务|现在(?:帮我)?处理另一个|先放下|忘掉之前"
    r"|\bnew\s+(?:task|question|topic|subject)\b|\bforget\s+(?:that|about\s+it)\b"
    r"|\bchange\s+(?:of\s+|the\s+)?(?:topic|subject|task)\b|\bmoving\s+on\b|\bnext\s+(?:task|topic|question)\b",
    re.I,
)
_WORD = re.compile(r"[^\W_]{3,}", re.U)
#: tie priority among equally confident rules (higher wins): r5 > r1 > r2 > r3 > the rest
_TIE = {"r5": 4, "r1": 3, "r2": 2, "r3": 1}


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _quotes_previous(text: str, prev_assistant: str) -> bool:
    """r2: the message repeats an 8-word window (>24 chars) of the previous assistant answer."""
    prev = _words(prev_assistant)
    if len(prev_assistant) < 20 or len(prev) < 8:
        return False
    hay = " " + " ".join(_words(text)) + " "
    for i in range(len(prev) - 7):
        window = " ".join(prev[i : i + 8])
        if len(window) > 24 and f" {window} " in hay:
            return True
    return False


def heuristic_relations(
    text: str,
    prev_user: str,
    prev_assistant: str,
    gap_ms: int | None,
    prev_tags: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
) -> list[Relation]:
    """Every rule that fired, strongest first (ties by rule priority)."""
    fired: list[tuple[Relation, str]] = []
    if _R1.search(text):
        fired.append((Relation("revision", 0.85, "r1_negation"), "r1"))
    if _quotes_previous(text, prev_assistant):
        fired.append((Relation("revision", 0.75, "r2_quotes_previous"), "r2"))
    if len(text.strip()) <= 60 and _R3.search(text):
        fired.append((Relation("follow_up", 0.85, "r3_short_deictic"), "r3"))
    if _R4.search(text):
        fired.append((Relation("follow_up", 0.8, "r4_follow_phrase"), "r4"))
    if _R5.search(text):
        fired.append((Relation("new_task", 0.85, "r5_new_topic_phrase"), "r5"))
    if gap_ms is not None and gap_ms > IDLE_GAP_MS:
        fired.append((Relation("new_task", 0.6, "r6_idle_gap"), "r6"))
    if prev_tags is not None and tags is not None:
        a, b = set(prev_tags), set(tags)
        if a and b and not (a & b):
            fired.append((Relation("new_task", 0.55, "r7_no_tag_overlap"), "r7"))
    fired.sort(key=lambda rr: (-rr[0].confidence, -_TIE.get(rr[1], 0)))
    return [r for r, _ in fired]


def _pre(text: str, prev_user: str, gap_ms: int | None, max_gap_ms: int) -> Relation | None:
    if not text or not text.strip():
        return Relation("unknown", 0.0, "empty")
    if not prev_user or not prev_user.strip():
        return Relation("new_task", 0.75, "bootstrap")
    if gap_ms is not None and max_gap_ms > 0 and gap_ms > max_gap_ms:
        return Relation("new_task", 0.9, "gap_exceeded")
    return None


def classify_relation(
    text: str,
    prev_user: str,
    prev_assistant: str,
    gap_ms: int | None,
    *,
    max_gap_ms: int = MAX_GAP_MS,
    prev_tags: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
) -> Relation:
    """Deterministic relation (no LLM): strongest rule, else ``follow_up`` 0.5."""
    early = _pre(text, prev_user, gap_ms, max_gap_ms)
    if early is not None:
        return early
    fired = heuristic_relations(text, prev_user, prev_assistant, gap_ms, prev_tags, tags)
    if fired and fired[0].confidence >= STRONG:
        return fired[0]
    if fired:
        best = fired[0]
        return Relation(best.kind, best.confidence, f"{best.reason}+llm_skipped")
    return Relation("follow_up", 0.5, "default_follow_up")


_PROMPT = (
    "Classify how the NEW user message relates to the previous exchange.\n"
    'Answer only JSON {{"relation": "revision|follow_up|new_task", "confidence": 0..1}}.\n'
    "PREVIOUS USER: {prev_user}\nPREVIOUS ASSISTANT: {prev_assistant}\nNEW USER: {text}\n"
)
_ARBITRATE = (
    "Is the NEW message really an unrelated new task, or does it continue the same topic?\n"
    'When in doubt it continues. Answer only JSON {{"relation": "new_task|follow_up"}}.\n'
    "PREVIOUS USER: {prev_user}\nNEW USER: {text}\n"
)


async def classify_relation_async(
    text: str,
    prev_user: str,
    prev_assistant: str,
    gap_ms: int | None,
    *,
    llm: CompletionLLM | None = None,
    timeout_s: float = 6.0,
    max_gap_ms: int = MAX_GAP_MS,
) -> Relation:
    """Heuristics first; below 0.85 the LLM decides (biased to follow_up), falling back to heuristics."""
    early = _pre(text, prev_user, gap_ms, max_gap_ms)
    if early is not None:
        return early
    fired = heuristic_relations(text, prev_user, prev_assistant, gap_ms)
    if (fired and fired[0].confidence >= STRONG) or llm is None:
        return classify_relation(text, prev_user, prev_assistant, gap_ms, max_gap_ms=max_gap_ms)
    fmt = {
        "text": text[:2000],
        "prev_user": prev_user[:1000],
        "prev_assistant": prev_assistant[:2000],
    }
    verdict = await ask_json(llm, _PROMPT.format(**fmt), timeout_s=timeout_s)
    kind = str((verdict or {}).get("relation", ""))
    if verdict is None or kind not in RELATION_KINDS:
        return classify_relation(text, prev_user, prev_assistant, gap_ms, max_gap_ms=max_gap_ms)
    conf = clamp01(verdict.get("confidence"))
    if kind == "new_task" and conf < LLM_NEW_TASK_MIN:
        arb = await ask_json(llm, _ARBITRATE.format(**fmt), timeout_s=timeout_s)
        if arb is None:
            return Relation("follow_up", 0.5, "llm_arbitration_failed")
        if arb.get("relation") != "new_task":
            return Relation("follow_up", 0.55, "llm_arbitrated_follow_up")
    return Relation(kind, conf, "llm")
