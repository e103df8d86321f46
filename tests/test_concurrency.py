"""Saves and loads at the same time, from several processes (docs/CONVENTIONS.md, "Concurrency").

Two processes save one episode store over and over (one alternating two versions, one a third)
while two others load it; one process saves a memory over and over while another loads it. For a
bounded time. Every load must be one saved version whole, or a :class:`DataError` saying a save is
under way; no process may raise anything else (a raw ``OSError`` above all); the user's file in each
folder must survive every save.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from guimem.core.data import DataError
from guimem.core.io import atomic_write_dir, folders, read_whole
from guimem.core.store import load_episodes, save_episodes
from guimem.smg.memories import build_memory
from memory_fixtures import as_episode_store, embedders, store  # noqa: F401 (store: a fixture)

TESTS = Path(__file__).resolve().parent
SECONDS = 6.0  # how long each worker saves or loads

WORKER = r"""
import json, sys, time, traceback
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from guimem.core.data import DataError
from guimem.core.store import load_episodes, save_episodes
from memory_fixtures import embedders

role, root, seconds, out = sys.argv[2], Path(sys.argv[3]), float(sys.argv[4]), Path(sys.argv[5])
spec = json.loads(sys.argv[6])
images = {o.screenshot: (Path(spec["base"]) / o.screenshot).read_bytes()
          for e in load_episodes(spec["base"]) for o in e.observations}
counts, errors = {}, []

def count(key):
    counts[key] = counts.get(key, 0) + 1

def versions():
    # each version of the store: which episodes, every goal tagged with the version's name
    from guimem.core.store import load_episodes as _load
    base = {e.id: e for e in _load(spec["base"])}
    import dataclasses
    return {tag: [dataclasses.replace(base[i], goal=f"{base[i].goal} [{tag}]") for i in ids]
            for tag, ids in spec["versions"].items()}

def memories():
    from guimem.smg.memories import build_memory
    from guimem.core.store import load_episodes as _load
    import memory_fixtures as mf
    eps = {e.id: e for e in _load(spec["base"])}
    subs = [mf.subgoal(eps[s[0]], s[1], s[2], s[3], s[4], s[5]) for s in spec["subgoals"]]
    img, txt = embedders(Path(spec["cache"]))
    return img, txt, {tag: build_memory("smg", list(eps.values()), subs[:n], spec["base"], img, txt, tau=0.99, theta=0.9)
                      for tag, n in spec["memories"].items()}

try:
    end = time.monotonic() + seconds
    if role == "save_store":
        made = versions()
        order = spec["order"]
        k = 0
        while time.monotonic() < end:
            save_episodes(made[order[k % len(order)]], images, root)
            count("saved")
            k += 1
    elif role == "load_store":
        wanted = {tag: sorted(ids) for tag, ids in spec["versions"].items()}
        while time.monotonic() < end:
            try:
                eps = load_episodes(root)
            except DataError as err:
                count("under way" if "save of this episode store was under way" in err.message else "DataError")
                if "was under way" not in err.message:
                    errors.append(str(err))
                continue
            tags = {e.goal.rsplit("[", 1)[-1].rstrip("]") for e in eps}
            ids = sorted(e.id for e in eps)
            if len(tags) == 1 and ids == wanted[next(iter(tags))]:
                count("whole")
            else:
                count("mixed")
                errors.append(f"mixed load: {sorted(e.id for e in eps)} {sorted(tags)}")
    elif role == "save_memory":
        _, _, made = memories()
        k = 0
        while time.monotonic() < end:
            made[sorted(made)[k % len(made)]].save(root)
            count("saved")
            k += 1
    elif role == "load_memory":
        from guimem.smg.memories import load_memory
        img, txt, made = memories()
        wanted = {tuple(sorted(m.items)): tag for tag, m in made.items()}
        while time.monotonic() < end:
            try:
                m = load_memory(root, img, txt)
            except DataError as err:
                count("under way" if "was under way" in err.message else "DataError")
                if "was under way" not in err.message:
                    errors.append(str(err))
                continue
            count("whole" if tuple(sorted(m.items)) in wanted else "mixed")
except BaseException as err:
    errors.append("raised " + "".join(traceback.format_exception_only(type(err), err)).strip())
