"""The SMG's merge, edge and dedup rules, incremental build, save/load, exact search, and
decisions that last-bit differences in the embeddings do not move.

Hand-made embeddings use 16-d vectors with entries +-1/4: each has norm exactly 1 and the
cosine of two of them is exactly ``1 - (number of differing signs) / 8``, so the boundary
cases (cosine exactly tau, exactly theta) are decided without rounding.
"""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from guimem.core.data import DataError, Subgoal, group_by_episode
from guimem.core.io import MARKER
from guimem.models.embedding import HashingTextEmbedder, PixelEmbedder
from guimem.smg import graph as mg
from guimem.smg.figures import draw_graph, draw_node_strips
from guimem.smg.graph import GraphConfig, MemoryGraph, build_graph
from guimem.smg.graph_load import load_graph
from guimem.smg.index import RANK_DECIMALS, NodeIndex

D = 16


def signs(*negated: int) -> np.ndarray:
    """The all-(+1/4) vector with the components in ``negated`` flipped."""
    v = np.full(D, 0.25, dtype=np.float32)
    v[list(negated)] *= -1
    return v


def cfg(tau: float = 0.75, theta: float = 0.75) -> GraphConfig:
    return GraphConfig("hand", D, "hand-text", D, tau, theta)


def subgoal(eid: str, index: int, first: int, last: int, text: str = "do it", success: str = "yes") -> Subgoal:
    return Subgoal(eid, index, first, last, f"{eid}/s{first}.png", f"{eid}/s{last + 1}.png", text,
                   effect="", behaviour="", success=success, successor=None)


def test_cosines_of_hand_made_vectors_are_exact():
    assert float(signs() @ signs(0, 1)) == 0.75
    assert float(signs() @ signs(0, 1, 2)) == 0.625


# ----------------------------------------------------------------------------- merge rule
def test_screen_merges_at_exactly_tau():
    g = MemoryGraph(cfg(tau=0.75))
    assert g.add_screen(signs(), "a.png") == 0
    assert g.add_screen(signs(0, 1), "b.png") == 0  # cosine exactly 0.75
    assert g.graph.nodes[0]["count"] == 2 and g.node_screenshots(0) == ["a.png", "b.png"]
    np.testing.assert_array_equal(g.node_sums[0], signs().astype(np.float64) + signs(0, 1))


def test_screen_below_tau_makes_a_new_node():
    g = MemoryGraph(cfg(tau=0.75))
    g.add_screen(signs(), "a.png")
    assert g.add_screen(signs(0, 1, 2), "b.png") == 1  # cosine 0.625
    assert g.n_nodes == 2


def test_merge_goes_to_the_nearest_node_not_the_first():
    g = MemoryGraph(cfg(tau=0.75))
    g.add_screen(signs(), "a.png")
    g.add_screen(signs(0, 1, 2), "b.png")  # 0.625 to node 0: own node
    assert g.add_screen(signs(0, 1), "q.png") == 1  # 0.75 to node 0, 0.875 to node 1


def test_tie_goes_to_the_lower_node_id():
    g = MemoryGraph(cfg(tau=0.625))
    g.add_screen(signs(0, 1, 2), "a.png")
    g.add_screen(signs(3, 4, 5), "b.png")  # 0.25 apart
    assert g.add_screen(signs(), "q.png") == 0  # 0.625 to both


def test_running_mean_moves_and_counts_repeats():
    g = MemoryGraph(cfg(tau=0.75))
    g.add_screen(signs(), "a.png")
    g.add_screen(signs(), "a.png")
    g.add_screen(signs(0, 1), "b.png")
    assert g.graph.nodes[0]["count"] == 3 and g.node_screenshots(0) == ["a.png", "b.png"]
    mean = (2 * signs().astype(np.float64) + signs(0, 1)) / 3
    np.testing.assert_allclose(g.node_means[0], mean / np.linalg.norm(mean), rtol=1e-6)
    # signs(0, 1, 2, 3) is 0.5 from the first screen but 0.707 from the mean: still a new node
    assert g.add_screen(signs(0, 1, 2, 3), "c.png") == 1


