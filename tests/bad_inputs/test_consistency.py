"""Saved files whose parts contradict each other, and memories that would draw images from outside
their episode store: each case with its exact outcome.

* a saved graph: an edge of an episode it does not hold or not joining its screenshots' nodes, a
  stale episode hash after an edited subgoal, a node count below its screenshots, node sums no
  merge of unit vectors gives (zero, 1e308), intents that are not unit vectors, ``true`` or ``1.0``
  where an integer belongs;
* a saved memory: a ``store_root`` that is not an episode store, an anchor, outcome or shot that
  is not a screen of it, items that contradict the graph's edges, the flat units or their episodes;
* a subgoal file: subgoals of unknown episodes, past their episode's last step, with screens, goal
  or actions not their episode's, a step in two subgoals, two screenshots at one step, a missing
  successor;
* a store manifest whose ``version`` is ``true``.

Each case starts from a small valid file written by the code, edits it into the contradiction,
and expects a :class:`DataError` naming the file and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from bad_inputs.corpus import error, located
from bad_inputs.graph_files import CONFIG, array, edit_edges, graph, manifest, set_node
from bad_inputs.memory_files import STORED, build, item, items, meta, store  # noqa: F401 (fixture)
from guimem.core.store import load_subgoals, read_manifest, save_subgoals
from guimem.smg.graph_load import load_graph
from guimem.smg.memories import load_memory
from memory_fixtures import draw_screen, embedders

pytestmark = pytest.mark.bad_input


# ============================================================================= graphs
def scale_row(name: str, factor: float) -> Callable[[Path], None]:
    def change(x: np.ndarray) -> np.ndarray:
        x[0] *= factor
        return x
    return array(name, change)


def edit_subgoal(line: int, **values: Any) -> Callable[[Path], None]:
    return edit_edges(lambda rows: rows[line]["subgoal"].update(values))


# (case id, mutation of the saved graph of graph_files.graph(), field, file)
GRAPHS: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("edge_of_an_absent_episode", edit_subgoal(0, episode_id="e9"), "subgoal.episode_id", "edges.jsonl"),
    ("edge_from_a_node_without_its_screenshot", edit_edges(lambda rows: rows[0].update(source=2)), "source",
     "edges.jsonl"),
    ("edge_to_a_node_without_its_screenshot", edit_edges(lambda rows: rows[1].update(target=0)), "target",
     "edges.jsonl"),
    ("stale_hash_after_edited_text", edit_subgoal(0, text="delete everything"), "[0].sha256", "episodes.json"),
    ("stale_hash_after_edited_success", edit_subgoal(1, success="yes"), "[0].sha256", "episodes.json"),
    ("two_edges_of_one_subgoal", edit_subgoal(1, index=0), "subgoal.index", "edges.jsonl"),
    ("node_count_below_its_screenshots", set_node(0, screenshots=["e0/s0.png", "e0/other.png"]), "[0].count",
     "nodes.json"),
    ("node_sum_zero", scale_row("node_sums.npy", 0.0), "node_sums", "node_sums.npy"),
    ("node_sum_1e308", scale_row("node_sums.npy", 1e308), "node_sums", "node_sums.npy"),
    ("node_sum_doubled", scale_row("node_sums.npy", 2.0), "node_sums", "node_sums.npy"),
    ("intent_not_unit", scale_row("edge_intents.npy", 3.0), "edge_intents", "edge_intents.npy"),
    ("format_version_true", manifest(format_version=True), "format_version", "manifest.json"),
    ("format_version_float", manifest(format_version=1.0), "format_version", "manifest.json"),
    ("node_id_true", set_node(1, id=True), "[1].id", "nodes.json"),
    ("edge_id_true", edit_edges(lambda rows: rows[1].update(id=True)), "id", "edges.jsonl"),
    ("screens_merged_a_float", manifest(screens_merged=3.0), "screens_merged", "manifest.json"),
    ("self_loops_false", manifest(self_loops=False), "self_loops", "manifest.json"),
]


@pytest.mark.parametrize("case, mutate, field, file", GRAPHS, ids=[c[0] for c in GRAPHS])
def test_a_graph_that_contradicts_itself_is_refused(tmp_path, case, mutate, field, file):
    graph().save(tmp_path / "g")
    load_graph(tmp_path / "g", expect=CONFIG)  # valid as written
    mutate(tmp_path / "g")
    err = error(lambda: load_graph(tmp_path / "g", expect=CONFIG))
    assert (err.field, located(err, tmp_path / "g")) == (field, file), str(err)


def test_a_graph_of_edges_added_one_by_one_belongs_to_no_episode_and_loads(tmp_path):
    """Accepted: a graph with no episodes holds edges added by ``add_edge``, of no ingested episode."""
    g = graph()
    g.episodes.clear()
    g.add_edge(2, 0, graph().edges[0].subgoal, np.eye(4, dtype=np.float32)[3])
    g.save(tmp_path / "g")
    assert load_graph(tmp_path / "g").n_edges == 3


# ============================================================================= memories
def shots(line: int, j: int, rel: str) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        rows = [json.loads(s) for s in (folder / "items.jsonl").read_text().splitlines()]
        rows[line]["shots"][j] = rel
        (folder / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return mutate


def outside_root(folder: Path) -> None:
    meta(store_root=str(folder.parent.parent))(folder)  # a folder holding the store: any image below it


def memory_as_root(folder: Path) -> None:
    meta(store_root=str(folder))(folder)  # a store of another kind


# (case id, memory saved, mutation of its folder, field, file)
MEMORIES: list[tuple[str, str, Callable[[Path], None], str, str]] = [
    ("store_root_outside", "smg", outside_root, "store_root", "memory.json"),
    ("store_root_the_filesystem_root", "flat", meta(store_root="/"), "store_root", "memory.json"),
    ("store_root_a_memory", "smg", memory_as_root, "store_root", "memory.json"),
    ("store_root_missing", "task_graph", meta(store_root="/nonexistent/store"), "store_root", "memory.json"),
    ("anchor_a_file_of_the_store", "smg", item(0, anchor="manifest.json", shots=["manifest.json"]), "anchor", "items.jsonl"),
    ("anchor_a_hand_named_png", "flat", item(0, anchor="screens/home.png", shots=["screens/home.png"]), "anchor",
     "items.jsonl"),
    ("outcome_not_in_the_store", "smg", item(1, outcome="screens/0123456789abcdef.png"), "outcome", "items.jsonl"),
    ("shot_an_episode_file", "task_graph", shots(0, 1, "episodes/e0.json"), "shots[1]", "items.jsonl"),
    ("first_shot_not_the_anchor", "action_graph", shots(0, 0, STORED["detail"]), "shots", "items.jsonl"),
    ("item_text_not_its_edges", "smg", item(0, text="delete everything"), "text", "items.jsonl"),
    ("item_success_not_its_edges", "smg", item(1, success="no"), "success", "items.jsonl"),
    ("item_anchor_not_its_edges", "smg", item(0, anchor=STORED["detail"], shots=[STORED["detail"]]), "anchor",
     "items.jsonl"),
    ("item_steps_not_its_edges", "task_graph", item(0, first_step=1, actions=[{"type": "back"}], phrases=["x"],
                                                     targets=[None], shots=[STORED["home"]]), "first_step",
     "items.jsonl"),
    ("dropped_duplicate_item_removed", "smg", items(lambda lines: [s for s in lines if '"e1#0"' not in s]), "unit",
     "items.jsonl"),
    ("unit_of_another_episode", "smg", item(0, unit="e1#7", id="smg:e1#7"), "episode_id", "items.jsonl"),
    ("flat_item_of_no_unit", "flat", items(lambda lines: lines + [lines[0].replace("e0#0", "e0#9")]), "unit",
     "items.jsonl"),
    ("format_version_true", "smg", meta(format_version=True), "format_version", "memory.json"),
    ("text_dim_a_float", "flat", meta(text_dim=256.0), "text_dim", "memory.json"),
]


@pytest.mark.parametrize("case, name, mutate, field, file", MEMORIES, ids=[c[0] for c in MEMORIES])
def test_a_memory_that_contradicts_itself_or_reads_outside_its_store_is_refused(store, case, name, mutate, field,
                                                                               file):
    root = store[0]
    build(name, store).save(root / "m")
    load_memory(root / "m", *embedders(root))  # valid as written
    mutate(root / "m")
    err = error(lambda: load_memory(root / "m", *embedders(root)))
    assert (err.field, located(err, root / "m")) == (field, file), str(err)


def test_a_store_root_given_by_the_caller_must_be_an_episode_store_too(store, tmp_path):
    root = store[0]
    build("smg", store).save(root / "m")
    err = error(lambda: load_memory(root / "m", *embedders(root), store_root=tmp_path.parent))
    assert (err.field, located(err, root / "m")) == ("store_root", "memory.json")


def test_a_loaded_memory_renders_its_own_store_only(store):
    root = store[0]
    m = build("smg", store)
    m.save(root / "m")
    loaded = load_memory(root / "m", *embedders(root))
    r = loaded.retrieve(m._query_vector(draw_screen("list")), "turn on dark mode")
    assert loaded.store_root == root and {i.anchor for i in r.items} <= set(STORED.values())
    assert loaded.render_image(r).size == m.render_image(r).size


# ============================================================================= subgoal files
def subgoal_file(tmp_path: Path, subs: list, **changes: Any) -> Path:
    """``subs`` saved as a subgoal file, then line ``changes['line']`` (default 0) edited with the rest."""
    path = tmp_path / "subgoals.jsonl"
    save_subgoals(path, subs)
    line = changes.pop("line", 0)
    rows = [json.loads(s) for s in path.read_text().splitlines()]
    rows[line].update(changes)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# (case id, changes to one line of the store's subgoal file, with the store?, field, line)
SUBGOALS: list[tuple[str, dict[str, Any], bool, str, int]] = [
    ("unknown_episode", {"episode_id": "e7"}, True, "episode_id", 1),
    ("beyond_the_last_step", {"line": 1, "last_step": 5}, True, "last_step", 2),
    ("to_screenshot_another_screen", {"line": 3, "to_screenshot": STORED["detail"]}, True, "to_screenshot", 4),
    ("from_screenshot_another_screen", {"from_screenshot": STORED["list"]}, True, "from_screenshot", 1),
    ("goal_not_the_episodes", {"goal": "delete everything"}, True, "goal", 1),
    ("app_not_the_episodes", {"line": 2, "app": "camera"}, True, "app", 3),
    ("actions_not_the_episodes", {"actions": [{"type": "back"}]}, True, "actions", 1),
    ("two_screenshots_at_one_step", {"line": 1, "from_screenshot": STORED["detail"]}, False, "from_screenshot", 2),
    ("successor_not_there", {"successor": 7}, False, "successor", 1),
    ("a_step_in_two_subgoals", {"last_step": 1, "to_screenshot": STORED["detail"]}, False, "first_step", 2),
]


@pytest.mark.parametrize("case, changes, with_store, field, line", SUBGOALS, ids=[c[0] for c in SUBGOALS])
def test_a_subgoal_file_that_contradicts_itself_or_its_store_is_refused(store, tmp_path, case, changes, with_store,
                                                                       field, line):
    root, _, subs = store
    for name in STORED:  # the fixture's hand-named copies: a store holds its own screens only
        (root / "screens" / f"{name}.png").unlink()
    assert load_subgoals(subgoal_file(tmp_path, subs), root) == subs  # valid as written
    path = subgoal_file(tmp_path, subs, **changes)
    err = error(lambda: load_subgoals(path, root if with_store else None))
    assert (err.field, err.path) == (field, f"{path}, line {line}"), str(err)


# ============================================================================= store manifests
@pytest.mark.parametrize("version", [True, 1.0, "1"])
def test_a_store_version_must_be_the_integer(store, version):
    root = store[0]
    m = json.loads((root / "manifest.json").read_text())
    (root / "manifest.json").write_text(json.dumps({**m, "version": version}))
    err = error(lambda: read_manifest(root))
    assert (err.field, located(err, root)) == ("version", "manifest.json")
