"""Bad input to the episode store and the subgoal files, each case with its exact outcome.

* stored bad stores (``tests/data/bad_inputs/<case>/``, rebuilt by its ``make_corpus.py``): loading
  each raises a :class:`DataError` naming the file and the field;
* bad stores that cannot live in git (links out of the store, a FIFO) or need the fast mode, made
  on the spot from the valid one;
* ``load_screenshot`` on bad screenshot paths and bytes;
* saves that must refuse (a target that is not an episode store, bad ids, bad images, values that
  would not read back), writing nothing, and saves that convert or recover;
* subgoal files, with and without the store their screenshot paths point into.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
from PIL import Image

from guimem.core.data import DataError, Subgoal, SubgoalLabel
from guimem.core.io import MARKER, atomic_write_dir
from guimem.core.store import (
    load_episodes,
    load_screenshot,
    load_subgoals,
    read_manifest,
    save_episodes,
    save_subgoals,
    screen_path,
)

pytestmark = pytest.mark.bad_input

CORPUS = Path(__file__).parents[1] / "data" / "bad_inputs"
_spec = importlib.util.spec_from_file_location("make_corpus", CORPUS / "make_corpus.py")
make_corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_corpus)
EP1, EP2 = make_corpus.EP1, make_corpus.EP2
VALID = CORPUS / "valid" / "store"


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


@pytest.fixture
def store(tmp_path) -> Path:
    """A copy of the valid corpus store at ``tmp_path/store``."""
    return Path(shutil.copytree(VALID, tmp_path / "store"))


def _error(call: Callable[[], Any]) -> DataError:
    with pytest.raises(DataError) as info:
        call()
    return info.value


# ============================================================================= stored bad stores
# The stored cases: every folder but the valid store (and Python's bytecode cache of make_corpus.py,
# written where the environment does not forbid it).
STORED = sorted(p.name for p in CORPUS.iterdir() if p.is_dir() and p.name not in ("valid", "__pycache__"))


def test_stored_corpus_matches_its_builder():
    assert STORED == sorted(make_corpus.CASES) and len(STORED) >= 45


@pytest.mark.parametrize("case", STORED)
def test_stored_bad_store_names_file_and_field(case, tmp_path):
    expect = json.loads((CORPUS / case / "expect.json").read_text())
    root = Path(shutil.copytree(CORPUS / case / "store", tmp_path / case))
    err = _error(lambda: load_episodes(root))
    assert (err.field, err.path) == (expect["field"], str(root / expect["file"])), str(err)[:300]
    assert expect["message"] in err.message, str(err)[:300]


def test_stored_valid_store_loads(store):
    episodes = load_episodes(store)
    assert [e.id for e in episodes] == ["ep-0001", "ep-0002"] and (store / MARKER).read_text() == "guimem.episodes\n"


# ============================================================================= stores made bad here
def _link_out(root: Path, outside: Path, rel: str) -> None:
    """Move ``root/rel`` outside the store and leave a symlink to it in its place."""
    (outside / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.move(root / rel, outside / rel)
    (root / rel).symlink_to(outside / rel)


def _shot(root: Path, step: int, rel: str = EP1) -> str:
    return json.loads((root / rel).read_text())["steps"][step]["screenshot"]


def _fifo(root: Path, rel: str) -> None:
    (root / rel).unlink()
    os.mkfifo(root / rel)


def _mirror_inside(root: Path) -> None:
    """A screenshot replaced by a link to a copy of its bytes elsewhere inside the store."""
    rel = _shot(root, 1)
    (root / "mirror").mkdir()
    shutil.move(root / rel, root / "mirror" / "copy.png")
    (root / rel).symlink_to(root / "mirror" / "copy.png")


LOAD_CASES = [
    # (case id, corrupt(root, outside), full mode?, file relative to the store, field, message fragment)
    ("screenshot links out", lambda r, o: _link_out(r, o, _shot(r, 1)), True, EP1, "steps[1].screenshot",
     "resolves outside the store"),
    ("screenshot links out, fast mode", lambda r, o: _link_out(r, o, _shot(r, 1)), False, EP1, "steps[1].screenshot",
     "resolves outside the store"),
    ("screens folder links out", lambda r, o: _link_out(r, o, "screens"), True, EP1, "steps[0].screenshot",
     "resolves outside the store"),
    ("dangling screenshot link", lambda r, o: ((r / _shot(r, 4)).unlink(), (r / _shot(r, 4)).symlink_to(o / "gone")),
     True, EP1, "steps[4].screenshot", "does not exist"),
    ("episode file links out", lambda r, o: _link_out(r, o, EP2), True, EP2, "file", "resolves outside the store"),
    ("episodes folder links out", lambda r, o: _link_out(r, o, "episodes"), True, EP1, "file",
     "resolves outside the store"),
    ("manifest links out", lambda r, o: _link_out(r, o, "manifest.json"), True, "manifest.json", "file",
     "resolves outside the store"),
    ("episode file a FIFO", lambda r, o: _fifo(r, EP2), True, EP2, "file", "is not a regular file"),
    ("manifest a FIFO", lambda r, o: _fifo(r, "manifest.json"), True, "manifest.json", "file", "is not a regular file"),
    ("missing screenshot, fast mode", lambda r, o: (r / _shot(r, 2)).unlink(), False, EP1, "steps[2].screenshot",
     "does not exist"),
    ("store missing", lambda r, o: shutil.rmtree(r), True, "", "path", "no episode store here"),
    ("store is a file", lambda r, o: (shutil.rmtree(r), r.write_text("x")), True, "", "path", "no episode store here"),
]


@pytest.mark.parametrize("case, corrupt, full, file, field, fragment", LOAD_CASES, ids=[c[0] for c in LOAD_CASES])
def test_bad_store_names_file_and_field(case, corrupt, full, file, field, fragment, store, tmp_path):
    (tmp_path / "outside").mkdir()
    corrupt(store, tmp_path / "outside")
    err = _error(lambda: load_episodes(store, verify_images=full))
    assert (err.field, err.path) == (field, str(store / file) if file else str(store)), str(err)[:300]
    assert fragment in err.message, str(err)[:300]


LOAD_ACCEPTED = [
    # (case id, change(root), full mode?): the store loads, all of it
    ("hash mismatch in the fast mode", lambda r: _overwrite(r, 1, 0), False),
    ("link to the same bytes inside the store", _mirror_inside, True),
    ("store written before kind markers", lambda r: (r / MARKER).unlink(), True),
    ("only the backup a crash left", lambda r: os.replace(r, r.parent / ".store.old"), True),
    ("store reached through a link", lambda r: (os.replace(r, r.parent / "real"), r.symlink_to(r.parent / "real")), True),
]


@pytest.mark.parametrize("case, change, full", LOAD_ACCEPTED, ids=[c[0] for c in LOAD_ACCEPTED])
def test_store_still_loads(case, change, full, store):
    change(store)
    assert [e.id for e in load_episodes(store, verify_images=full)] == ["ep-0001", "ep-0002"]
    assert read_manifest(store)["steps"] == 9


# ============================================================================= load_screenshot
def _rehash(root: Path, data: bytes) -> str:
    """Store ``data`` under its own hash in ``root``; its store path."""
    (root / screen_path(data)).write_bytes(data)
    return screen_path(data)


def _overwrite(root: Path, step: int, with_step: int) -> str:
    """Overwrite the screenshot of EP1's ``step`` with that of ``with_step``; the path of the first."""
    (root / _shot(root, step)).write_bytes((root / _shot(root, with_step)).read_bytes())
    return _shot(root, step)