# ----------------------------------------------------------------------------- edges and dedup
def two_nodes(g: MemoryGraph) -> tuple[int, int, int]:
    return g.add_screen(signs(), "a.png"), g.add_screen(signs(0, 1, 2, 3, 4, 5, 6, 7), "b.png"), \
        g.add_screen(signs(8, 9, 10, 11, 12, 13, 14, 15), "c.png")


def test_duplicate_at_exactly_theta_is_dropped_and_the_earlier_kept():
    g = MemoryGraph(cfg(theta=0.75))
    a, b, _ = two_nodes(g)
    first = g.add_edge(a, b, subgoal("e1", 0, 0, 0, "first"), signs())
    assert g.add_edge(a, b, subgoal("e2", 0, 0, 0, "second"), signs(0, 1)) is None  # intent cosine 0.75
    assert [e.subgoal.text for e in g.out_edges(a)] == ["first"] and first.id == 0
    assert (g.subgoals_seen, g.duplicates_dropped) == (2, 1)


def test_lower_intent_similarity_is_kept():
    g = MemoryGraph(cfg(theta=0.75))
    a, b, _ = two_nodes(g)
    g.add_edge(a, b, subgoal("e1", 0, 0, 0), signs())
    assert g.add_edge(a, b, subgoal("e2", 0, 0, 0), signs(0, 1, 2)) is not None  # 0.625
    assert g.n_edges == 2


def test_same_target_different_success_is_kept():
    g = MemoryGraph(cfg(theta=0.75))
    a, b, _ = two_nodes(g)
    g.add_edge(a, b, subgoal("e1", 0, 0, 0, success="yes"), signs())
    assert g.add_edge(a, b, subgoal("e2", 0, 0, 0, success="no"), signs()) is not None
    assert g.add_edge(a, b, subgoal("e3", 0, 0, 0, success="uncertain"), signs()) is not None
    assert g.add_edge(a, b, subgoal("e4", 0, 0, 0, success="no"), signs()) is None


def test_other_target_or_other_source_is_kept():
    g = MemoryGraph(cfg(theta=0.75))
    a, b, c = two_nodes(g)
    g.add_edge(a, b, subgoal("e1", 0, 0, 0), signs())
    assert g.add_edge(a, c, subgoal("e2", 0, 0, 0), signs()) is not None  # other target
    assert g.add_edge(b, b, subgoal("e3", 0, 0, 0), signs()) is not None  # other source (a self-loop)
    assert g.add_edge(c, b, subgoal("e4", 0, 0, 0), signs()) is not None
    assert g.stats()["self_loops"] == 1


def test_add_episode_links_boundary_screens_and_keeps_metadata():
    g = MemoryGraph(cfg(tau=0.99))
    subs = [subgoal("ep", 1, 2, 3, "second", "no"), subgoal("ep", 0, 0, 1, "first")]  # out of order on purpose
    screens = {"ep/s0.png": signs(), "ep/s2.png": signs(0, 1, 2, 3, 4, 5, 6, 7), "ep/s4.png": signs(0, 1)}
    intents = np.stack([signs(5), signs(6)])  # aligned with ``subs`` as given
    report = g.add_episode(subs, screens, intents)
    assert (report.screens, report.nodes_created, report.edges_added) == (3, 3, 2)
    e0, e1 = g.edges
    assert (e0.source, e0.target, e0.subgoal.text) == (0, 1, "first")
    assert (e1.source, e1.target, e1.subgoal.text, e1.subgoal.success) == (1, 2, "second", "no")
    np.testing.assert_array_equal(g.edge_intents, np.stack([signs(6), signs(5)]))
    with pytest.raises(DataError, match="no embedding"):
        MemoryGraph(cfg()).add_episode([subgoal("x", 0, 0, 0)], {}, np.stack([signs()]))


