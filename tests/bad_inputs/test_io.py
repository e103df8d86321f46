"""Bad input to core.io beyond its unit tests (``tests/test_io.py``): files that block, loop or
take quadratic time to scan, paths that cannot be written, and transaction journals guimem did not
write; each with its exact outcome."""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from guimem.core.data import DataError
from guimem.core.io import atomic_write_dir, read_json, read_jsonl, write_json, write_jsonl

pytestmark = pytest.mark.bad_input


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _loop(path: Path) -> None:
    path.symlink_to(path.parent / "loop.json")
    (path.parent / "loop.json").symlink_to(path)


READ_CASES = [
    # (case id, make the file at path, field, fragment); the error names the file (for JSON lines, its line 1)
    ("FIFO (would block)", _fifo, "file", "is not a regular file"),
    ("symlink loop", _loop, "file", "unreadable"),
    ("dangling symlink", lambda p: p.symlink_to(p.parent / "gone.json"), "file", "missing"),
    ("byte order mark", lambda p: p.write_bytes(b"\xef\xbb\xbf{}"), "json", "Unexpected UTF-8 BOM"),
    ("unterminated string of 400 KB escaped quotes", lambda p: p.write_text('[["' + '\\"' * 200_000), "json",
     "malformed JSON"),
    ("deep nesting inside an object", lambda p: p.write_text('{"a": ' + "[" * 70 + "]" * 70 + "}"), "json",
     "nested deeper than 64"),
    ("lone high surrogate bytes", lambda p: p.write_bytes(b'"\xed\xa0\x80"'), "file", "not UTF-8"),
    ("NUL bytes", lambda p: p.write_bytes(b"\x00\x00"), "json", "malformed JSON"),
]


@pytest.mark.parametrize("case, make, field, fragment", READ_CASES, ids=[c[0] for c in READ_CASES])
@pytest.mark.parametrize("reader", ["json", "jsonl"])
def test_read_refuses_in_linear_time(case, make, field, fragment, reader, tmp_path):
    path = tmp_path / f"x.{reader}"
    make(path)
    started = time.perf_counter()
    with pytest.raises(DataError) as info:
        read_json(path) if reader == "json" else read_jsonl(path)
    assert time.perf_counter() - started < 5  # the old depth scan took minutes on the 400 KB string
    err = info.value
    in_a_line = reader == "jsonl" and field != "file"  # a JSON-lines parse error names the line, as field 'line'
    assert (err.field, err.path) == (("line", f"{path}, line 1") if in_a_line else (field, str(path))), str(err)[:200]
    assert fragment in err.message, str(err)[:200]


ACCEPTED = [
    # (case id, file text, what it reads as): the readers parse, the fields that hold the values judge them
    ("NaN token", "[NaN]", lambda v: math.isnan(v[0])),
    ("float overflowing to infinity", "[1e999]", lambda v: v == [math.inf]),
    ("brackets inside a string", '["' + "[" * 1000 + '"]', lambda v: v == ["[" * 1000]),
    ("64 levels", "[" * 64 + "]" * 64, lambda v: isinstance(v, list)),
    ("integer of 4000 digits", "9" * 4000, lambda v: v == int("9" * 4000)),
]


