"""A local Ray's start on a loaded machine: a start that times out is cleaned up (its processes
stopped, its session folder removed) and tried again; one that never succeeds is a clear
:class:`RayStartError` naming the ``executor`` parameter, which the test command reports as a skip."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from guimem.core import executor as ex
from guimem.core.executor import ExecutorSpec, RayExecutor, RayStartError, start_local_ray

ray = pytest.importorskip("ray")

# What Ray 2.x raises when its node misses its start wait (ray/_private/node.py): a bare Exception.
TIMED_OUT = "The current node timed out during startup. This could happen because some of the raylet failed to startup"


class FlakyInit:
    """``ray.init`` that times out ``fails`` times, each time leaving what a half-started node leaves: a
    child process and a session folder named for this process; then it succeeds (starting nothing)."""

    def __init__(self, fails: int, root):
        self.fails, self.root, self.calls, self.left = fails, root, [], []

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        if len(self.calls) > self.fails:
            return None
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        session = self.root / f"session_2026-01-01_00-00-0{len(self.calls)}_000000_{os.getpid()}"
        (session / "logs").mkdir(parents=True)
        self.left.append((child, session))
        raise Exception(TIMED_OUT)  # noqa: TRY002 - Ray's own class for this time-out


@pytest.fixture
def flaky(monkeypatch, tmp_path):
    """A FlakyInit in place of ray.init, Ray's temp folder under tmp_path; any child it left is killed after."""
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.delenv(ex.RAY_START_ATTEMPTS_ENV, raising=False)  # (the test command sets it after a failed start)
    monkeypatch.setattr(ray, "shutdown", lambda: None)  # nothing real was started

    def install(fails: int) -> FlakyInit:
        init = FlakyInit(fails, tmp_path / "ray")
        monkeypatch.setattr(ray, "init", init)
        made.append(init)
        return init

    made: list[FlakyInit] = []
    yield install
    for init in made:
        for child, _ in init.left:
            child.kill()
            child.wait()


def test_a_start_that_times_out_is_cleaned_up_and_tried_again(flaky, tmp_path):
    init = flaky(2)
    start_local_ray(2, attempts=3, pause_s=0)
    assert len(init.calls) == 3
    for child, session in init.left:
        assert child.poll() is not None  # the half-started node's process was stopped
        assert not session.exists()  # and its session folder removed
    started = init.calls[-1]
    assert started["num_cpus"] == 2 and started["include_dashboard"] is False  # the small local footprint
    assert started["object_store_memory"] == ex.RAY_OBJECT_STORE_BYTES and started["log_to_driver"] is False
    assert "RAY_gcs_server_port_wait_time_s" not in os.environ  # the longer wait was set for the start only


def test_a_start_that_never_succeeds_says_so_naming_the_parameter(flaky):
    init = flaky(99)
    with pytest.raises(RayStartError) as caught:
        start_local_ray(1, attempts=2, pause_s=0)
    message = str(caught.value)
    assert len(init.calls) == 2 and caught.value.field == "executor"
    assert message.startswith("field 'executor': a local Ray did not start on this machine in 2 attempt(s)")
    assert "load average" in message and "timed out during startup" in message and "executor: local" in message
    assert len(message) < 600  # Ray's error is quoted, bounded
    assert all(child.poll() is not None and not session.exists() for child, session in init.left)


def test_the_environment_sets_the_attempts_and_0_refuses_at_once(monkeypatch, flaky):
    init = flaky(99)
    monkeypatch.setenv(ex.RAY_START_ATTEMPTS_ENV, "2")
    with pytest.raises(RayStartError, match="in 2 attempt"):
        start_local_ray(1, pause_s=0)
    assert len(init.calls) == 2
    monkeypatch.setenv(ex.RAY_START_ATTEMPTS_ENV, "0")  # an earlier start failed: the next ones skip at once
    with pytest.raises(RayStartError, match="GUIMEM_RAY_START_ATTEMPTS=0.*executor: local"):
        start_local_ray(1)
    assert len(init.calls) == 2
    from guimem.core.data import DataError

    for text in ("-1", "two", "1e9"):
        monkeypatch.setenv(ex.RAY_START_ATTEMPTS_ENV, text)
        with pytest.raises(DataError, match=ex.RAY_START_ATTEMPTS_ENV):
            start_local_ray(1)


def test_bad_arguments_are_not_retried(monkeypatch, flaky):
    calls = []

    def bad(**kwargs):
        calls.append(kwargs)
        raise TypeError("unexpected keyword")

    flaky(0)
    monkeypatch.setattr(ray, "init", bad)
    with pytest.raises(TypeError):
        start_local_ray(1, pause_s=0)
    assert len(calls) == 1
    from guimem.core.data import DataError

    with pytest.raises(DataError, match="workers"):
        start_local_ray(0)


def test_the_ray_executor_starts_its_local_ray_through_the_retrying_start(monkeypatch):
    started = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ex, "start_local_ray", lambda n: started.append(n))
    RayExecutor(ExecutorSpec("ray", workers=3))._connect()
    assert started == [3]


def test_the_test_command_reports_a_ray_that_cannot_start_as_a_skip():
    from conftest import ray_start_failure

    class NotebookError(Exception):  # guimem.pipeline.runner's, by name (importing the runner costs seconds)
        pass

    err = RayStartError("a local Ray did not start on this machine in 3 attempt(s) (load average 9.0 on 2 CPUs)")
    assert ray_start_failure(err) == str(err)
    cell = NotebookError("nb.py: cell 4 (In [4]) raised RayStartError: field 'executor': a local Ray did not start\n"
                         "Traceback ...")
    assert ray_start_failure(cell) == "field 'executor': a local Ray did not start"
    assert ray_start_failure(NotebookError("nb.py: cell 4 raised KeyError: 'x'")) is None
    assert ray_start_failure(RuntimeError("timed out during startup")) is None  # only the retried, reported error


@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("GUIMEM_TEST_RAY_UNDER_LOAD") != "1",
                    reason="loads every core for one Ray start: set GUIMEM_TEST_RAY_UNDER_LOAD=1")
def test_a_real_local_ray_starts_with_every_core_busy():
    """One CPU burner per core for the duration of one real start (they are stopped whatever happens)."""
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        t0 = time.perf_counter()
        start_local_ray(1)
        seconds = time.perf_counter() - t0

        @ray.remote(num_cpus=1)
        def one() -> int:
            return 1

        assert ray.get(one.remote()) == 1
        print(f"local Ray started in {seconds:.1f} s with {len(burners)} burners")
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
        ray.shutdown()
