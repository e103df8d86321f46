"""The episode store: round trip, deduplication, atomic and deterministic writes, the file format.

Bad stores, bad saves and bad subgoal files are in the bad-input corpus, ``tests/bad_inputs/test_store.py``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
from pathlib import Path

import pytest
from PIL import Image

from guimem.core.data import DataError
from guimem.core.store import load_episodes, load_screenshot, read_manifest, save_episodes
from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import demonstrate, plan_tasks

CFG = WorldConfig(n_train=6, n_test=0, dialog_prob=0.5)


@pytest.fixture(scope="module")
def recorded():
    tasks = plan_tasks(CFG, 0)["train"]
    return demonstrate(CFG, tasks, 0, "train", progress=False)


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


def test_round_trip(tmp_path, recorded):
    episodes, images = recorded
    root = save_episodes(episodes, images, tmp_path / "store", {"seed": 0})
    loaded = load_episodes(root)
    assert [e.id for e in loaded] == [e.id for e in episodes]
    for orig, back in zip(episodes, loaded):
        assert (back.goal, back.app, back.success, dict(back.provenance)) == (orig.goal, orig.app, orig.success, dict(orig.provenance))
        assert [s.action for s in back.steps] == [s.action for s in orig.steps]
        assert [s.subgoal for s in back.steps] == [s.subgoal for s in orig.steps]
        assert [s.elements for s in back.steps] == [s.elements for s in orig.steps]
        for o, b in zip(orig.observations, back.observations):
            assert b.screenshot.startswith("screens/") and b.screen == o.screen
            with Image.open(io.BytesIO(images[o.screenshot])) as im:
                assert load_screenshot(root, b.screenshot).tobytes() == im.convert("RGB").tobytes()
    manifest = read_manifest(root)
    assert manifest["episodes"] == len(episodes) and manifest["meta"] == {"seed": 0}
    assert manifest["screens"] == len(list((root / "screens").glob("*.png"))) == len(set(images))


def test_identical_screens_are_stored_once(tmp_path, recorded):
    episodes, images = recorded
    root = save_episodes(episodes, images, tmp_path / "s")
    paths = [o.screenshot for e in load_episodes(root) for o in e.observations]
    assert len(set(paths)) < len(paths)  # the launcher recurs in every episode


def test_writes_are_deterministic(tmp_path, recorded):
    episodes, images = recorded
    a = _tree(save_episodes(episodes, images, tmp_path / "a", {"k": 1}))
    b = _tree(save_episodes(episodes, images, tmp_path / "b", {"k": 1}))
    assert a == b


def test_save_replaces_atomically_and_leaves_no_debris(tmp_path, recorded):
    episodes, images = recorded
    root = save_episodes(episodes[:2], images, tmp_path / "store")
    before = _tree(root)
    broken = dataclasses.replace(episodes[3], id="zz-broken",
                                 final=dataclasses.replace(episodes[3].final, screenshot="no-such-key"))
    with pytest.raises(DataError, match="final.screenshot"):
        save_episodes(episodes + [broken], images, root)
    assert _tree(root) == before and sorted(p.name for p in tmp_path.iterdir()) == ["store"]
    save_episodes(episodes, images, root)
    assert len(load_episodes(root)) == len(episodes) and sorted(p.name for p in tmp_path.iterdir()) == ["store"]


def test_store_layout_and_formatting(tmp_path, recorded):
    """The files and bytes the pipeline has always written, plus the kind marker."""
    episodes, images = recorded
    root = save_episodes(episodes[:1], images, tmp_path / "s", {"seed": 0})
    assert sorted(p.name for p in root.iterdir()) == [".guimem-kind", "episodes", "manifest.json", "screens"]
    assert (root / ".guimem-kind").read_text() == "guimem.episodes\n"
    ep = episodes[0]
    text = (root / "episodes" / f"{ep.id}.json").read_text(encoding="utf-8")
    assert text == json.dumps(load_episodes(root)[0].to_dict(), indent=1, ensure_ascii=False) + "\n"  # field order kept
    assert (root / "manifest.json").read_text() == json.dumps(read_manifest(root), indent=1, sort_keys=True) + "\n"
