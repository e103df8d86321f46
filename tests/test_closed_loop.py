"""Closed-loop runs: replaying demonstrations reproduces their outcomes; traces round-trip."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import pytest

from demonstrations import make_demos
from guimem.core.data import Action, DataError
from guimem.core.policy import PolicyOutput
from guimem.eval.closed_loop import (
    Replay,
    Trace,
    TraceStep,
    load_traces,
    longest_stall,
    replay_tasks,
    run_closed_loop,
    save_traces,
    stalled_share,
    success_by_group,
    success_table,
)
from guimem.eval.tables import markdown_table
from guimem.phone.world import World
from guimem.smg.reader import MemoryReader, QueryVectors


class ReplayPolicy:
    """Answers each goal with the recorded actions of its demonstration, in order."""

    def __init__(self, scripts: dict[str, list[Action]]):
        self.scripts = scripts
        self.batches: list[int] = []

    def act(self, inputs, output_hidden_states=False):
        self.batches.append(len(inputs))
        return [PolicyOutput(self.scripts[x.goal][len(x.history)]) for x in inputs]


@dataclass
class _Item:
    id: str


@dataclass
class _Retrieved:
    items: list

    @property
    def ids(self):
        return tuple(i.id for i in self.items)


class FakeMemory:
    """Retrieves one item per query, named after the goal; records the calls it got."""

    def __init__(self):
        self.calls = 0

    def retrieve(self, screenshot, goal, k=1):
        self.calls += 1
        return _Retrieved([_Item(f"m:{goal}")])

    def render_text(self, retrieved):
        return "memory " + retrieved.items[0].id

    def render_image(self, retrieved):
        from PIL import Image
        return Image.new("RGB", (8, 8))


@pytest.fixture(scope="module")
def demos():
    return make_demos()


def test_replaying_demonstrations_reproduces_their_outcomes(demos):
    config, runs = demos
    policy = ReplayPolicy({ep.goal: [s.action for s in ep.steps] for _, _, ep in runs})
    tasks = [Replay(ep.id, task, seed) for task, seed, ep in runs]
    traces = run_closed_loop(lambda: World(config), tasks, policy, None, "none", modality="none",
                             batch_size=4, history_len=100, progress=False)
    assert [t.episode for t in traces] == [ep.id for _, _, ep in runs]
    for trace, (_, _, ep) in zip(traces, runs):
        assert [s.action for s in trace.steps] == [s.action for s in ep.steps]
        assert trace.success == ep.success
    assert {t.success for t in traces} == {True, False}  # the fixture holds both outcomes
    assert policy.batches[0] == 4 and max(policy.batches) <= 4  # lock-step batches


def test_memory_is_retrieved_for_every_screen_and_traced_every_step(demos):
    config, runs = demos
    policy = ReplayPolicy({ep.goal: [s.action for s in ep.steps] for _, _, ep in runs})
    memory = FakeMemory()
    traces = run_closed_loop(lambda: World(config), [Replay(ep.id, t, s) for t, s, ep in runs], policy, memory,
                             "fake", modality="text", history_len=100, progress=False)
    assert memory.calls == len({(t.goal, s.screen_key) for t in traces for s in t.steps})  # once per goal and screen
    assert all(step.retrieved == (f"m:{t.goal}",) for t in traces for step in t.steps)


def test_memory_reader_shows_only_the_chosen_modality(demos):
    config, runs = demos
    task, seed, _ = runs[0]
    obs = World(config).reset(task, seed)
    for modality, has_text, has_image in [("none", False, False), ("text", True, False),
                                          ("image", False, True), ("both", True, True)]:
        reader = MemoryReader(FakeMemory(), modality, 1)
        text, image, ids = reader.read(obs, task.goal)
        assert (text is not None, image is not None) == (has_text, has_image)
        assert ids == (() if modality == "none" else (f"m:{task.goal}",))
        assert reader.renders == (0 if modality == "none" else 1)  # only the modality shown is rendered


def test_success_table_mean_and_spread():
    def trace(memory, run, ok):
        return Trace("e", memory, "text", 100 + run, run, "g", (), "done", ok)
    traces = [trace("smg", 0, True), trace("smg", 0, False), trace("smg", 1, True), trace("smg", 1, True),
              trace("none", 0, False)]
    table = success_table(traces)
    assert table["smg"]["per_seed"] == [50.0, 100.0]
    assert table["smg"]["mean"] == 75.0
    assert table["smg"]["std"] == pytest.approx(35.3553, abs=1e-3)
    assert table["none"] == {"per_seed": [0.0], "mean": 0.0, "std": 0.0, "episodes": 1}
    md = markdown_table(table, {"smg": 45.30}, ["none", "smg"], {"smg": "Subgoal-Graph"})
    assert "| Subgoal-Graph | 75.0 ± 35.4 | 2 | 45.30 |" in md


def test_success_by_group_counts_each_episode_in_its_group_at_its_world_seed():
    def trace(episode, memory, seed, ok):
        return Trace(episode, memory, "text", seed, 0, "g", (), "done", ok)
    traces = [trace("a", "none", 1, True), trace("a", "none", 2, False), trace("b", "none", 1, False),
              trace("a", "smg", 1, True), trace("a", "smg", 2, True), trace("b", "smg", 1, True)]
    group_of = {("a", 1): "free", ("a", 2): "needs", ("b", 1): "needs"}  # a task's need moves with the seed
    by = success_by_group(traces, group_of)
    assert by["none"] == {"free": {"episodes": 1, "successes": 1, "success_rate": 100.0},
                          "needs": {"episodes": 2, "successes": 0, "success_rate": 0.0}}
    assert by["smg"]["needs"] == {"episodes": 2, "successes": 2, "success_rate": 100.0}
    with pytest.raises(DataError, match="episode 'b' at world seed 1"):
        success_by_group(traces, {k: v for k, v in group_of.items() if k != ("b", 1)})


def test_stalls_count_consecutive_steps_on_one_screen():
    def trace(memory, keys):
        steps = tuple(TraceStep(k, Action("tap", (0.5, 0.5)), ()) for k in keys)
        return Trace("e", memory, "text", 1, 0, "g", steps, "budget", False)
    assert longest_stall(trace("smg", [])) == 0
    assert longest_stall(trace("smg", ["a", "b", "c"])) == 1
    assert longest_stall(trace("smg", ["a", "b", "b", "b", "a", "a"])) == 3  # a screen seen again later is no stall
    traces = [trace("smg", ["a"] + ["b"] * 5), trace("smg", ["a", "b", "b", "b", "b", "c"]), trace("none", ["x"] * 7)]
    assert stalled_share(traces, min_steps=5) == {"smg": 0.5, "none": 1.0}
    assert stalled_share(traces, min_steps=4) == {"smg": 1.0, "none": 1.0}


def test_traces_round_trip_and_bad_lines_name_file_and_line(tmp_path):
    steps = (TraceStep("k1", Action("tap", (0.5, 0.5)), ("a#1",)), TraceStep("k2", Action("done"), ()))
    traces = [Trace("e1", "smg", "image", 2, 1, "goal", steps, "done", True)]
    path = tmp_path / "traces.jsonl"
    save_traces(path, traces)
    assert load_traces(path) == traces
    d = json.loads(path.read_text())
    d["steps"][0]["action"]["type"] = "fly"
    path.write_text(json.dumps(d) + "\n")
    with pytest.raises(DataError, match=r"traces.jsonl, line 1: field 'steps\[0\]\.action\.type'"):
        load_traces(path)
    path.write_text("{not json\n")
    with pytest.raises(DataError, match="line 1"):
        load_traces(path)


def test_replay_tasks_keep_the_demonstration_seed_first_then_vary_it(demos):
    _, runs = demos
    from guimem.core.data import Episode
    episodes = [ep for _, _, ep in runs]
    replays = replay_tasks(episodes, 3)
    assert len(replays) == 3 * len(episodes)
    assert [r.run for r in replays] == [0] * len(episodes) + [1] * len(episodes) + [2] * len(episodes)
    first = replays[: len(episodes)]
    assert [r.seed for r in first] == [ep.provenance["seed"] for ep in episodes]
    assert [r.task.goal for r in first] == [ep.goal for ep in episodes]
    assert len({(r.episode, r.seed) for r in replays}) == len(replays)
    bad = Episode(episodes[0].id, episodes[0].app, episodes[0].goal, episodes[0].steps, episodes[0].final)
    with pytest.raises(DataError, match="provenance"):
        replay_tasks([bad], 1)


# ----------------------------------------------------------------------------- speed-ups (nothing faked)
from collections import OrderedDict

import numpy as np

from guimem.eval.closed_loop import LoopStats, pick_tasks, replay_world_config


class FixedPolicy:
    """Taps one spot whatever it sees (a stuck actor); counts the inputs it was asked about."""

    def __init__(self, point=(0.5, 0.5)):
        self.point, self.asked = point, 0

    def act(self, inputs, output_hidden_states=False):
        self.asked += len(inputs)
        return [PolicyOutput(Action("tap", self.point)) for _ in inputs]


class ScreenPolicy:
    """A deterministic function of its input: a tap or back chosen by a hash of the screen, goal
    and memory text (so it wanders into loops), and done once its history holds three backs."""

    def __init__(self):
        self.asked = 0

    def act(self, inputs, output_hidden_states=False):
        import hashlib
        out = []
        for x in inputs:
            self.asked += 1
            if sum(a.type == "back" for a in x.history) >= 3:
                out.append(PolicyOutput(Action("done")))
                continue
            h = hashlib.sha256(x.screenshot.tobytes() + repr((x.goal, x.memory_text)).encode()).digest()
            out.append(PolicyOutput(Action("back") if h[0] < 40 else Action("tap", (h[1] / 255, h[2] / 255))))
        return out


class EmbeddedMemory(FakeMemory):
    """A memory with an image embedder: records whether queries came as images or vectors."""

    class Embedder:
        name, dim = "fake", 3

        def __init__(self):
            self.calls, self.images = 0, 0

        def embed(self, images):
            self.calls += 1
            self.images += len(images)
            return np.array([[float(np.asarray(im).mean()), float(i), 1.0] for i, im in enumerate(images)],
                            dtype=np.float32)

    def __init__(self):
        super().__init__()
        self.image_embedder = self.Embedder()
        self.queries: list[type] = []
        self.text_renders = self.image_renders = 0

    def retrieve(self, screenshot, goal, k=1):
        self.queries.append(type(screenshot))
        return super().retrieve(screenshot, goal, k)

    def render_text(self, retrieved):
        self.text_renders += 1
        return super().render_text(retrieved)

    def render_image(self, retrieved):
        self.image_renders += 1
        return super().render_image(retrieved)


def _replays(runs, n_seeds=2):
    from guimem.eval.closed_loop import replay_tasks
    return replay_tasks([ep for _, _, ep in runs], n_seeds)


def test_memoised_answers_give_the_same_traces_and_ask_less(demos):
    config, runs = demos
    tasks = _replays(runs)
    out = {}
    for memo in (True, False):
        policy = ScreenPolicy()
        stats = LoopStats()
        out[memo] = (run_closed_loop(lambda: World(config), tasks, policy, FakeMemory(), "fake", modality="text",
                                     batch_size=5, progress=False, memo=memo, stats=stats), policy.asked, stats)
    assert [t.to_dict() for t in out[True][0]] == [t.to_dict() for t in out[False][0]]
    assert out[True][2].steps == out[False][2].steps == out[False][1] == sum(len(t.steps) for t in out[True][0])
    assert out[True][1] == out[True][2].actor_inputs < out[False][1]
    assert {t.ended for t in out[True][0]} == {"done", "budget"}


def test_a_stuck_actor_is_asked_once_per_distinct_input(demos):
    config, runs = demos
    tasks = _replays(runs, 1)
    policy, stats = FixedPolicy(), LoopStats()
    traces = run_closed_loop(lambda: World(config), tasks, policy, None, "none", modality="none", history_len=2,
                             progress=False, stats=stats)
    assert all(t.ended == "budget" and len(t.steps) == config.max_steps for t in traces)
    distinct = {(t.goal, s.screen_key, tuple(x.action for x in t.steps[max(0, i - 2):i]))
                for t in traces for i, s in enumerate(t.steps)}
    assert policy.asked == stats.actor_inputs <= len(distinct) < stats.steps  # (UI tree is fixed by the screen key)


def test_memory_is_read_once_per_goal_and_screen_and_renders_only_what_is_shown(demos):
    config, runs = demos
    tasks = _replays(runs)
    for modality, texts, images in [("text", True, False), ("image", False, True), ("both", True, True)]:
        memory, stats = EmbeddedMemory(), LoopStats()
        traces = run_closed_loop(lambda: World(config), tasks, ScreenPolicy(), memory, "fake", modality=modality,
                                 progress=False, stats=stats)
        pairs = {(t.goal, s.screen_key) for t in traces for s in t.steps}
        assert memory.calls == stats.retrievals == len(pairs)
        assert set(memory.queries) == {np.ndarray}  # screens went to retrieval as embeddings
        assert memory.image_embedder.images == stats.embedded == len({k for _, k in pairs})
        assert memory.image_embedder.calls <= max(len(t.steps) for t in traces)  # one batch per tick at most
        goals = {t.goal for t in traces}
        assert stats.renders == len(goals)  # FakeMemory's ids follow the goal: one rendering each
        assert (memory.text_renders > 0, memory.image_renders > 0) == (texts, images)
        assert all(s.retrieved == (f"m:{t.goal}",) for t in traces for s in t.steps)


def test_query_vectors_are_shared_and_embed_each_screen_once(demos):
    config, runs = demos
    task, seed, _ = runs[0]
    memory = EmbeddedMemory()
    vectors = QueryVectors(memory.image_embedder)
    obs = World(config).reset(task, seed)
    assert vectors.add([obs, obs]) == 1 and vectors.add([obs]) == 0
    assert memory.image_embedder.calls == 1
    reader = MemoryReader(memory, "text", 1, vectors)
    first = reader.read(obs, task.goal)
    assert reader.read(obs, task.goal) == first and memory.calls == 1
    assert MemoryReader(None, "text").read(obs, task.goal) == (None, None, ())
    assert MemoryReader(memory, "none").read(obs, task.goal) == (None, None, ())


def test_worlds_sharing_a_render_cache_show_the_same_screens(demos):
    config, runs = demos
    shared = OrderedDict()
    for task, seed, ep in runs[:3]:
        own, other = World(config), World(config, image_cache=shared)
        a, b = own.reset(task, seed), other.reset(task, seed)
        assert (a.key, a.elements, a.image.tobytes()) == (b.key, b.elements, b.image.tobytes())
        for step in ep.steps:
            (a, da, ia), (b, db, ib) = own.step(step.action), other.step(step.action)
            assert (a.key, a.image.tobytes(), da, ia) == (b.key, b.image.tobytes(), db, ib)
            if da:
                break
    assert shared


def test_pick_tasks_is_a_seeded_sample_in_store_order():
    items = list(range(20))
    assert pick_tasks(items, 0, 0) == items and pick_tasks(items, 25, 0) == items
    a = pick_tasks(items, 8, 0)
    assert len(a) == 8 and a == sorted(a) and a == pick_tasks(items, 8, 0) and a != items[:8]
    assert pick_tasks(items, 8, 1) != a


def test_replay_world_config_reads_the_store_manifest(tmp_path):
    from guimem.core.store import FORMAT, VERSION
    base = {"format": FORMAT, "version": VERSION, "episodes": 0, "steps": 0, "screens": 0}
    (tmp_path / "manifest.json").write_text(json.dumps({**base, "meta": {"world": {"dialog_prob": 0.7, "max_steps": 30}}}))
    config = replay_world_config(tmp_path, 12)
    assert (config.dialog_prob, config.max_steps) == (0.7, 12)
    assert replay_world_config(tmp_path).max_steps == 30
    (tmp_path / "manifest.json").write_text(json.dumps({**base, "meta": {}}))
    with pytest.raises(DataError, match=r"manifest.json.*meta.world|meta.world.*manifest.json"):
        replay_world_config(tmp_path)


# ---------------------------------------------------------------- actors chosen by params, scored through act
def test_load_actor_refuses_a_blank_choice(tmp_path):
    from guimem.actors.loading import load_actor

    for bad in ("", "  ", None, 3):
        with pytest.raises(DataError, match="actor_model"):
            load_actor(bad, tmp_path)


def test_load_actor_reads_a_hugging_face_folder_from_disk_only(tmp_path):
    from guimem.actors.loading import load_actor

    with pytest.raises(OSError):  # an id that is neither on disk nor in the offline cache: no download
        load_actor(str(tmp_path / "no-such-model"), tmp_path)


def test_the_actor_is_named_by_its_folder(tmp_path):
    """A folder holding a saved miniature names the miniature (as "mini" with actor_dir does), the
    default names the actor stage's folder before it exists, any other folder a Hugging Face VLM."""
    from actor_fixtures import tiny_actor
    from guimem.actors.hf.tiny import save_tiny_random_llava
    from guimem.actors.loading import MINI_ACTOR, ActorSpec, load_actor
    from guimem.actors.mini.policy import MiniActor

    folder = tmp_path / "model"
    tiny_actor().save(folder)
    by_folder = ActorSpec(str(folder))
    assert by_folder == ActorSpec(MINI_ACTOR, str(folder)) and by_folder.miniature
    assert isinstance(load_actor(str(folder), ""), MiniActor)
    default = ActorSpec()
    assert default.miniature and default.actor_dir == os.path.abspath("pretrained/actor")
    vlm = save_tiny_random_llava(str(tmp_path / "vlm"))
    assert not ActorSpec(vlm).miniature and ActorSpec(vlm).actor_model == vlm


def test_paired_success_counts_discordant_episodes_and_tests_them():
    from guimem.eval.closed_loop import Trace, paired_success

    def trace(ep, memory, run, success):
        return Trace(ep, memory, "text", 0, run, "g", (), "done", success)

    traces = [trace(f"e{i}", "none", r, False) for i in range(6) for r in range(2)]
    traces += [trace(f"e{i}", "smg", r, i < 5) for i in range(6) for r in range(2)]
    traces[0] = trace("e0", "none", 0, True)  # one pair where only no memory succeeds
    c = paired_success(traces, "smg")
    assert c["pairs"] == 12 and c["fixed"] == 9 and c["broken"] == 0
    assert c["p_value"] < 0.01
    with pytest.raises(DataError, match="memory"):
        paired_success(traces, "flat")