SCREENSHOT_CASES = [
    # (case id, the path asked for, given the store: fragment of the message; the field is 'screenshot', the file the store)
    ("parent path", lambda r: "../secret.png", "inside the store"),
    ("absolute path", lambda r: str(r / _shot(r, 0)), "inside the store"),
    ("not a content name", lambda r: "screens/0000.png", "screens/<16 hex digits>.png"),
    ("an episode file", lambda r: EP1, "screens/<16 hex digits>.png"),
    ("missing", lambda r: "screens/0123456789abcdef.png", "does not exist"),
    ("hash mismatch", lambda r: _overwrite(r, 0, 1), "does not match its content hash"),
    ("pixel bomb header", lambda r: _rehash(r, make_corpus.png_declaring(10_000, 5_000)), "10000x5000 pixels, over the cap"),
    ("not a PNG", lambda r: _rehash(r, b"GIF89a" + bytes(40)), "is not a PNG"),
    ("truncated PNG", lambda r: _rehash(r, (r / _shot(r, 0)).read_bytes()[:70]), "does not decode"),
]


@pytest.mark.parametrize("case, rel, fragment", SCREENSHOT_CASES, ids=[c[0] for c in SCREENSHOT_CASES])
def test_load_screenshot_refuses(case, rel, fragment, store):
    path = rel(store)
    err = _error(lambda: load_screenshot(store, path))
    assert (err.field, err.path) == ("screenshot", str(store)) and fragment in err.message, str(err)[:300]


