"""Bad input to the memory graph, each case with its exact outcome.

* a saved graph with one file broken: loading raises a :class:`DataError` naming the file and
  the field (manifest values and counts, arrays, ids, paths, links out of the folder);
* thresholds and dimensions given in code (``GraphConfig``, ``build_graph``);
* episodes refused by ``add_episode``/``add_subgoals``, which leave the graph exactly as it was;
* queries (``k``, the query vector) and save targets that are not graphs.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from PIL import Image

from bad_inputs.corpus import error, files_of, located
from bad_inputs.graph_files import CONFIG, D, E, array, edit_edges, edit_json, graph, manifest, set_node, sub
from guimem.core.io import MARKER
from guimem.models.embedding import HashingTextEmbedder, PixelEmbedder
from guimem.smg.graph import GraphConfig, MemoryGraph, add_subgoals, build_graph
from guimem.smg.graph_load import load_graph

pytestmark = pytest.mark.bad_input

# ============================================================================= a saved graph, one file broken
def drop_key(key: str) -> Callable[[Path], None]:
    def drop(m: dict) -> None:
        del m[key]
    return edit_json("manifest.json", drop)


def write_text(name: str, text: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_text(text)


def poke(value: float) -> Callable[[np.ndarray], np.ndarray]:
    def change(x: np.ndarray) -> np.ndarray:
        x.flat[1] = value
        return x
    return change


def truncate(name: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_bytes((folder / name).read_bytes()[:-7])


def remove(name: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).unlink()


def folder_instead(name: str) -> Callable[[Path], None]:
    def mutate(folder: Path) -> None:
        (folder / name).unlink()
        (folder / name).mkdir()
    return mutate


def link_out(name: str) -> Callable[[Path], None]:
    """Replace ``name`` with a link to an identical file outside the folder."""
    def mutate(folder: Path) -> None:
        outside = folder.parent / f"outside-{name}"
        shutil.copy(folder / name, outside)
        (folder / name).unlink()
        (folder / name).symlink_to(outside)
    return mutate


# (case id, mutation of a saved graph folder, field, file)
LOAD: list[tuple[str, Callable[[Path], None], str, str]] = [
    ("manifest_missing", remove("manifest.json"), "file", "manifest.json"),
    ("manifest_malformed", write_text("manifest.json", '{"format": '), "json", "manifest.json"),
    ("manifest_a_list", write_text("manifest.json", "[]"), "manifest", "manifest.json"),
    ("manifest_other_format", manifest(format="guimem.episodes"), "format", "manifest.json"),
    ("manifest_newer_version", manifest(format_version=2), "format_version", "manifest.json"),
    ("tau_above_one", manifest(tau=1.5), "tau", "manifest.json"),
    ("tau_nan", manifest(tau=float("nan")), "tau", "manifest.json"),
    ("theta_below_minus_one", manifest(theta=-1.5), "theta", "manifest.json"),
    ("theta_a_string", manifest(theta="0.9"), "theta", "manifest.json"),
    ("theta_missing", drop_key("theta"), "theta", "manifest.json"),
    ("image_dim_zero", manifest(image_dim=0), "image_dim", "manifest.json"),
    ("text_dim_float", manifest(text_dim=4.0), "text_dim", "manifest.json"),
    ("embedder_empty", manifest(image_embedder=""), "image_embedder", "manifest.json"),
    ("nodes_count_too_high", manifest(nodes=4), "node_sums", "node_sums.npy"),
    ("edges_count_negative", manifest(edges=-1), "edges", "manifest.json"),
    ("edges_count_a_bool", manifest(edges=True), "edges", "manifest.json"),
    ("episodes_count_wrong", manifest(episodes=2), "episodes", "episodes.json"),
    ("subgoals_seen_inconsistent", manifest(subgoals_seen=5), "subgoals_seen", "manifest.json"),
    ("screens_merged_wrong", manifest(screens_merged=99), "screens_merged", "manifest.json"),
    ("self_loops_wrong", manifest(self_loops=1), "self_loops", "manifest.json"),
    ("node_sums_inf", array("node_sums.npy", poke(np.inf)), "node_sums", "node_sums.npy"),
    ("node_sums_nan", array("node_sums.npy", poke(np.nan)), "node_sums", "node_sums.npy"),
    ("edge_intents_inf", array("edge_intents.npy", poke(-np.inf)), "edge_intents", "edge_intents.npy"),
    ("node_sums_float32", array("node_sums.npy", lambda x: x.astype(np.float32)), "node_sums", "node_sums.npy"),
    ("node_sums_big_endian", array("node_sums.npy", lambda x: x.astype(">f8")), "node_sums", "node_sums.npy"),
    ("node_sums_wrong_width", array("node_sums.npy", lambda x: np.zeros((3, D + 1))), "node_sums", "node_sums.npy"),
    ("node_sums_objects", array("node_sums.npy", lambda x: x.astype(object)), "node_sums", "node_sums.npy"),
    ("edge_intents_flat", array("edge_intents.npy", lambda x: x.ravel()), "edge_intents", "edge_intents.npy"),
    ("node_sums_truncated", truncate("node_sums.npy"), "node_sums", "node_sums.npy"),
    ("node_sums_not_npy", write_text("node_sums.npy", "not an array"), "node_sums", "node_sums.npy"),
    ("node_sums_missing", remove("node_sums.npy"), "node_sums", "node_sums.npy"),
    ("node_sums_a_folder", folder_instead("node_sums.npy"), "node_sums", "node_sums.npy"),
    ("node_sums_link_out", link_out("node_sums.npy"), "file", "node_sums.npy"),
    ("edges_link_out", link_out("edges.jsonl"), "file", "edges.jsonl"),
    ("nodes_an_object", write_text("nodes.json", "{}"), "nodes", "nodes.json"),
    ("nodes_one_short", edit_json("nodes.json", lambda nodes: nodes[:2]), "nodes", "nodes.json"),
    ("node_id_out_of_order", set_node(1, id=2), "[1].id", "nodes.json"),
    ("node_count_zero", set_node(0, count=0), "[0].count", "nodes.json"),
    ("node_screenshots_empty", set_node(2, screenshots=[]), "[2].screenshots", "nodes.json"),
    ("node_screenshot_up_and_out", set_node(0, screenshots=["../../etc/passwd"]), "[0].screenshots[0]", "nodes.json"),
    ("node_screenshot_absolute", set_node(0, screenshots=["/etc/passwd"]), "[0].screenshots[0]", "nodes.json"),
    ("edges_one_short", edit_edges(lambda rows: rows.pop()), "edges", "edges.jsonl"),
    ("edge_id_not_its_line", edit_edges(lambda rows: rows[1].update(id=7)), "id", "edges.jsonl"),
    ("edge_target_missing_node", edit_edges(lambda rows: rows[0].update(target=3)), "target", "edges.jsonl"),
    ("edge_source_negative", edit_edges(lambda rows: rows[0].update(source=-1)), "source", "edges.jsonl"),
    ("edge_subgoal_a_list", edit_edges(lambda rows: rows[0].update(subgoal=[])), "subgoal", "edges.jsonl"),
    ("edge_subgoal_bad_success", edit_edges(lambda rows: rows[0]["subgoal"].update(success="maybe")),
     "subgoal.success", "edges.jsonl"),
    ("edge_subgoal_path_out", edit_edges(lambda rows: rows[1]["subgoal"].update(to_screenshot="../x.png")),
     "subgoal.to_screenshot", "edges.jsonl"),
    ("edges_malformed_line", write_text("edges.jsonl", '{"id": 0}\n{"id": \n'), "line", "edges.jsonl"),
    ("episode_hash_not_hex", edit_json("episodes.json", lambda rows: rows[0].update(sha256="xyz")), "[0].sha256",
     "episodes.json"),
    ("episode_id_twice", edit_json("episodes.json", lambda rows: rows + rows), "episodes", "episodes.json"),
    ("episodes_an_object", write_text("episodes.json", '{"e0": "x"}'), "episodes", "episodes.json"),
]


@pytest.mark.parametrize("case, mutate, field, file", LOAD, ids=[c[0] for c in LOAD])
def test_a_broken_saved_graph_names_file_and_field(tmp_path, case, mutate, field, file):
    graph().save(tmp_path / "g")
    mutate(tmp_path / "g")
    err = error(lambda: load_graph(tmp_path / "g", expect=CONFIG))
    assert (err.field, located(err, tmp_path / "g")) == (field, file), str(err)


def test_a_duplicate_episode_id_is_named(tmp_path):
    graph().save(tmp_path / "g")
    manifest(episodes=2)(tmp_path / "g")
    edit_json("episodes.json", lambda rows: rows + rows)(tmp_path / "g")
    err = error(lambda: load_graph(tmp_path / "g"))
    assert (err.field, located(err, tmp_path / "g")) == ("[1].id", "episodes.json")


def test_nan_in_the_manifest_is_refused_not_compared(tmp_path):
    graph().save(tmp_path / "g")
    text = (tmp_path / "g" / "manifest.json").read_text().replace('"tau": 0.9', '"tau": NaN')
    (tmp_path / "g" / "manifest.json").write_text(text)
    err = error(lambda: load_graph(tmp_path / "g"))
    assert (err.field, located(err, tmp_path / "g")) == ("tau", "manifest.json")


def test_no_graph_at_all(tmp_path):
    err = error(lambda: load_graph(tmp_path / "nothing"))
    assert (err.field, err.path) == ("path", str(tmp_path / "nothing"))


# ============================================================================= thresholds in code
# (case id, GraphConfig fields changed, field)
CONFIGS: list[tuple[str, dict[str, Any], str]] = [
    ("tau_just_above_one", {"tau": 1.0000001}, "tau"),
    ("tau_nan", {"tau": float("nan")}, "tau"),
    ("tau_a_string", {"tau": "0.9"}, "tau"),
    ("tau_none", {"tau": None}, "tau"),
    ("theta_minus_inf", {"theta": float("-inf")}, "theta"),
    ("theta_below_minus_one", {"theta": -1.01}, "theta"),
    ("image_dim_negative", {"image_dim": -1}, "image_dim"),
    ("text_dim_a_bool", {"text_dim": True}, "text_dim"),
    ("text_embedder_empty", {"text_embedder": ""}, "text_embedder"),
]


@pytest.mark.parametrize("case, changed, field", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_graph_config_refuses(case, changed, field):
    assert error(lambda: GraphConfig(**{**CONFIG.__dict__, **changed})).field == field


def test_thresholds_at_the_ends_of_the_range_are_accepted():
    assert GraphConfig("a", 1, "b", 1, tau=-1, theta=1.0).tau == -1


def test_build_graph_refuses_a_threshold_before_embedding_anything(tmp_path):
    assert error(lambda: build_graph([], PixelEmbedder(), HashingTextEmbedder(), tmp_path, theta=2.0)).field == "theta"


# ============================================================================= episodes refused before anything changes
GOOD_SCREENS = {"e1/s0.png": E[3], "e1/s1.png": E[0], "e1/s2.png": E[1]}
GOOD_SUBS = [sub("e1", 0, 0, 0), sub("e1", 1, 1, 1, "close it")]
GOOD_INTENTS = np.stack([E[2], E[3]])


def screens_with(**changed: Any) -> dict[str, Any]:
    return {**GOOD_SCREENS, **{k.replace("_", "/", 1) + ".png": v for k, v in changed.items()}}


# (case id, (subgoals, screen vectors, intent vectors), field)
EPISODES: list[tuple[str, tuple, str]] = [
    ("screen_vector_missing", (GOOD_SUBS, {"e1/s0.png": E[3], "e1/s1.png": E[0]}, GOOD_INTENTS), "from_screenshot"),
    ("last_screen_inf", (GOOD_SUBS, screens_with(e1_s2=np.array([0, 1, np.inf, 0])), GOOD_INTENTS),
     "screen_vectors['e1/s2.png']"),
    ("last_screen_nan", (GOOD_SUBS, screens_with(e1_s2=np.full(D, np.nan)), GOOD_INTENTS),
     "screen_vectors['e1/s2.png']"),
    ("screen_wrong_dim", (GOOD_SUBS, screens_with(e1_s2=np.ones(D + 1)), GOOD_INTENTS), "screen_vectors['e1/s2.png']"),
    ("screen_all_zeros", (GOOD_SUBS, screens_with(e1_s2=np.zeros(D)), GOOD_INTENTS), "screen_vectors['e1/s2.png']"),
    ("screen_beyond_float32", (GOOD_SUBS, screens_with(e1_s2=np.array([1e300, 0, 0, 0])), GOOD_INTENTS),
     "screen_vectors['e1/s2.png']"),
    ("screen_of_strings", (GOOD_SUBS, screens_with(e1_s2=np.array(list("abcd"))), GOOD_INTENTS),
     "screen_vectors['e1/s2.png']"),
    ("one_intent_for_two", (GOOD_SUBS, GOOD_SCREENS, GOOD_INTENTS[:1]), "intent_vectors"),
    ("intent_nan", (GOOD_SUBS, GOOD_SCREENS, np.stack([E[2], np.full(D, np.nan)])), "intent_vectors"),
    ("two_episodes", ([sub("e1", 0, 0, 0), sub("e2", 1, 1, 1)], GOOD_SCREENS, GOOD_INTENTS), "episode_id"),
    ("index_twice", ([sub("e1", 0, 0, 0), sub("e1", 0, 1, 1)], GOOD_SCREENS, GOOD_INTENTS), "index"),
    ("two_screens_at_one_step", ([sub("e1", 0, 0, 0), sub("e1", 1, 1, 1, shot="e1/other.png")],
                                 {**GOOD_SCREENS, "e1/other.png": E[2]}, GOOD_INTENTS), "from_screenshot"),
    ("screenshot_up_and_out", ([sub("e1", 0, 0, 0, shot="../../etc/passwd"), GOOD_SUBS[1]], GOOD_SCREENS,
                               GOOD_INTENTS), "from_screenshot"),
    ("screenshot_absolute", ([sub("e1", 0, 0, 0, shot="/etc/passwd"), GOOD_SUBS[1]], GOOD_SCREENS, GOOD_INTENTS),
     "from_screenshot"),
    ("not_a_subgoal", ([GOOD_SUBS[0].to_dict(), GOOD_SUBS[1]], GOOD_SCREENS, GOOD_INTENTS), "subgoals[0]"),
    ("same_id_other_content", ([sub("e0", 0, 0, 0, "something else")], {}, GOOD_INTENTS[:1]), "episode_id"),
]


@pytest.mark.parametrize("case, args, field", EPISODES, ids=[c[0] for c in EPISODES])
def test_a_refused_episode_leaves_the_graph_as_it_was(tmp_path, case, args, field):
    g = graph()
    g.save(tmp_path / "before")
    assert error(lambda: g.add_episode(*args)).field == field
    g.save(tmp_path / "after")
    assert files_of(tmp_path / "before") == files_of(tmp_path / "after")


@pytest.fixture
def store(tmp_path) -> Path:
    """Screens e<i>/s<j>.png of three colours in ``tmp_path/store``, and a file outside it."""
    root = tmp_path / "store"
    for e in range(3):
        (root / f"e{e}").mkdir(parents=True)
        for j, colour in enumerate(["red", "green", "blue"]):
            Image.new("RGB", (18, 36), colour).save(root / f"e{e}" / f"s{j}.png")
    Image.new("RGB", (18, 36), "black").save(tmp_path / "secret.png")
    return root


def test_add_subgoals_checks_every_episode_before_the_first_is_added(store):
    g = MemoryGraph(GraphConfig("pixels", 1536, "hashing", 256))
    subs = [sub("e0", 0, 0, 1), sub("e1", 0, 0, 0), sub("e2", 0, 0, 0, shot="e2/missing.png")]
    err = error(lambda: add_subgoals(g, subs, PixelEmbedder(), HashingTextEmbedder(), store))
    assert (err.field, err.path) == ("screenshot", str(store / "e2" / "missing.png"))
    assert (g.n_nodes, g.n_edges, g.episodes) == (0, 0, {})


def test_add_subgoals_refuses_a_link_out_of_the_store(store, tmp_path):
    (store / "e1" / "s0.png").unlink()
    (store / "e1" / "s0.png").symlink_to(tmp_path / "secret.png")
    g = MemoryGraph(GraphConfig("pixels", 1536, "hashing", 256))
    err = error(lambda: add_subgoals(g, [sub("e0", 0, 0, 0), sub("e1", 0, 0, 0)], PixelEmbedder(),
                                     HashingTextEmbedder(), store))
    assert (err.field, err.path) == ("screenshot", str(store)) and "resolves outside" in err.message
    assert g.n_nodes == 0


# ============================================================================= queries
# (case id, call on a graph, field)
QUERIES: list[tuple[str, Callable[[MemoryGraph], Any], str]] = [
    ("k_zero", lambda g: g.retrieve(E[0], k=0), "k"),
    ("k_negative", lambda g: g.retrieve(E[0], k=-1), "k"),
    ("k_a_float", lambda g: g.retrieve(E[0], k=2.5), "k"),
    ("k_a_string", lambda g: g.retrieve(E[0], k="3"), "k"),
    ("query_nan", lambda g: g.retrieve(np.full(D, np.nan)), "vector"),
    ("query_inf", lambda g: g.nearest_nodes(np.array([np.inf, 0, 0, 0])), "vector"),
    ("query_wrong_dim", lambda g: g.retrieve(np.ones(D + 1)), "vector"),
    ("query_zero", lambda g: g.retrieve(np.zeros(D)), "vector"),
    ("edge_to_no_node", lambda g: g.add_edge(0, 9, sub("e9", 0, 0, 0), E[0]), "target"),
    ("edge_intent_nan", lambda g: g.add_edge(0, 1, sub("e9", 0, 0, 0), np.full(D, np.nan)), "intent"),
    ("screen_path_out", lambda g: g.add_screen(E[0], "../x.png"), "screenshot"),
]


@pytest.mark.parametrize("case, call, field", QUERIES, ids=[c[0] for c in QUERIES])
def test_a_bad_query_or_edge_is_refused(case, call, field):
    g = graph()
    stats = g.stats()
    assert error(lambda: call(g)).field == field
    assert g.stats() == stats


# ============================================================================= save targets
def test_save_refuses_a_folder_it_did_not_write_and_keeps_it(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("keep me")
    err = error(lambda: graph().save(tmp_path / "mine"))
    assert (err.field, err.path) == ("path", str(tmp_path / "mine"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"] and files_of(tmp_path / "mine") == {
        "thesis.tex": b"keep me"}


def test_save_refuses_a_file_and_a_store_of_another_kind(tmp_path):
    (tmp_path / "file").write_text("x")
    assert error(lambda: graph().save(tmp_path / "file")).path == str(tmp_path / "file")
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / MARKER).write_text("guimem.memory\n")
    (tmp_path / "memory" / "memory.json").write_text("{}")
    err = error(lambda: graph().save(tmp_path / "memory"))
    assert (err.field, err.path) == ("path", str(tmp_path / "memory")) and "guimem.memory store" in err.message


def test_save_refuses_a_graph_without_its_marker(tmp_path):
    graph().save(tmp_path / "g")
    (tmp_path / "g" / MARKER).unlink()
    before = files_of(tmp_path / "g")
    err = error(lambda: graph().save(tmp_path / "g"))
    assert (err.field, err.path) == ("path", str(tmp_path / "g")) and files_of(tmp_path / "g") == before
