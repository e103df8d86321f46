"""Text against image renderings of the same experience: the contest summary and the step groups."""

from __future__ import annotations

import numpy as np
import pytest

from guimem.core.data import Action, UIElement
from guimem.core.policy import PolicyInput
from guimem.eval.modality import STEP_GROUPS, agreement, contest, contest_by_group, rendering_measures, step_groups


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


def test_an_unseen_word_is_a_labelled_target_whose_label_training_never_showed():
    bin_row = UIElement("b", "list_item", "Bin", bounds=(0.0, 0.2, 1.0, 0.3), clickable=True)
    trash_row = UIElement("t", "list_item", "Trash", bounds=(0.0, 0.4, 1.0, 0.5), clickable=True)
    inp = PolicyInput(None, (bin_row, trash_row), "empty the trash", ())
    taps = [Action("tap", point=(0.5, 0.25)), Action("tap", point=(0.5, 0.45))]
    groups = step_groups([inp, inp], taps, unseen_words={"bin"})
    assert groups["unseen word"].tolist() == [True, False] and groups["labelled control"].all()
    assert not step_groups([inp, inp], taps)["unseen word"].any()  # no words given: none


def test_rendering_measures_read_agreement_the_shuffle_and_each_renderings_own_ground():
    a, b = Action("tap", point=(0.1, 0.1)), Action("back")
    none = [a, a, a, a]
    image = [a, b, a, b]
    hits = {"text": np.array([1, 0, 1, 1], bool), "image": np.array([1, 1, 0, 1], bool),
            "shuffled image": np.array([1, 0, 0, 0], bool)}
    groups = {"label-free icon": np.array([0, 1, 0, 0], bool), "unseen word": np.array([0, 0, 1, 0], bool)}
    m = rendering_measures(none, image, hits, groups)
    assert m["image_vs_none_agreement"] == 0.5 and m["shuffled_image_drop"] == 0.5
    assert m["label_free_image_minus_text"] == 1.0 and m["label_free_steps"] == 1
    assert m["synonym_text_minus_image"] == 1.0 and m["synonym_steps"] == 1
    empty = rendering_measures(none, image, hits, {k: np.zeros(4, bool) for k in groups})
    assert np.isnan(empty["label_free_image_minus_text"]) and empty["synonym_steps"] == 0
    assert agreement([], []) != agreement([], [])  # NaN: no steps
    with pytest.raises(ValueError):
        agreement(none, image[:2])
