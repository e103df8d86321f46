"""Where a stage's heavy per-step work runs: in this process, in worker processes, or on Ray.

The work is a :class:`Task`: ``setup()`` runs once per worker (it loads a model) and ``run(state,
chunk)`` maps one chunk of inputs to its result. An executor maps a task over chunks and yields
the results **in the order of the chunks**, whatever order workers finish in, so a stage's output
does not depend on where it ran:

* :class:`LocalExecutor` (the default): with one worker, in this process; with more, spawned
  processes (one model each).
* :class:`RayExecutor`: Ray actors, each holding its own ``setup()`` state (the model is loaded
  once per actor, on a GPU where ``gpus_per_worker`` asks for one). With no ``address`` a local
  Ray is started on demand with ``workers`` CPUs (:func:`start_local_ray`: no dashboard, a small
  object store, started again after a start that timed out on a loaded machine; the last task's
  actors are kept for its next call); ``address`` (``auto``, ``ray://host:10001``)
  joins a running cluster, whose workers must see the inputs at the same absolute paths (a
  shared file system: chunks name files, not their bytes). A worker that dies is restarted and its chunk retried
  (``max_retries`` times); a chunk whose task raises is not retried (the error is the task's).

Resuming is a cache's business: the embedding cache stores each chunk's vectors as they arrive,
and :func:`guimem.core.resume.cached_map` does the same for any task that can fingerprint its
inputs (the actor's step records and closed-loop plays), so a stage stopped midway recomputes only
what it had not finished.

:class:`ExecutorSpec` is what ``params.yaml`` says: the ``executor`` group of the actor stages (05,
06, 09) holds its fields (``kind``, ``address``, ``workers``, ``gpus_per_worker``); the embedding and
OCR stages (00_recorded, 02, 03) write it as one string (``local``, ``ray`` or ``ray:<address>``,
:meth:`ExecutorSpec.parse`) beside their worker count. :func:`make_executor` builds it.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from guimem.core.data import DataError
from guimem.core.io import check_number

EXECUTORS = ("local", "ray")


class Task(Protocol):
    """Work done chunk by chunk. Picklable: it travels to worker processes and Ray actors."""

    def setup(self) -> Any:
        """The worker's state, made once per worker (a loaded model)."""
        ...

    def run(self, state: Any, chunk: Any) -> Any:
        """The result of one chunk."""
        ...


@dataclass(frozen=True)
class ExecutorSpec:
    """Which executor, and how many workers."""

    kind: str = "local"  # one of EXECUTORS: local (this process, or workers processes) or ray
    workers: int = 1  # processes or Ray workers, each loading its model once
    address: str = ""  # ray: "" starts a local Ray, else the cluster ray.init joins (auto, host:port, ray://host:port)
    gpus_per_worker: float = 0.0  # ray: GPUs each actor reserves (its model then loads there)
    max_retries: int = 2  # ray: restarts of a dead worker, and retries of the chunk it held

    def __post_init__(self) -> None:
        if self.kind not in EXECUTORS:
            raise DataError("kind", f"expected one of {list(EXECUTORS)}, got {self.kind!r:.60}")
        check_number(self.workers, "workers", lo=1, integer=True)
        check_number(self.gpus_per_worker, "gpus_per_worker", lo=0.0)
        check_number(self.max_retries, "max_retries", lo=0, integer=True)
        if not isinstance(self.address, str):
            raise DataError("address", f"expected a string, got {type(self.address).__name__}")
        if self.kind == "local" and self.address:
            raise DataError("address", f"local takes no address, got {self.address!r:.60}")
        if self.kind == "local" and self.gpus_per_worker:
            raise DataError("gpus_per_worker", "only Ray workers reserve GPUs (local processes use what they see)")

    @classmethod
    def parse(cls, text: str, workers: int = 1, gpus_per_worker: float = 0.0) -> "ExecutorSpec":
        """``local``, ``ray`` (a local Ray), ``ray:<address>`` (a cluster: ``ray:auto``) or a Ray
        client address ``ray://host:port``, with ``workers`` (and, on Ray, ``gpus_per_worker``)."""
        if not isinstance(text, str):
            raise DataError("executor", f"expected a string, got {type(text).__name__}")
        if text.startswith("ray://"):  # a Ray client address, given whole
            return cls(kind="ray", workers=workers, address=text, gpus_per_worker=gpus_per_worker)
        kind, _, address = text.partition(":")
        try:
            return cls(kind=kind, workers=workers, address=address, gpus_per_worker=gpus_per_worker)
        except DataError as err:  # the text is one value: name it for kind and address
            raise DataError("executor" if err.field in ("kind", "address") else err.field, err.message) from None


