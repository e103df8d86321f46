"""Recorded runs shared out as train, test and memory stores: by weight, at least one run for every
split asked for, a seeded draw that does not depend on the order the runs come in, stores that name
their import; bad weights refused before anything is written."""

from __future__ import annotations

import pytest

from guimem.core.data import DataError
from guimem.core.store import SPLITS, load_episodes, read_manifest, save_episodes
from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import demonstrate, plan_tasks
from guimem.real.splits import assign_splits, split_counts, write_splits


@pytest.mark.parametrize("n, weights, counts", [
    (3, [1, 1, 1], (1, 1, 1)),
    (7, [0.1, 0.1, 0.8], (1, 1, 5)),  # in proportion, then one for each split asked for
    (10, [0.7, 0.15, 0.15], (7, 2, 1)),  # equal remainders: the earlier split
    (4, [10, 1, 1], (2, 1, 1)),  # the minimum taken from the largest split
    (5, [1, 0, 0], (5, 0, 0)),
    (3, [0, 1, 2], (0, 1, 2)),
])
def test_split_counts(n, weights, counts):
    assert split_counts(n, weights) == counts and sum(counts) == n


@pytest.mark.parametrize("n, weights, message", [
    (2, [1, 1, 1], "2 runs cannot fill 3 splits"), (3, [0, 0, 0], "every weight is 0"),
    (3, [1, 1], "expected 3 weights"), (3, [1, -1, 1], "split"),
])
def test_bad_splits_are_refused(n, weights, message):
    with pytest.raises(DataError, match=message):
        split_counts(n, weights)


@pytest.fixture(scope="module")
def recorded():
    config = WorldConfig(n_train=7, n_test=0, dialog_prob=0.0)
    return demonstrate(config, plan_tasks(config, 0)["train"], 0, "train", progress=False)


def test_the_draw_is_seeded_disjoint_and_independent_of_order(recorded):
    episodes, _ = recorded
    parts = assign_splits(episodes, [2, 1, 1], seed=0)
    ids = [e.id for name in SPLITS for e in parts[name]]
    assert sorted(ids) == sorted(e.id for e in episodes) and len(set(ids)) == len(ids)
    assert {n: len(p) for n, p in parts.items()} == {"train": 3, "test": 2, "memory": 2}  # 3.5, 1.75, 1.75
    assert assign_splits(episodes[::-1], [2, 1, 1], seed=0) == parts  # the order runs come in does not matter
    assert assign_splits(episodes, [2, 1, 1], seed=1) != parts


def test_write_splits_saves_three_stores_naming_their_import(tmp_path, recorded):
    episodes, images = recorded
    save_episodes(episodes, images, tmp_path / "imported", meta={"imported": {"format": "test"}})
    stores = write_splits(tmp_path / "imported", tmp_path / "out", [1, 1, 1], seed=0)
    for name in SPLITS:
        assert load_episodes(tmp_path / "out" / name) == stores[name]  # every screenshot there and valid
        meta = read_manifest(tmp_path / "out" / name)["meta"]
        assert meta["split"] == name and meta["recorded"] == {"imported": {"format": "test"}}
    with pytest.raises(DataError, match="every weight is 0"):
        write_splits(tmp_path / "imported", tmp_path / "none", [0, 0, 0], seed=0)
    assert not (tmp_path / "none").exists()  # refused before anything was written


@pytest.mark.parametrize("where", ["inside", "holds"])
def test_write_splits_refuses_an_out_dir_overlapping_its_store(tmp_path, recorded, where):
    """Splits written into their source store, or around it, are refused before anything is written."""
    episodes, images = recorded
    store = tmp_path / "imported" if where == "inside" else tmp_path / "out" / "train"
    save_episodes(episodes, images, store, meta={"imported": {"format": "test"}})
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    out = store if where == "inside" else tmp_path / "out"
    with pytest.raises(DataError) as e:
        write_splits(store, out, [1, 1, 1], seed=0)
    assert e.value.field == "out_dir"
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_splits_and_adds_never_launder_swapped_screenshots(tmp_path, recorded):
    """A store whose screenshot files were swapped fails the full check; a split or an add that
    rehashes it must refuse it, not write stores that pass that check."""
    from guimem.core.store import add_episodes

    episodes, images = recorded
    store = tmp_path / "imported"
    save_episodes(episodes, images, store, meta={"imported": {"format": "test"}})
    shots = sorted(p for p in store.rglob("*.png"))
    a, b = shots[0], shots[-1]
    da, db = a.read_bytes(), b.read_bytes()
    a.write_bytes(db)
    b.write_bytes(da)
    with pytest.raises(DataError):
        load_episodes(store)
    with pytest.raises(DataError):
        write_splits(store, tmp_path / "out", [1, 1, 1], seed=0)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    with pytest.raises(DataError):
        add_episodes(episodes[:1], images, store)
