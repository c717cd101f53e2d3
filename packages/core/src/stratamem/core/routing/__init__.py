"""Topic routing: pure heuristics that decide how a user turn relates to the open topic and what to recall.

Stable interface (called by the session pipeline / ``LocalCore``):

* ``classify_relation(text, prev_user, prev_assistant, gap_ms) -> Relation(kind, confidence, reason)``
  with ``kind`` in ``revision | follow_up | new_task | unknown`` (memos-core §5.1.1);
  ``await classify_relation_async(..., llm=None)`` adds the optional LLM tie-break.
* ``classify_intent(text) -> Intent(kind, confidence, tiers)`` with ``kind`` in
  ``task | memory_probe | chitchat | meta | unknown`` (§5.1.2); ``classify_intent_async(text, llm=None)``.
* ``schedule_injection(intent, relation, profile="default") -> Injection(tiers, skip, reason)`` (§5.7.1).
* ``query_profile(text) -> "personal_fact" | "default"`` (§5.7.1).

``llm`` is any object with ``async complete(prompt: str, **kw) -> str``; ``None`` means heuristics only.
"""

from stratamem.core.routing.intent import Intent, classify_intent, classify_intent_async
from stratamem.core.routing.profile import query_profile
from stratamem.core.routing.relation import Relation, classify_relation, classify_relation_async
from stratamem.core.routing.scheduler import Injection, schedule_injection

__all__ = [
    "Injection",
    "Intent",
    "Relation",
    "classify_intent",
    "classify_intent_async",
    "classify_relation",
    "classify_relation_async",
    "query_profile",
    "schedule_injection",
]
