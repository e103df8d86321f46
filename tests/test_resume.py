"""Resuming: a job stopped midway runs again and computes only the chunks it had not finished; a
key changes with the task, its files and the chunk, so a stale result is never read back."""

from __future__ import annotations

from pathlib import Path

import pytest

from guimem.core.executor import LocalExecutor
from guimem.core.data import DataError
from guimem.core.resume import ChunkCache, cached_map, check_same_code, chunk_key, code_fingerprint, tree_digest


class Counted:
    """Squares chunks, counting the ones it ran in a file; stops (as a killed job would) at ``stop_at``."""

    def __init__(self, log: str, weights: str, stop_at: int | None = None):
        self.log, self.weights, self.stop_at = log, weights, stop_at

    def fingerprint(self) -> str:
        return f"counted|{tree_digest(self.weights)}"

    def setup(self) -> None:
        return None

    def run(self, _: None, chunk: int) -> int:
        if chunk == self.stop_at:
            raise KeyboardInterrupt
        with open(self.log, "a") as f:
            f.write(f"{chunk}\n")
        return chunk * chunk


def ran(log: Path) -> list[int]:
    return [int(x) for x in log.read_text().split()] if log.exists() else []


def test_a_stopped_job_resumes_from_its_finished_chunks(tmp_path):
    log, weights = tmp_path / "log", tmp_path / "weights.bin"
    weights.write_bytes(b"v1")
    cache = ChunkCache(tmp_path / "chunks")
    with pytest.raises(KeyboardInterrupt):
        list(cached_map(LocalExecutor(), Counted(str(log), str(weights), stop_at=3), range(6), cache))
    assert ran(log) == [0, 1, 2] and cache.stored == 3  # each stored as it arrived
    again = ChunkCache(tmp_path / "chunks")
    assert list(cached_map(LocalExecutor(), Counted(str(log), str(weights)), range(6), again)) == [x * x for x in range(6)]
    assert ran(log) == [0, 1, 2, 3, 4, 5] and again.hits == 3  # only the unfinished chunks ran
    weights.write_bytes(b"v2")  # the task's files changed: nothing stored before may be read back
    list(cached_map(LocalExecutor(), Counted(str(log), str(weights)), range(2), again))
    assert ran(log)[-2:] == [0, 1] and again.hits == 3


def test_keys_follow_the_task_the_chunk_and_the_code(tmp_path):
    assert chunk_key("a", [1, 2]) == chunk_key("a", [1, 2]) != chunk_key("b", [1, 2]) != chunk_key("a", [1, 3])
    assert len(code_fingerprint()) == 32
    check_same_code(code_fingerprint())
    with pytest.raises(DataError, match="other code"):
        check_same_code("0" * 32)  # a worker on a node with other code or libraries refuses the work
    (tmp_path / "f").write_bytes(b"x")
    before = tree_digest(tmp_path), tree_digest(tmp_path, contents=False)
    (tmp_path / "f").write_bytes(b"y")  # same size: contents=False sees the rewrite by its times
    assert tree_digest(tmp_path) != before[0] and tree_digest(tmp_path, contents=False) != before[1]
    assert tree_digest(tmp_path / "missing") == tree_digest(tmp_path / "missing")  # absent: empty, not an error


def test_a_task_without_a_fingerprint_and_an_unreadable_entry_are_run(tmp_path):
    class Plain:
        def setup(self):
            return None

        def run(self, _, chunk):
            return -chunk

    cache = ChunkCache(tmp_path / "chunks")
    with pytest.warns(UserWarning, match="not kept"):
        assert list(cached_map(LocalExecutor(), Plain(), [1, 2], cache)) == [-1, -2] and cache.stored == 0
    log, weights = tmp_path / "log", tmp_path / "w"
    weights.write_bytes(b"v")
    task = Counted(str(log), str(weights))
    list(cached_map(LocalExecutor(), task, [7], cache))
    (entry,) = (tmp_path / "chunks").rglob("*.chunk")
    entry.write_bytes(b"truncated")  # a damaged entry is a miss, not an error
    assert list(cached_map(LocalExecutor(), task, [7], cache)) == [49] and ran(log) == [7, 7]
