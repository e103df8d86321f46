"""The adb backend, against a fake device that records what it is asked to do."""

from __future__ import annotations

import pytest

from fake_device import env
from guimem.core.data import Action, DataError
from guimem.core.env import Env
from guimem.phone.tasks import TEMPLATES, make_task
from guimem.real.device import parse_hierarchy, role_of

TASK = make_task("settings.network", TEMPLATES["settings.network"].combos()[0])


def test_reset_goes_home_and_observes():
    e, dev = env(image_width=180)
    obs = e.reset(TASK, 0)
    assert dev.calls == [("keyevent", 3)]
    assert obs.image.mode == "RGB" and obs.image.size == (180, 400)
    assert obs.screen is None and "screen" not in obs.to_observation("s.png").to_dict()  # a phone's screen type is unknown
    assert [x.id for x in obs.elements] == ["android:id/title", "com.x:id/more", "node3", "node6"]
    more = obs.elements[1]
    assert more.role == "icon" and more.description == "More options" and more.clickable
    assert more.bounds == (round(960 / 1080, 4), round(100 / 2400, 4), 1.0, round(220 / 2400, 4))
    assert obs.elements[3].bounds == (0.0, round(2300 / 2400, 4), 1.0, 1.0)  # clipped to the screen


def test_actions_map_to_adb_calls():
    e, dev = env()
    e.reset(TASK, 0)
    e.step(Action("tap", point=(0.5, 0.25)))
    e.step(Action("long_press", point=(0.0, 1.0)))
    e.step(Action("swipe", point=(0.5, 0.8), end=(0.5, 0.2)))
    e.step(Action("type", text="hello"))
    e.step(Action("back"))
    e.step(Action("enter"))
    e.step(Action("home"))
    e.step(Action("open_app", text="settings"))
    _, _, info = e.step(Action("open_app", text="Nope"))
    assert info["effect"] == "no such app"
    assert dev.calls[1:] == [("click", 540, 600), ("swipe", 0, 2399, 0, 2399, 0.8), ("swipe", 540, 1919, 540, 480, 0.3),
                             ("send_keys", "hello"), ("keyevent", 4), ("keyevent", 66), ("keyevent", 3),
                             ("app_start", "com.android.settings")]


def test_screens_change_keys_and_episode_ends():
    e, dev = env(max_steps=2)
    first = e.reset(TASK, 0)
    obs, done, info = e.step(Action("tap", point=(0.5, 0.5)))
    assert obs.key != first.key and not done
    obs, done, info = e.step(Action("back"))
    assert done and info["ended"] == "budget" and info["success"] is None
    with pytest.raises(RuntimeError):
        e.step(Action("back"))


def test_checker_decides_success():
    e, _ = env(checker=lambda device, task: task.template == "settings.network")
    e.reset(TASK, 0)
    assert e.step(Action("done"))[2]["success"] is True
    e.reset(TASK, 0)
    assert e.step(Action("impossible"))[2]["success"] is False


def test_device_env_is_an_env():
    e: Env = env()[0]
    assert e.reset(TASK, 0).elements


def test_bad_hierarchy_is_a_data_error():
    with pytest.raises(DataError, match="hierarchy"):
        parse_hierarchy("<hierarchy><node", (1080, 2400))
    with pytest.raises(DataError, match=r"hierarchy.node\[0\].bounds"):
        parse_hierarchy('<hierarchy><node text="a" clickable="true" bounds="[1,2,3,4]"/></hierarchy>', (1080, 2400))


def test_checked_selected_or_focused_nodes_are_selected():
    xml = ('<hierarchy><node text="Wi-Fi" class="android.widget.Switch" checked="true" clickable="true" '
           'bounds="[0,0][100,50]"/><node text="Dark" class="android.widget.Switch" checked="false" clickable="true" '
           'bounds="[0,50][100,100]"/><node text="" class="android.widget.EditText" focused="true" clickable="true" '
           'bounds="[0,100][100,150]"/></hierarchy>')
    assert [e.selected for e in parse_hierarchy(xml, (100, 200))] == [True, False, True]


def test_roles_from_class_names():
    assert role_of("android.widget.EditText") == "field"
    assert role_of("androidx.appcompat.widget.SwitchCompat") == "toggle"
    assert role_of("android.widget.ImageButton") == "icon"
    assert role_of("android.widget.Button") == "button"
    assert role_of("android.view.ViewGroup") == "view"
