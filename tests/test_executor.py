"""Executors: in this process, in worker processes and on a local two-worker Ray, the same job gives
the same vectors, step records and closed-loop traces in the same order; a worker that dies is
replaced and its chunk retried; embedding, step records and closed-loop plays stopped midway
resume from the chunks already finished."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from guimem.actors.loading import ActorSpec
from guimem.core.data import DataError
from guimem.core.executor import (ExecutorSpec, LocalExecutor, RayExecutor, make_executor, run_all,
                                 start_local_ray)
from guimem.core.progress import NOTE_PREFIX
from guimem.core.resume import ChunkCache
from guimem.eval.action_match import MatchConfig
from guimem.eval.closed_loop import replay_tasks
from guimem.eval.jobs import Play, PlayEpisodes, condition_plays, play_all, score_steps
from guimem.eval.step_table import step_table
from guimem.models.embedding import CHUNK, CachedImageEmbedder, EmbeddingCache, PixelEmbedder
from guimem.routing.jobs import record_steps
from guimem.routing.records import SampledPreference, collect_records


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
    for spec, field in [(dict(kind="local", address="auto"), "address"), (dict(gpus_per_worker=1.0), "gpus_per_worker"),
                        (dict(kind="spark"), "kind")]:  # the fields as params.yaml's executor groups give them
        with pytest.raises(DataError) as err:
            ExecutorSpec(**spec)
        assert err.value.field == field
    assert ExecutorSpec.parse("ray://head:10001") == ExecutorSpec(kind="ray", address="ray://head:10001")


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
    start_local_ray(2)  # retried on a loaded machine; a start that never succeeds skips (tests/conftest.py)
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
def test_ray_keeps_its_actors_for_the_next_call_and_restarts_them_after_an_abandoned_one(ray_two_workers):
    chunks, square = [[i] for i in range(4)], Square()  # (the same task: a plain class compares by identity)
    first = [pid for pid, _ in (r for _, r in zip(chunks, ray_two_workers.map(square, chunks)))]  # stops after the last
    again = {pid for pid, _ in run_all(ray_two_workers, square, chunks)}
    assert again == set(first)  # the same actors: nothing was abandoned
    calls = ray_two_workers.map(square, chunks)
    next(calls)
    calls.close()  # abandoned midway: its actors may hold half a chunk
    assert not {pid for pid, _ in run_all(ray_two_workers, square, chunks)} & again


@pytest.mark.slow
def test_a_worker_that_dies_is_replaced_and_its_chunk_retried(tmp_path, ray_two_workers):
    marker = tmp_path / "died"
    assert run_all(ray_two_workers, DiesOnce(str(marker), at=3), list(range(8))) == [10 * i for i in range(8)]
    assert marker.read_text() == "died"  # the first attempt at chunk 3 did kill its worker


# ----------------------------------------------------------------------------- the actor's per-step work
@pytest.fixture(scope="module")
def saved_actor(tmp_path_factory):
    """A tiny random miniature actor on disk (workers load it from there), and steps to run it on."""
    import torch

    from actor_fixtures import RULES, examples, tiny_actor

    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("actor") / "model"
    tiny_actor().save(folder)
    return ActorSpec("mini", str(folder), batch_size=2, torch_threads=1), examples(9), RULES


def _same_records(a, b) -> None:
    assert a.rows == b.rows and a.meta == b.meta
    for c in a.hidden:
        np.testing.assert_array_equal(a.hidden[c], b.hidden[c])
    for c in a.candidates:
        np.testing.assert_array_equal(a.candidates[c], b.candidates[c])
    for r in a.hits:
        for c in a.hits[r]:
            np.testing.assert_array_equal(a.hits[r][c], b.hits[r][c])
        for c in a.sampled[r]:
            np.testing.assert_array_equal(a.sampled[r][c], b.sampled[r][c])


def _same_tables(a, b) -> None:
    assert list(a) == list(b)
    for m in a:
        for column in ("index", "step", "type"):
            np.testing.assert_array_equal(getattr(a[m], column), getattr(b[m], column))


MODALITIES = ("none", "text", "image", "both")


def _closed_loop_task(spec, tmp_path):
    """Two seeds of a few demonstrations' tasks, without memory: played whole, then in lock-step batches."""
    from demonstrations import make_demos

    config, runs = make_demos()
    replays = replay_tasks([ep for _, _, ep in runs], 2)
    task = PlayEpisodes(spec, dataclasses.replace(config, max_steps=5), str(tmp_path / "memories"), (),
                        str(tmp_path / "store"))
    plays = condition_plays("none", None, "none", replays) + condition_plays("batched", None, "none", replays, 5)
    return task, plays


