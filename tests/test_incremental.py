"""Incremental memory: trajectories added to a saved memory (and their screens to its episode store)
give, file for file, the memory built from all of them at once; a refused add changes nothing."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from guimem.core.data import DataError
from guimem.core.store import add_episodes, load_episodes, save_episodes
from guimem.models.embedding import HashingTextEmbedder, PixelEmbedder
from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import demonstrate, plan_tasks
from guimem.smg.memories import MEMORIES, build_memory, extend_memory, memory_size
from guimem.smg.segment import make_segmenter, segment_episodes

CFG = WorldConfig(n_train=8, n_test=0, dialog_prob=0.3)
IMAGES, TEXTS = PixelEmbedder(8, 16), HashingTextEmbedder(64)


@pytest.fixture(scope="module")
def recorded():
    return demonstrate(CFG, plan_tasks(CFG, 0)["train"], 0, "train", progress=False)


def tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_extending_a_saved_memory_equals_building_it_at_once(tmp_path, recorded):
    episodes, images = recorded
    old, new = episodes[:5], episodes[5:]
    # the batch: one store with every episode, every memory built from all of them in one go
    save_episodes(episodes, images, tmp_path / "all" / "store")
    everything = load_episodes(tmp_path / "all" / "store")
    subgoals = segment_episodes(everything, make_segmenter("rule"), progress=False)
    # the increment: a store and memories of the first five, then the other three added to both
    inc = tmp_path / "inc"
    save_episodes(old, images, inc / "store")
    first = load_episodes(inc / "store")
    for name in MEMORIES:
        for root in (tmp_path / "all", inc):
            kept = everything if root == tmp_path / "all" else first
            ids = {e.id for e in kept}
            build_memory(name, kept, [s for s in subgoals if s.episode_id in ids], root / "store", IMAGES,
                         TEXTS).save(root / name)
    stored = add_episodes(new, images, inc / "store")
    assert [e.id for e in stored] == [e.id for e in everything]
    assert add_episodes(new, images, inc / "store") == stored  # again: nothing new
    added = stored[len(old):]
    new_ids = {e.id for e in added}
    for name in MEMORIES:
        sizes = extend_memory(inc / name, added, [s for s in subgoals if s.episode_id in new_ids], IMAGES, TEXTS)
        assert sizes["after"]["episodes"] == len(episodes) > sizes["before"]["episodes"]
        # the store root is named relative to where each was built: compare everything else byte for byte
        all_files = {k: v for k, v in tree(tmp_path / "all" / name).items() if k != "memory.json"}
        assert {k: v for k, v in tree(inc / name).items() if k != "memory.json"} == all_files, name
    assert tree(inc / "store") == tree(tmp_path / "all" / "store")


def test_a_refused_add_leaves_the_memory_and_the_store_as_they_were(tmp_path, recorded):
    episodes, images = recorded
    save_episodes(episodes[:4], images, tmp_path / "store")
    kept = load_episodes(tmp_path / "store")
    subgoals = segment_episodes(kept, make_segmenter("rule"), progress=False)
    build_memory("smg", kept[:2], [s for s in subgoals if s.episode_id in {kept[0].id, kept[1].id}],
                 tmp_path / "store", IMAGES, TEXTS).save(tmp_path / "smg")
    before, store_before = tree(tmp_path / "smg"), tree(tmp_path / "store")
    later = [s for s in subgoals if s.episode_id == kept[2].id]
    broken = [s.__class__(**{**s.__dict__, "to_screenshot": "screens/missing.png"}) for s in later]
    with pytest.raises(DataError, match="missing"):
        extend_memory(tmp_path / "smg", [kept[2]], broken, IMAGES, TEXTS)
    assert tree(tmp_path / "smg") == before
    other = episodes[0].__class__(**{**episodes[0].__dict__, "goal": "something else"})
    with pytest.raises(DataError, match="another episode"):
        add_episodes([other], images, tmp_path / "store")
    assert tree(tmp_path / "store") == store_before
    assert memory_size(build_memory("flat", kept, subgoals, tmp_path / "store", IMAGES, TEXTS))["episodes"] == 4
