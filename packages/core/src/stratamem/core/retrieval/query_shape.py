"""Query shape: whether an English question asks for a set of things rather than one fact.

A question that asks for several things ("What books has Ann read?", "How many times did Bob
move?", "Did Ann and Bob ever meet?") has its answers spread over a conversation's sessions; a
pointed one ("What did Bob research?", "When did Ann go to Rome?") has one answer, often beside
its question's match in the same session. The final pick spreads over sessions
(``retrieval.session_diversity``, retrieval/rank.py) only for the first kind when
``retrieval.session_diversity_gate`` is ``"set_query"``: spreading every query cost pointed
questions the answer turn next to their match (bench/results/locomo.md, session 10). The same
holds for covering the query's aspects (``retrieval.aspect_coverage``, retrieval/coverage.py,
gate ``retrieval.aspect_coverage_gate``): a set's members each hold a different aspect, a single
fact is best served by the best match, whatever aspects its neighbours in the list add.

The rules are English grammar, fixed before any measurement (bench/results/locomo.md, session 11),
not read off a benchmark's questions. A query matching none of them (any other language
included) counts as pointed:

1. counting and frequency: "how many", "how often", "how frequently", "number of";
2. a quantifier over a set or over time: "all" (not "at all", "after all", "all right"),
   "every", "everything", "everyone", "each" (not "each other"), "both", "ever", "several",
   "various";
3. a plural wh-phrase: "what"/"which" then a noun phrase of at most four words holding a plural
   common noun, then an auxiliary verb ("What books has…", "Which cities did…", "What kinds of
   music does…"); or plural agreement straight after the wh-word ("What are…", "Who were…";
   not with "you", which takes "are" in the singular too);
4. named entities joined by "and" ("Did Ann and Bob…", "Ann's and Bob's"): each one's memories
   are wanted;
5. a request for a list or for more: "list"/"name"/"enumerate" opening the query, "what else",
   "who else", "where else", "which else".

A plural is told by its form: a lower-case word (a proper name is capitalised) of at least four
letters ending in "s" but not in "ss", "us", "is" or "'s" and not on a short list of such words that
are not plurals ("news", "series", "always", ...), or an irregular plural ("people", "children").
"""

from __future__ import annotations

import re

#: ``retrieval.session_diversity_gate`` / ``aspect_coverage_gate`` values: spread only set-asking
#: queries, or every query
GATE_SET_QUERY = "set_query"
GATE_ALWAYS = "always"
GATES = (GATE_SET_QUERY, GATE_ALWAYS)

_COUNT = re.compile(r"\bhow\s+(?:many|often|frequently)\b|\bnumbers?\s+of\b", re.I)
_QUANTIFIER = re.compile(
    r"\b(?:every|everything|everyone|everybody|both|ever|several|various)\b"
    r"|(?<!\bat\s)(?<!\bafter\s)\ball\b(?!\s+right\b)"
    r"|\beach\b(?!\s+other\b)",
    re.I,
)
#: two capitalised words of two letters or more ("I" is no entity) joined by "and"
_NAMES_AND = re.compile(r"\b[A-Z][a-z]+(?:['’]s)?,?\s+and\s+[A-Z][a-z]+\b")
_LIST = re.compile(r"^\W*(?:list|name|enumerate)\b|\b(?:what|who|where|which)\s+else\b", re.I)
_PLURAL_AGREEMENT = re.compile(r"\b(?:what|which|who)\s+(?:are|were)\b(?!\s+you\b)", re.I)

_TOKEN = re.compile(r"[A-Za-z][A-Za-z'’-]*|[^\sA-Za-z]")
_WH = frozenset({"what", "which"})
_AUX_TEXT = """am is are was were be been has have had do does did can could will would shall should
    may might must"""
_AUX = frozenset(_AUX_TEXT.split())
#: closed-class words that end a wh-phrase's noun phrase ("of" joins one: "kinds of music")
_CLOSED_TEXT = """a an the this that these those my your his her its our their me him us them it he she
    we they you i who whom whose what which when where why how if whether because and or but nor so
    to in on at by for from with about into onto over under after before during since until than as
    not no"""
_CLOSED = frozenset(_CLOSED_TEXT.split())
_NOT_PLURAL_TEXT = """this thus news series species always perhaps sometimes whereas unless across
    besides towards afterwards nowadays ourselves yourselves themselves mathematics physics politics
    economics christmas lens"""
_NOT_PLURAL = frozenset(_NOT_PLURAL_TEXT.split())
_IRREGULAR_TEXT = "people children men women feet teeth mice geese"
_IRREGULAR_PLURAL = frozenset(_IRREGULAR_TEXT.split())
#: the longest noun phrase between a wh-word and its auxiliary that rule 3 reads
MAX_PHRASE = 4


def plural_noun(word: str) -> bool:
    """Whether ``word`` reads as a plural common noun by its form (see the module's note)."""
    if not word or not word[0].islower():
        return False
    w = word.lower().replace("’", "'")
    if w in _IRREGULAR_PLURAL:
        return True
    if len(w) < 4 or not w.endswith("s") or w in _NOT_PLURAL:
        return False
    return not w.endswith(("ss", "us", "is", "'s"))


def _plural_wh_phrase(text: str) -> bool:
    """Rule 3's first half: "what"/"which", ≤ ``MAX_PHRASE`` noun-phrase words with a plural,
    then an auxiliary."""
    toks = _TOKEN.findall(text)
    for i, tok in enumerate(toks):
        if tok.lower() not in _WH:
            continue
        phrase: list[str] = []
        for nxt in toks[i + 1 : i + 2 + MAX_PHRASE]:
            low = nxt.lower()
            if low in _AUX:
                if phrase and any(plural_noun(w) for w in phrase):
                    return True
                break
            if (
                not nxt[0].isalpha()
                or (low in _CLOSED and low != "of")
                or len(phrase) == MAX_PHRASE
            ):
                break
            phrase.append(nxt)
    return False


def asks_for_set(text: str) -> bool:
    """Whether ``text`` asks for several things, occasions or people (rules 1-5 of the module's
    note) rather than one fact."""
    if not text:
        return False
    return bool(
        _COUNT.search(text)
        or _QUANTIFIER.search(text)
        or _PLURAL_AGREEMENT.search(text)
        or _NAMES_AND.search(text)
        or _LIST.search(text)
        or _plural_wh_phrase(text)
    )


def gated(weight: float, gate: str, set_query: bool) -> float:
    """The weight a final-pick term (session penalty, aspect coverage) takes for this query:
    ``weight`` for every query (gate ``"always"``) or only for one that asks for a set (gate
    ``"set_query"``; ``set_query``: ``asks_for_set`` of its text, read once per retrieval)."""
    if weight <= 0:
        return 0.0
    if gate == GATE_ALWAYS or set_query:
        return weight
    return 0.0