def test_step_records_are_the_same_in_process_and_on_worker_processes(saved_actor, tmp_path):
    spec, steps, rules = saved_actor
    whole = collect_records(spec.load(), steps, rules, SampledPreference(3), seed=5, batch_size=2, progress=False)
    for executor in (LocalExecutor(1), LocalExecutor(2)):  # 9 steps: chunks of 2 batches (4 steps) over 2 workers
        _same_records(record_steps(spec, steps, rules, SampledPreference(3), 5, executor, chunk_batches=2,
                                   progress=False),
                      whole)
    kept = ChunkCache(tmp_path / "chunks")
    _same_records(record_steps(spec, steps, rules, SampledPreference(3), 5, chunk_batches=2, cache=kept,
                               progress=False), whole)
    again = ChunkCache(tmp_path / "chunks")  # a rerun reads every chunk back
    _same_records(record_steps(spec, steps, rules, SampledPreference(3), 5, chunk_batches=2, cache=again,
                               progress=False), whole)
    assert kept.stored == again.hits == 3
    other = ChunkCache(tmp_path / "chunks")  # another seed is another result
    record_steps(spec, steps, rules, SampledPreference(3), 6, chunk_batches=2, cache=other, progress=False)
    assert other.hits == 0 and other.stored == 3


def test_hits_are_told_as_a_note_for_whoever_watches(tmp_path, capsys):
    cache = ChunkCache(tmp_path / "chunks")
    cache.tell_hits("chunks")  # none: nothing said
    cache.put("ab" * 8, {"x": 1})
    assert cache.get("ab" * 8) == {"x": 1}
    cache.tell_hits("of 2 chunks")
    said = capsys.readouterr()  # a stage's runner shows the note and the scrubber leaves it out of the report
    assert said.out == "" and said.err == (f"{NOTE_PREFIX}1 of 2 chunks read back from {tmp_path / 'chunks'} "
                                           "(an earlier run finished them)\n")


def test_step_scores_are_one_step_table_in_process_on_worker_processes_and_resumed(saved_actor, tmp_path):
    """(Not again on Ray: a task of its own would start two more actors, and the Ray path is the
    records' and the plays' below.)"""
    spec, steps, _ = saved_actor
    aitw = MatchConfig("aitw")
    whole = step_table(spec.load(), steps, MODALITIES, aitw)  # 9 steps, each carrying text and image
    assert all(len(whole[m].step) == 9 for m in MODALITIES)
    for executor in (LocalExecutor(1), LocalExecutor(2)):  # chunks of 1 batch (2 steps): 5 chunks
        _same_tables(score_steps(spec, steps, MODALITIES, aitw, executor, chunk_batches=1), whole)
    kept = ChunkCache(tmp_path / "chunks")
    score_steps(spec, steps[:4], MODALITIES, aitw, chunk_batches=1, cache=kept)  # a run stopped after two chunks
    _same_tables(score_steps(spec, steps, MODALITIES, aitw, chunk_batches=1, cache=kept), whole)
    assert kept.hits == 2 and kept.stored == 5
    text_only = [dataclasses.replace(ex, input=dataclasses.replace(ex.input, memory_image=None)) if i % 2 else ex
                 for i, ex in enumerate(steps)]
    table = score_steps(spec, text_only, MODALITIES, aitw, chunk_batches=1)  # image shown on steps 0, 2, ..., 8
    assert table["image"].index.tolist() == [0, 2, 4, 6, 8] and table["text"].index.tolist() == list(range(9))
    with pytest.raises(DataError, match="examples"):
        score_steps(spec, [], MODALITIES, aitw)