def test_load_screenshot_refuses_a_link_out(store, tmp_path):
    (tmp_path / "outside").mkdir()
    _link_out(store, tmp_path / "outside", _shot(store, 3))
    err = _error(lambda: load_screenshot(store, _shot(store, 3)))
    assert (err.field, err.path) == ("screenshot", str(store)) and "resolves outside the store" in err.message


# ============================================================================= saving
@pytest.fixture
def recorded(store):
    """Episodes and images as a pipeline hands them to ``save_episodes`` (keys: the store paths)."""
    episodes = load_episodes(store)
    images = {o.screenshot: (store / o.screenshot).read_bytes() for e in episodes for o in e.observations}
    return episodes, images


def _key(episodes, ep: int = 0, step: int = 0) -> str:
    return episodes[ep].steps[step].screenshot


def _with_episode(episodes, i: int, **changes):
    return [dataclasses.replace(e, **changes) if j == i else e for j, e in enumerate(episodes)]


def _with_label(episodes, label: SubgoalLabel):
    ep = episodes[0]
    steps = (dataclasses.replace(ep.steps[0], subgoal=label),) + ep.steps[1:]
    return [dataclasses.replace(ep, steps=steps)] + list(episodes[1:])


def _prepare_target(kind: str) -> Callable[[Path], None]:
    def prepare(target: Path) -> None:
        if kind == "foreign":
            target.mkdir()
            (target / "thesis.tex").write_text("years of work")
        elif kind == "graph":
            atomic_write_dir(target, lambda f: (f / "manifest.json").write_text("{}"), "guimem.memory_graph")
        elif kind == "file":
            target.write_text("notes")
        elif kind == "link":
            shutil.copytree(VALID, target.parent / "elsewhere")
            target.symlink_to(target.parent / "elsewhere")
    return prepare


def _unchanged(episodes, images):
    return episodes, images, None


