"""Paired splits of the step-score table: counts, shares and accuracies on hand-made hits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from guimem.core.data import Action, DataError
from guimem.eval.action_match import paired_counts
from guimem.eval.memory_effect import names_target_split, right_experience_split, shuffled_images

T, F = True, False
HITS = {"none": np.array([T, F, F, T, F, F]), "text": np.array([T, T, T, F, F, T]),
        "image": np.array([F, F, F, T, F, F]), "both": np.array([T, T, F, T, T, F])}


def test_paired_counts_counts_fixed_and_broken_steps_only():
    assert paired_counts(HITS["text"], HITS["none"]) == {"fixed": 3, "broken": 1, "p_value": 0.625}
    assert paired_counts(HITS["none"], HITS["none"]) == {"fixed": 0, "broken": 0, "p_value": 1.0}
    with pytest.raises(DataError, match="hits"):
        paired_counts(HITS["text"][:3], HITS["none"])


def test_names_target_split_reads_both_sides_of_the_mask():
    names = np.array([T, T, F, F, F, F])
    out = names_target_split(HITS, names)
    assert out["share_of_steps"] == pytest.approx(1 / 3)
    assert (out["none"], out["text"], out["image"], out["both"]) == (0.5, 1.0, 0.0, 1.0)
    assert out["text_vs_none"] == {"fixed": 1, "broken": 0, "p_value": 1.0}
    assert out["text_vs_none_elsewhere"] == {"fixed": 2, "broken": 1, "p_value": 1.0}
    nowhere = names_target_split(HITS, np.zeros(6, dtype=bool))
    assert nowhere["share_of_steps"] == 0.0 and math.isnan(nowhere["text"])


def test_right_experience_split_pairs_each_modality_on_each_side():
    right = np.array([T, T, T, F, F, F])
    out = right_experience_split(HITS, right)
    assert out["share_of_steps"] == 0.5
    assert out["text/right"] == {"none": round(1 / 3, 4), "memory": 1.0, "fixed": 2, "broken": 0, "p_value": 0.5}
    assert out["image/wrong"] == {"none": round(1 / 3, 4), "memory": round(1 / 3, 4), "fixed": 0, "broken": 0,
                                  "p_value": 1.0}
    assert set(out) == {"share_of_steps"} | {f"{m}/{s}" for m in ("text", "image", "both") for s in ("right", "wrong")}
    with pytest.raises(DataError, match=r"hits\[none\]"):
        right_experience_split(HITS, right[:4])


def test_sample_held_out_keeps_every_kind_of_a_sampled_step():
    from types import SimpleNamespace

    from guimem.train.examples import sample_held_out

    examples = [SimpleNamespace(episode_id=f"e{i // 4}", step=i % 4, memory_kind=k, target=Action("back"))
                for i in range(12) for k in ("smg", "flat")]
    picked = sample_held_out(examples, 5, seed=3)
    steps = {(ex.episode_id, ex.step) for ex in picked}
    assert len(steps) == 5 and len(picked) == 10
    assert picked == [ex for ex in examples if (ex.episode_id, ex.step) in steps]  # original order
    assert picked == sample_held_out(examples, 5, seed=3)
    assert sample_held_out(examples, 0, seed=3) == examples and sample_held_out(examples, 99, seed=3) == examples


def test_shuffled_images_give_every_step_another_episodes_image_and_keep_the_rest():
    from PIL import Image

    from guimem.core.policy import PolicyInput
    from guimem.train.examples import ActorExample

    def ex(episode, step):
        image = Image.new("RGB", (4, 4), (episode * 40, step * 40, 0))
        return ActorExample(PolicyInput(None, (), f"goal {episode}", (), f"text {episode}/{step}", image),
                            Action("back"), f"e{episode}", step)

    examples = [ex(e, s) for e in range(4) for s in range(3)]
    out = shuffled_images(examples, seed=0)
    assert [o.input.memory_text for o in out] == [x.input.memory_text for x in examples]
    owner = {id(x.input.memory_image): x.episode_id for x in examples}
    assert all(owner[id(o.input.memory_image)] != o.episode_id for o in out)  # never its own episode's
    assert sorted(map(id, (o.input.memory_image for o in out))) == sorted(map(id, (x.input.memory_image for x in examples)))
    assert [id(o.input.memory_image) for o in shuffled_images(examples, 0)] == [id(o.input.memory_image) for o in out]