def test_a_refused_episode_leaves_the_graph_as_it_was(tmp_path):
    g = MemoryGraph(cfg(tau=0.99))
    g.add_episode([subgoal("ok", 0, 0, 0)], {"ok/s0.png": signs(), "ok/s1.png": signs(0, 1, 2, 3)},
                  np.stack([signs()]))
    g.save(tmp_path / "before")
    subs = [subgoal("bad", 0, 0, 1), subgoal("bad", 1, 2, 2)]
    screens = {"bad/s0.png": signs(5), "bad/s2.png": signs(6, 7), "bad/s3.png": np.full(D, np.inf)}  # the last screen is bad
    with pytest.raises(DataError) as err:
        g.add_episode(subs, screens, np.stack([signs(), signs(1)]))
    assert err.value.field == "screen_vectors['bad/s3.png']" and "non-finite" in err.value.message
    g.save(tmp_path / "after")
    assert files_of(tmp_path / "before") == files_of(tmp_path / "after") and g.n_nodes == 2


def test_retrieve_returns_successes_and_failures_in_order():
    g = MemoryGraph(cfg(tau=0.99, theta=0.99))
    a, b, c = two_nodes(g)
    g.add_edge(b, a, subgoal("e0", 0, 0, 0, "from b"), signs())
    g.add_edge(a, c, subgoal("e1", 0, 0, 0, "fail", "no"), signs())
    g.add_edge(a, b, subgoal("e2", 0, 0, 0, "ok"), signs())
    hits = g.retrieve(signs(0), k=1)
    assert [h.node for h in hits] == [a] and hits[0].score == 0.875
    assert [(e.subgoal.text, e.subgoal.success) for e in hits[0].edges] == [("fail", "no"), ("ok", "yes")]
    hits = g.retrieve(signs(0, 1, 2, 3, 4, 5, 6), k=2)
    assert [h.node for h in hits] == [b, a] and [e.subgoal.text for e in hits[0].edges] == ["from b"]
    assert g.retrieve(signs(), k=10)[-1].node == c and len(g.retrieve(signs(), k=10)) == 3


