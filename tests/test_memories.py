"""The four memories behind one interface, on a hand-made three-screen store."""

import io
from dataclasses import replace

import numpy as np
import pytest

from guimem.core.data import Action, DataError, Episode, Step, Subgoal
from guimem.models.embedding import HashingTextEmbedder, PixelEmbedder
from guimem.smg.memories import (
    MEMORY_KINDS,
    RenderStyle,
    Retrieved,
    build_memory,
    clone,
    count_tokens,
    EMPTY,
    MEMORY_CROPS,
    image_layout,
    load_memory,
    make_memory,
    memory_size,
    rebuild_like,
    render_text,
    step_units,
    task_unit,
)
from memory_fixtures import (  # noqa: F401 (store: a fixture)
    DISPLAY,
    SCREENS,
    TAP_GEAR,
    TAP_SETTINGS,
    as_episode_store,
    draw_screen,
    embedders,
    episode,
    obs,
    store,
    subgoal,
)


def build(name, store, **params):
    root, eps, subs = store
    img, txt = embedders(root)
    return build_memory(name, eps, subs, root, img, txt, tau=0.99, theta=0.9, **params)


# ----------------------------------------------------------------------------- each memory
def test_smg_merges_dedups_and_keeps_failures(store):
    root, _, _ = store
    m = build("smg", store)
    assert (m.graph.n_nodes, m.graph.n_edges) == (3, 3)  # home->list once; list->detail ok; list->list failed
    r = m.retrieve(draw_screen("list"), "turn on dark mode")
    assert r.nodes[0][1] == pytest.approx(1.0)
    assert [(i.id, i.success) for i in r.items] == [("smg:e0#1", "yes"), ("smg:e1#1", "no")]
    first = r.items[0]
    assert first.kind == "subgoal" and first.phrases == ('tap "Display" (list_item)',)
    assert first.targets == (DISPLAY,) and first.anchor == "screens/list.png" and first.node == r.nodes[0][0]
    assert r.items[1].phrases == ("tap an unlabeled icon at top right",)


def test_smg_ranks_edges_by_goal_or_by_id(store):
    root, eps, subs = store
    img, txt = embedders(root)
    extra = episode("e3", "search for milk", [("home", TAP_SETTINGS, "open_settings"),
                                              ("list", TAP_GEAR, "open_display")], "detail")
    subs3 = subs + [subgoal(extra, 0, 0, 0, "open the settings", "yes"), subgoal(extra, 1, 1, 1, "open the gear", "yes")]
    by_goal = build_memory("smg", eps + [extra], subs3, root, img, txt, tau=0.99, theta=0.9)
    by_id = build_memory("smg", eps + [extra], subs3, root, img, txt, tau=0.99, theta=0.9, rank_by="id")
    q = draw_screen("list")
    assert by_id.retrieve(q, "search for milk").ids == ("smg:e0#1", "smg:e1#1", "smg:e3#1")
    assert by_goal.retrieve(q, "search for milk").ids[0] == "smg:e3#1"
    assert by_goal.retrieve(q, "turn on dark mode").ids[:2] == ("smg:e0#1", "smg:e1#1")


def test_flat_keeps_every_subgoal(store):
    m = build("flat", store, k=3)
    r = m.retrieve(draw_screen("home"), "turn on dark mode")
    assert r.ids == ("flat:e0#0", "flat:e1#0", "flat:e2#0")  # three copies: no merging, no dedup
    assert r.nodes == () and all(i.score == pytest.approx(1.0) for i in r.items)
    assert len(m.retrieve(draw_screen("home"), "x", k=10).items) == 6


def test_action_graph_holds_steps(store):
    root, eps, subs = store
    units = step_units(eps[1], [s for s in subs if s.episode_id == "e1"])
    assert [(u.first_step, u.success, u.text) for u in units] == [
        (0, "yes", 'tap "Settings" (icon)'), (1, "no", "tap an unlabeled icon at top right")]
    m = build("action_graph", store)
    r = m.retrieve(draw_screen("list"), "turn on dark mode")
    assert [(i.kind, i.first_step, i.success) for i in r.items] == [("step", 1, "yes"), ("step", 1, "no")]


