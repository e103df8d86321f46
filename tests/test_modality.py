"""Text against image renderings of the same experience: the contest summary and the step groups."""

from __future__ import annotations

import numpy as np
import pytest

from guimem.core.data import Action, UIElement
from guimem.core.policy import PolicyInput
from guimem.eval.modality import STEP_GROUPS, contest, contest_by_group, step_groups


def test_contest_counts_non_tied_steps_wins_and_the_oracle():
    text = np.array([1, 1, 0, 0, 1, 0, 1, 0], dtype=bool)
    image = np.array([1, 0, 1, 0, 0, 0, 1, 1], dtype=bool)
    c = contest(text, image)
    assert c["steps"] == 8 and c["non_tied"] == 4 and c["non_tied_share"] == 0.5
    assert c["text_wins"] == 0.5 and c["image_wins"] == 0.5
    assert c["best_fixed"] == 0.5 and c["oracle"] == 0.75 and c["oracle_gain"] == 0.25
    same = contest(text, text)
    assert same["non_tied"] == 0 and np.isnan(same["text_wins"]) and same["oracle_gain"] == 0.0
    with pytest.raises(ValueError):
        contest(text, image[:3])


def test_step_groups_say_what_each_step_needs_and_where_it_is():
    icon = UIElement("i", "icon", "", bounds=(0.8, 0.0, 1.0, 0.1), clickable=True)
    row = UIElement("r", "list_item", "Display", bounds=(0.0, 0.2, 1.0, 0.3), clickable=True)
    img = None
    first = PolicyInput(img, (icon, row), "go", ())
    later = PolicyInput(img, (icon, row), "go", (Action("back"),))
    targets = [Action("tap", point=(0.9, 0.05)), Action("tap", point=(0.5, 0.25)), Action("type", text="x"),
               Action("back"), Action("done")]
    groups = step_groups([first, later, later, later, later], targets)
    assert set(groups) == set(STEP_GROUPS)
    assert groups["label-free icon"].tolist() == [True, False, False, False, False]
    assert groups["labelled control"].tolist() == [False, True, False, False, False]
    assert groups["typing"][2] and groups["system key"][3] and groups["done"][4]
    assert groups["first step"].tolist() == [True, False, False, False, False]
    assert groups["later step"].sum() == 4
    by = contest_by_group(np.ones(5, bool), np.zeros(5, bool), groups)
    assert by["later step"]["text_wins"] == 1.0 and by["later step"]["steps"] == 4
