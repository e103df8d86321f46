"""Kill tests: every save of several files, killed at random points, leaves the old set or the new
set, each whole, and the next save needs no hand repair.

A forked child runs the save with every file-system call that changes what is on disk (``os.replace``,
``os.rename``, ``os.unlink``, ``os.rmdir``, ``os.mkdir``, ``os.link``, ``os.symlink``, ``os.fsync``)
counted, and dies with ``os._exit`` (no cleanup, no ``finally``: what a SIGKILL does) just before
the N-th. A dry run first counts the calls; N is drawn at random over them, 50 times per save.
Between two such calls a save only writes bytes into files of its temporary folders, so dying
before a call is every state a kill can leave, except for partly written temporary files, which
no reader opens (they only count once renamed in, after their fsync).

After each kill the parent checks, with nothing cleaned by hand: every store loads whole (every
screenshot's hash checked) and is the old version or the new one; the set is not a mix; and the
same save, run again, completes and gives what an uninterrupted save gives.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from guimem.core.io import readable_dir
from guimem.core.store import add_episodes, load_episodes, save_episodes
from guimem.models.embedding import HashingTextEmbedder, PixelEmbedder
from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import demonstrate, plan_tasks
from guimem.real.splits import write_splits
from guimem.smg.memories import build_memory, extend_memory, load_memory, memory_size
from guimem.smg.segment import make_segmenter, segment_episodes

KILLS = 50
CALLS = ("replace", "rename", "unlink", "rmdir", "mkdir", "link", "symlink", "fsync")
KILLED, DONE = 17, 0  # the child's exit status: died at its N-th call, or finished its save
CFG = WorldConfig(n_train=8, n_test=0, dialog_prob=0.3)
IMAGES, TEXTS = PixelEmbedder(8, 16), HashingTextEmbedder(64)
WEIGHTS = (0.5, 0.25, 0.25)

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the kill tests fork a child to kill")


def in_child(save: Callable[[], object], kill_at: int | None) -> tuple[int, int]:
    """Run ``save`` in a forked child that dies just before its ``kill_at``-th counted call (never,
    with None); (its exit status, the calls it made)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: count, die at kill_at, report the count if it finishes
        os.close(read)
        real = {name: getattr(os, name) for name in CALLS}
        count = [0]

        def counted(name):
            def call(*args, **kwargs):
                count[0] += 1
                if count[0] == kill_at:
                    os._exit(KILLED)
                return real[name](*args, **kwargs)
            return call

        try:
            for name in CALLS:
                setattr(os, name, counted(name))
            save()
            status = DONE
        except BaseException:  # noqa: BLE001 - a failed save is reported as a status, the parent fails
            status = 3
        for name in CALLS:
            setattr(os, name, real[name])
        os.write(write, str(count[0]).encode())
        os._exit(status)
    os.close(write)
    with os.fdopen(read) as pipe:
        calls = pipe.read()
    _, raw = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(raw), int(calls or -1)


def kill_points(prepare: Callable[[], object], save: Callable[[], object], seed: int) -> tuple[int, np.ndarray]:
    """The calls an uninterrupted ``save`` makes after ``prepare()``, and :data:`KILLS` random points among them."""
    prepare()
    status, calls = in_child(save, None)
    assert status == DONE and calls > 1, (status, calls)
    return calls, np.random.default_rng(seed).integers(1, calls + 1, KILLS)


def tree(folder: Path) -> dict[str, str]:
    """Every file of the saved folder ``folder`` with its hash, as a reader finds it (the backup or
    the committed new version a kill left in place of the folder: :func:`readable_dir`)."""
    folder = readable_dir(folder)
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def restore(template: Path, to: Path) -> Path:
    """``to`` as ``template`` holds it (a copy made of ``to`` earlier: paths saved inside stay right)."""
    if to.exists():
        shutil.rmtree(to)
    shutil.copytree(template, to, symlinks=True)
    return to


@pytest.fixture(scope="module")
def recorded():
    return demonstrate(CFG, plan_tasks(CFG, 0)["train"], 0, "train", progress=False)


def test_write_splits_killed_anywhere_leaves_one_draw_whole(tmp_path, recorded):
    episodes, images = recorded
    src, out, old = tmp_path / "import", tmp_path / "out", tmp_path / "old"
    save_episodes(episodes, images, src)
    splits = ("train", "test", "memory")
    draw = lambda seed: write_splits(src, out, WEIGHTS, seed=seed)  # noqa: E731
    draw(2)
    want = {s: tree(out / s) for s in splits}
    new_ids = {s: {e.id for e in load_episodes(out / s)} for s in splits}
    draw(1)
    shutil.copytree(out, old, symlinks=True)
    old_ids = {s: {e.id for e in load_episodes(out / s)} for s in splits}
    assert old_ids != new_ids
    calls, points = kill_points(lambda: restore(old, out), lambda: draw(2), 0)
    seen = set()
    for n in points:
        restore(old, out)
        status, _ = in_child(lambda: draw(2), int(n))
        assert status == KILLED, (n, calls)
        got = {s: {e.id for e in load_episodes(out / s)} for s in splits}  # whole: every screen's hash checked
        assert got in (old_ids, new_ids), f"a mixed set after a kill at call {n} of {calls}: {got}"
        seen.add("old" if got == old_ids else "new")
        draw(2)  # the next save works as it stands
        assert {s: tree(out / s) for s in splits} == want
        assert sorted(p.name for p in out.iterdir()) == sorted(splits)  # nothing left behind
    assert seen == {"old", "new"}  # the kills fell before and after the commit


