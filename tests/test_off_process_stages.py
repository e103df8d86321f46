"""06 and 09 off the notebook's process write what they write in it: 06 on a local Ray, 09 on two
worker processes (its three conditions, SwitchMem routing there) — the step records and 09's traces
byte for byte as in process. (05 plays through the same ``play_all`` as 09, which
tests/test_executor.py runs on a two-worker Ray.) Each runs in a copy of the SwitchMem chain
(tests/stage_chains.py)."""

from __future__ import annotations

import shutil

import pytest

from stage_chains import layer_analysis_params, routing_stats_params

FRESH = dict(chunks_dir="")  # every chunk recorded and played again, none read back


def copy_of(chain, tmp_path):
    """A copy of the chain's folder to rerun a notebook in (the chain itself is never written)."""
    again = tmp_path / "again"
    shutil.copytree(chain, again, ignore=shutil.ignore_patterns("*.ipynb"))
    return again


@pytest.mark.notebook
@pytest.mark.slow
def test_the_executor_is_a_reporting_knob_of_every_stage_that_has_one():
    from guimem.pipeline.params import find_stage

    assert all("executor" in find_stage(s).reporting for s in ("05_closed_loop", "06_layer_analysis", "09_routing_stats"))


@pytest.mark.notebook
@pytest.mark.slow
def test_layer_analysis_on_a_local_ray_writes_the_step_records_it_writes_in_process(switchmem_chain, tmp_path):
    from nbsmoke import digest, run_notebook

    tmp, _ = switchmem_chain
    again = copy_of(tmp, tmp_path)
    run_notebook("06_layer_analysis", again, **{**layer_analysis_params(again), **FRESH, "executor": {"kind": "ray"}})
    held, pool = "data/layer_analysis/held_out", "data/layer_analysis/pool"  # (the pool's preferences were planted)
    assert digest(again, [held]) == digest(tmp, [held])
    arrays = [f"{pool}/{p.name}" for p in sorted((tmp / pool).glob("*.npy"))]
    assert arrays and digest(again, arrays) == digest(tmp, arrays)


@pytest.mark.notebook
@pytest.mark.slow
def test_routing_stats_on_two_worker_processes_writes_what_it_writes_in_process(switchmem_chain, tmp_path):
    from nbsmoke import digest, run_notebook

    tmp, _ = switchmem_chain
    again = copy_of(tmp, tmp_path)
    run_notebook("09_routing_stats", again, **{**routing_stats_params(again), **FRESH,
                                                "executor": {"kind": "local", "workers": 2}})
    assert digest(again, ["data/routing_stats"]) == digest(tmp, ["data/routing_stats"])