# ----------------------------------------------------------------------------- incremental, idempotent
def random_episodes(n: int, seed: int) -> tuple[list[Subgoal], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Episodes walking over 12 prototype screens (noisy copies), with 5 recurring intents."""
    rng = np.random.default_rng(seed)
    protos = rng.standard_normal((12, 32))
    intents = rng.standard_normal((5, 24))
    subs, screens, texts = [], {}, {}
    for e in range(n):
        eid = f"ep{e:03d}"
        length = int(rng.integers(1, 5))
        for pos in range(length + 1):
            v = protos[rng.integers(12)] + 0.2 * rng.standard_normal(32)
            screens[f"{eid}/s{pos}.png"] = (v / np.linalg.norm(v)).astype(np.float32)
        for i in range(length):
            t = int(rng.integers(5))
            text = f"intent {t}"
            w = intents[t] + 0.3 * rng.standard_normal(24)
            texts[f"{eid}#{i}"] = (w / np.linalg.norm(w)).astype(np.float32)
            subs.append(subgoal(eid, i, i, i, text, str(rng.choice(["yes", "no", "uncertain"]))))
    return subs, screens, texts


def ingest(g: MemoryGraph, subs, screens, texts) -> None:
    for group in group_by_episode(subs).values():
        g.add_episode(group, screens, np.stack([texts[s.id] for s in group]))


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_incremental_build_equals_batch_build(tmp_path):
    subs, screens, texts = random_episodes(40, seed=1)
    config = GraphConfig("rand", 32, "rand-text", 24, tau=0.9, theta=0.8)
    batch = MemoryGraph(config)
    ingest(batch, subs, screens, texts)
    assert 12 <= batch.n_nodes < len(screens) and batch.duplicates_dropped > 0  # merging and dedup happened
    cut = next(i for i, s in enumerate(subs) if s.episode_id == "ep020")
    first = MemoryGraph(config)
    ingest(first, subs[:cut], screens, texts)
    first.save(tmp_path / "g")
    resumed = load_graph(tmp_path / "g", expect=config)
    ingest(resumed, subs[cut:], screens, texts)
    batch.save(tmp_path / "batch")
    resumed.save(tmp_path / "resumed")
    assert files_of(tmp_path / "batch") == files_of(tmp_path / "resumed")


def test_reingest_adds_nothing_and_changed_content_is_refused(tmp_path):
    subs, screens, texts = random_episodes(10, seed=2)
    config = GraphConfig("rand", 32, "rand-text", 24)
    g = MemoryGraph(config)
    ingest(g, subs, screens, texts)
    g.save(tmp_path / "once")
    group = group_by_episode(subs)["ep003"]
    report = g.add_episode(group, screens, np.stack([texts[s.id] for s in group]))
    assert (report.episodes_added, report.episodes_skipped) == (0, 1)
    g.save(tmp_path / "twice")
    assert files_of(tmp_path / "once") == files_of(tmp_path / "twice")
    changed = [Subgoal(**{**s.__dict__, "text": s.text + "!"}) for s in group]
    with pytest.raises(DataError, match="already ingested"):
        g.add_episode(changed, screens, np.stack([texts[s.id] for s in group]))


# ----------------------------------------------------------------------------- save / load
def small_graph() -> MemoryGraph:
    g = MemoryGraph(cfg())
    a, b, _ = two_nodes(g)
    g.add_edge(a, b, subgoal("e1", 0, 0, 0), signs())
    return g


def test_save_load_round_trip(tmp_path):
    g = small_graph()
    g.save(tmp_path / "g")
    h = load_graph(tmp_path / "g", expect=cfg())
    assert h.config == g.config and h.stats() == g.stats()
    assert [(e.id, e.source, e.target, e.subgoal) for e in h.edges] == [(e.id, e.source, e.target, e.subgoal) for e in g.edges]
    np.testing.assert_array_equal(h.node_means, g.node_means)
    manifest = json.loads((tmp_path / "g" / "manifest.json").read_text())
    assert manifest["tau"] == 0.75 and manifest["image_embedder"] == "hand" and manifest["format_version"] == 1
    assert not any(p.suffix == ".pkl" for p in (tmp_path / "g").iterdir())


def test_crash_during_save_leaves_the_previous_graph(tmp_path, monkeypatch):
    small_graph().save(tmp_path / "g")
    before = files_of(tmp_path / "g")
    bigger = small_graph()
    bigger.add_edge(1, 2, subgoal("e9", 0, 0, 0), signs())
    real_save = np.save

    def crash(path, *args, **kwargs):
        if str(path).endswith(mg.EDGE_INTENTS):
            raise KeyboardInterrupt("killed mid-save")
        return real_save(path, *args, **kwargs)

    monkeypatch.setattr(mg.np, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        bigger.save(tmp_path / "g")
    assert files_of(tmp_path / "g") == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g"]  # no temp folder left
    assert load_graph(tmp_path / "g").n_edges == 1


def test_save_replaces_a_graph_and_refuses_other_folders(tmp_path):
    small_graph().save(tmp_path / "g")
    small_graph().save(tmp_path / "g")
    assert (tmp_path / "g" / MARKER).read_text() == "guimem.memory_graph\n"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(DataError) as err:
        small_graph().save(tmp_path / "other")
    assert err.value.field == "path" and err.value.path == str(tmp_path / "other")
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


def test_crash_between_the_renames_falls_back_to_the_backup(tmp_path):
    small_graph().save(tmp_path / "g")
    (tmp_path / "g").rename(tmp_path / ".g.old")  # the state after the first rename
    assert load_graph(tmp_path / "g").n_edges == 1
    small_graph().save(tmp_path / "g")  # the next save completes and removes the backup
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g"]


@pytest.mark.parametrize("field, other", [("image_embedder", "pixels"), ("image_dim", 17),
                                          ("text_embedder", "minilm"), ("text_dim", 384)])
def test_load_refuses_other_embedders(tmp_path, field, other):
    small_graph().save(tmp_path / "g")
    expect = GraphConfig(**{**cfg().__dict__, field: other})
    with pytest.raises(DataError) as err:
        load_graph(tmp_path / "g", expect=expect)
    assert err.value.field == field and err.value.path.endswith("manifest.json")
    assert repr(other) in str(err.value)


def test_load_names_the_broken_file(tmp_path):
    small_graph().save(tmp_path / "g")
    (tmp_path / "g" / "nodes.json").write_text("[{")
    with pytest.raises(DataError, match="nodes.json"):
        load_graph(tmp_path / "g")
    shutil.rmtree(tmp_path / "g")
    with pytest.raises(DataError, match="no saved memory"):
        load_graph(tmp_path / "g")


# ----------------------------------------------------------------------------- exact search
def brute_force(x: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    s = np.round(x.astype(np.float64) @ q.astype(np.float64), RANK_DECIMALS)
    return list(np.lexsort((np.arange(len(x)), -s))[:k])


def test_index_topk_is_exact():
    rng = np.random.default_rng(0)
    basis = rng.standard_normal((8, 64))
    x = rng.standard_normal((3000, 8)) @ basis + 0.05 * rng.standard_normal((3000, 64))
    x = mg.normalize_rows(x)
    index = NodeIndex(64)
    index.extend(x[:2000])
    for v in x[2000:]:
        index.append(v)
    index.update(5, x[6])  # exact duplicate rows: ties go to the lower id
    x[5] = x[6]
    for q in mg.normalize_rows(rng.standard_normal((30, 8)) @ basis):
        for k in (1, 3, 50):
            ids, scores = index.topk(q, k)
            assert list(ids) == brute_force(x, q, k)
            np.testing.assert_allclose(scores, np.sort(x.astype(np.float64) @ q)[::-1][:k], rtol=0, atol=1e-12)
    ids, _ = index.topk(x[6], 2)
    assert list(ids) == [5, 6]
    assert len(NodeIndex(4).topk(np.ones(4), 3)[0]) == 0
    with pytest.raises(DataError) as err:
        index.topk(x[6], 0)
    assert err.value.field == "k"


def test_index_ties_scores_that_differ_below_the_ranking_resolution():
    index = NodeIndex(2)
    index.extend(np.eye(2, dtype=np.float32))
    q = np.array([0.70710677, 0.7071068], dtype=np.float32)  # 3e-8 closer to row 1 than to row 0
    ids, scores = index.topk(q, 2)
    assert scores[1] > scores[0] and list(ids) == [0, 1]  # rounded to 1e-6 they tie: the lower id first


# ----------------------------------------------------------------------------- stable across machines
def nudged(v: np.ndarray, rng: np.random.Generator, ulps: int = 4) -> np.ndarray:
    """``v`` with every component moved by up to ``ulps`` units in the last place (float32), as
    another CPU's rounding might leave it."""
    out = v.astype(np.float32)
    for _ in range(ulps):
        direction = np.where(rng.random(v.shape) < 0.5, -np.inf, np.inf).astype(np.float32)
        out = np.where(rng.random(v.shape) < 0.5, np.nextafter(out, direction), out)
    return out


def at_cosine(c: float, dim: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two random float32 unit vectors whose cosine is ``c`` in exact arithmetic (up to their rounding)."""
    a, b = np.linalg.qr(rng.standard_normal((dim, 2)))[0].T
    return a.astype(np.float32), (c * a + np.sqrt(1 - c * c) * b).astype(np.float32)


@pytest.mark.parametrize("threshold", [1.0, 0.9])
def test_threshold_decisions_do_not_flip_under_last_bit_noise(threshold):
    """At tau = theta = 1 (the theta = 1.0 sweep) and at the defaults, a pair whose cosine is the
    threshold in exact arithmetic is merged (deduplicated) for every rounding of its vectors, and
    a pair 1e-5 below it never is; the raw float comparison would have flipped."""
    rng = np.random.default_rng(0)
    dim = 384
    config = GraphConfig("v", dim, "t", dim, tau=threshold, theta=threshold)
    raw_flips = 0
    for trial in range(40):
        a, b = at_cosine(threshold, dim, rng)
        below = at_cosine(threshold - 1e-5, dim, rng)
        g = MemoryGraph(config)
        assert g.add_screen(nudged(a, rng), "a.png") == 0
        b_nudged = nudged(b, rng)
        raw_flips += float(mg.exact_scores(g.node_means, mg._unit(b_nudged))[0]) < threshold
        assert g.add_screen(b_nudged, "b.png") == 0  # merged: cosine == tau up to rounding
        assert MemoryGraph(config).add_screen(below[0], "x.png") == 0
        h = MemoryGraph(config)
        h.add_screen(nudged(below[0], rng), "x.png")
        assert h.add_screen(nudged(below[1], rng), "y.png") == 1  # never merged
        assert g.add_edge(0, 0, subgoal("e", 0, 0, 0), nudged(a, rng)) is not None
        assert g.add_edge(0, 0, subgoal("e", 1, 1, 1), nudged(b, rng)) is None  # a duplicate at theta
        assert g.add_edge(0, 0, subgoal("e", 2, 2, 2), nudged(below[0], rng)) is not None
        assert g.add_edge(0, 0, subgoal("e", 3, 3, 3), nudged(below[1], rng)) is not None  # 1e-5 below theta: kept
    assert raw_flips > 0  # without the tolerance some of these pairs would not have merged


def test_rankings_do_not_flip_under_last_bit_noise():
    """Two nodes equally similar to the query in exact arithmetic: the lower id wins, however rounded."""
    rng = np.random.default_rng(1)
    dim = 64
    for _ in range(50):
        q, w = np.linalg.qr(rng.standard_normal((dim, 3)))[0].T[:2]
        left, right = 0.8 * q + 0.6 * w, 0.8 * q - 0.6 * w  # both at cosine 0.8 to q
        g = MemoryGraph(GraphConfig("v", dim, "t", dim, tau=0.99, theta=0.9))
        g.add_screen(nudged(left, rng), "l.png")
        g.add_screen(nudged(right, rng), "r.png")
        assert [n for n, _ in g.nearest_nodes(nudged(q, rng), k=2)] == [0, 1]


# ----------------------------------------------------------------------------- from image files
def test_build_graph_from_files_merges_identical_screens(tmp_path):
    from PIL import Image

    colours = {"home": (200, 30, 30), "list": (30, 200, 30), "detail": (30, 30, 200)}
    for name, colour in colours.items():
        im = Image.new("RGB", (36, 72), colour)
        im.paste((255, 255, 255), (0, 0, 36, 10 + 10 * list(colours).index(name)))
        im.save(tmp_path / f"{name}.png")
    subs = []
    for e in range(3):  # every episode: home -> list -> detail
        for i, (a, b) in enumerate([("home", "list"), ("list", "detail")]):
            subs.append(Subgoal(f"e{e}", i, i, i, f"{a}.png", f"{b}.png", f"go to {b}", "", "", "yes", None))
    g = build_graph(subs, PixelEmbedder(), HashingTextEmbedder(), tmp_path, tau=0.99, theta=0.9)
    assert g.n_nodes == 3 and g.n_edges == 2 and g.duplicates_dropped == 4
    assert g.graph.nodes[0]["count"] == 3 and g.node_screenshots(0) == ["home.png"]
    report = mg.add_subgoals(g, subs, PixelEmbedder(), HashingTextEmbedder(), tmp_path)
    assert report.episodes_skipped == 3 and g.n_edges == 2
    with pytest.raises(DataError, match="'pixels-8x8'"):
        mg.add_subgoals(g, subs, PixelEmbedder(8, 8), HashingTextEmbedder(), tmp_path)


def test_node_purity_and_drawing(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    g = MemoryGraph(cfg(tau=0.75))
    for name, v in (("a1", signs()), ("a2", signs(0, 1)), ("b1", signs(0, 1, 2, 3, 4, 5, 6, 7))):
        Image.new("RGB", (36, 72), (len(name) * 40, 80, 120)).save(tmp_path / f"{name}.png")
        g.add_screen(v, f"{name}.png")
    g.add_edge(0, 1, subgoal("e", 0, 0, 0), signs())
    g.add_edge(0, 0, subgoal("e", 1, 1, 1, success="no"), signs())
    assert mg.node_purity(g, {"a1.png": "home", "a2.png": "home", "b1.png": "list"}) == 1.0
    assert mg.node_purity(g, {"a1.png": "home", "a2.png": "menu", "b1.png": "list"}) == pytest.approx(2 / 3)
    fig, ax = plt.subplots()
    Image.new("RGB", (36, 72), (0, 0, 0)).save(tmp_path / "c1.png")
    assert g.add_screen(signs(8, 9, 10, 11, 12, 13, 14, 15), "c1.png") == 2
    assert draw_graph(g, tmp_path, ax, max_nodes=5) == [0, 1]  # from the most visited node; 2 is unreachable
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "subgoal edge judged yes", "subgoal edge judged no", "subgoal edge judged uncertain"]  # the colours' key
    plt.close(fig)
    strips = draw_node_strips(g, tmp_path, {}, max_nodes=2)  # says how many of the nodes it shows
    assert strips._suptitle.get_text().startswith("the 2 most visited of the graph's 3 nodes")
    plt.close(strips)
    assert draw_node_strips(g, tmp_path, {})._suptitle.get_text().startswith("all of the graph's 3 nodes")
    plt.close("all")


class _CountingTexts(HashingTextEmbedder):
    """A hashing embedder that records the batches it is asked to embed."""

    def __init__(self):
        super().__init__()
        self.batches: list[list[str]] = []

    def embed(self, texts):
        self.batches.append(list(texts))
        return super().embed(texts)


def test_build_graph_embeds_every_intent_in_one_batch_and_splits_them_by_episode(tmp_path):
    """The sweep's graphs embed their intents in one call (a batched encoder's last bits depend on the
    batch); each episode still gets its own intents' vectors, as embedding each one alone gives."""
    Image.new("RGB", (36, 72), (200, 30, 30)).save(tmp_path / "a.png")
    Image.new("RGB", (36, 72), (30, 30, 200)).save(tmp_path / "b.png")
    shots, words = ("a.png", "b.png"), ["open", "search", "rename", "archive", "mute", "share"]
    subs = [Subgoal(f"e{e}", i, i, i, shots[i % 2], shots[1 - i % 2], words[e * (e + 1) // 2 + i], "", "", "yes", None)
            for e in range(3) for i in range(e + 1)]
    texts = _CountingTexts()
    g = build_graph(subs, PixelEmbedder(), texts, tmp_path, tau=0.99, theta=0.99)
    assert texts.batches == [[s.text for s in subs]]
    alone = {s.text: HashingTextEmbedder().embed([s.text])[0] for s in subs}
    assert g.n_edges == len(subs)
    assert all(np.allclose(g.edge_intents[i], alone[e.subgoal.text]) for i, e in enumerate(g.edges))
    per_episode = mg.embed_in_one_batch(HashingTextEmbedder())([["x", "y"], [], ["z"]])
    assert [v.shape[0] for v in per_episode] == [2, 0, 1]
