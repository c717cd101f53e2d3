"""Full-mode learning (memos-core §5.2–§5.9): reward back-propagation, L2 policies, L3 world models,
skills with the η lifecycle, decision repair and feedback, driven by the optional LLM.
"""

from stratamem.core.learning.learner import Learner
from stratamem.core.learning.mode import resolve_mode

#: the catalogue events only full-mode learning emits (each proved by a test_learning_* scenario)
LEARNING_EVENTS: frozenset[str] = frozenset(
    {
        "reward.computed",
        "trace.value_updated",
        "policy.trace_associated",
        "policy.induced",
        "policy.revised",
        "world_model.abstracted",
        "world_model.revised",
        "skill.crystallized",
        "skill.failed",
        "skill.eta_updated",
        "skill.archived",
        "repair.generated",
    }
)

__all__ = ["LEARNING_EVENTS", "Learner", "resolve_mode"]