SAVE_CASES = [
    # (case id, prepare(target), bad inputs (episodes, images) -> (episodes, images, meta), field, names the target?, fragment)
    ("target holds other files", _prepare_target("foreign"), _unchanged, "path", True, "files guimem did not write"),
    ("target is a memory graph", _prepare_target("graph"), _unchanged, "path", True, "a guimem.memory_graph store"),
    ("target is a file", _prepare_target("file"), _unchanged, "path", True, "is not a folder"),
    ("target is a link to a store", _prepare_target("link"), _unchanged, "path", True, "is not a folder"),
    ("unsafe id", None, lambda e, i: (_with_episode(e, 0, id="../../x"), i, None), "episodes[0].id", False,
     "not a safe file name"),
    ("id of 129 characters", None, lambda e, i: (_with_episode(e, 1, id="a" * 129), i, None), "episodes[1].id", False,
     "not a safe file name"),
    ("duplicate id", None, lambda e, i: ([e[0], e[1], e[0]], i, None), "episodes[2].id", False,
     "duplicate id 'ep-0001' (also episodes[0])"),
    ("no image for a key", None, lambda e, i: (e, {k: v for k, v in i.items() if k != e[1].final.screenshot}, None),
     "episodes[1].final.screenshot", False, "no image for screenshot key"),
    ("garbage bytes", None, lambda e, i: (e, {**i, _key(e): b"not an image"}, None), "episodes[0].steps[0].screenshot",
     False, "does not decode"),
    ("EPS bytes (never handed to external tools)", None,
     lambda e, i: (e, {**i, _key(e): b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 9 9\n"}, None),
     "episodes[0].steps[0].screenshot", False, "does not decode"),
    ("truncated PNG bytes", None, lambda e, i: (e, {**i, _key(e, 0, 2): i[_key(e, 0, 2)][:70]}, None),
     "episodes[0].steps[2].screenshot", False, "does not decode"),
    ("pixel bomb bytes", None, lambda e, i: (e, {**i, _key(e, 1): make_corpus.png_declaring(9000, 9000)}, None),
     "episodes[1].steps[0].screenshot", False, "9000x9000 pixels, over the cap"),
    ("pixel bomb image", None, lambda e, i: (e, {**i, _key(e): Image.new("1", (8000, 6000))}, None),
     "episodes[0].steps[0].screenshot", False, "8000x6000 pixels, over the cap"),
    ("image a string", None, lambda e, i: (e, {**i, _key(e): "screens/x.png"}, None), "episodes[0].steps[0].screenshot",
     False, "expected PNG bytes or a PIL image, got str"),
    ("goal with a lone surrogate", None, lambda e, i: (_with_episode(e, 1, goal="dark \ud800"), i, None),
     "episodes[1].goal", False, "lone surrogate"),
    ("provenance NaN", None, lambda e, i: (_with_episode(e, 0, provenance={"seed": float("nan")}), i, None),
     "episodes[0].provenance.seed", False, "finite"),
    ("provenance not JSON", None, lambda e, i: (_with_episode(e, 0, provenance={"seed": np.int64(3)}), i, None),
     "episodes[0].provenance.seed", False, "expected a JSON value, got int64"),
    ("negative subgoal index", None, lambda e, i: (_with_label(e, SubgoalLabel(-1, "open_app", "x")), i, None),
     "episodes[0].steps[0].subgoal.index", False, "must be in [0, 2147483647]"),
    ("meta infinite", None, lambda e, i: (e, i, {"world": {"p": float("inf")}}), "meta.world.p", False, "finite"),
    ("meta lone surrogate", None, lambda e, i: (e, i, {"note": "\udcff"}), "meta.note", False, "lone surrogate"),
]


@pytest.mark.parametrize("case, prepare, make, field, names_target, fragment", SAVE_CASES, ids=[c[0] for c in SAVE_CASES])
def test_save_refuses_and_writes_nothing(case, prepare, make, field, names_target, fragment, recorded, tmp_path):
    target = tmp_path / "out" / "store"
    target.parent.mkdir()
    if prepare:
        prepare(target)
    before = _tree(tmp_path / "out")
    episodes, images, meta = make(*recorded)
    err = _error(lambda: save_episodes(episodes, images, target, meta))
    assert (err.field, err.path) == (field, str(target) if names_target else None), str(err)[:300]
    assert fragment in err.message, str(err)[:300]
    assert _tree(tmp_path / "out") == before
    assert not [p.name for p in (tmp_path / "out").iterdir() if ".tmp-" in p.name]


def _jpeg(data: bytes) -> bytes:
    buf = io.BytesIO()
    with Image.open(io.BytesIO(data)) as im:
        im.convert("RGB").save(buf, format="JPEG", quality=95)
    return buf.getvalue()


def test_save_converts_other_image_bytes_to_png(recorded, tmp_path):
    episodes, images = recorded
    key = _key(episodes, 0, 1)
    images = {**images, key: _jpeg(images[key]), _key(episodes, 1): Image.open(io.BytesIO(images[_key(episodes, 1)]))}
    root = save_episodes(episodes, images, tmp_path / "s")
    stored = load_episodes(root)[0].steps[1].screenshot
    data = (root / stored).read_bytes()
    assert data.startswith(b"\x89PNG") and screen_path(data) == stored
    with Image.open(io.BytesIO(images[key])) as jpeg:
        assert load_screenshot(root, stored).tobytes() == jpeg.convert("RGB").tobytes()


@pytest.mark.parametrize("prepare", ["empty folder", "crash backup only"])
def test_save_accepts_an_episode_store_or_nothing(prepare, recorded, tmp_path):
    episodes, images = recorded
    target = tmp_path / "out" / "store"
    target.parent.mkdir()
    if prepare == "empty folder":
        target.mkdir()
    else:
        shutil.copytree(VALID, target.parent / ".store.old")
    save_episodes(episodes[:1], images, target)
    assert [e.id for e in load_episodes(target)] == ["ep-0001"] and os.listdir(target.parent) == ["store"]


def test_crash_between_the_renames_leaves_the_old_store_readable(recorded, tmp_path, monkeypatch):
    episodes, images = recorded
    root = save_episodes(episodes, images, tmp_path / "out" / "store")
    real, calls = os.replace, []

    def dies_at_second_rename(src, dst):
        calls.append(dst)
        if len(calls) >= 2:
            raise OSError("simulated crash")
        real(src, dst)

    monkeypatch.setattr(os, "replace", dies_at_second_rename)
    with pytest.raises(DataError, match="could not be saved: simulated crash"):
        save_episodes(episodes[:1], images, root)
    monkeypatch.undo()
    assert not root.exists() and (root.parent / ".store.old").is_dir()
    assert [e.id for e in load_episodes(root)] == ["ep-0001", "ep-0002"]
    assert read_manifest(root)["episodes"] == 2
    assert load_screenshot(root, _key(episodes, 1)).size == (18, 36)
    save_episodes(episodes[:1], images, root)
    assert [e.id for e in load_episodes(root)] == ["ep-0001"] and os.listdir(root.parent) == ["store"]


KILL = """
import os, sys
from guimem.core.store import load_episodes, save_episodes
root = sys.argv[1]
episodes = load_episodes(root)
images = {o.screenshot: open(os.path.join(root, o.screenshot), "rb").read() for e in episodes for o in e.observations}
real, calls = os.replace, []
def replace(src, dst):
    calls.append(dst)
    if len(calls) == 2:
        os._exit(9)  # the process dies: no handler, no clean-up
    real(src, dst)
os.replace = replace
save_episodes(episodes[:1], images, root)
"""


def test_killed_save_leaves_a_readable_store_and_the_next_save_cleans_up(store, recorded):
    done = subprocess.run([sys.executable, "-c", KILL, str(store)], capture_output=True, text=True)
    assert done.returncode == 9, done.stderr
    left = sorted(p.name for p in store.parent.iterdir())  # the dead save's lock file too: it locks nothing now
    assert left[:2] == [".guimem-save.lock", ".store.old"] and left[2].startswith(".store.tmp-") and len(left) == 3
    assert [e.id for e in load_episodes(store)] == ["ep-0001", "ep-0002"]
    episodes, images = recorded
    save_episodes(episodes[1:], images, store)
    assert [e.id for e in load_episodes(store)] == ["ep-0002"] and os.listdir(store.parent) == ["store"]


# ============================================================================= subgoal files
def _subgoal(**changes) -> dict:
    d = Subgoal("ep-0001", 0, 0, 1, "screens/0e615243634f4cc8.png", "screens/bfcb72a3a0cfec86.png", "open Notes",
                "the list shows", "tap", "yes", 1).to_dict()
    return {**d, **changes}


def _lines(*docs: Any) -> str:
    return "".join((d if isinstance(d, str) else json.dumps(d)) + "\n" for d in docs)


SUBGOAL_CASES = [
    # (case id, file text, with the store?, line, field, message fragment); line None: the file itself
    ("screenshot escapes the store", _lines(_subgoal(from_screenshot="../../etc/passwd")), True, 1, "from_screenshot",
     "inside the store"),
    ("absolute screenshot", _lines(_subgoal(), _subgoal(index=1, to_screenshot="/etc/passwd")), True, 2, "to_screenshot",
     "inside the store"),
    ("screenshot an episode file", _lines(_subgoal(to_screenshot=EP2)), True, 1, "to_screenshot",
     "screens/<16 hex digits>.png"),
    ("screenshot missing", _lines(_subgoal(from_screenshot="screens/0123456789abcdef.png")), True, 1, "from_screenshot",
     "does not exist"),
    ("line a list", _lines([_subgoal()]), False, 1, "subgoal", "expected an object, got list"),
    ("text with a lone surrogate", _lines(_subgoal(text="open \ud800")), False, 1, "text", "lone surrogate"),
    ("integer of 5000 digits", _lines(json.dumps(_subgoal()).replace('"index": 0', '"index": ' + "7" * 5000)), False, 1,
     "line", "unreadable JSON"),
    ("integer past 32 bits", _lines(_subgoal(successor=2**40)), False, 1, "successor", "must be in [0, 2147483647]"),
    ("nested too deep", _lines(_subgoal(), "[" * 80 + "]" * 80), False, 2, "line", "nested deeper than 64"),
    ("malformed line", _lines(_subgoal(), "{not json"), False, 2, "line", "malformed JSON"),
    ("duplicate subgoal", _lines(_subgoal(), _subgoal()), False, 2, "id", "duplicate subgoal 'ep-0001#0'"),
    ("actions item a list", _lines(_subgoal(actions=[[]])), False, 1, "actions[0]", "expected an object, got list"),
    ("success unknown", _lines(_subgoal(success="maybe")), False, 1, "success", "expected one of"),
]


@pytest.mark.parametrize("case, text, with_store, line, field, fragment", SUBGOAL_CASES, ids=[c[0] for c in SUBGOAL_CASES])
def test_bad_subgoal_file_names_line_and_field(case, text, with_store, line, field, fragment, store, tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text(text, encoding="utf-8")
    err = _error(lambda: load_subgoals(path, store if with_store else None))
    assert (err.field, err.path) == (field, f"{path}, line {line}"), str(err)[:300]
    assert fragment in err.message, str(err)[:300]


def test_subgoal_screenshot_linking_out_is_refused(store, tmp_path):
    (tmp_path / "outside").mkdir()
    _link_out(store, tmp_path / "outside", "screens/bfcb72a3a0cfec86.png")
    path = tmp_path / "train.jsonl"
    path.write_text(_lines(_subgoal()))
    err = _error(lambda: load_subgoals(path, store))
    assert (err.field, err.path) == ("to_screenshot", f"{path}, line 1") and "resolves outside the store" in err.message


def _replace_with_folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


FILE_CASES = [
    # (case id, change(subgoal file), store root (None: the valid store) -> the file the error names, field, fragment)
    ("file is a folder", _replace_with_folder, None, "file", "is a folder"),
    ("file missing", Path.unlink, None, "file", "missing"),
    ("file not UTF-8", lambda p: p.write_bytes(b'{"text": "\xc3"}\n'), None, "file", "not UTF-8"),
    ("store missing", lambda p: None, "nothing", "path", "no episode store here"),
]


@pytest.mark.parametrize("case, change, root, field, fragment", FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_bad_subgoal_file_or_store_is_named(case, change, root, field, fragment, store, tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text(_lines(_subgoal()))
    change(path)
    root = tmp_path / root if root else store
    err = _error(lambda: load_subgoals(path, root))
    assert (err.field, err.path) == (field, str(root if field == "path" else path)), str(err)[:300]
    assert fragment in err.message, str(err)[:300]


def test_subgoal_paths_are_checked_only_against_a_store(tmp_path):
    """Without ``store_root`` the paths are not checked: callers that read screenshots pass the store."""
    path = tmp_path / "train.jsonl"
    path.write_text(_lines(_subgoal(from_screenshot="../../etc/passwd", successor=None)))
    assert load_subgoals(path)[0].from_screenshot == "../../etc/passwd"


def test_save_subgoals_refuses_what_would_not_read_back(tmp_path):
    path = tmp_path / "train.jsonl"
    good = Subgoal.from_dict(_subgoal())
    save_subgoals(path, [good])
    before = path.read_bytes()
    bad = dataclasses.replace(good, index=1, text="open \ud800")
    err = _error(lambda: save_subgoals(path, [good, bad]))
    assert (err.field, err.path) == ("subgoals[1].text", str(path)) and "lone surrogate" in err.message
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["train.jsonl"]


def test_save_subgoals_refuses_a_folder(tmp_path):
    (tmp_path / "train.jsonl").mkdir()
    err = _error(lambda: save_subgoals(tmp_path / "train.jsonl", [Subgoal.from_dict(_subgoal())]))
    assert (err.field, err.path) == ("path", str(tmp_path / "train.jsonl")) and "is a folder" in err.message


def test_subgoal_text_with_unicode_line_breaks_round_trips(store, tmp_path):
    sg = Subgoal.from_dict(_subgoal(text="open\u2028Notes\x85now", to_screenshot="screens/c3e86268ed326b30.png",
                                    successor=None))  # a span of its episode, as the store holds it
    save_subgoals(tmp_path / "s.jsonl", [sg])
    assert load_subgoals(tmp_path / "s.jsonl", store) == [sg]
