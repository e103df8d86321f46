"""The AITW and LearnGUI action-matching rules, each with its edges."""

from __future__ import annotations

import pytest

from guimem.core.data import Action, DataError, UIElement
from guimem.core.describe import swipe_direction
from guimem.eval.action_match import (
    MatchConfig,
    action_match,
    aitw_kind,
    bounds_to_yxhw,
    enlarge_box,
    in_box,
    learngui_tap_tolerance_px,
    step_accuracy,
    texts_match,
    token_f1,
)

AITW = MatchConfig()
LEARN = MatchConfig(variant="learngui", screen_size_px=(1000, 2000))


def tap(x: float, y: float) -> Action:
    return Action("tap", point=(x, y))


def swipe(x0: float, y0: float, x1: float, y1: float) -> Action:
    return Action("swipe", point=(x0, y0), end=(x1, y1))


def element(x0: float, y0: float, x1: float, y1: float) -> UIElement:
    return UIElement(id="e", role="button", bounds=(x0, y0, x1, y1), clickable=True)


def aitw(pred: Action, true: Action, elements=(), config: MatchConfig = AITW) -> bool:
    return action_match(pred, true, elements, config)


def learn(pred: Action, true: Action, config: MatchConfig = LEARN) -> bool:
    return action_match(pred, true, (), config)


# ----------------------------------------------------------------------------- AITW: non-touch
def test_aitw_non_touch_actions_match_on_type_only():
    assert aitw(Action("back"), Action("back"))
    assert not aitw(Action("back"), Action("home"))
    assert not aitw(Action("done"), Action("impossible"))
    assert aitw(Action("type", text="milk"), Action("type", text="bread"))  # text ignored
    assert aitw(Action("open_app", text="Mail"), Action("open_app", text="Maps"))
    assert not aitw(Action("type", text="milk"), tap(0.5, 0.5))
    assert not aitw(tap(0.5, 0.5), Action("enter"))


def test_aitw_text_rule_can_be_chosen():
    f1 = MatchConfig(text_rule="token_f1")
    assert aitw(Action("type", text="buy milk now"), Action("type", text="Milk"), config=f1)
    assert not aitw(Action("type", text="bread"), Action("type", text="milk"), config=f1)
    contain = MatchConfig(text_rule="contain")
    assert aitw(Action("type", text="milk"), Action("type", text="Buy  MILK"), config=contain)


def test_app_names_compared_only_when_asked():
    on = MatchConfig(match_app_name=True)
    assert aitw(Action("open_app", text=" mail "), Action("open_app", text="Mail"), config=on)
    assert not aitw(Action("open_app", text="Maps"), Action("open_app", text="Mail"), config=on)


# ----------------------------------------------------------------------------- AITW: tap vs swipe
def test_touch_within_0_04_is_a_tap_inclusive():
    short = swipe(0.0, 0.5, 0.04, 0.5)  # lift exactly 0.04 from the touch
    assert aitw_kind(short) == "tap"
    assert aitw(short, tap(0.0, 0.5))
    longer = swipe(0.0, 0.5, 0.0, 0.55)
    assert aitw_kind(longer) == "swipe"
    assert not aitw(longer, tap(0.0, 0.5))


def test_tap_never_matches_swipe_even_at_the_same_touch_point():
    assert not aitw(tap(0.5, 0.5), swipe(0.5, 0.5, 0.5, 0.9), elements=[element(0.0, 0.0, 1.0, 1.0)])
    assert not aitw(swipe(0.5, 0.5, 0.5, 0.9), tap(0.5, 0.5))


def test_long_press_is_scored_as_a_tap_under_aitw():
    assert aitw_kind(Action("long_press", point=(0.3, 0.3))) == "tap"
    assert aitw(Action("long_press", point=(0.5, 0.5)), tap(0.55, 0.5))
    assert not aitw(Action("long_press", point=(0.5, 0.5)), swipe(0.5, 0.5, 0.5, 0.9))


# ----------------------------------------------------------------------------- AITW: taps
def test_taps_within_0_14_match_inclusive():
    assert aitw(tap(0.0, 0.0), tap(0.14, 0.0))  # exactly 0.14 apart
    assert not aitw(tap(0.0, 0.0), tap(0.15, 0.0))
    assert not aitw(tap(0.0, 0.0), tap(0.1, 0.1))  # 0.1414... > 0.14


