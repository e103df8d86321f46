"""The actor stage's figures on a few hand-made steps: every point with an interval around it, the
counts and sign-test p-values written beside them as paired_counts gives them, shares from zero."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.figure import Figure

from guimem.core.data import DataError
from guimem.core.policy import MODALITIES
from guimem.eval.action_match import paired_counts
from guimem.eval.figures import (
    accuracy_by_condition_figure,
    format_p,
    memory_effect_figure,
    paired_difference,
    wilson_interval,
)
from guimem.eval.memory_effect import names_target_split, right_experience_split

T, F = True, False
KINDS = ("smg", "flat")
SHOWN = MODALITIES[1:]  # text, image, both
NONE = np.array([T, F, F, T, F, F, T, F])
HITS = {"none": NONE,
        "smg/text": np.array([T, T, T, F, F, T, T, F]), "smg/image": np.array([F, F, F, T, F, F, T, F]),
        "smg/both": np.array([T, T, F, T, T, F, T, T]), "flat/text": NONE.copy(),
        "flat/image": np.array([T, F, F, T, F, T, T, F]), "flat/both": np.array([F, F, F, F, F, F, F, F])}
MAJORITY = 3 / 8


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def points(ax) -> list[tuple[float, float, float, float]]:
    """``(x, y, low, high)`` of every error-bar point on ``ax``, in drawing order (a bar's error bar:
    the bar's top as ``y``)."""
    out, tops = [], [p.get_height() for c in ax.containers if isinstance(c, BarContainer) for p in c.patches]
    for c in (c for c in ax.containers if isinstance(c, ErrorbarContainer)):
        line, _, (bars, *_) = c.lines
        (x, low), (_, high) = bars.get_segments()[0]
        y = tops.pop(0) if line is None else float(line.get_ydata()[0])
        out.append((float(x), y, float(low), float(high)))
    return out


def annotations(ax, gid: str) -> list[str]:
    return [t.get_text() for t in ax.texts if t.get_gid() == gid]


def columns(kind):
    return {m: HITS["none" if m == "none" else f"{kind}/{m}"] for m in MODALITIES}


# ----------------------------------------------------------------------------- intervals
def test_wilson_interval_holds_the_share_inside_zero_one():
    for k, n in ((0, 5), (3, 8), (5, 5), (51, 100)):
        low, high = wilson_interval(k, n)
        assert 0 <= low <= k / n <= high <= 1
    assert wilson_interval(50, 100) == pytest.approx((0.4038, 0.5962), abs=1e-4)  # the textbook value
    with pytest.raises(DataError, match="successes"):
        wilson_interval(6, 5)


def test_paired_difference_is_the_wald_interval_of_the_discordant_steps():
    diff, low, high = paired_difference(3, 1, 6)
    se = math.sqrt(4 - 4 / 6) / 6
    assert diff == pytest.approx(1 / 3) and (low, high) == pytest.approx((1 / 3 - 1.959964 * se, 1 / 3 + 1.959964 * se))
    assert paired_difference(0, 0, 6) == (0.0, 0.0, 0.0)  # no discordant step: no difference, no spread
    with pytest.raises(DataError, match="fixed"):
        paired_difference(4, 3, 6)


def test_format_p():
    assert (format_p(0.0312), format_p(1.0), format_p(0.0004)) == ("p=0.031", "p=1.000", "p<0.001")


# ----------------------------------------------------------------------------- accuracy by condition
def test_accuracy_by_condition_shows_each_paired_difference_with_its_interval_and_sign_test():
    fig = accuracy_by_condition_figure(HITS, KINDS, SHOWN, MAJORITY)
    assert isinstance(fig, Figure)
    level, diffs = fig.axes
    drawn = points(diffs)
    assert len(drawn) == len(KINDS) * len(SHOWN)
    expected = [paired_counts(HITS[f"{k}/{m}"], NONE) for k in KINDS for m in SHOWN]
    for (_, y, low, high), c in zip(drawn, expected):
        assert low <= y <= high
        assert y == pytest.approx(100 * (c["fixed"] - c["broken"]) / len(NONE))  # percentage points
    assert annotations(diffs, "p_value") == [f"+{c['fixed']}/\u2212{c['broken']}\n{format_p(c['p_value'])}"
                                             for c in expected]
    assert any(list(line.get_ydata()) == [0, 0] for line in diffs.lines)  # the zero line
    # the absolute level: a share from zero, no memory and the majority action with intervals
    assert level.get_ylim()[0] == 0
    assert annotations(level, "share") == [f"{NONE.mean():.3f}", f"{MAJORITY:.3f}"]
    assert [(y, low <= y <= high) for _, y, low, high in points(level)] == [(NONE.mean(), True), (MAJORITY, True)]


def test_accuracy_by_condition_refuses_missing_conditions_and_foreign_shares():
    with pytest.raises(DataError, match="flat/both"):
        accuracy_by_condition_figure({k: v for k, v in HITS.items() if k != "flat/both"}, KINDS, SHOWN, MAJORITY)
    with pytest.raises(DataError, match="majority_accuracy"):
        accuracy_by_condition_figure(HITS, KINDS, SHOWN, 0.3)  # not a count out of 8 steps


# ----------------------------------------------------------------------------- memory effect
RIGHT = np.array([T, T, T, F, F, T, F, F])
NAMES = {"smg": np.array([T, T, F, F, F, F, T, F]), "flat": np.zeros(8, dtype=bool)}


def splits():
    shown = {k: right_experience_split(columns(k), RIGHT) for k in KINDS}
    informative = {k: names_target_split(columns(k), NAMES[k]) for k in KINDS}
    return shown, informative


def test_memory_effect_left_pairs_none_and_text_on_each_side_with_counts_and_p_values():
    shown, informative = splits()
    fig = memory_effect_figure(shown, informative, KINDS, MODALITIES, len(NONE))
    left = fig.axes[0]
    drawn = points(left)
    assert len(drawn) == len(KINDS) * 2 * 2  # kinds x (right, wrong) x (none, text)
    assert all(low <= y <= high for _, y, low, high in drawn)
    expected = []
    for k in KINDS:
        for side, n in (("right", int(RIGHT.sum())), ("wrong", int((~RIGHT).sum()))):
            e = shown[k][f"text/{side}"]
            expected.append(f"{n} steps\n+{e['fixed']}/\u2212{e['broken']}\n{format_p(e['p_value'])}")
    assert annotations(left, "p_value") == expected
    # the same p-values as paired_counts on the steps of each side
    c = paired_counts(HITS["smg/text"][~RIGHT], NONE[~RIGHT])
    assert format_p(c["p_value"]) in expected[1]
    # the points are the shares of each side
    assert [y for _, y, _, _ in drawn[:2]] == pytest.approx([NONE[RIGHT].mean(), HITS["smg/text"][RIGHT].mean()])


def test_memory_effect_right_shows_every_modality_where_the_memory_names_the_target():
    shown, informative = splits()
    fig = memory_effect_figure(shown, informative, KINDS, MODALITIES, len(NONE))
    _, right = fig.axes
    drawn = points(right)
    assert len(drawn) == len(MODALITIES)  # flat never names the target: no points there
    assert [y for _, y, _, _ in drawn] == pytest.approx([columns("smg")[m][NAMES["smg"]].mean() for m in MODALITIES])
    assert all(low <= y <= high for _, y, low, high in drawn)
    c = paired_counts(HITS["smg/text"][NAMES["smg"]], NONE[NAMES["smg"]])
    text = f"text vs none: +{c['fixed']}/\u2212{c['broken']}\n{format_p(c['p_value'])}"
    assert annotations(right, "p_value") == [text]
    assert annotations(right, "count") == ["no steps"]
    assert [t.get_text() for t in right.get_xticklabels()] == ["Subgoal-Graph\n3 steps (38%)",
                                                               "Subgoal-Flat\n0 steps (0%)"]


def test_memory_effect_shares_start_at_zero_and_both_panels_show_their_y_ticks():
    fig = memory_effect_figure(*splits(), KINDS, MODALITIES, len(NONE))
    fig.canvas.draw()
    for ax in fig.axes:
        assert ax.get_ylim()[0] == 0
        labels = [t.get_text() for t in ax.get_yticklabels() if t.get_visible() and t.get_text()]
        assert labels[0] == "0.0" and labels[-1] == "1.0"


def test_memory_effect_refuses_a_step_count_the_splits_do_not_fit():
    shown, informative = splits()
    with pytest.raises(DataError, match="share_of_steps"):
        memory_effect_figure(shown, informative, KINDS, MODALITIES, 7)
    with pytest.raises(DataError, match="informative"):
        memory_effect_figure(shown, {"smg": informative["smg"]}, KINDS, MODALITIES, 8)


def test_a_share_rounded_to_four_places_gives_back_its_count_at_the_rounding_edge():
    from guimem.eval.figures import _successes

    # 71 / 160 = 0.44375 is kept as 0.4437: exactly half a unit of the 4th place from the count
    assert _successes(round(71 / 160, 4), 160, "share") == 71
    assert _successes(0.5, 10, "share") == 5
    with pytest.raises(DataError, match="not a count"):
        _successes(0.4437, 17, "share")  # no count out of 17 rounds to it