def test_closed_loop_plays_in_batches_and_resumed_give_the_same_traces(saved_actor, tmp_path):
    """(On worker processes: tests/test_actor.py runs 09's plays on two; on Ray: below.)"""
    spec, _, _ = saved_actor
    task, plays = _closed_loop_task(spec, tmp_path)
    n = len(plays[0].replays)
    assert n > 5 and [len(p.replays) for p in plays[1:]] == [min(5, n - lo) for lo in range(0, n, 5)]  # batches of 5
    here, work = play_all(task, plays, progress=False)
    assert [t.memory for t in here] == ["none"] * n + ["batched"] * n and work["none"].steps == work["batched"].steps
    kept = ChunkCache(tmp_path / "chunks")
    play_all(task, plays[:2], cache=kept, progress=False)  # a run stopped after two plays
    resumed, _ = play_all(task, plays, cache=kept, progress=False)
    assert [t.to_dict() for t in resumed] == [t.to_dict() for t in here] and kept.hits == 2
    with pytest.raises(DataError, match="modality"):
        Play("x", "smg", "text", (), routed=True)  # SwitchMem needs both renderings
    with pytest.raises(DataError, match="replays"):
        condition_plays("none", None, "none", [])


@pytest.mark.slow
def test_ray_gives_the_in_process_records_and_traces(saved_actor, tmp_path, ray_two_workers):
    spec, steps, rules = saved_actor
    whole = collect_records(spec.load(), steps, rules, SampledPreference(3), seed=5, batch_size=2, progress=False)
    _same_records(record_steps(spec, steps, rules, SampledPreference(3), 5, ray_two_workers, chunk_batches=1,
                               progress=False),
                  whole)
    task, plays = _closed_loop_task(spec, tmp_path)
    here, _ = play_all(task, plays, progress=False)
    there, _ = play_all(task, plays, ray_two_workers, progress=False)
    assert [t.to_dict() for t in there] == [t.to_dict() for t in here]


def test_an_actor_spec_is_checked_and_reloads_when_its_files_change(saved_actor, tmp_path):
    spec, _, _ = saved_actor
    with pytest.raises(DataError, match="actor_dir"):
        ActorSpec("mini", "")
    assert spec.device == "cpu" and ActorSpec("no-such/hub-model").fingerprint() is None  # no files: not resumable
    import torch

    from actor_fixtures import tiny_actor

    folder = tmp_path / "model"
    actor = tiny_actor()
    actor.save(folder)
    moving = ActorSpec("mini", str(folder), batch_size=2)
    first = moving.load()
    assert moving.load() is first  # loaded once while its files stay as they are
    with torch.no_grad():
        next(actor.model.parameters()).add_(1.0)
    actor.save(folder)  # retrained in place
    assert moving.load() is not first


def test_the_default_executor_never_imports_ray(tmp_path):
    """What every stage does by default (executor local, one worker): Ray is not even imported."""
    import subprocess

    code = """
import sys
from guimem.core.executor import ExecutorSpec, make_executor, run_all
from guimem.core.resume import ChunkCache, cached_map
import guimem.routing.jobs, guimem.models.embedding, guimem.real.ocr
class Task:
    def fingerprint(self): return "t"
    def setup(self): return 2
    def run(self, state, chunk): return state * chunk
executor = make_executor(ExecutorSpec.parse("local", 1))
assert run_all(executor, Task(), [1, 2]) == [2, 4]
assert list(cached_map(executor, Task(), [3], ChunkCache(sys.argv[1]))) == [6]
print("ray" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "chunks")], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "False"