def test_box_conversion_and_enlargement():
    assert bounds_to_yxhw((0.25, 0.5, 0.75, 0.625)) == (0.5, 0.25, 0.125, 0.5)
    y, x, h, w = enlarge_box((0.5, 0.4, 0.1, 0.2))
    assert (y, x, h, w) == pytest.approx((0.43, 0.26, 0.24, 0.48))


def test_enlarged_box_is_clipped_at_the_screen_border():
    # top-left corner: y' and x' clip at 0, the size still grows 2.4x (the reference's quirk)
    assert enlarge_box((0.0, 0.0, 0.1, 0.1)) == pytest.approx((0.0, 0.0, 0.24, 0.24))
    # a tall box: h' clips at 1
    assert enlarge_box((0.5, 0.5, 0.5, 0.5)) == pytest.approx((0.15, 0.15, 1.0, 1.0))
    corner = [element(0.0, 0.0, 0.1, 0.1)]
    assert aitw(tap(0.0, 0.0), tap(0.23, 0.23), elements=corner)  # 0.325 apart, both in the box
    assert not aitw(tap(0.0, 0.0), tap(0.25, 0.25), elements=corner)  # past the clipped box


def test_taps_in_the_same_enlarged_box_match():
    row = [element(0.4, 0.5, 0.6, 0.6)]  # enlarged: x in [0.26, 0.74], y in [0.43, 0.67]
    assert aitw(tap(0.27, 0.5), tap(0.73, 0.5), elements=row)  # 0.46 apart
    assert not aitw(tap(0.27, 0.5), tap(0.8, 0.5), elements=row)
    assert not aitw(tap(0.27, 0.5), tap(0.73, 0.5))  # no boxes: distance alone fails


def test_taps_in_different_boxes_do_not_match():
    boxes = [element(0.0, 0.0, 0.1, 0.1), element(0.8, 0.8, 0.9, 0.9)]
    assert not aitw(tap(0.05, 0.05), tap(0.85, 0.85), elements=boxes)


def test_a_point_exactly_on_the_enlarged_edge_is_inside():
    e = element(0.4, 0.5, 0.6, 0.6)
    y, x, h, w = enlarge_box(bounds_to_yxhw(e.bounds))
    top_left, bottom_right = (x, y), (x + w, y + h)
    assert in_box(top_left, (y, x, h, w)) and in_box(bottom_right, (y, x, h, w))
    assert aitw(tap(*top_left), tap(*bottom_right), elements=[e])
    assert not aitw(tap(x - 1e-9, y), tap(*bottom_right), elements=[e])


# ----------------------------------------------------------------------------- AITW: swipes
def test_swipes_match_on_the_dominant_axis_whatever_the_sign():
    down, up = swipe(0.5, 0.2, 0.5, 0.8), swipe(0.5, 0.8, 0.52, 0.3)
    left = swipe(0.8, 0.5, 0.2, 0.5)
    assert aitw(down, up)  # scroll direction ignored
    assert not aitw(down, left)
    assert aitw(left, swipe(0.1, 0.5, 0.9, 0.55))


def test_dominant_axis_tie_goes_vertical():
    diagonal = swipe(0.2, 0.2, 0.5, 0.5)  # |dx| == |dy|
    assert aitw(diagonal, swipe(0.5, 0.9, 0.5, 0.1))
    assert not aitw(diagonal, swipe(0.1, 0.5, 0.9, 0.5))
    assert swipe_direction(diagonal) == "down"


# ----------------------------------------------------------------------------- LearnGUI
def test_learngui_types_must_match():
    assert not learn(Action("long_press", point=(0.5, 0.5)), tap(0.5, 0.5))
    assert not learn(Action("back"), Action("home"))
    assert learn(Action("done"), Action("done"))
    assert learn(Action("open_app", text="Mail"), Action("open_app", text="Maps"))


def test_learngui_tap_tolerance_is_in_pixels_of_the_width():
    assert learngui_tap_tolerance_px(1000) == 140
    assert learngui_tap_tolerance_px(1440) == 201  # int(201.6): truncated like the reference
    assert learn(tap(0.0, 0.0), tap(0.14, 0.0))  # 140 px along x
    assert learn(tap(0.0, 0.0), tap(0.0, 0.07))  # 140 px along y on a 2000 px tall screen
    assert not learn(tap(0.0, 0.0), tap(0.0, 0.1))  # 200 px: too far, though 0.1 < 0.14
    assert not learn(tap(0.0, 0.0), tap(0.15, 0.0))
    assert learn(Action("long_press", point=(0.5, 0.5)), Action("long_press", point=(0.6, 0.5)))
    wide = MatchConfig(variant="learngui", screen_size_px=(1440, 3040))
    assert not learn(tap(0.0, 0.0), tap(0.14, 0.0), config=wide)  # 201.6 px > 201