@pytest.mark.parametrize("case, text, holds", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_read_accepts(case, text, holds, tmp_path):
    (tmp_path / "x.json").write_text(text)
    assert holds(read_json(tmp_path / "x.json"))
    [(line, value)] = read_jsonl(tmp_path / "x.json")
    assert line == 1 and holds(value)


WRITE_CASES: list[tuple[str, Callable[[Path], Any], str]] = [
    # (case id, the write into tmp_path (which holds a file 'f'), fragment); field 'path', the target named
    ("file where a folder must be", lambda d: write_json(d / "f" / "a" / "x.json", 1), "a file stands where"),
    ("file where a folder must be, JSON lines", lambda d: write_jsonl(d / "f" / "x.jsonl", [1]), "a file stands where"),
    ("store under a file", lambda d: atomic_write_dir(d / "f" / "s", lambda f: None, "guimem.test"),
     "a file stands where"),
    ("folder where the file goes", lambda d: write_json(d, 1), "is a folder"),
]


@pytest.mark.parametrize("case, write, fragment", WRITE_CASES, ids=[c[0] for c in WRITE_CASES])
def test_write_refuses_an_impossible_path(case, write, fragment, tmp_path):
    (tmp_path / "f").write_text("a file")
    with pytest.raises(DataError) as info:
        write(tmp_path)
    assert info.value.field == "path" and Path(info.value.path).is_relative_to(tmp_path) and fragment in info.value.message
    assert sorted(os.listdir(tmp_path)) == ["f"] and (tmp_path / "f").read_text() == "a file"


# ----------------------------------------------------------------------------- transaction journals
def _journal(doc: Any) -> Callable[[Path], None]:
    return lambda p: p.write_text(doc if isinstance(doc, str) else json.dumps(doc))


def _swaps(*pairs: Any) -> dict:
    return {"format": "guimem.transaction", "version": 1, "swaps": list(pairs)}


JOURNAL_CASES = [
    # (case id, make the journal at path, field, fragment): a save of several folders completes a
    # journal a crash left (atomic_write_dirs); one guimem did not write is never followed
    ("a symbolic link", lambda p: p.symlink_to(p.parent / "elsewhere.json"), "journal", "not a regular file"),
    ("a FIFO", _fifo, "journal", "not a regular file"),
    ("not JSON", _journal("{swaps"), "json", "malformed JSON"),
    ("another format", _journal({"format": "x", "version": 1, "swaps": []}), "journal", "not a guimem.transaction"),
    ("version true", _journal({"format": "guimem.transaction", "version": True, "swaps": []}), "journal",
     "version 1"),
    ("version 2", _journal({"format": "guimem.transaction", "version": 2, "swaps": []}), "journal", "version 1"),
    ("swaps not a list", _journal({"format": "guimem.transaction", "version": 1, "swaps": {}}), "journal",
     "version 1"),
    ("a target up the tree", _journal(_swaps(["..", "...tmp-abc"])), "swaps[0]", "a folder name"),
    ("a target in another folder", _journal(_swaps(["a/b", ".a/b.tmp-abc"])), "swaps[0]", "a folder name"),
    ("a temporary folder not the target's", _journal(_swaps(["train", ".test.tmp-abc"])), "swaps[0]",
     "temporary folder"),
    ("a temporary name that leaves the folder", _journal(_swaps(["train", ".train.tmp-../../x"])), "swaps[0]",
     "temporary folder"),
    ("a pair of three", _journal(_swaps(["train", ".train.tmp-abc", "x"])), "swaps[0]", "a folder name"),
]


@pytest.mark.parametrize("case, make, field, fragment", JOURNAL_CASES, ids=[c[0] for c in JOURNAL_CASES])
def test_a_journal_guimem_did_not_write_is_refused_and_nothing_moves(case, make, field, fragment, tmp_path):
    from guimem.core.io import readable_dir

    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "data.txt").write_text("mine")
    (tmp_path / ".train.tmp-abc").mkdir()  # what a planted journal would swap in
    journal = tmp_path / ".guimem-txn-planted.json"
    make(journal)
    before = sorted(p.name for p in tmp_path.iterdir())
    for call in (lambda: atomic_write_dir(tmp_path / "test", lambda f: (f / "x").write_text("1"), "guimem.t"),
                 lambda: readable_dir(tmp_path / "train")):
        with pytest.raises(DataError) as info:
            call()
        err = info.value
        assert err.field == field and fragment in err.message and err.path == str(journal), case
        assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing swapped, written or removed
    assert (tmp_path / "train" / "data.txt").read_text() == "mine"


# ============================================================================= the file system refuses a save
ENOSPC = OSError(28, "No space left on device")


@pytest.mark.parametrize("save", ["file", "folder", "memory", "subgoals"])
def test_a_full_disk_during_a_save_is_a_data_error_naming_the_destination(save, tmp_path, monkeypatch):
    """ENOSPC from the write itself (no file name in the error): the save names what it was saving,
    and the old version is untouched."""
    from guimem.core.data import Subgoal
    from guimem.core.store import save_subgoals

    target = tmp_path / ("f.json" if save in ("file", "subgoals") else "store")
    if save in ("file", "subgoals"):
        write_json(target, {"v": 1})
    else:
        atomic_write_dir(target, lambda f: (f / "a.json").write_text("{}"),
                         "guimem.memory" if save == "memory" else "guimem.test")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    real_fsync = os.fsync

    def full(fd: int) -> None:
        raise ENOSPC
    monkeypatch.setattr(os, "fsync", full)
    if save == "file":
        call = lambda: write_json(target, {"v": 2})  # noqa: E731
    elif save == "folder":
        call = lambda: atomic_write_dir(target, lambda f: (f / "a.json").write_text("[]"), "guimem.test")  # noqa: E731
    elif save == "memory":
        call = lambda: atomic_write_dir(target, lambda f: write_json(f / "memory.json", {}), "guimem.memory")  # noqa: E731
    else:
        sg = Subgoal("ep-0001", 0, 0, 1, "screens/0e615243634f4cc8.png", "screens/bfcb72a3a0cfec86.png", "open Notes",
                     "the list shows", "tap", "yes", 1)
        call = lambda: save_subgoals(target, [sg])  # noqa: E731
    with pytest.raises(DataError) as info:
        call()
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert (info.value.field, info.value.path) == ("path", str(target))
    assert info.value.message.startswith("could not be saved: No space left on device"), info.value.message
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