out.write_text(json.dumps({"counts": counts, "errors": errors}))
"""


def _run_together(tmp_path: Path, jobs: list[tuple[str, Path, dict]]) -> list[dict]:
    procs = []
    for n, (role, root, spec) in enumerate(jobs):
        out = tmp_path / f"worker{n}.json"
        procs.append((out, subprocess.Popen([sys.executable, "-c", WORKER, str(TESTS), role, str(root), str(SECONDS),
                                             str(out), json.dumps(spec)], stderr=subprocess.PIPE, text=True)))
    reports = []
    for out, proc in procs:
        _, err = proc.communicate(timeout=SECONDS + 240)
        assert proc.returncode == 0 and out.is_file(), err[-2000:]
        reports.append(json.loads(out.read_text()))
    return reports


def test_loads_during_saves_see_one_version_whole_and_the_users_file_survives(store, tmp_path):  # noqa: F811
    world, eps, subs = as_episode_store(store)
    ids = [e.id for e in eps]
    target = tmp_path / "shared" / "store"
    versions = {"A": ids[:2], "B": ids, "C": ids[1:]}
    spec = {"base": str(world), "versions": versions}
    base = {e.id: e for e in load_episodes(world)}
    images = {o.screenshot: (world / o.screenshot).read_bytes() for e in eps for o in e.observations}
    save_episodes([dataclasses.replace(base[i], goal=f"{base[i].goal} [A]") for i in versions["A"]], images, target)
    (target / "README.txt").write_text("my notes on this store\n")

    memory = tmp_path / "shared" / "memory"
    sub_spec = [(s.episode_id, s.index, s.first_step, s.last_step, s.text, s.success) for s in subs]
    mem_spec = {"base": str(world), "subgoals": sub_spec, "memories": {"few": 2, "all": len(subs)},
                "cache": str(tmp_path / "cache")}
    img, txt = embedders(tmp_path / "cache")
    build_memory("smg", eps, subs, world, img, txt, tau=0.99, theta=0.9).save(memory)
    (memory / "README.txt").write_text("my notes on this memory\n")
    reports = _run_together(tmp_path, [
        ("save_store", target, {**spec, "order": ["A", "B"]}),
        ("save_store", target, {**spec, "order": ["C"]}),
        ("load_store", target, spec),
        ("load_store", target, spec),
        ("save_memory", memory, mem_spec),
        ("load_memory", memory, mem_spec),
    ])
    for n, report in enumerate(reports):
        assert report["errors"] == [], f"worker {n}: {report['errors'][:5]}"
    saves = reports[0]["counts"].get("saved", 0) + reports[1]["counts"].get("saved", 0)
    loads = [reports[i]["counts"] for i in (2, 3, 5)]
    assert saves >= 10 and reports[4]["counts"].get("saved", 0) >= 5, reports  # the saves did overlap the loads
    assert all(c.get("whole", 0) >= 5 and c.get("mixed", 0) == 0 for c in loads), loads
    assert (target / "README.txt").read_text() == "my notes on this store\n"
    assert (memory / "README.txt").read_text() == "my notes on this memory\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["memory", "store"]  # no lock, backup or leftover


def test_a_load_that_always_overlaps_a_save_says_a_save_is_under_way(tmp_path, monkeypatch):
    """When every read overlaps a swap, the reader gives up with a DataError that says so."""
    target = atomic_write_dir(tmp_path / "store", lambda f: (f / "a.txt").write_text("v1"), "guimem.test")
    monkeypatch.setattr(folders, "READ_ATTEMPTS", 3)
    calls = []

    def read(folder: Path) -> str:
        calls.append(folder)
        atomic_write_dir(target, lambda f: (f / "a.txt").write_text(f"v{len(calls) + 1}"), "guimem.test")
        return (folder / "a.txt").read_text()

    with pytest.raises(DataError, match="was under way during 3 attempts") as info:
        read_whole(target, read, "test store")
    assert info.value.path == str(target) and len(calls) == 3
    assert read_whole(target, lambda f: (f / "a.txt").read_text()) == "v4"


def test_a_file_system_without_locks_saves_and_leaves_no_lock_file(tmp_path, monkeypatch):
    import errno
    import fcntl

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")
    monkeypatch.setattr(fcntl, "flock", no_locks)
    from guimem.core.io import write_json
    target = atomic_write_dir(tmp_path / "mem", lambda f: write_json(f / "a.json", {"v": 1}), "guimem.test")
    assert sorted(p.name for p in target.iterdir()) == [".guimem-kind", "a.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mem"]


def test_add_episodes_names_the_store_never_the_lock_file(tmp_path, store):  # noqa: F811
    from guimem.core.store import add_episodes
    world, eps, _ = as_episode_store(store)
    images = {o.screenshot: (world / o.screenshot).read_bytes() for e in eps for o in e.observations}
    with pytest.raises(DataError, match="no episode store here") as info:
        add_episodes(eps, images, tmp_path / "nowhere" / "store")
    assert info.value.path == str(tmp_path / "nowhere" / "store")


def test_a_load_through_a_link_sees_the_saves_behind_it(tmp_path):
    """The folder's version is read through a link to it: a swap behind the link is seen."""
    real = atomic_write_dir(tmp_path / "real", lambda f: (f / "a.txt").write_text("v1"), "guimem.test")
    (tmp_path / "link").symlink_to(real)
    calls = []

    def read(folder: Path) -> str:
        calls.append(folder)
        if len(calls) == 1:  # a save replaces the real folder while this read is under way
            atomic_write_dir(real, lambda f: (f / "a.txt").write_text("v2"), "guimem.test")
        return (folder / "a.txt").read_text()

    assert read_whole(tmp_path / "link", read) == "v2" and len(calls) == 2


def test_a_load_during_the_end_of_a_save_of_several_folders_is_read_again(tmp_path, monkeypatch):
    """The journal of a save of several folders vanishes while a reader looks at it: no false
    'remove it yourself', no raw OSError."""
    from guimem.core.io import FolderWrite, atomic_write_dirs

    def writer(text):
        return lambda f: (f / "a.txt").write_text(text)
    atomic_write_dirs([FolderWrite(tmp_path / n, writer("v1"), "guimem.test") for n in ("train", "test")])
    (tmp_path / ".guimem-txn-abc.json").write_text("")  # reserved but empty: nothing committed
    real_stat, calls = folders.os.stat, []

    def vanishing_stat(path, *args, **kwargs):  # the saver removes the journal between listing and reading
        if str(path).endswith(".guimem-txn-abc.json") and not calls:
            calls.append(path)
            Path(path).unlink()
        return real_stat(path, *args, **kwargs)
    monkeypatch.setattr(folders.os, "stat", vanishing_stat)
    assert read_whole(tmp_path / "train", lambda f: (f / "a.txt").read_text()) == "v1" and calls