def test_task_graph_holds_whole_episodes(store):
    root, eps, subs = store
    unit = task_unit(eps[1], [s for s in subs if s.episode_id == "e1"])
    assert (unit.first_step, unit.last_step, unit.success, unit.text) == (0, 1, "no", "turn on dark mode")
    m = build("task_graph", store)
    r = m.retrieve(draw_screen("home"), "search for milk", k=3)
    assert r.items[0].id == "task_graph:e2#0" and r.items[0].kind == "task"
    assert len(r.items[0].phrases) == 2 and {i.success for i in r.items} == {"yes", "no"}
    # mid-episode: the screen matches no first screen, the goal still finds the trajectories
    r = m.retrieve(draw_screen("detail"), "turn on dark mode", k=2)
    assert r.ids == ("task_graph:e0#0", "task_graph:e1#0") and r.items[0].goal_score == pytest.approx(1.0)
    only_screen = build("task_graph", store, alpha=1.0)
    assert only_screen.retrieve(draw_screen("home"), "search for milk", k=3).ids[0] == "task_graph:e0#0"


def test_reingest_adds_nothing(store):
    root, eps, subs = store
    for name in ("smg", "flat", "action_graph", "task_graph"):
        m = build(name, store)
        before = render_text(m.retrieve(draw_screen("list"), "g", k=5), RenderStyle(max_items=20))
        m.add(eps, subs, root)
        assert render_text(m.retrieve(draw_screen("list"), "g", k=5), RenderStyle(max_items=20)) == before


def test_unknown_names_and_stray_subgoals(store):
    root, eps, subs = store
    img, txt = embedders(root)
    with pytest.raises(DataError, match="memory"):
        make_memory("episodic", img, txt)
    with pytest.raises(DataError, match="not given"):
        build_memory("smg", eps[:1], subs, root, img, txt)


