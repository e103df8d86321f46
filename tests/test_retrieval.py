"""Retrieval evaluation on the hand-made store of memory_fixtures: hit@k, failures, files."""

import dataclasses
import json
import math

import pytest
from PIL import Image

from guimem.smg.memories import RenderStyle, build_memory
from guimem.smg.retrieval import (
    by_true_type,
    embed_queries,
    evaluate_memory,
    image_name,
    item_types,
    read_results,
    step_queries,
    summarize,
    write_results,
)
from memory_fixtures import TAP_DISPLAY, TAP_SETTINGS, embedders, episode, store  # noqa: F401 (fixture)


@pytest.fixture()
def setup(store):  # noqa: F811
    root, eps, subs = store
    img, txt = embedders(root)
    test = [episode("t0", "turn on dark mode", [("home", TAP_SETTINGS, "open_settings"),
                                                ("list", TAP_DISPLAY, "open_display"),
                                                ("detail", TAP_DISPLAY, "toggle_dark")], "detail")]
    queries = step_queries(test)
    vectors = embed_queries(img, root, queries)
    return root, eps, subs, img, txt, queries, vectors


def test_step_queries_carry_true_types(setup):
    *_, queries, vectors = setup
    assert [(q.step, q.true_type, q.screenshot) for q in queries] == [
        (0, "open_settings", "screens/home.png"), (1, "open_display", "screens/list.png"),
        (2, "toggle_dark", "screens/detail.png")]
    assert set(vectors) == {"screens/home.png", "screens/list.png", "screens/detail.png"}


def test_hits_failures_and_tokens(setup):
    root, eps, subs, img, txt, queries, vectors = setup
    train = {e.id: e for e in eps}
    smg = build_memory("smg", eps, subs, root, img, txt, tau=0.99, theta=0.9, style=RenderStyle(max_items=1))
    results = evaluate_memory(smg, queries, vectors, train, ks=(1, 2))
    # home: one deduplicated edge (open_settings); list: the success then the failure; detail: no out-edge
    assert [r.hits for r in results] == [{1: True, 2: True}, {1: True, 2: True}, {1: False, 2: False}]
    assert [len(r.retrieved.items) for r in results] == [1, 2, 0]
    assert [r.failures_shown for r in results] == [0, 0, 0]
    assert results[2].text == "Past experience: none."
    item = results[1].retrieved.items[1]
    assert item.success == "no" and item_types(item, train) == {"open_display"}
    s = summarize(results)
    assert s["hit@1"] == pytest.approx(2 / 3) and s["hit@shown"] == pytest.approx(2 / 3)
    assert s["items_retrieved"] == 1.0 and s["empty_share"] == pytest.approx(1 / 3)
    assert s["tokens_mean"] == pytest.approx(sum(r.tokens for r in results) / 3) and s["tokens_mean"] > 5
    assert by_true_type(results, 1) == {"open_display": (1, 1.0), "open_settings": (1, 1.0), "toggle_dark": (1, 0.0)}
    flat = build_memory("flat", eps, subs, root, img, txt, k=3, style=RenderStyle(max_items=3))
    f = summarize(evaluate_memory(flat, queries, vectors, train, ks=(1, 3)))
    assert f["items_retrieved"] == 3.0 and f["failure_share_shown"] == pytest.approx(2 / 9)  # list, and list again for detail


def test_shown_items_from_another_phone_are_counted(setup):
    root, eps, subs, img, txt, queries, vectors = setup
    train = {e.id: e for e in eps}
    flat = build_memory("flat", eps, subs, root, img, txt, k=3, style=RenderStyle(max_items=3))
    assert {e.phone for e in eps} == {q.phone for q in queries} == {None}  # no variant named: one phone
    assert summarize(evaluate_memory(flat, queries, vectors, train))["other_phone_share_shown"] == 0.0
    elsewhere = {i: dataclasses.replace(e, provenance={**e.provenance, "variant": 1}) for i, e in train.items()}
    on_phone_0 = [dataclasses.replace(q, phone=0) for q in queries]
    results = evaluate_memory(flat, on_phone_0, vectors, elsewhere)
    assert [r.other_phone_shown for r in results] == [len(r.shown) for r in results] and results[0].shown
    assert summarize(results)["other_phone_share_shown"] == 1.0


def test_steps_without_a_true_type_give_no_hit_rate(setup):
    """Recorded runs without subgoal labels: nothing to score a hit against, so the rates are NaN
    (null in the reports), not 0; what does not need the truth is still measured."""
    root, eps, subs, img, txt, queries, vectors = setup
    train = {e.id: e for e in eps}
    smg = build_memory("smg", eps, subs, root, img, txt, tau=0.99, theta=0.9, style=RenderStyle(max_items=1))
    unlabelled = [dataclasses.replace(q, true_type=None) for q in queries]
    s = summarize(evaluate_memory(smg, unlabelled, vectors, train, ks=(1, 2)))
    assert math.isnan(s["hit@1"]) and math.isnan(s["hit@2"]) and math.isnan(s["hit@shown"])
    assert s["items_retrieved"] == 1.0 and s["steps"] == len(queries)


def test_written_results_are_complete_and_deduplicated(setup, tmp_path):
    root, eps, subs, img, txt, queries, vectors = setup
    train = {e.id: e for e in eps}
    m = build_memory("action_graph", eps, subs, root, img, txt, tau=0.99, style=RenderStyle(max_items=2))
    results = evaluate_memory(m, queries + queries, vectors, train)  # every step twice
    out = write_results(tmp_path / "out", m, results)
    records = read_results(out / "steps.jsonl")
    assert len(records) == 6 and records[1]["shown"] == list(results[1].shown)
    assert records[1]["image"] == f"images/{image_name(results[1].shown)}"
    assert len(list((out / "images").iterdir())) == 3  # three distinct shown sets
    assert all(Image.open(out / r["image"]).size == m.style.image_size for r in records)
    first = (out / "steps.jsonl").read_bytes()
    write_results(tmp_path / "out", m, evaluate_memory(m, queries + queries, vectors, train))
    assert (out / "steps.jsonl").read_bytes() == first  # deterministic, rewritten whole
    assert json.loads(first.splitlines()[0])["episode_id"] == "t0"