def _memory_case(tmp_path: Path, recorded) -> tuple[Path, Path, list, list, list, dict]:
    """``tmp_path/work``: a store of five episodes and the SMG memory built from them, copied to
    ``tmp_path/old``; the three further episodes to add (as recorded, and as a store holds them),
    their subgoals and the screenshots."""
    episodes, images = recorded
    save_episodes(episodes, images, tmp_path / "all")
    everything = load_episodes(tmp_path / "all")
    subgoals = segment_episodes(everything, make_segmenter("rule"), progress=False)
    work = tmp_path / "work"
    save_episodes(episodes[:5], images, work / "store")
    first = {e.id for e in load_episodes(work / "store")}
    build_memory("smg", everything[:5], [s for s in subgoals if s.episode_id in first], work / "store", IMAGES,
                 TEXTS).save(work / "smg")
    shutil.copytree(work, tmp_path / "old", symlinks=True)
    added = everything[5:]
    ids = {e.id for e in added}
    return work, tmp_path / "old", episodes[5:], added, [s for s in subgoals if s.episode_id in ids], images


def test_a_memory_and_its_store_killed_anywhere_are_never_ahead_of_each_other(tmp_path, recorded):
    """``add_episodes`` then ``extend_memory``: the store is saved first, so after any kill the memory
    is old or new whole, and a new memory always has its new store (its screens are there); the
    store may be a step ahead (the add done, the extend not), which rerunning both completes."""
    work, old, raw, added, subgoals, images = _memory_case(tmp_path, recorded)

    def add_both() -> None:
        add_episodes(raw, images, work / "store")
        extend_memory(work / "smg", added, subgoals, IMAGES, TEXTS)

    before = {k: tree(work / k) for k in ("store", "smg")}
    add_both()
    want = {k: tree(work / k) for k in ("store", "smg")}
    calls, points = kill_points(lambda: restore(old, work), add_both, 1)
    seen = set()
    for n in points:
        restore(old, work)
        status, _ = in_child(add_both, int(n))
        assert status == KILLED, (n, calls)
        n_store = len(load_episodes(work / "store"))  # whole: every screen's hash checked
        memory = load_memory(work / "smg", IMAGES, TEXTS)  # whole: every file and its store's screens checked
        state = {k: tree(work / k) for k in ("store", "smg")}
        store_new, memory_new = state["store"] == want["store"], state["smg"] == want["smg"]
        assert store_new or state["store"] == before["store"], f"the store is neither version after call {n}"
        assert memory_new or state["smg"] == before["smg"], f"the memory is neither version after call {n}"
        assert store_new or not memory_new, f"the memory ran ahead of its store after call {n}"
        assert memory_size(memory)["episodes"] == (8 if memory_new else 5) and n_store == (8 if store_new else 5)
        seen.add((store_new, memory_new))
        add_both()  # run again, as it stands: completes
        assert {k: tree(work / k) for k in ("store", "smg")} == want
    assert seen == {(False, False), (True, False), (True, True)}


def test_extend_memory_killed_anywhere_leaves_the_old_memory_or_the_new(tmp_path, recorded):
    work, old, raw, added, subgoals, images = _memory_case(tmp_path, recorded)
    add_episodes(raw, images, work / "store")  # the screens are in the store already
    shutil.rmtree(old)
    shutil.copytree(work, old, symlinks=True)
    extend = lambda: extend_memory(work / "smg", added, subgoals, IMAGES, TEXTS)  # noqa: E731
    before = tree(work / "smg")
    extend()
    want = tree(work / "smg")
    calls, points = kill_points(lambda: restore(old, work), extend, 2)
    seen = set()
    for n in points:
        restore(old, work)
        status, _ = in_child(extend, int(n))
        assert status == KILLED, (n, calls)
        memory = load_memory(work / "smg", IMAGES, TEXTS)
        got = tree(work / "smg")
        assert got in (before, want), f"a memory that is neither version after a kill at call {n} of {calls}"
        assert memory_size(memory)["episodes"] == (8 if got == want else 5)
        seen.add(got == want)
        extend()
        assert tree(work / "smg") == want
    assert seen == {False, True}
