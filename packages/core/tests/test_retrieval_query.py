"""Query compilation: per-reason text, truncation, stop-word-free terms, identifiers, tags, fragments."""

from __future__ import annotations

from stratamem.contract.dtos import RetrievalQuery
from stratamem.core.retrieval import compile_query
from stratamem.core.retrieval.text import bm25_scores, content_terms, exact_identifiers


def q(text: str, **kw: object) -> RetrievalQuery:
    return RetrievalQuery(agent="a", query=text, **kw)  # type: ignore[arg-type]


def test_question_words_and_function_words_are_not_terms() -> None:
    cq = compile_query(q("What did I tell you about the deadline of the Falcon project?"))
    assert list(cq.terms) == ["deadline", "falcon", "project"]
    assert cq.fts_text == "deadline falcon project"


def test_cjk_bigrams_skip_noise_characters() -> None:
    assert content_terms("你还记得我的生日吗") == ["生日"]


def test_long_queries_are_cut_head_and_tail_but_terms_come_from_the_whole_text() -> None:
    text = "alpha " * 400 + "omegaword"
    cq = compile_query(q(text))
    assert len(cq.text) <= 1500 and cq.text.startswith("alpha") and cq.text.endswith("omegaword")
    assert "omegaword" in cq.terms


def test_tool_driven_filters_join_the_query_text() -> None:
    cq = compile_query(q("rotate keys", filters={"query": "rotate keys", "service": "vault"}))
    assert "vault" in cq.text and "vault" in cq.terms


def test_identifiers_tags_and_error_fragments_are_extracted() -> None:
    cq = compile_query(
        q("docker run of job_2024_11_30_abcdef failed: PermissionError: [Errno 13] denied")
    )
    assert cq.identifiers == ("job_2024_11_30_abcdef",)
    assert "docker" in cq.tags and "error" in cq.tags
    assert any(f.startswith("PermissionError") for f in cq.error_fragments)
    assert exact_identifiers("plainwordwithoutdigits") == []


def test_words_joined_by_hyphens_are_prose_not_identifiers() -> None:
    text = (
        "transgender-specific events, state-of-the-art tools, req-7f3a9c2e11ab and svc_payment-prod"
    )
    assert exact_identifiers(text) == ["req-7f3a9c2e11ab", "svc_payment-prod"]


def test_bm25_weights_rare_terms_over_common_ones() -> None:
    docs = ["deploy the app", "deploy the db", "deploy falcon", "unrelated"]
    scores = bm25_scores(["deploy", "falcon"], docs)
    assert scores.index(max(scores)) == 2 and scores[3] == 0.0
