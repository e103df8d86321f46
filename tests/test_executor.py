"""Executors: in this process, in worker processes and on a local two-worker Ray, the same job gives
the same vectors in the same order; a worker that dies is replaced and its chunk retried; embedding
stopped midway resumes from the chunks already in the cache."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from guimem.core.data import DataError
from guimem.core.executor import ExecutorSpec, LocalExecutor, RayExecutor, make_executor, run_all
from guimem.models.embedding import CHUNK, CachedImageEmbedder, EmbeddingCache, PixelEmbedder


def screenshots(folder: Path, n: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for i in range(n):
        path = folder / f"{i}.png"
        Image.fromarray(rng.integers(0, 256, (40, 20, 3), dtype=np.uint8)).save(path)
        paths.append(path)
    return paths


class Square:
    """A task: its state is made once per worker; each chunk's result names the worker."""

    def setup(self) -> int:
        return os.getpid()

    def run(self, pid: int, chunk: list[int]) -> tuple[int, list[int]]:
        return pid, [x * x for x in chunk]


class DiesOnce:
    """A task whose worker process dies on chunk ``at`` the first time (a marker file says it did)."""

    def __init__(self, marker: str, at: int):
        self.marker, self.at = marker, at

    def setup(self) -> None:
        return None

    def run(self, _: None, chunk: int) -> int:
        if chunk == self.at and not os.path.exists(self.marker):
            Path(self.marker).write_text("died")
            os._exit(1)  # the whole worker goes, as an out-of-memory kill would
        return chunk * 10


def test_local_executors_keep_the_order_of_the_chunks():
    chunks = [[i, i + 1] for i in range(0, 12, 2)]
    for workers in (1, 2):
        results = run_all(LocalExecutor(workers), Square(), chunks)
        assert [r for _, r in results] == [[x * x for x in c] for c in chunks]
    assert len({pid for pid, _ in run_all(LocalExecutor(1), Square(), chunks)}) == 1  # one setup in process


def test_specs_are_checked():
    assert ExecutorSpec.parse("ray:auto", 3) == ExecutorSpec("ray", 3, "auto")
    assert isinstance(make_executor(ExecutorSpec.parse("local", 2)), LocalExecutor)
    for text, field in [("spark", "executor"), ("local:x", "executor")]:
        with pytest.raises(DataError, match=field):
            ExecutorSpec.parse(text)
    with pytest.raises(DataError, match="workers"):
        ExecutorSpec("ray", 0)


class CountingPixels(PixelEmbedder):
    """Pixels, counting how many images it embedded; fails once after ``fail_after`` chunks."""

    def __init__(self, fail_after: int | None = None):
        super().__init__(4, 8)
        self.embedded, self.calls, self.fail_after = 0, 0, fail_after

    def embed(self, images):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            self.fail_after = None
            raise KeyboardInterrupt  # the stage stopped by hand midway
        self.embedded += len(images)
        return super().embed(images)


def test_embedding_stopped_midway_resumes_from_the_cached_chunks(tmp_path):
    files = screenshots(tmp_path / "shots", 3 * CHUNK + 5)  # four chunks
    cache = EmbeddingCache(tmp_path / "cache")
    inner = CountingPixels(fail_after=2)
    with pytest.raises(KeyboardInterrupt):
        CachedImageEmbedder(inner, cache).embed_files(files)
    assert inner.embedded == 2 * CHUNK  # two chunks done and cached before the stop
    again = CachedImageEmbedder(inner, cache).embed_files(files)
    assert inner.embedded == 2 * CHUNK + (CHUNK + 5)  # only the two chunks that never arrived
    np.testing.assert_array_equal(again, PixelEmbedder(4, 8).embed([Image.open(f) for f in files]))


# ----------------------------------------------------------------------------- a local two-worker Ray
@pytest.fixture(scope="module")
def ray_two_workers():
    ray = pytest.importorskip("ray")
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # this module's tasks travel by value
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield RayExecutor(ExecutorSpec("ray", workers=2, max_retries=2))
    ray.shutdown()


@pytest.mark.slow
def test_ray_gives_the_in_process_vectors_in_the_same_order(tmp_path, ray_two_workers):
    files = screenshots(tmp_path / "shots", 4 * CHUNK + 3)  # five chunks over two actors
    here = CachedImageEmbedder(PixelEmbedder(4, 8), None).embed_files(files)
    processes = CachedImageEmbedder(PixelEmbedder(4, 8), None, executor=LocalExecutor(2)).embed_files(files)
    on_ray = CachedImageEmbedder(PixelEmbedder(4, 8), None, executor=ray_two_workers).embed_files(files)
    np.testing.assert_array_equal(processes, here)
    np.testing.assert_array_equal(on_ray, here)
    pids = {pid for pid, _ in run_all(ray_two_workers, Square(), [[i] for i in range(8)])}
    assert len(pids) == 2 and os.getpid() not in pids  # two actors, each set up once, none of them this process


@pytest.mark.slow
def test_a_worker_that_dies_is_replaced_and_its_chunk_retried(tmp_path, ray_two_workers):
    marker = tmp_path / "died"
    assert run_all(ray_two_workers, DiesOnce(str(marker), at=3), list(range(8))) == [10 * i for i in range(8)]
    assert marker.read_text() == "died"  # the first attempt at chunk 3 did kill its worker
