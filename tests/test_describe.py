"""guimem.core.describe: hit-testing, regions and action phrases."""

import pytest

from guimem.core.data import Action, DataError, UIElement
from guimem.core.describe import (
    describe_action,
    describe_actions,
    element_label,
    region_words,
    swipe_direction,
    target_element,
)

LIST = UIElement("list", "list", bounds=(0.0, 0.2, 1.0, 0.9))
ROW = UIElement("row1", "list_item", text="Milk", bounds=(0.0, 0.2, 1.0, 0.3), clickable=True)
PREFS = UIElement("prefs", "button", text="Preferences", bounds=(0.1, 0.4, 0.5, 0.5), clickable=True)
GEAR = UIElement("gear", "icon", bounds=(0.85, 0.02, 0.95, 0.08), clickable=True)
MENU = UIElement("menu", "icon", description="More options", bounds=(0.0, 0.0, 0.1, 0.08), clickable=True)
SEARCH = UIElement("search", "field", text="Search", bounds=(0.15, 0.0, 0.8, 0.08), clickable=True)
LABEL = UIElement("title", "text", text="Settings", bounds=(0.85, 0.02, 0.95, 0.08), clickable=False)
SCREEN = (LIST, ROW, PREFS, GEAR, MENU, SEARCH, LABEL)


@pytest.mark.parametrize("point, words", [
    ((0.9, 0.05), "top right"), ((0.1, 0.5), "middle left"), ((0.5, 0.5), "center"),
    ((0.5, 0.95), "bottom center"), ((0.0, 0.0), "top left"), ((1.0, 1.0), "bottom right"),
    ((1 / 3, 2 / 3), "bottom center"),  # a boundary goes to the later third
])
def test_region_words(point, words):
    assert region_words(point) == words


def test_target_is_topmost_clickable():
    # LABEL lies on top of GEAR but is not clickable: the tap goes to GEAR.
    assert target_element(Action("tap", (0.9, 0.05)), SCREEN) is GEAR
    # ROW is drawn after LIST and is the clickable one.
    assert target_element(Action("tap", (0.5, 0.25)), SCREEN) is ROW
    over = UIElement("dialog_ok", "button", text="OK", bounds=(0.0, 0.2, 1.0, 0.3), clickable=True)
    assert target_element(Action("tap", (0.5, 0.25)), SCREEN + (over,)) is over
    assert target_element(Action("tap", (0.5, 0.95)), SCREEN) is None
    assert target_element(Action("back"), SCREEN) is None


def test_labels():
    assert element_label(PREFS) == '"Preferences"'
    assert element_label(MENU) == '"More options"'
    assert element_label(GEAR) == "an unlabeled icon"


@pytest.mark.parametrize("action, phrase", [
    (Action("tap", (0.3, 0.45)), 'tap "Preferences" (button)'),
    (Action("tap", (0.9, 0.05)), "tap an unlabeled icon at top right"),
    (Action("tap", (0.05, 0.05)), 'tap "More options" (icon)'),
    (Action("long_press", (0.5, 0.25)), 'long press "Milk" (list_item)'),
    (Action("tap", (0.5, 0.95)), "tap at bottom center"),
    (Action("type", text="milk"), 'type "milk" into "Search"'),
    (Action("swipe", (0.5, 0.8), end=(0.5, 0.3)), "swipe up on the list"),
    (Action("swipe", (0.5, 0.95), end=(0.1, 0.95)), "swipe left at bottom center"),
    (Action("back"), "back"), (Action("home"), "home"), (Action("enter"), "press enter"),
    (Action("open_app", text="Notes"), 'open app "Notes"'), (Action("done"), "done"),
    (Action("impossible"), "declare the task impossible"),
])
def test_describe_action(action, phrase):
    assert describe_action(action, SCREEN) == phrase


def test_type_without_a_unique_field():
    other = UIElement("f2", "field", text="Name", bounds=(0.0, 0.9, 1.0, 1.0), clickable=True)
    assert describe_action(Action("type", text="x"), SCREEN + (other,)) == 'type "x"'
    assert describe_action(Action("type", text="x"), SCREEN + (other,), field=other) == 'type "x" into "Name"'


def test_swipe_direction_tie_is_vertical():
    assert swipe_direction(Action("swipe", (0.5, 0.5), end=(0.7, 0.7))) == "down"
    assert swipe_direction(Action("swipe", (0.5, 0.5), end=(0.3, 0.45))) == "left"


def test_a_swipe_that_does_not_move_has_no_direction_and_reads_so():
    still = Action("swipe", (0.5, 0.5), end=(0.5, 0.5))
    assert swipe_direction(still) == "none"
    assert describe_action(still).startswith("swipe in place")
    with pytest.raises(DataError, match="type"):
        swipe_direction(Action("tap", (0.5, 0.5)))


def test_describe_actions_types_into_the_tapped_field():
    other = UIElement("f2", "field", text="Name", bounds=(0.0, 0.9, 1.0, 1.0), clickable=True)
    screen = SCREEN + (other,)
    actions = [Action("tap", (0.5, 0.95)), Action("type", text="Ann"), Action("type", text="!"), Action("back"),
               Action("type", text="z")]
    assert describe_actions(actions, [screen] * 5) == [
        'tap "Name" (field)', 'type "Ann" into "Name"', 'type "!" into "Name"', "back", 'type "z"']
    with pytest.raises(ValueError):
        describe_actions(actions, [screen])
