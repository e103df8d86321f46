"""How much the actor's and the closed loop's numbers move with the training seed.

The actor is trained on the CPU in float32; another processor (or another BLAS) rounds its last
bits differently, training drifts apart, and every actor and closed-loop metric moves. How far is
measured here, by the spread those numbers show over training seeds: the tolerance within which
a result of this pipeline reproduces on other hardware (the README states it).

For each seed in ``SEEDS`` this runs the ``actor`` and ``closed_loop`` stages exactly as
``dvc.yaml`` writes them (their commands, with ``params.yaml`` interpolated), reading the
workspace's ``data/`` (run ``dvc repro`` first) and writing everything under a temporary folder;
only the seed differs. Writes ``benchmarks/results/seed_spread.json``: per headline metric, its
value at each seed, mean and standard deviation. Run: ``python benchmarks/seed_spread.py``
(about 10 minutes per seed on 2 cores); ``python benchmarks/seed_spread.py 3 4`` runs other seeds.
"""

from __future__ import annotations

import json
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from guimem.core.io import write_json

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).parent / "results" / "seed_spread.json"
SEEDS = (0, 1, 2)
STAGES = ("actor", "closed_loop")
REDIRECT = {"out_dir", "figures_dir", "plots_dir", "metrics_path"}  # -p parameters pointed into the temp folder


def lookup(params: dict, dotted: str) -> Any:
    node = params
    for key in dotted.split("."):
        node = node[key]
    return node


def stage_command(stage: str, seed: int, tmp: Path, params: dict) -> list[str]:
    """The stage's dvc.yaml command, interpolated, with its outputs and the seed replaced."""
    cmd = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"][stage]["cmd"]
    cmd = re.sub(r"\$\{([^}]+)\}", lambda m: str(lookup(params, m.group(1))), cmd)
    args = shlex.split(cmd)
    args[args.index("-m") + 3] = str(tmp / f"{stage}.ipynb")  # the executed notebook
    for i, a in enumerate(args[:-2]):
        if a != "-p":
            continue
        name = args[i + 1]
        if name == "seed":
            args[i + 2] = str(seed)
        elif name in REDIRECT:
            args[i + 2] = str(tmp / stage / Path(args[i + 2]).name)
        elif name == "actor_dir":
            args[i + 2] = str(tmp / "actor" / "actor" / "model")
    return [sys.executable if args[0] == "python" else args[0]] + args[1:]


def headline(actor: dict, loop: dict) -> dict[str, float]:
    """The numbers the README's claims rest on."""
    out = {f"actor.step_accuracy.{k}": v for k, v in actor["step_accuracy"].items()
           if k == "none" or k.endswith("/text")}
    out["actor.type_accuracy.none"] = actor["type_accuracy"]["none"]
    out |= {f"closed_loop.success_rate.{k}": v["mean"] for k, v in loop["success_rate"].items()}
    out |= {f"closed_loop.action_score_aitw.{k}": v["step_accuracy"] for k, v in loop["action_score_aitw"].items()}
    return out


def write_summary(runs: dict[int, dict[str, float]], seconds: dict[int, float]) -> dict:
    """Per headline metric: its value at each seed measured so far, their mean and (population) std."""
    seeds = sorted(runs)
    names = sorted(runs[seeds[0]])
    result = {
        "what": "actor and closed-loop headline metrics, trained and played with each seed (same data)",
        "seeds": seeds,
        "seconds_per_seed": seconds,
        "metrics": {n: {"per_seed": [runs[s][n] for s in seeds],
                        "mean": round(statistics.fmean(runs[s][n] for s in seeds), 4),
                        "std": round(statistics.pstdev(runs[s][n] for s in seeds), 4)} for n in names},
    }
    write_json(OUT, result)
    return result


def main() -> None:
    seeds = tuple(int(a) for a in sys.argv[1:]) or SEEDS
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    runs: dict[int, dict[str, float]] = {}
    seconds: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="guimem-seeds-") as root:
        for seed in seeds:
            tmp = Path(root) / f"seed{seed}"
            t0 = time.perf_counter()
            for stage in STAGES:
                print(f"== seed {seed}: {stage}", flush=True)
                subprocess.run(stage_command(stage, seed, tmp, params), cwd=ROOT, check=True)
            seconds[seed] = round(time.perf_counter() - t0, 1)
            metrics = {s: json.loads((tmp / s / f"{s}.json").read_text()) for s in STAGES}
            runs[seed] = headline(metrics["actor"], metrics["closed_loop"])
            write_summary(runs, seconds)  # after every seed: an interrupted run keeps what it measured
    result = write_summary(runs, seconds)
    names = sorted(result["metrics"])
    for n in names:
        m = result["metrics"][n]
        print(f"{n:50s} {m['mean']:8.4f} ± {m['std']:.4f}  {m['per_seed']}")


if __name__ == "__main__":
    main()
