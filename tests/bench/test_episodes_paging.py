"""The episode-paging bench compares like with like: its previous-schema copy lost migration 5's
indexes (the old statement sorts), and both listings walk the same rows. No timing is asserted."""

from __future__ import annotations

from bench.episodes_paging import render, run_episodes_paging


async def test_both_listings_walk_the_same_rows_and_the_old_one_sorts() -> None:
    res = await run_episodes_paging([800], repeat=1)
    size = res["sizes"][0]
    assert size["full_walk"]["same_rows"] is True
    assert size["full_walk"]["rows"] == size["listed_namespace_episodes"] > 0
    assert "USE TEMP B-TREE FOR ORDER BY" in size["plan_old"]
    assert len(size["pages"]) == 7
    text = "\n".join(render(res))
    assert "full walk of the namespace" in text and "| 800 |" in text
