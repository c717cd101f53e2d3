"""Query profile: questions about the user's own attributes ("what's my favourite colour") recall differently."""

from __future__ import annotations

import re

_ZH_FIRST_PERSON = re.compile(r"我|本人|关于我")
_ZH_ATTRIBUTE = re.compile(
    r"喜欢|最爱|偏好|名字|生日|住在|住哪|职业|工作|宠物|颜色|爱好|年龄|家乡|口味|电话|邮箱|老婆|老公|孩子"
)
_ZH_PROCEDURAL = re.compile(r"(?:怎么|如何|怎样).{0,12}(?:修|解决|配置|安装|排查|部署|设置|运行)")
_EN_PERSONAL = re.compile(
    r"\b(?:what|who|where|when|which)\b.{0,60}\b(?:my|i|i'm|me)\b.{0,60}"
    r"\b(?:favou?rite|like|likes|love|loves|prefer|preference|name|birthday|born|live|lives|job|work"
    r"|pet|dog|cat|age|hometown|colou?r|wife|husband|kids?)\b"
    r"|\bmy\s+favou?rite\b",
    re.I,
)
_EN_PROCEDURAL = re.compile(
    r"\bhow\s+(?:do|can|to|should)\b.{0,40}\b(?:fix|solve|configure|install|debug|set\s+up|deploy|run)\b",
    re.I,
)


def query_profile(text: str) -> str:
    """``personal_fact`` for questions about the user themself, unless procedural; else ``default``."""
    if not text:
        return "default"
    if _ZH_PROCEDURAL.search(text) or _EN_PROCEDURAL.search(text):
        return "default"
    if _ZH_FIRST_PERSON.search(text) and _ZH_ATTRIBUTE.search(text):
        return "personal_fact"
    if _EN_PERSONAL.search(text):
        return "personal_fact"
    return "default"
