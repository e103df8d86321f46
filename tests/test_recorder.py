"""Recording demonstrations from a (fake) phone into an episode store: what each step saw, the
action taken, the final screen; scripted and actor-driven; nothing written when a recording fails."""

from __future__ import annotations

import pytest

from fake_device import env
from guimem.core.data import Action, DataError
from guimem.core.env import Task
from guimem.core.policy import PolicyOutput
from guimem.core.store import load_episodes, load_screenshot
from guimem.real.recorder import actor_choice, record_episodes, scripted

TASK = Task("Open Settings and look at the network", app="settings")


def test_a_scripted_demonstration_is_stored_as_seen(tmp_path):
    e, dev = env(image_width=90)
    actions = [Action("open_app", text="Settings"), Action("tap", point=(0.5, 0.15)), Action("done")]
    record_episodes(e, [TASK], scripted(actions), tmp_path / "store", provenance={"device": "fake"})
    (ep,) = load_episodes(tmp_path / "store")  # every screenshot verified
    assert [s.action for s in ep.steps] == actions and ep.goal == TASK.goal and ep.app == "settings"
    assert ep.steps[1].elements[0].text == "Settings"  # the UI tree the device dumped at that step
    assert load_screenshot(tmp_path / "store", ep.final.screenshot).size == (90, 200)
    assert ep.steps[1].screenshot != ep.steps[2].screenshot  # the tap changed the (fake) screen
    assert ep.provenance == {"source": "device", "ended": "done", "device": "fake"} and ep.success is None
    assert ("app_start", "com.android.settings") in dev.calls


def test_an_actor_drives_and_the_budget_ends_the_episode(tmp_path):
    class Tapper:
        seen: list = []

        def act(self, inputs):
            self.seen.extend(inputs)
            return [PolicyOutput(action=Action("tap", point=(0.5, 0.5))) for _ in inputs]

    actor = Tapper()
    e, _ = env(max_steps=3)
    record_episodes(e, [TASK, TASK], actor_choice(actor, history_len=1), tmp_path / "store", ids=["a", "b"])
    eps = load_episodes(tmp_path / "store")
    assert [e.id for e in eps] == ["a", "b"] and all(len(x.steps) == 3 for x in eps)
    assert eps[0].provenance["ended"] == "budget" and actor.seen[2].history == (Action("tap", point=(0.5, 0.5)),)
    assert actor.seen[0].goal == TASK.goal and actor.seen[0].elements  # it saw the dumped UI tree
    # what each remembered action touched: the tree it was taken on, one per action, and again from an episode's start
    assert actor.seen[0].history_screens == () and actor.seen[2].history_screens == (actor.seen[1].elements,)
    assert actor.seen[3].history == () and actor.seen[3].history_screens == ()


def test_answers_are_kept_and_a_failed_recording_writes_nothing(tmp_path):
    e, _ = env()
    record_episodes(e, [TASK], scripted([Action("answer", text="Wi-Fi is on")]), tmp_path / "store")
    (ep,) = load_episodes(tmp_path / "store")
    assert ep.provenance["answer"] == "Wi-Fi is on" and ep.provenance["ended"] == "answer"
    with pytest.raises(DataError, match="ran out"):
        record_episodes(e, [TASK], scripted([Action("back")]), tmp_path / "other")
    assert not (tmp_path / "other").exists()
    with pytest.raises(DataError, match="one per task"):
        record_episodes(e, [TASK], scripted([]), tmp_path / "other", ids=["a", "b"])


def test_a_recorded_store_is_taken_in_like_any_recording(tmp_path):
    from guimem.real.importers.store import import_store

    e, _ = env()
    record_episodes(e, [TASK], scripted([Action("back"), Action("done")]), tmp_path / "phone")
    (ep,) = import_store(tmp_path / "phone", tmp_path / "copy", max_side=100, labels={"episode-0000": ["home", "home"]})
    assert ep.provenance["source_name"] == "episode-0000" and [o.screen for o in ep.observations] == ["home"] * 3
    assert load_screenshot(tmp_path / "copy", ep.steps[0].screenshot).size == (45, 100)
    assert len(load_episodes(tmp_path / "phone")) == 1  # the source is left as it was