# ----------------------------------------------------------------------------- local
_STATE: dict[str, Any] = {}  # a worker process's task and state


def _start_worker(task: Task) -> None:
    _STATE["task"], _STATE["state"] = task, task.setup()


def _run_in_worker(chunk: Any) -> Any:
    return _STATE["task"].run(_STATE["state"], chunk)


class LocalExecutor:
    """Chunks run in this process (one worker) or in ``workers`` spawned processes, results in order."""

    def __init__(self, workers: int = 1):
        self.workers = check_number(workers, "workers", lo=1, integer=True)

    def map(self, task: Task, chunks: Sequence[Any]) -> Iterator[Any]:
        if self.workers == 1 or len(chunks) < 2:
            state = task.setup()
            for chunk in chunks:
                yield task.run(state, chunk)
            return
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: no forked torch threads
        with ProcessPoolExecutor(min(self.workers, len(chunks)), mp_context=context, initializer=_start_worker,
                                 initargs=(task,)) as pool:
            yield from pool.map(_run_in_worker, chunks)


# ----------------------------------------------------------------------------- Ray
RAY_START_ATTEMPTS = 2  # a local Ray's start, tried again after one that failed (the next finds the files cached;
# each failed start costs about a minute of Ray's fixed waits, and under a lasting load a third did not help)
RAY_START_ATTEMPTS_ENV = "GUIMEM_RAY_START_ATTEMPTS"  # sets that number; 0: do not try (Ray is known not to start)
RAY_START_PAUSE_S = 5.0  # seconds before the second start (twice that before a third): let the load pass
RAY_START_WAIT_S = 120  # Ray's wait for its GCS to report its port (its default: 30 s)
RAY_OBJECT_STORE_BYTES = 512 * 2**20  # a local node's object store: chunks carry file names and small results
# What a local Ray is started with: no dashboard, no worker output echoed here, the caller's logging left alone.
LOCAL_RAY = dict(include_dashboard=False, log_to_driver=False, configure_logging=False,
                 object_store_memory=RAY_OBJECT_STORE_BYTES)


class RayStartError(RuntimeError):
    """A local Ray did not start on this machine (Ray's fixed start waits ran out every time)."""

    field = "executor"  # the parameter that asked for Ray

    def __init__(self, message: str):
        self.message = message
        super().__init__(f"field '{self.field}': {message}")


