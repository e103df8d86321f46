"""The episode store: round trip, deduplication, atomic and deterministic writes, the bad-input corpus."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from guimem.core.data import DataError
from guimem.core.store import load_episodes, load_screenshot, read_manifest, save_episodes
from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import demonstrate, plan_tasks

CORPUS = Path(__file__).parent / "data" / "bad_inputs"
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


def test_save_refuses_duplicate_and_unsafe_ids(tmp_path, recorded):
    episodes, images = recorded
    with pytest.raises(DataError, match=r"episodes\[1\].id"):
        save_episodes([episodes[0], episodes[0]], images, tmp_path / "x")
    with pytest.raises(DataError, match="safe file name"):
        save_episodes([dataclasses.replace(episodes[0], id="../evil")], images, tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_load_screenshot_errors(tmp_path, recorded):
    episodes, images = recorded
    root = save_episodes(episodes[:1], images, tmp_path / "s")
    with pytest.raises(DataError, match="does not exist"):
        load_screenshot(root, "screens/0000.png")
    with pytest.raises(DataError, match="inside the store"):
        load_screenshot(root, "../secret.png")


CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir() and p.name != "valid") if CORPUS.is_dir() else []


def test_corpus_is_present():
    assert len(CASES) >= 12


@pytest.mark.parametrize("case", CASES)
def test_bad_input_names_file_and_field(case, tmp_path):
    """Every corrupted store is refused with an error naming the offending file and field."""
    expect = json.loads((CORPUS / case / "expect.json").read_text())
    root = tmp_path / case
    shutil.copytree(CORPUS / case / "store", root)
    with pytest.raises(DataError) as info:
        load_episodes(root)
    err = info.value
    assert err.path is not None and Path(err.path) == root / expect["file"], str(err)
    assert err.field == expect["field"], str(err)
    assert expect["message"] in err.message, str(err)


def test_corpus_base_store_is_valid(tmp_path):
    shutil.copytree(CORPUS / "valid" / "store", tmp_path / "valid")
    assert len(load_episodes(tmp_path / "valid")) == 2