def files_of(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("name", ["smg", "flat", "action_graph", "task_graph"])
def test_a_refused_add_leaves_the_memory_as_it_was(store, name):
    root, eps, subs = store
    m = build(name, store)
    m.save(root / "before")
    fine = episode("e3", "search for milk", [("home", TAP_SETTINGS, "open_settings")], "list")
    bad = episode("e4", "search for milk", [("home", TAP_SETTINGS, "open_settings")], "list")
    bad = replace(bad, steps=(replace(bad.steps[0], observation=replace(bad.steps[0].observation,
                                                                          screenshot="screens/gone.png")),))
    with pytest.raises(DataError) as err:
        m.add([fine, bad], [subgoal(fine, 0, 0, 0, "open the settings", "yes"),
                            subgoal(bad, 0, 0, 0, "open the settings", "yes")], root)
    assert err.value.field == "screenshot" and err.value.path == str(root / "screens" / "gone.png")
    m.save(root / "after")
    assert files_of(root / "before") == files_of(root / "after")
    with pytest.raises(DataError) as err:
        m.add(eps, subs, root / "elsewhere")  # one memory reads one store
    assert err.value.field == "store_root" and m.store_root == root


def test_k_is_a_count_and_none_means_the_memory_default(store):
    root, _, _ = store
    img, txt = embedders(root)
    assert make_memory("flat", img, txt).k == 3 and make_memory("smg", img, txt, k=None).k == 1
    m = build("smg", store)
    assert m.retrieve(draw_screen("list"), "g", k=None) == m.retrieve(draw_screen("list"), "g", k=1)
    for k in (0, -1, 1.5, True, float("nan")):
        with pytest.raises(DataError) as err:
            m.retrieve(draw_screen("list"), "g", k=k)
        assert err.value.field == "k"


# ----------------------------------------------------------------------------- rendering
def test_render_text_is_compact_and_deterministic(store):
    m = build("smg", store, style=RenderStyle(max_items=1))
    r = m.retrieve(draw_screen("list"), "turn on dark mode")
    text = m.render_text(r)
    assert text == ("Past experience (1 of 2):\n1. succeeded | task: turn on dark mode | subgoal: open display | "
                    'did: tap "Display" (list_item) | result: went from list to detail')
    assert text == build("smg", store, style=RenderStyle(max_items=1)).render_text(r)
    assert 20 < count_tokens(text) < 60
    assert render_text(Retrieved("smg", ())) == "Past experience: none."
    long = RenderStyle(max_actions=1)
    task = build("task_graph", store, style=long)
    assert "(+1 more)" in task.render_text(task.retrieve(draw_screen("home"), "x"))


def test_render_image_fixed_size_marks_and_determinism(store):
    root, _, _ = store
    style = RenderStyle(max_items=4)
    m = build("smg", store, style=style)
    r = m.retrieve(draw_screen("list"), "turn on dark mode")
    image = m.render_image(r)
    screen, crops = image_layout(style.image_size)
    assert image.size == (180, 405) and screen == (0, 0, 180, 360) and len(crops) == MEMORY_CROPS
    strip = np.asarray(image)[crops[0][1] + 2:crops[0][3] - 2, crops[0][0] + 2:crops[0][2] - 2]
    assert r.items[0].targets[0] is not None and not (strip == EMPTY).all()  # the touched element's crop
    assert (np.asarray(m.render_image(Retrieved("smg", ()))) == EMPTY).all()  # nothing retrieved: grey
    png = io.BytesIO()
    image.save(png, format="PNG")
    again = io.BytesIO()
    build("smg", store, style=style).render_image(r, root).save(again, format="PNG")
    assert png.getvalue() == again.getvalue()
    px = np.asarray(image)
    assert tuple(px[1, 1]) == (0, 158, 115)  # the top-1 item succeeded: its border
    ring = px[:360][np.all(px[:360] == (255, 0, 200), axis=-1)]
    assert len(ring) > 20  # its tap is marked where it was made
    x, y = r.items[0].actions[0].point
    assert np.all(px[int(y * 360) - 12:int(y * 360) + 12, int(x * 180) - 12:int(x * 180) + 12] == (255, 0, 200), axis=-1).any()
    assert m.render_image(Retrieved("smg", ())).size == (180, 405)


def test_the_crop_strip_holds_every_shown_item_best_first():
    from types import SimpleNamespace

    from guimem.core.data import UIElement
    from guimem.smg.memories.render import touched_crops

    def item(name, n):
        els = tuple(UIElement(f"{name}{j}", "icon", "", bounds=(0.1, 0.1, 0.2, 0.2)) for j in range(n))
        return SimpleNamespace(targets=els, shot=lambda j, name=name: f"{name}.png", success="yes")

    a, b, c = item("a", 3), item("b", 1), item("c", 2)
    crops = touched_crops([a, b, c], RenderStyle(max_items=3))
    assert [t.id for _, _, t in crops] == ["a0", "b0", "c0", "a1"]  # each item's first touch, then the next
    assert [shot for _, shot, _ in crops] == ["a.png", "b.png", "c.png", "a.png"]
    assert [t.id for _, _, t in touched_crops([a], RenderStyle(max_items=1))] == ["a0", "a1", "a2"]


def test_render_image_marks_swipes_and_typing(store):
    root, eps, subs = store
    swipe = Action("swipe", (0.5, 0.8), end=(0.5, 0.3))
    typing = [Step(obs("home"), Action("tap", (0.5, 0.08)), None), Step(obs("home"), Action("type", text="milk")),
              Step(obs("home"), swipe), Step(obs("home"), Action("back"))]
    ep = Episode("t", "settings", "search for milk", tuple(typing), obs("home"))
    sg = [Subgoal("t", 0, 0, 3, "screens/home.png", "screens/home.png", "search", "", "", "uncertain", None, ep.goal)]
    img, txt = embedders(root)
    m = build_memory("smg", [ep], sg, root, img, txt, style=RenderStyle(max_items=1, image_size=(92, 203)))
    r = m.retrieve(draw_screen("home"), "x")
    assert r.items[0].phrases == ('tap "Search" (field)', 'type "milk" into "Search"', "swipe up at bottom center", "back")
    image = np.asarray(m.render_image(r))
    assert image.shape == (203, 92, 3) and tuple(image[0, 0]) == (240, 228, 66)
    marked = np.all(image == (255, 0, 200), axis=-1)  # every action was made on the anchor screen: all marked
    assert marked[100:150, 40:50].any()  # the swipe arrow's shaft
    assert marked[150:180, :].any()  # the back badge near the bottom of the screen part


# ----------------------------------------------------------------------------- files
@pytest.mark.parametrize("name", ["smg", "flat", "action_graph", "task_graph"])
def test_save_load_round_trip(store, name):
    store = as_episode_store(store)
    root, eps, subs = store
    m = build(name, store)
    m.save(root / "mem" / name)
    img, txt = embedders(root)
    loaded = load_memory(root / "mem" / name, img, txt)
    for screen in SCREENS:
        a, b = m.retrieve(draw_screen(screen), "turn on dark mode"), loaded.retrieve(draw_screen(screen), "turn on dark mode")
        assert a == b
        assert m.render_text(a) == loaded.render_text(b)
    loaded.add(eps, subs, root)  # re-ingest after load: nothing new
    assert loaded.retrieve(draw_screen("list"), "g").ids == m.retrieve(draw_screen("list"), "g").ids



MEMORY_SETTINGS = {"smg": dict(tau=0.95, theta=0.8, k=2, rank_by="id"), "flat": dict(k=5),
            "action_graph": dict(tau=0.97, theta=0.85, k=3, rank_by="goal"),
            "task_graph": dict(tau=0.9, theta=0.7, k=2, alpha=0.25)}


@pytest.mark.parametrize("name", ["smg", "flat", "action_graph", "task_graph"])
def test_settings_round_trip_through_get_params_clone_and_a_save(store, name):
    store = as_episode_store(store)
    root, eps, subs = store
    style = RenderStyle(max_items=2, max_actions=3)
    m = build_memory(name, eps, subs, root, *embedders(root), style=style, **MEMORY_SETTINGS[name])
    params = m.get_params()
    assert params == {**MEMORY_SETTINGS[name], "style": style, "search": m.search}
    assert list(params) == list(MEMORY_KINDS[name].params)
    twin = clone(m)
    assert (type(twin), twin.name, twin.get_params(), memory_size(twin)["items"]) == (type(m), name, params, 0)
    assert make_memory(name, m.image_embedder, m.text_embedder, **params).get_params() == params
    m.save(root / "mem" / name)
    assert load_memory(root / "mem" / name, *embedders(root)).get_params() == params
    rebuilt = rebuild_like(m, eps[:1], [s for s in subs if s.episode_id == eps[0].id], root)
    assert rebuilt.get_params() == params and memory_size(rebuilt)["episodes"] == 1

def test_load_refuses_other_embedders(store):
    root, _, _ = store
    build("smg", store).save(root / "smg")
    with pytest.raises(DataError) as err:
        load_memory(root / "smg", PixelEmbedder(8, 8), HashingTextEmbedder())
    assert err.value.field == "image_embedder" and err.value.path.endswith("memory.json")
    with pytest.raises(DataError, match="text_dim|text_embedder"):
        load_memory(root / "smg", PixelEmbedder(), HashingTextEmbedder(64))


def test_load_memories_applies_the_saved_projection(store):
    from guimem.models.embedding import fit_projection
    from guimem.smg.memories import load_memories

    root, eps, subs = as_episode_store(store)
    img, txt = embedders(root)
    vectors = img.embed([draw_screen(n) for n in SCREENS] * 2)
    projected = fit_projection(img, vectors, rank=3)
    projected.save(root / "mem" / "projection")
    for name in ("smg", "flat"):
        build_memory(name, eps, subs, root, projected, txt, tau=0.99).save(root / "mem" / name)
    loaded = load_memories(root / "mem", "pixels", "hashing", cache_dir=root / "cache", names=("smg", "flat"))
    assert loaded["smg"].image_embedder.name == projected.name and loaded["smg"].store_root == root
    assert loaded["flat"].retrieve(draw_screen("home"), "x").ids[0] == "flat:e0#0"


def test_a_retrieval_config_gives_each_kind_the_settings_it_reads(store):
    """One RetrievalConfig builds every kind: each reads its own fields (KIND_FIELDS), as its constructor's arguments."""
    from guimem.smg.memories import GRAPH_MEMORIES, MEMORIES
    from guimem.smg.retrieval_config import KIND_FIELDS, RetrievalConfig

    assert tuple(KIND_FIELDS) == MEMORIES and set(GRAPH_MEMORIES) == set(MEMORIES) - {"flat"}
    recall = RetrievalConfig(k_nodes=2, flat_k=5, task_k=3, task_alpha=0.25, rank_by="id")
    assert recall.settings("flat") == {"k": 5} and recall.settings("task_graph") == {"k": 3, "alpha": 0.25}
    assert recall.settings("smg") == recall.settings("action_graph") == {"k": 2, "rank_by": "id"}
    root, _, _ = store
    for name in MEMORIES:
        params = make_memory(name, *embedders(root), tau=0.8, **recall.settings(name)).get_params()
        assert {a: params[a] for a in recall.settings(name)} == recall.settings(name)
        assert params.get("tau", 0.8) == 0.8  # Flat leaves the graph's threshold aside
    with pytest.raises(DataError, match="unknown memory 'graph'"):
        recall.settings("graph")
