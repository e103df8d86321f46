"""Closed-loop runs: replaying demonstrations reproduces their outcomes; traces round-trip."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from guimem.closed_loop import (Replay, TraceStep, Trace, replay_tasks, load_traces, markdown_table, memory_input, run_closed_loop,
                                save_traces, success_table)
from guimem.data import Action, DataError
from guimem.demonstrator import run_episode
from guimem.policy import PolicyInput, PolicyOutput
from guimem.world import TEMPLATES, Task, World, WorldConfig, sample_task

import random


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
    """Six demonstrations of distinct goals (noisy ones included), with their task and seed."""
    config = WorldConfig(dialog_prob=0.5, p_wrong_tap=0.2, p_give_up=0.3, p_wrong_state=0.2)
    world, rng, out, goals = World(config), random.Random(3), [], set()
    for seed, template in enumerate(sorted(TEMPLATES)[::5]):
        task = sample_task(template, rng)
        if task.goal in goals:
            continue
        goals.add(task.goal)
        out.append((task, seed, run_episode(world, task, seed, f"ep{seed}", None, config)))
    return config, out


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


def test_memory_is_retrieved_every_step_and_traced(demos):
    config, runs = demos
    policy = ReplayPolicy({ep.goal: [s.action for s in ep.steps] for _, _, ep in runs})
    memory = FakeMemory()
    traces = run_closed_loop(lambda: World(config), [Replay(ep.id, t, s) for t, s, ep in runs], policy, memory,
                             "fake", modality="text", history_len=100, progress=False)
    n_steps = sum(len(t.steps) for t in traces)
    assert memory.calls == n_steps
    assert all(step.retrieved == (f"m:{t.goal}",) for t in traces for step in t.steps)


def test_memory_input_shows_only_the_chosen_modality(demos):
    config, runs = demos
    task, seed, _ = runs[0]
    obs = World(config).reset(task, seed)
    for modality, has_text, has_image in [("none", False, False), ("text", True, False),
                                          ("image", False, True), ("both", True, True)]:
        inputs, ids = memory_input(obs, task.goal, [], FakeMemory(), modality, 1, 4)
        assert (inputs.memory_text is not None, inputs.memory_image is not None) == (has_text, has_image)
        assert inputs.modality == modality
        assert ids == (() if modality == "none" else (f"m:{task.goal}",))


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


def test_traces_round_trip_and_bad_lines_name_file_and_line(tmp_path):
    steps = (TraceStep("k1", Action("tap", (0.5, 0.5)), ("a#1",)), TraceStep("k2", Action("done"), ()))
    traces = [Trace("e1", "smg", "image", 2, 1, "goal", steps, "done", True)]
    path = tmp_path / "traces.jsonl"
    save_traces(path, traces)
    assert load_traces(path) == traces
    d = json.loads(path.read_text())
    d["steps"][0]["action"]["type"] = "fly"
    path.write_text(json.dumps(d) + "\n")
    with pytest.raises(DataError, match=r"traces.jsonl: field 'line 1.steps\[0\]|traces.jsonl: field 'line 1"):
        load_traces(path)
    path.write_text("{not json\n")
    with pytest.raises(DataError, match="line 1"):
        load_traces(path)


def test_replay_tasks_keep_the_demonstration_seed_first_then_vary_it(demos):
    _, runs = demos
    from guimem.data import Episode
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