def start_local_ray(num_cpus: int, attempts: int | None = None, pause_s: float = RAY_START_PAUSE_S) -> None:
    """Start a local Ray node with ``num_cpus`` CPUs (:data:`LOCAL_RAY`) and connect to it.

    Ray gives its helper processes fixed waits at start (15 s for the agents to report their ports,
    30 s for the node to register; neither can be set), and on a loaded machine its Python helpers,
    each importing Ray, can miss them. A start that fails is cleaned up (its processes stopped, its
    session folder removed) and tried again after a pause, ``attempts`` times in all (default: the
    environment's ``GUIMEM_RAY_START_ATTEMPTS``, else :data:`RAY_START_ATTEMPTS`); then a
    :class:`RayStartError` says so, with the load and Ray's last error. Bad arguments
    (``TypeError``/``ValueError``) are not retried.
    """
    check_number(num_cpus, "workers", lo=1, integer=True)
    if attempts is None:
        attempts = _attempts_from_environment()
    check_number(attempts, "attempts", lo=0, integer=True)
    if attempts == 0:
        raise RayStartError(f"a local Ray is not started here ({RAY_START_ATTEMPTS_ENV}=0, as after a start that "
                            f"failed; {_load_words()}): run the stage with executor: local (the same results)")
    import ray  # started only where a stage asks for Ray

    failures: list[str] = []
    for attempt in range(attempts):
        if attempt:
            time.sleep(pause_s * attempt)
        sessions, children = _own_ray_sessions(), _child_pids()
        try:
            with _environ(RAY_gcs_server_port_wait_time_s=str(RAY_START_WAIT_S)):
                ray.init(num_cpus=num_cpus, **LOCAL_RAY)
            return
        except (TypeError, ValueError):  # the arguments, not the machine: another try would fail the same way
            _stop_half_started(ray, sessions, children)
            raise
        except Exception as err:  # Ray's start time-out is a bare Exception; others are OSError/RuntimeError
            failures.append(f"{type(err).__name__}: {' '.join(str(err).split())!s:.160}")
            _stop_half_started(ray, sessions, children)
    raise RayStartError(
        f"a local Ray did not start on this machine in {attempts} attempt(s) ({_load_words()}; Ray's last "
        f"error: {failures[-1]}). Ray's start waits are fixed, so a busy machine can miss them: run the stage "
        f"with executor: local (the same results), or again when the machine is less busy")


def _attempts_from_environment() -> int:
    """How many starts ``GUIMEM_RAY_START_ATTEMPTS`` allows (a whole number, 0 or more), else the default."""
    text = os.environ.get(RAY_START_ATTEMPTS_ENV, "").strip()
    if not text:
        return RAY_START_ATTEMPTS
    if not text.isdigit():
        raise DataError(RAY_START_ATTEMPTS_ENV, f"expected a whole number of attempts (0 or more), got {text!r:.40}")
    return int(text)


@contextmanager
def _environ(**values: str) -> Iterator[None]:
    """Environment variables the caller has not set, set for the duration of a ``with`` block."""
    added = {k: v for k, v in values.items() if k not in os.environ}  # the user's own setting wins
    os.environ.update(added)
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def _ray_temp_root() -> Path:
    """Where a local Ray keeps its session folders (Ray's own rule: RAY_TMPDIR, TMPDIR on Linux, /tmp)."""
    base = os.environ.get("RAY_TMPDIR") or (os.environ.get("TMPDIR") if sys.platform.startswith("linux") else None)
    return Path(base or ("/tmp" if os.name == "posix" else tempfile.gettempdir())) / "ray"


def _own_ray_sessions() -> set[Path]:
    """The session folders this process started (Ray names them ``session_<time>_<pid>``)."""
    root = _ray_temp_root()
    return set(root.glob(f"session_*_{os.getpid()}")) if root.is_dir() else set()


def _child_pids() -> set[int]:
    """The processes this one started, and theirs."""
    import psutil  # installed with Ray

    return {p.pid for p in psutil.Process().children(recursive=True)}


def _stop_half_started(ray: Any, sessions_before: set[Path], children_before: set[int]) -> None:
    """Stop what a failed start left running (Ray keeps no handle on it) and remove its session folders."""
    import psutil

    try:
        ray.shutdown()
    except Exception:  # nothing was connected; the processes below are what is left
        pass
    new_sessions = _own_ray_sessions() - sessions_before
    names = [s.name for s in new_sessions]
    started = _child_pids() - children_before
    left: list[Any] = []
    for proc in psutil.process_iter(["cmdline"]):
        if proc.pid in children_before or proc.pid == os.getpid():
            continue
        # started by this attempt: a child of this process, or a helper (orphaned when the raylet died)
        # whose command line names the attempt's session folder
        line = " ".join(proc.info["cmdline"] or ())
        if proc.pid in started or any(n in line for n in names):
            left.append(proc)
    for proc in left:
        try:
            proc.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(left, timeout=5)
    for proc in alive:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(alive, timeout=5)
    for session in new_sessions:
        shutil.rmtree(session, ignore_errors=True)
    latest = _ray_temp_root() / "session_latest"
    if latest.is_symlink() and Path(os.readlink(latest)).name in names:  # it named the folder just removed
        latest.unlink(missing_ok=True)


