"""05 and the four SwitchMem notebooks with ``actor.actor_model`` naming a Hugging Face checkpoint
folder (a tiny random LLaVA): what pointing the pipeline at a real VLM is — one parameter, no code.
They run on a copy of the tiny actor chain's world, memories and retrievals (tests/stage_chains.py)."""

from __future__ import annotations

import shutil

import pytest

from stage_chains import closed_loop_params, run_switchmem_notebooks


@pytest.mark.notebook
@pytest.mark.slow
def test_switchmem_notebooks_run_on_a_hugging_face_actor(actor_chain, tmp_path):
    from nbsmoke import run_notebook

    from guimem.actors.hf.tiny import save_tiny_random_llava
    from guimem.routing.records import StepRecords

    tmp, _ = actor_chain
    for stage in ("world", "segmentation", "graph_build", "retrieval_eval"):
        shutil.copytree(tmp / "data" / stage, tmp_path / "data" / stage)
    actor = dict(actor_model=save_tiny_random_llava(str(tmp_path / "llava")), coords="relative_1000",
                 answer_format="json", max_new_tokens=8)
    closed = run_notebook("05_closed_loop", tmp_path, **closed_loop_params(
        tmp_path, actor, memories=["none", "smg"], action_score_modalities=["none", "text"]))
    # One memory (the SMG), one sample per rendering: the tiny model reads a token per byte, so its prompts
    # are long, and 06 runs it four ways at every step, sampling too (most of this test's time); more
    # memories or samples repeat the same paths (two samples: tests/test_hf_actor.py, on a tiny Qwen2-VL).
    # Every held-out step: 09 routes along trajectories.
    out = run_switchmem_notebooks(tmp_path, actor, layer_analysis=dict(preference={"n_samples": 1},
                                                                       max_pool_episodes=4), memories=["smg"])
    held = StepRecords.load(tmp_path / "data" / "layer_analysis" / "held_out")
    assert held.n_layers == 3 and held.hidden["image"].shape[1:] == (4, 32)  # the LLaVA's 3 layers + embedding
    assert held.candidates["image"].shape == (len(held), 32)
    assert out["09"]["success_rate"]["none"] == closed["success_rate"]["none"]  # 05's runs reused by 09
    assert set(out["09"]["success_rate"]) == {"none", "text", "image", "both", "switchmem"}
