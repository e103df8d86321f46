"""core.io: atomic file and folder writes, the kind marker, crash recovery, and readers that name the file."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from guimem.core import io as gio
from guimem.core.data import DataError
from guimem.core.io import (
    MARKER,
    atomic_write_bytes,
    atomic_write_dir,
    atomic_write_text,
    check_finite,
    check_number,
    folders,
    json_depth,
    read_json,
    read_jsonl,
    readable_dir,
    write_json,
    write_jsonl,
)

KIND = "guimem.test"


def _tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` (hidden ones included) with the hash of its bytes."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _writer(text: str):
    """A ``write(folder)`` that puts ``a.txt`` and ``sub/b.txt`` holding ``text``."""
    def write(folder: Path) -> None:
        (folder / "a.txt").write_text(text)
        (folder / "sub").mkdir()
        (folder / "sub" / "b.txt").write_text(text)
    return write


def _replace_failing_from(monkeypatch, call: int) -> list:
    """Make ``os.replace`` in core.io fail from its ``call``-th call on (the machine dies there)."""
    calls: list = []
    real = os.replace

    def replace(src, dst):
        calls.append((Path(src).name, Path(dst).name))
        if len(calls) >= call:
            raise OSError("simulated crash")
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    return calls


# ============================================================================= files
def test_atomic_write_bytes_writes_and_replaces(tmp_path):
    path = tmp_path / "new" / "f.bin"
    assert atomic_write_bytes(path, b"one") == path and path.read_bytes() == b"one"
    atomic_write_bytes(path, b"two")
    assert path.read_bytes() == b"two" and os.listdir(path.parent) == ["f.bin"]


def test_atomic_write_bytes_refuses_a_folder(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "keep").write_text("x")
    with pytest.raises(DataError) as info:
        atomic_write_bytes(tmp_path / "d", b"x")
    assert (info.value.field, info.value.path) == ("path", str(tmp_path / "d"))
    assert (tmp_path / "d" / "keep").read_text() == "x"


def test_failed_file_write_keeps_the_old_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "f.txt"
    atomic_write_text(path, "old")
    _replace_failing_from(monkeypatch, 1)
    with pytest.raises(DataError, match="could not be saved: simulated crash"):
        atomic_write_text(path, "new")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["f.txt"]


@pytest.mark.parametrize("name", ["f.json", "run[1].json", "a*b?.json"])
def test_file_leftovers_are_cleaned_by_the_next_save(tmp_path, name):
    """Temporary names are matched literally: glob characters in a name neither hide nor widen them."""
    (tmp_path / f".{name}.tmp-abc").write_text("left by a killed save")
    (tmp_path / f".{name}.tmp-dir").mkdir()
    (tmp_path / ".other.json.tmp-abc").write_text("another file's leftover")
    atomic_write_text(tmp_path / name, "x")
    assert sorted(os.listdir(tmp_path)) == sorted([name, ".other.json.tmp-abc"])


def test_write_json_and_jsonl_bytes(tmp_path):
    write_json(tmp_path / "a.json", {"b": 1, "a": ["é"]})
    assert (tmp_path / "a.json").read_text(encoding="utf-8") == '{\n "a": [\n  "é"\n ],\n "b": 1\n}\n'
    write_json(tmp_path / "b.json", {"b": 1, "a": 2}, indent=None, sort_keys=False)
    assert (tmp_path / "b.json").read_text() == '{"b": 1, "a": 2}\n'
    write_jsonl(tmp_path / "c.jsonl", [{"z": 1, "a": "ü"}, [1, 2]])
    assert (tmp_path / "c.jsonl").read_text(encoding="utf-8") == '{"a": "ü", "z": 1}\n[1, 2]\n'


def test_unwritable_values_are_refused_and_nothing_written(tmp_path):
    with pytest.raises(DataError) as info:
        write_json(tmp_path / "nan.json", {"x": float("nan")})
    assert (info.value.field, info.value.path) == ("json", str(tmp_path / "nan.json"))
    with pytest.raises(DataError) as info:
        write_jsonl(tmp_path / "s.jsonl", [{"text": "a\ud800b"}])
    assert (info.value.field, info.value.path) == ("text", str(tmp_path / "s.jsonl"))
    assert os.listdir(tmp_path) == []


def test_jsonl_round_trips_unicode_line_separators(tmp_path):
    """U+2028, U+0085 and friends sit raw inside JSON strings; only a newline ends a line."""
    rows = [{"t": "a\u2028b\u2029c\x85d\x0be\x1cf"}, {"t": "g"}]
    write_jsonl(tmp_path / "u.jsonl", rows)
    assert read_jsonl(tmp_path / "u.jsonl") == [(1, rows[0]), (2, rows[1])]


# ============================================================================= folders
def test_atomic_write_dir_writes_a_marked_folder(tmp_path):
    target = atomic_write_dir(tmp_path / "store", _writer("v1"), KIND)
    assert target == tmp_path / "store"
    assert _tree(target).keys() == {"a.txt", "sub/b.txt", MARKER}
    assert (target / MARKER).read_text() == KIND + "\n" and gio.folder_kind(target) == KIND
    assert os.listdir(tmp_path) == ["store"]


def test_atomic_write_dir_replaces_a_store_of_the_same_kind(tmp_path):
    """What the kind owns and the new version does not write goes; everything else stays."""
    target = atomic_write_dir(tmp_path / "store", _writer("v1"), KIND, owned=("*.txt", "sub"))
    (target / "stale.txt").write_text("from v1")  # the kind's: a file an earlier version wrote
    (target / "sub" / "mine.md").write_text("inside the kind's own folder")
    (target / "NOTES.md").write_text("a user's notes")
    (target / "notes").mkdir()
    (target / "notes" / "deep.txt").write_text("a user's folder")
    os.symlink("NOTES.md", target / "link")
    os.mkfifo(target / "pipe")
    atomic_write_dir(target, _writer("v2"), KIND, owned=("*.txt", "sub"))
    assert (target / "a.txt").read_text() == "v2" and not (target / "stale.txt").exists()
    assert not (target / "sub" / "mine.md").exists()
    assert (target / "NOTES.md").read_text() == "a user's notes"
    assert (target / "notes" / "deep.txt").read_text() == "a user's folder"
    assert os.readlink(target / "link") == "NOTES.md" and stat.S_ISFIFO(os.lstat(target / "pipe").st_mode)
    assert os.listdir(tmp_path) == ["store"]


def test_files_a_user_added_survive_every_save_even_a_crashed_one(tmp_path):
    target = atomic_write_dir(tmp_path / "store", _writer("v1"), KIND, owned=("a.txt", "sub"))
    (target / "README").write_text("kept")
    os.replace(target, tmp_path / ".store.old")  # a crash between the two renames left only the backup
    atomic_write_dir(target, _writer("v2"), KIND, owned=("a.txt", "sub"))
    assert (target / "README").read_text() == "kept" and os.listdir(tmp_path) == ["store"]
    atomic_write_dir(target, _writer("v3"), KIND)  # nothing declared: nothing dropped
    assert (target / "README").read_text() == "kept" and (target / "a.txt").read_text() == "v3"


def test_atomic_write_dir_accepts_an_empty_folder(tmp_path):
    (tmp_path / "store").mkdir()
    atomic_write_dir(tmp_path / "store", _writer("v1"), KIND)
    assert (tmp_path / "store" / "a.txt").read_text() == "v1"


@pytest.mark.parametrize("case", ["foreign folder", "other kind", "file", "symlink to a store"])
def test_atomic_write_dir_refuses_what_it_did_not_write(tmp_path, case):
    """The target is named, nothing is written, nothing is deleted."""
    target = tmp_path / "target"
    if case == "foreign folder":
        target.mkdir()
        (target / "thesis.tex").write_text("years of work")
        expect = "files guimem did not write"
    elif case == "other kind":
        atomic_write_dir(target, _writer("graph"), "guimem.memory_graph")
        expect = "a guimem.memory_graph store"
    elif case == "file":
        target.write_text("a file")
        expect = "is not a folder"
    else:
        atomic_write_dir(tmp_path / "real", _writer("v1"), KIND)
        target.symlink_to(tmp_path / "real")
        expect = "is not a folder"
    before = _tree(tmp_path)
    with pytest.raises(DataError, match=expect) as info:
        atomic_write_dir(target, _writer("new"), KIND)
    assert (info.value.field, info.value.path) == ("path", str(target))
    assert _tree(tmp_path) == before and not any(".tmp-" in p.name for p in tmp_path.iterdir())


def test_atomic_write_dir_refuses_an_unmarked_store(tmp_path):
    """A folder without a kind marker is not a store of ``kind``: never replaced."""
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "manifest.json").write_text('{"format": "test"}')
    with pytest.raises(DataError):
        atomic_write_dir(tmp_path / "old", _writer("v2"), KIND)
    assert (tmp_path / "old" / "manifest.json").read_text() == '{"format": "test"}'


def test_failed_write_leaves_the_target_untouched(tmp_path):
    target = atomic_write_dir(tmp_path / "store", _writer("v1"), KIND)
    before = _tree(target)

    def broken(folder: Path) -> None:
        (folder / "a.txt").write_text("half")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        atomic_write_dir(target, broken, KIND)
    assert _tree(target) == before and os.listdir(tmp_path) == ["store"]


def test_crash_between_the_renames_leaves_the_backup_readable(tmp_path, monkeypatch):
    """The old store is moved aside, then the machine dies: readers find the backup, the next save heals."""
    target = atomic_write_dir(tmp_path / "store", _writer("v1"), KIND)
    calls = _replace_failing_from(monkeypatch, 2)
    with pytest.raises(DataError, match="could not be saved: simulated crash"):
        atomic_write_dir(target, _writer("v2"), KIND)
    assert calls[:2] == [("store", ".store.old"), (calls[1][0], "store")] and calls[1][0].startswith(".store.tmp-")
    assert not target.exists()
    assert readable_dir(target) == tmp_path / ".store.old"
    assert (readable_dir(target) / "a.txt").read_text() == "v1"
    monkeypatch.undo()
    atomic_write_dir(target, _writer("v3"), KIND)
    assert (target / "a.txt").read_text() == "v3" and os.listdir(tmp_path) == ["store"]


def test_failed_second_rename_restores_the_old_store(tmp_path, monkeypatch):
    """When only the second rename fails (the process lives on), the old store is put back."""
    target = atomic_write_dir(tmp_path / "store", _writer("v1"), KIND)
    real, calls = os.replace, []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError("simulated failure")
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(DataError, match="could not be saved: simulated failure"):
        atomic_write_dir(target, _writer("v2"), KIND)
    assert (target / "a.txt").read_text() == "v1" and os.listdir(tmp_path) == ["store"]


def test_folder_leftovers_and_a_stale_backup_are_cleaned(tmp_path):
    target = atomic_write_dir(tmp_path / "store", _writer("v1"), KIND)
    (tmp_path / ".store.tmp-killed").mkdir()
    (tmp_path / ".store.tmp-killed" / "a.txt").write_text("half")
    (tmp_path / ".store.tmp-file").write_text("half")
    atomic_write_dir(tmp_path / ".store.old", _writer("v0"), KIND)  # a backup a crash left beside a complete store
    atomic_write_dir(target, _writer("v2"), KIND)
    assert os.listdir(tmp_path) == ["store"] and (target / "a.txt").read_text() == "v2"


def test_every_file_and_folder_is_fsynced_before_the_swap(tmp_path, monkeypatch):
    synced: list[Path] = []
    monkeypatch.setattr(folders, "_fsync_file", lambda p: synced.append(p.relative_to(tmp_path)))
    monkeypatch.setattr(folders, "_fsync_folder", lambda p: synced.append(Path(p).relative_to(tmp_path)))
    atomic_write_dir(tmp_path / "store", _writer("v1"), KIND)
    tmp = synced[0].parts[0]
    assert tmp.startswith(".store.tmp-")
    assert sorted(map(str, synced)) == sorted([f"{tmp}/{MARKER}", f"{tmp}/a.txt", f"{tmp}/sub/b.txt", f"{tmp}/sub", tmp,
                                               "."])  # "." is the parent, after the rename


def test_readable_dir(tmp_path):
    with pytest.raises(DataError) as info:
        readable_dir(tmp_path / "none", "saved memory")
    assert (info.value.field, info.value.path, info.value.message) == ("path", str(tmp_path / "none"), "no saved memory here")
    (tmp_path / "store").mkdir()
    assert readable_dir(tmp_path / "store") == tmp_path / "store"


# ============================================================================= reading
def _write(path: Path, data: bytes | str) -> Path:
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


READ_ERRORS = [
    # (case, file bytes or None for missing or "DIR" for a folder, field, message fragment)
    ("missing", None, "file", "missing"),
    ("folder", "DIR", "file", "is a folder"),
    ("not utf-8", b'{"a": "\xff\xfe"}', "file", "not UTF-8"),
    ("malformed", '{"a": 1,,}', "json", "malformed JSON at line 1 column 9"),
    ("empty", "", "json", "malformed JSON at line 1 column 1"),
    ("too deep", "[" * 65 + "]" * 65, "json", "nested deeper than 64"),
    ("5000-digit integer", "[" + "9" * 5000 + "]", "json", "unreadable JSON"),
]


@pytest.mark.parametrize("case, data, field, fragment", READ_ERRORS, ids=[c[0] for c in READ_ERRORS])
def test_read_json_errors_name_the_file(tmp_path, case, data, field, fragment):
    path = tmp_path / "x.json"
    if data == "DIR":
        path.mkdir()
    elif data is not None:
        _write(path, data)
    with pytest.raises(DataError) as info:
        read_json(path)
    assert (info.value.field, info.value.path) == (field, str(path))
    assert fragment in info.value.message


def test_read_json_accepts_64_levels():
    assert json_depth("[" * 64 + "]" * 64) == 64
    assert json_depth('{"a": "[[[{{{", "b": ["]]]"]}') == 2  # brackets inside strings do not count
    assert json_depth('{"a": "\\"[", "b": [[]]}') == 3  # nor after an escaped quote


@pytest.mark.parametrize("case, data, field, fragment", READ_ERRORS, ids=[c[0] for c in READ_ERRORS])
def test_read_jsonl_errors_name_the_file_and_line(tmp_path, case, data, field, fragment):
    path = tmp_path / "x.jsonl"
    if data == "DIR":
        path.mkdir()
    elif data is not None:
        _write(path, b'{"ok": 1}\n\n' + (data if isinstance(data, bytes) else data.encode()) + (b"\n" if data else b""))
    if data == "":
        assert read_jsonl(path) == [(1, {"ok": 1})]  # blank lines are skipped
        return
    with pytest.raises(DataError) as info:
        read_jsonl(path)
    err = info.value
    if field == "file":
        assert (err.field, err.path) == ("file", str(path))
    else:
        assert (err.field, err.path) == ("line", f"{path}, line 3")
    assert fragment in err.message


def test_read_jsonl_numbers_lines_from_one(tmp_path):
    _write(tmp_path / "a.jsonl", '{"a": 1}\n\n  \n[2]\r\n3')
    assert read_jsonl(tmp_path / "a.jsonl") == [(1, {"a": 1}), (4, [2]), (5, 3)]


# ============================================================================= checks
def test_check_finite():
    ok = np.array([[0.0, 1.0], [2.0, 3.0]])
    assert check_finite(ok, "sums") is ok
    assert check_finite(np.array([1, 2]), "ids") is not None  # integers are always finite
    bad = np.zeros((2, 3), dtype=np.float32)
    bad[1, 2] = np.inf
    with pytest.raises(DataError) as info:
        check_finite(bad, "node_sums", "g/node_sums.npy")
    assert (info.value.field, info.value.path) == ("node_sums", "g/node_sums.npy")
    assert info.value.message == "holds a non-finite value at index (1, 2)"
    with pytest.raises(DataError, match=r"index \(0,\)"):
        check_finite(np.array([np.nan, 1.0]), "x")


@pytest.mark.parametrize("value, kwargs, fragment", [
    (True, {}, "expected a number, got bool"),
    ("3", {}, "expected a number, got str"),
    (None, {}, "expected a number, got NoneType"),
    (float("nan"), {}, "expected a finite number"),
    (float("-inf"), {}, "expected a finite number"),
    (1.5, {"integer": True}, "expected an integer, got float"),
    (-1, {"lo": 0, "integer": True}, "must be in [0, inf], got -1"),
    (1.01, {"lo": -1, "hi": 1}, "must be in [-1, 1], got 1.01"),
    (10**400, {"hi": 1e9}, "must be in [-inf, 1000000000.0]"),
])
def test_check_number_refuses(value, kwargs, fragment):
    with pytest.raises(DataError) as info:
        check_number(value, "theta", path="params.yaml", **kwargs)
    assert (info.value.field, info.value.path) == ("theta", "params.yaml") and fragment in info.value.message


def test_check_number_returns_good_values():
    assert check_number(0.5, "tau", lo=-1, hi=1) == 0.5
    assert check_number(3, "k", lo=1, integer=True) == 3
    assert check_number(-1, "tau", lo=-1, hi=1) == -1


def test_a_stale_backup_of_another_kind_is_refused_not_deleted(tmp_path):
    target = tmp_path / "store"
    atomic_write_dir(target, lambda d: (d / "a.txt").write_text("a"), kind="guimem.a")
    os.replace(target, tmp_path / ".store.old")  # a crash between the renames left only the backup
    target.mkdir()  # ... and someone made an empty folder where the store was
    with pytest.raises(DataError, match=r"\.store\.old.*guimem\.a store"):
        atomic_write_dir(target, lambda d: (d / "b.txt").write_text("b"), kind="guimem.b")
    assert (tmp_path / ".store.old" / "a.txt").read_text() == "a"


def test_saved_files_and_folders_get_the_usual_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        f = atomic_write_text(tmp_path / "x.json", "{}")
        d = atomic_write_dir(tmp_path / "d", lambda p: (p / "y").write_text("y"), kind="guimem.test")
    finally:
        os.umask(old)
    assert (f.stat().st_mode & 0o777, d.stat().st_mode & 0o777) == (0o644, 0o755)


def test_kill_during_backup_cleanup_leaves_next_save_working(tmp_path, monkeypatch):
    """A backup is renamed to a temporary name before it is deleted: a deletion cut short (here: the
    rmtree of the renamed backup fails half-way) leaves a leftover the next save removes by itself."""
    import shutil as _shutil

    from guimem.core import io as gio

    target = tmp_path / "store"

    def fill(text):
        def write(folder):
            (folder / "a.txt").write_text(text)
            (folder / "b.txt").write_text(text)
        return write

    gio.atomic_write_dir(target, fill("one"), kind="guimem.test")
    real_rmtree = _shutil.rmtree

    def half_rmtree(path, ignore_errors=False, **kw):
        path = Path(path)
        (path / gio.MARKER).unlink(missing_ok=True)  # marker gone first, then the "kill"
        raise KeyboardInterrupt

    monkeypatch.setattr(_shutil, "rmtree", half_rmtree)
    with pytest.raises(KeyboardInterrupt):
        gio.atomic_write_dir(target, fill("two"), kind="guimem.test")
    monkeypatch.setattr(_shutil, "rmtree", real_rmtree)
    assert not (tmp_path / ".store.old").exists()
    assert (target / "a.txt").read_text() == "two"
    gio.atomic_write_dir(target, fill("three"), kind="guimem.test")
    assert (target / "a.txt").read_text() == "three"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


def test_screens_of_a_store_left_as_only_its_backup_are_embedded(tmp_path):
    """The memory builder's screen reader reads a store a crashed save left as only ``.X.old``."""
    from PIL import Image

    from guimem.models.embedding import embed_screenshots

    backup = tmp_path / ".store.old"
    backup.mkdir()
    Image.new("RGB", (4, 4), (10, 20, 30)).save(backup / "s.png")

    class Embedder:
        dim = 2

        def embed(self, images):
            return [np.ones(2, dtype=np.float32) / np.sqrt(2) for _ in images]

    out = embed_screenshots(Embedder(), tmp_path / "store", ["s.png"])
    assert sorted(out) == ["s.png"]