def _load_words() -> str:
    """The machine's load, in words, for an error message."""
    try:
        load = f"load average {os.getloadavg()[0]:.1f}"
    except OSError:
        load = "load unknown"
    return f"{load} on {os.cpu_count() or '?'} CPUs"


class RayExecutor:
    """Chunks run on Ray actors (one ``task.setup()`` each), results in order (see the module docstring).

    The actors of the last task stay up for the next call of :meth:`map` with an equal task, so a
    stage that embeds in several calls loads its model once per actor; a call with another task,
    :meth:`close` or the end of the process stops them.
    """

    def __init__(self, spec: ExecutorSpec):
        if spec.kind != "ray":
            raise DataError("executor", f"a RayExecutor needs kind 'ray', got {spec.kind!r}")
        self.spec = spec
        self._task: Task | None = None  # the task whose actors are up
        self._actors: list[Any] = []

    def _connect(self) -> Any:
        import ray  # started only where a stage asks for Ray

        if not ray.is_initialized():
            if self.spec.address:
                ray.init(address=self.spec.address, log_to_driver=False, configure_logging=False)
            else:
                start_local_ray(self.spec.workers)
        return ray

    def _actors_for(self, ray: Any, task: Task) -> list[Any]:
        if not self._actors or self._task != task:  # tasks are compared by value (dataclasses)
            self.close()  # the actors of another task hold the CPUs (GPUs) these need
            worker = ray.remote(_RayWorker).options(num_cpus=1, num_gpus=self.spec.gpus_per_worker,
                                                    max_restarts=self.spec.max_retries,
                                                    max_task_retries=self.spec.max_retries)
            self._task, self._actors = task, [worker.remote(task) for _ in range(self.spec.workers)]
        return self._actors

    def map(self, task: Task, chunks: Sequence[Any]) -> Iterator[Any]:
        if not chunks:
            return
        ray = self._connect()
        from ray.util import ActorPool

        delivered = 0
        try:
            for result in ActorPool(self._actors_for(ray, task)).map(lambda actor, chunk: actor.run.remote(chunk),
                                                                     list(chunks)):
                delivered += 1
                yield result
        except BaseException:  # a failed or abandoned call: its actors may hold half a chunk; start afresh
            if delivered < len(chunks):  # (a caller that stops after the last result abandons nothing)
                self.close()
            raise

    def close(self) -> None:
        """Stop the actors (the next :meth:`map` starts new ones)."""
        if not self._actors:
            return
        import ray

        for actor in self._actors:
            ray.kill(actor)
        self._task, self._actors = None, []


class _RayWorker:
    """A Ray actor's body: the task's state made once, then chunk after chunk."""

    def __init__(self, task: Task):
        self.task, self.state = task, task.setup()

    def run(self, chunk: Any) -> Any:
        return self.task.run(self.state, chunk)


Executor = LocalExecutor | RayExecutor


def make_executor(spec: ExecutorSpec | None = None) -> Executor:
    """The executor ``spec`` names (default: this process)."""
    spec = spec or ExecutorSpec()
    return RayExecutor(spec) if spec.kind == "ray" else LocalExecutor(spec.workers)


def run_all(executor: Executor, task: Task, chunks: Iterable[Any]) -> list[Any]:
    """Every chunk's result, in order."""
    return list(executor.map(task, list(chunks)))