def test_learngui_swipes_match_on_direction_with_sign():
    down = swipe(0.5, 0.2, 0.5, 0.8)
    assert learn(down, swipe(0.3, 0.4, 0.35, 0.5))
    assert not learn(down, swipe(0.5, 0.8, 0.5, 0.2))  # up: opposite sign
    assert not learn(down, swipe(0.2, 0.5, 0.8, 0.5))
    assert [swipe_direction(s) for s in (swipe(0.5, 0.8, 0.5, 0.2), swipe(0.8, 0.5, 0.2, 0.5),
                                        swipe(0.2, 0.5, 0.8, 0.5), swipe(0.5, 0.5, 0.5, 0.5))] == [
        "up", "left", "right", "none"]
    assert learn(swipe(0.5, 0.5, 0.5, 0.5), swipe(0.2, 0.2, 0.2, 0.2))
    assert not learn(swipe(0.5, 0.5, 0.5, 0.5), down)


def test_learngui_typing_uses_token_f1_by_default():
    assert LEARN.rule == "token_f1"
    assert learn(Action("type", text="a b c"), Action("type", text="A"))  # F1 exactly 0.5
    assert not learn(Action("type", text="a b c"), Action("type", text="a d"))  # 0.4
    ignore = MatchConfig(variant="learngui", text_rule="ignore", screen_size_px=(1000, 2000))
    assert learn(Action("type", text="x"), Action("type", text="y"), config=ignore)


# ----------------------------------------------------------------------------- text rules
def test_token_f1_values_and_empty_texts():
    assert token_f1("a b c", "a") == 0.5
    assert token_f1("a d", "a b c") == pytest.approx(0.4)
    assert token_f1("Milk milk", "MILK") == 1.0  # sets, lower-cased
    assert token_f1("", "") == 1.0
    assert token_f1("  ", None) == 1.0  # whitespace-only has no tokens
    assert token_f1("", "milk") == 0.0 and token_f1("milk", "") == 0.0


def test_text_rules_on_edges():
    assert texts_match("anything", "else", "ignore")
    assert texts_match("", "", "contain") and texts_match(" ", "", "contain")
    assert not texts_match("", "milk", "contain") and not texts_match("milk", "", "contain")
    assert texts_match("buy milk", "Buy   Milk today", "contain")
    assert not texts_match("milk", "bread", "contain")
    assert texts_match("a b c", "a", "token_f1") and not texts_match("", "a", "token_f1")
    with pytest.raises(DataError, match="text_rule"):
        texts_match("a", "a", "fuzzy")


# ----------------------------------------------------------------------------- config
@pytest.mark.parametrize("kwargs, field", [
    ({"variant": "androidcontrol"}, "variant"),
    ({"text_rule": "fuzzy"}, "text_rule"),
    ({"variant": "learngui"}, "screen_size_px"),
    ({"screen_size_px": (0, 100)}, "screen_size_px"),
    ({"screen_size_px": (100.0, 200)}, "screen_size_px"),
])
def test_bad_config_names_the_field(kwargs, field):
    with pytest.raises(DataError, match=field):
        MatchConfig(**kwargs)


# ----------------------------------------------------------------------------- step accuracy
def test_step_accuracy_counts_micro_averaged():
    screen = [element(0.4, 0.5, 0.6, 0.6)]
    true = [tap(0.5, 0.55), tap(0.5, 0.55), swipe(0.5, 0.8, 0.5, 0.2), Action("back"), Action("type", text="x")]
    pred = [tap(0.3, 0.5), tap(0.9, 0.1), swipe(0.5, 0.2, 0.5, 0.8), tap(0.1, 0.1), None]
    out = step_accuracy(pred, true, [screen] * 5, AITW)
    assert (out["n_steps"], out["n_correct"], out["n_type_correct"], out["n_invalid"]) == (5, 2, 3, 1)
    assert out["step_accuracy"] == pytest.approx(0.4) and out["type_accuracy"] == pytest.approx(0.6)
    assert out["by_type"]["tap"] == {"n": 2, "correct": 1, "accuracy": 0.5}
    assert out["by_type"]["type"] == {"n": 1, "correct": 0, "accuracy": 0.0}
    assert (out["variant"], out["text_rule"]) == ("aitw", "ignore")


