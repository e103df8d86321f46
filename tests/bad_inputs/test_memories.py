"""Bad input to the memories and the retrieval results, each case with its exact outcome.

* a saved memory with one file broken (``memory.json``, ``items.jsonl``, ``flat_vectors.npy``, the
  graph's files): loading raises a :class:`DataError` naming the file and the field;
* values given in code: ``k``, ``tau``/``theta``, ``alpha``, ``rank_by`` and the render style
  (``max_items``, ``max_actions``, ``image_size``), and bad queries;
* adds refused before the memory changes (unsafe paths, links out of the store, duplicate ids);
* save targets that are not memories, and anchors that lead out of the store at render time;
* ``steps.jsonl`` of the retrieval stage with one record broken.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from bad_inputs.corpus import error, files_of, located
from bad_inputs.memory_files import STORED, build, item, items, meta, store  # noqa: F401 (store: a fixture)
from guimem.core.io import MARKER
from guimem.smg.memories import RenderStyle, load_memories, load_memory, make_memory
from guimem.smg.retrieval import evaluate_memory, read_results, step_queries, write_results
from memory_fixtures import TAP_GEAR, TAP_SETTINGS, draw_screen, embedders, episode, subgoal

pytestmark = pytest.mark.bad_input

NAME = {path: name for name, path in STORED.items()}


# ============================================================================= a saved memory, one file broken
def write_text(name: str, text: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_text(text)


def vectors(change: Callable[[np.ndarray], np.ndarray]) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        np.save(folder / "flat_vectors.npy", change(np.load(folder / "flat_vectors.npy").copy()))
    return mutate


def with_inf(x: np.ndarray) -> np.ndarray:
    x[1, 5] = np.inf
    return x


def link_out(name: str) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        outside = folder.parent / f"outside-{name}"
        shutil.copy(folder / name, outside)
        (folder / name).unlink()
        (folder / name).symlink_to(outside)
    return mutate


def node_sums_inf(folder: Path) -> None:
    x = np.load(folder / "node_sums.npy")
    x[0, 0] = np.inf
    np.save(folder / "node_sums.npy", x)


# (case id, memory saved, mutation of its folder, field, file)
LOAD: list[tuple[str, str, Callable[[Path], None], str, str]] = [
    ("memory_json_missing", "smg", lambda f: (f / "memory.json").unlink(), "file", "memory.json"),
    ("memory_json_malformed", "smg", write_text("memory.json", '{"memory": "smg",'), "json", "memory.json"),
    ("memory_json_a_list", "flat", write_text("memory.json", "[1, 2]"), "memory", "memory.json"),
    ("format_version_newer", "smg", meta(format_version=2), "format_version", "memory.json"),
    ("unknown_memory", "smg", meta(memory="episodic"), "memory", "memory.json"),
    ("image_embedder_other", "smg", meta(image_embedder="pixels-8x8"), "image_embedder", "memory.json"),
    ("k_zero", "smg", meta(k=0), "k", "memory.json"),
    ("k_negative", "flat", meta(k=-1), "k", "memory.json"),
    ("k_a_float", "smg", meta(k=1.5), "k", "memory.json"),
    ("tau_nan", "smg", meta(tau=float("nan")), "tau", "memory.json"),
    ("theta_above_one", "action_graph", meta(theta=2.0), "theta", "memory.json"),
    ("tau_not_the_graphs", "smg", meta(tau=0.95), "tau", "memory.json"),
    ("rank_by_unknown", "smg", meta(rank_by="score"), "rank_by", "memory.json"),
    ("alpha_nan", "task_graph", meta(alpha=float("nan")), "alpha", "memory.json"),
    ("alpha_missing", "task_graph", meta(alpha=None), "alpha", "memory.json"),
    ("max_items_minus_two", "smg", meta(style_max_items=-2), "style.max_items", "memory.json"),
    ("max_actions_zero", "flat", meta(style_max_actions=0), "style.max_actions", "memory.json"),
    ("image_size_too_small", "smg", meta(style_image_size=[8, 8]), "style.image_size", "memory.json"),
    ("show_goal_a_string", "smg", meta(style_show_goal="no"), "style.show_goal", "memory.json"),
    ("style_unknown_key", "smg", meta(style_colour="red"), "style", "memory.json"),
    ("style_a_list", "smg", meta(style=[]), "style", "memory.json"),
    ("store_root_a_number", "smg", meta(store_root=7), "store_root", "memory.json"),
    ("items_missing", "smg", lambda f: (f / "items.jsonl").unlink(), "file", "items.jsonl"),
    ("items_malformed_line", "smg", items(lambda lines: lines[:1] + ['{"unit": ']), "line", "items.jsonl"),
    ("item_of_another_memory", "smg", item(0, id="flat:e0#0"), "id", "items.jsonl"),
    ("item_of_another_kind", "action_graph", item(0, kind="subgoal"), "id", "items.jsonl"),
    ("item_unit_missing", "smg", items(lambda lines: lines[1:]), "unit", "items.jsonl"),
    ("item_unit_twice", "flat", items(lambda lines: lines + lines[:1]), "unit", "items.jsonl"),
    ("item_unit_a_number", "smg", item(0, unit=3), "unit", "items.jsonl"),
    ("item_anchor_up_and_out", "smg", item(0, anchor="../../etc/passwd"), "anchor", "items.jsonl"),
    ("item_anchor_absolute", "flat", item(0, anchor="/etc/passwd"), "anchor", "items.jsonl"),
    ("item_outcome_empty", "smg", item(0, outcome=""), "outcome", "items.jsonl"),
    ("item_success_maybe", "smg", item(0, success="maybe"), "success", "items.jsonl"),
    ("item_steps_reversed", "smg", item(0, first_step=1, last_step=0), "last_step", "items.jsonl"),
    ("item_first_step_negative", "smg", item(0, first_step=-1), "first_step", "items.jsonl"),
    ("item_actions_one_too_many", "smg", item(0, actions=[{"type": "back"}] * 2), "actions", "items.jsonl"),
    ("item_action_unknown", "smg", item(0, actions=[{"type": "fly"}]), "actions[0].type", "items.jsonl"),
    ("item_target_bounds_out", "smg", item(0, targets=[{"id": "x", "role": "icon", "text": "", "description": "",
                                                        "bounds": [0, 0, 2, 1], "clickable": True}]),
     "targets[0].bounds[2]", "items.jsonl"),
    ("item_score_nan", "smg", item(0, score=float("nan")), "score", "items.jsonl"),
    ("item_node_negative", "smg", item(0, node=-1), "node", "items.jsonl"),
    ("item_phrases_numbers", "smg", item(0, phrases=[1]), "phrases", "items.jsonl"),
    ("flat_vectors_inf", "flat", vectors(with_inf), "flat_vectors", "flat_vectors.npy"),
    ("flat_vectors_one_row_short", "flat", vectors(lambda x: x[:-1]), "flat_vectors", "flat_vectors.npy"),
    ("flat_vectors_float64", "flat", vectors(lambda x: x.astype(np.float64)), "flat_vectors", "flat_vectors.npy"),
    ("flat_vectors_link_out", "flat", link_out("flat_vectors.npy"), "file", "flat_vectors.npy"),
    ("flat_units_twice", "flat", meta(units=["e0#0", "e0#0", "e0#1", "e1#0"]), "units", "memory.json"),
    ("flat_episodes_a_string", "flat", meta(episodes="e0"), "episodes", "memory.json"),
    ("graph_node_sums_inf", "smg", node_sums_inf, "node_sums", "node_sums.npy"),
    ("items_link_out", "task_graph", link_out("items.jsonl"), "file", "items.jsonl"),
]


@pytest.mark.parametrize("case, name, mutate, field, file", LOAD, ids=[c[0] for c in LOAD])
def test_a_broken_saved_memory_names_file_and_field(store, case, name, mutate, field, file):
    root = store[0]
    build(name, store).save(root / "m")
    mutate(root / "m")
    err = error(lambda: load_memory(root / "m", *embedders(root)))
    assert (err.field, located(err, root / "m")) == (field, file), str(err)


def test_a_folder_named_for_one_memory_holding_another(store):
    root = store[0]
    build("flat", store).save(root / "mem" / "smg")
    err = error(lambda: load_memories(root / "mem", "pixels", "hashing", cache_dir=root / "cache", names=("smg",)))
    assert (err.field, located(err, root / "mem")) == ("memory", "smg/memory.json")


# ============================================================================= values in code
# (case id, make_memory arguments, field)
MAKE: list[tuple[str, dict[str, Any], str]] = [
    ("smg_k_zero", {"name": "smg", "k": 0}, "k"),
    ("smg_k_minus_one", {"name": "smg", "k": -1}, "k"),
    ("flat_k_a_string", {"name": "flat", "k": "3"}, "k"),
    ("task_k_a_bool", {"name": "task_graph", "k": True}, "k"),
    ("tau_above_one", {"name": "smg", "tau": 1.5}, "tau"),
    ("theta_nan", {"name": "action_graph", "theta": float("nan")}, "theta"),
    ("alpha_above_one", {"name": "task_graph", "alpha": 1.5}, "alpha"),
    ("alpha_nan", {"name": "task_graph", "alpha": float("nan")}, "alpha"),
    ("rank_by_unknown", {"name": "smg", "rank_by": "goals"}, "rank_by"),
    ("style_not_a_style", {"name": "flat", "style": {"max_items": 3}}, "style"),
    ("unknown_memory", {"name": "episodic"}, "memory"),
]


@pytest.mark.parametrize("case, args, field", MAKE, ids=[c[0] for c in MAKE])
def test_make_memory_refuses(store, case, args, field):
    assert error(lambda: make_memory(image_embedder=embedders(store[0])[0], text_embedder=embedders(store[0])[1],
                                     **args)).field == field


# (case id, RenderStyle arguments, field)
STYLES: list[tuple[str, dict[str, Any], str]] = [
    ("max_items_minus_two", {"max_items": -2}, "max_items"),
    ("max_items_zero", {"max_items": 0}, "max_items"),
    ("max_items_a_float", {"max_items": 2.0}, "max_items"),
    ("crops_too_small", {"image_size": (28, 405)}, "image_size"),  # 7-pixel crops of the touched elements
    ("max_actions_minus_one", {"max_actions": -1}, "max_actions"),
    ("show_effect_a_string", {"show_effect": "yes"}, "show_effect"),
    ("image_size_zero_width", {"image_size": (0, 360)}, "image_size"),
    ("image_size_one_number", {"image_size": (180,)}, "image_size"),
    ("image_size_floats", {"image_size": (180.0, 360.0)}, "image_size"),
    ("panels_too_small", {"image_size": (12, 24), "max_items": 4}, "image_size"),
]


@pytest.mark.parametrize("case, args, field", STYLES, ids=[c[0] for c in STYLES])
def test_render_style_refuses(case, args, field):
    assert error(lambda: RenderStyle(**args)).field == field


# (case id, memory, call, field)
QUERIES: list[tuple[str, str, Callable[[Any], Any], str]] = [
    ("smg_k_zero", "smg", lambda m: m.retrieve(draw_screen("list"), "g", k=0), "k"),
    ("flat_k_negative", "flat", lambda m: m.retrieve(draw_screen("list"), "g", k=-1), "k"),
    ("task_k_nan", "task_graph", lambda m: m.retrieve(draw_screen("list"), "g", k=float("nan")), "k"),
    ("query_nan", "smg", lambda m: m.retrieve(np.full(1536, np.nan, np.float32), "g"), "screenshot"),
    ("query_wrong_dim", "flat", lambda m: m.retrieve(np.ones(16, np.float32), "g"), "screenshot"),
    ("task_query_zero", "task_graph", lambda m: m.retrieve(np.zeros(1536, np.float32), "g"), "screenshot"),
]


@pytest.mark.parametrize("case, name, call, field", QUERIES, ids=[c[0] for c in QUERIES])
def test_a_bad_query_is_refused(store, case, name, call, field):
    assert error(lambda: call(build(name, store))).field == field


# ============================================================================= adds refused before anything changes
FRESH = episode("n0", "search for milk", [("home", TAP_SETTINGS, "a")], "list")
OTHER = episode("n1", "search for milk", [("list", TAP_GEAR, "b")], "detail")
GONE = replace(OTHER, steps=(replace(OTHER.steps[0], observation=replace(OTHER.steps[0].observation,
                                                                         screenshot="screens/gone.png")),))
FRESH_SUB, OTHER_SUB = subgoal(FRESH, 0, 0, 0, "open", "yes"), subgoal(OTHER, 0, 0, 0, "gear", "no")

# (case id, episodes and subgoals added to a memory of e0 and e1, field)
ADDS: list[tuple[str, tuple[list, list], str]] = [
    ("episode_id_twice", ([FRESH, FRESH], [FRESH_SUB]), "episodes[1].id"),
    ("not_an_episode", ([FRESH, OTHER.to_dict()], [FRESH_SUB]), "episodes[1]"),
    ("subgoal_of_no_episode", ([FRESH], [FRESH_SUB, OTHER_SUB]), "episode_id"),
    ("subgoal_path_up_and_out", ([FRESH], [replace(FRESH_SUB, from_screenshot="../../etc/passwd")]), "from_screenshot"),
    ("subgoal_path_absolute", ([FRESH], [replace(FRESH_SUB, to_screenshot="/etc/passwd")]), "to_screenshot"),
    ("subgoal_index_twice", ([FRESH], [FRESH_SUB, FRESH_SUB]), "index"),
    ("second_episode_screenshot_missing", ([FRESH, GONE], [FRESH_SUB, subgoal(GONE, 0, 0, 0, "x", "no")]),
     "screenshot"),
]


@pytest.mark.parametrize("name", ["smg", "flat"])
@pytest.mark.parametrize("case, added, field", ADDS, ids=[c[0] for c in ADDS])
def test_a_refused_add_leaves_the_memory_as_it_was(store, name, case, added, field):
    root = store[0]
    m = build(name, store)
    m.save(root / "before")
    err = error(lambda: m.add(*added, root))
    assert err.field == field, str(err)
    m.save(root / "after")
    assert files_of(root / "before") == files_of(root / "after")


@pytest.mark.parametrize("name", ["smg", "flat", "action_graph", "task_graph"])
def test_an_add_through_a_link_out_of_the_store_is_refused(store, tmp_path, name):
    root, eps, subs = store
    (root / STORED["home"]).unlink()
    draw_screen("home").save(tmp_path.parent / f"{tmp_path.name}-home.png")
    (root / STORED["home"]).symlink_to(tmp_path.parent / f"{tmp_path.name}-home.png")
    m = make_memory(name, *embedders(root))
    err = error(lambda: m.add(eps, subs, root))
    assert (err.field, err.path) == ("screenshot", str(root)) and "resolves outside" in err.message
    assert m.items == {} and m.store_root is None


def test_render_refuses_an_anchor_that_became_a_link_out(store, tmp_path):
    root = store[0]
    m = build("smg", store)
    retrieved = m.retrieve(draw_screen("list"), "turn on dark mode")
    (root / STORED["list"]).unlink()
    (root / STORED["list"]).symlink_to(tmp_path.parent)
    err = error(lambda: m.render_image(retrieved))
    assert (err.field, err.path) == ("anchor", str(root))


# ============================================================================= save targets
def test_save_refuses_a_folder_it_did_not_write(store):
    root = store[0]
    (root / "mine").mkdir()
    (root / "mine" / "data.csv").write_text("1,2")
    err = error(lambda: build("flat", store).save(root / "mine"))
    assert (err.field, err.path) == ("path", str(root / "mine")) and files_of(root / "mine") == {"data.csv": b"1,2"}


def test_save_refuses_a_graph_and_a_memory_without_its_marker(store):
    root = store[0]
    m = build("smg", store)
    m.graph.save(root / "graph")
    err = error(lambda: m.save(root / "graph"))
    assert (err.field, err.path) == ("path", str(root / "graph")) and "guimem.memory_graph" in err.message
    m.save(root / "old")
    (root / "old" / MARKER).unlink()
    err = error(lambda: m.save(root / "old"))
    assert (err.field, err.path) == ("path", str(root / "old")) and "did not write" in err.message


# ============================================================================= retrieval results
@pytest.fixture
def results(store) -> Path:
    """``steps.jsonl`` and images of the SMG over the store's own episodes."""
    root, eps, _ = store
    m = build("smg", store)
    queries = step_queries(eps)
    vectors = {q.screenshot: m._query_vector(draw_screen(NAME[q.screenshot])) for q in queries}
    write_results(root / "retrieval", m, evaluate_memory(m, queries, vectors, {e.id: e for e in eps}))
    return root / "retrieval" / "smg" / "steps.jsonl"