def test_type_accuracy_splits_touches_under_aitw_only():
    true, pred = [tap(0.5, 0.5)], [Action("long_press", point=(0.9, 0.9))]
    assert step_accuracy(pred, true, [[]], AITW)["type_accuracy"] == 1.0
    assert step_accuracy(pred, true, None, LEARN)["type_accuracy"] == 0.0
    assert step_accuracy([swipe(0.5, 0.5, 0.5, 0.9)], true, [[]], AITW)["type_accuracy"] == 0.0


def test_step_accuracy_rejects_bad_input_naming_the_field():
    with pytest.raises(DataError, match="pred_actions.*2 predictions for 3"):
        step_accuracy([tap(0.1, 0.1)] * 2, [tap(0.1, 0.1)] * 3, [[]] * 3)
    with pytest.raises(DataError, match="elements_per_step"):
        step_accuracy([tap(0.1, 0.1)], [tap(0.1, 0.1)], [[], []])
    with pytest.raises(DataError, match="elements_per_step"):
        step_accuracy([tap(0.1, 0.1)], [tap(0.1, 0.1)], None, AITW)
    with pytest.raises(DataError, match="true_actions"):
        step_accuracy([], [], [])
    with pytest.raises(DataError, match=r"pred_actions\[0\]"):
        step_accuracy(["tap"], [tap(0.1, 0.1)], [[]])


# ---------------------------------------------------------------- paired sign test
def test_sign_test_matches_the_binomial_tail():
    from guimem.eval.action_match import paired_sign_test
    # 9 vs 1 discordant steps: P(X <= 1 | n=10, 1/2) = 11/1024, two-sided 22/1024
    assert paired_sign_test(9, 1) == pytest.approx(22 / 1024)
    assert paired_sign_test(1, 9) == pytest.approx(22 / 1024)  # symmetric
    assert paired_sign_test(5, 5) == 1.0  # an even split is no evidence (capped at 1)
    assert paired_sign_test(0, 0) == 1.0  # no discordant steps
    assert paired_sign_test(6, 0) == pytest.approx(2 / 64)


def test_sign_test_refuses_non_counts():
    from guimem.eval.action_match import paired_sign_test
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(DataError, match="fixed"):
            paired_sign_test(bad, 2)


# ----------------------------------------------------------------------------- element-exact
ELEMENT = MatchConfig(variant="element")
ROW = (UIElement("a", "button", "Mute", bounds=(0.0, 0.30, 1.0, 0.36), clickable=True),
       UIElement("b", "button", "Vibrate", bounds=(0.0, 0.36, 1.0, 0.42), clickable=True))


def test_element_exact_needs_the_element_the_true_tap_hit():
    """Two list rows 0.06 apart: AITW counts a tap on the neighbouring row as right, this rule does not."""
    on_mute, on_vibrate = tap(0.5, 0.33), tap(0.5, 0.39)
    assert aitw(on_vibrate, on_mute, ROW)
    assert not action_match(on_vibrate, on_mute, ROW, ELEMENT)
    assert action_match(tap(0.9, 0.31), on_mute, ROW, ELEMENT)  # anywhere on the same element
    assert not action_match(Action("long_press", point=(0.5, 0.33)), on_mute, ROW, ELEMENT)  # its own type
    assert action_match(tap(0.55, 0.8), tap(0.5, 0.8), ROW, ELEMENT)  # no element hit: the distance rule


def test_element_exact_text_app_and_swipe():
    assert action_match(Action("type", text="  Milk "), Action("type", text="milk"), (), ELEMENT)
    assert not action_match(Action("type", text="milk and"), Action("type", text="milk"), (), ELEMENT)
    assert not action_match(Action("open_app", text="Shop"), Action("open_app", text="Notes"), (), ELEMENT)
    assert action_match(swipe(0.5, 0.8, 0.5, 0.2), swipe(0.4, 0.9, 0.4, 0.5), (), ELEMENT)
    assert not action_match(swipe(0.5, 0.2, 0.5, 0.8), swipe(0.4, 0.9, 0.4, 0.5), (), ELEMENT)