def record(line: int, **values: Any) -> Callable[[Path], None]:
    def mutate(path: Path) -> None:
        rows = [json.loads(s) for s in path.read_text().splitlines()]
        rows[line].update(values)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return mutate


def image_linked_out(path: Path) -> None:
    rows = [json.loads(s) for s in path.read_text().splitlines()]
    image = path.parent / rows[0]["image"]
    image.unlink()
    image.symlink_to(path.parent.parent.parent / "screens" / "home.png")  # a file, but outside the folder


def image_removed(path: Path) -> None:
    rows = [json.loads(s) for s in path.read_text().splitlines()]
    (path.parent / rows[0]["image"]).unlink()


def steps_linked_out(path: Path) -> None:
    shutil.move(path, path.parent.parent / "elsewhere.jsonl")
    path.symlink_to(path.parent.parent / "elsewhere.jsonl")


# (case id, mutation of steps.jsonl, field)
RESULTS: list[tuple[str, Callable[[Path], None], str]] = [
    ("steps_missing", lambda p: p.unlink(), "file"),
    ("steps_linked_out", steps_linked_out, "file"),
    ("record_a_list", lambda p: p.write_text("[]\n"), "record"),
    ("record_malformed", lambda p: p.write_text('{"step": 0\n'), "line"),
    ("step_negative", record(0, step=-1), "step"),
    ("step_a_string", record(1, step="1"), "step"),
    ("episode_id_missing", record(0, episode_id=None), "episode_id"),
    ("text_a_number", record(0, text=3), "text"),
    ("tokens_negative", record(0, tokens=-5), "tokens"),
    ("shown_ids_numbers", record(0, shown=[1, 2]), "shown"),
    ("image_up_and_out", record(0, image="../../screens/home.png"), "image"),
    ("image_absolute", record(0, image="/etc/passwd"), "image"),
    ("image_not_its_shown_ids", record(0, image="images/0123456789abcdef.png"), "image"),
    ("image_missing", image_removed, "image"),
    ("image_linked_out", image_linked_out, "image"),
]


@pytest.mark.parametrize("case, mutate, field", RESULTS, ids=[c[0] for c in RESULTS])
def test_broken_retrieval_results_name_file_and_field(results, case, mutate, field):
    mutate(results)
    err = error(lambda: read_results(results))
    assert (err.field, located(err, results.parent)) == (field, "steps.jsonl"), str(err)


def test_results_of_an_unknown_memory_name_are_not_written(store):
    m = build("flat", store)
    m.name = "../outside"
    err = error(lambda: write_results(store[0] / "out", m, []))
    assert err.field == "memory" and not (store[0] / "out").exists() and not (store[0] / "outside").exists()


def test_evaluation_refuses_a_missing_query_vector_and_a_bad_k(store):
    _, eps, _ = store
    m = build("smg", store)
    queries = step_queries(eps)
    assert error(lambda: evaluate_memory(m, queries, {}, {})).field == "query_vectors"
    vectors = {q.screenshot: m._query_vector(draw_screen(NAME[q.screenshot])) for q in queries}
    assert error(lambda: evaluate_memory(m, queries, vectors, {e.id: e for e in eps}, ks=(0,))).field == "ks"
