"""How much the pipeline's headline numbers move with a seed: the spread every claim is read against.

Two spreads, each run by the stages' own ``dvc.yaml`` commands (their ``-y`` values read from ``params.yaml``),
with every output written under a temporary folder and only the seed changed:

- ``world`` (default): every stage from ``world`` to ``routing_stats`` with each master seed
  (``base.seed``), playing the committed actor (``pretrained/actor``): another phone (contents, layouts,
  themes, popups), other demonstrations, other memories, another sample of closed-loop tasks and other
  router folds. The actor is frozen, so this is what varies from run to run; ``make verify`` reads each
  number against its prediction interval from these seeds (Student's t), and the README's findings
  must hold at every one. Writes ``benchmarks/results/seed_spread_world.json``.
- ``pretraining``: ``make pretrain`` with each pretraining seed (``pretrain.seed``; about 35 minutes each on 2 cores), then the
  stages from ``actor`` to ``routing_stats`` on the workspace's ``data/`` playing that actor: how much
  the numbers belong to the one actor committed. Writes ``benchmarks/results/seed_spread_pretraining.json``
  and each actor's model card beside it.

Each file gives, per headline metric (the stages' ``metrics/<stage>.json``), its value at each
seed, mean and population standard deviation; it is rewritten after every seed, so an
interrupted run keeps what it measured. The seed the workspace ran with is not run again when
``dvc status`` finds those stages up to date: its numbers are the workspace's own ``metrics/``,
which the same commands wrote (``--rerun`` runs it anyway). Run::

    python benchmarks/seed_spread.py                  # world seeds 0 1 2
    python benchmarks/seed_spread.py --resume         # keep the seeds the file measured on this commit and machine
    python benchmarks/seed_spread.py pretraining 0 1 2
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

from guimem.core.io import read_json, write_json
from guimem.pipeline.verify import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"
SEEDS = (0, 1, 2)
LATER = ("actor", "closed_loop", "layer_analysis", "probe_router", "oracle_headroom", "routing_stats")
MODES: dict[str, dict[str, Any]] = {
    "world": {"stages": ("world", "segmentation", "graph_build", "retrieval_eval", *LATER),
              "out": RESULTS / "seed_spread_world.json", "seed": "base.seed",
              "what": "headline metrics of every stage from world to routing_stats, each master seed its own world, "
                      "memories and retrievals, the committed actor playing"},
    "pretraining": {"stages": LATER, "out": RESULTS / "seed_spread_pretraining.json", "seed": "pretrain.seed",
                    "what": "headline metrics of the actor and every stage after it, each pretraining seed its own "
                            "actor (make pretrain), on the workspace's world, memories and retrievals"},
}
REPORT_PREFIXES = ("figures", "plots", "metrics/", "results/")  # a stage's own report: always into the temp folder


def lookup(params: dict, dotted: str) -> Any:
    node = params
    for key in dotted.split("."):
        node = node[key]
    return node


def stage_command(stage: str, seed: int | None, tmp: Path, params: dict, stages: tuple[str, ...],
                  params_file: Path | None = None) -> list[str]:
    """The stage's dvc.yaml command, each ``-y NAME TEMPLATE`` read from ``params`` into a ``-p``, with
    its seed replaced (None: kept), every ``-f params.yaml:SECTION`` read from ``params_file`` when given
    (``params`` written there), and every path it writes (and every ``data/<stage>`` path of the
    stages this spread reruns) moved under ``tmp``."""
    cmd = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"][stage]["cmd"]
    args = shlex.split(cmd)
    if params_file is not None:
        args = [f"{params_file}:{a.partition(':')[2]}" if a.startswith("params.yaml:") else a for a in args]
    rerun = tuple(f"data/{s}" for s in stages)
    for i, a in enumerate(args[:-2]):
        if a == "-y":
            whole = re.fullmatch(r"\{([\w.]+)\}", args[i + 2])
            value = lookup(params, whole[1]) if whole else re.sub(
                r"\{([\w.]+)\}", lambda m: str(lookup(params, m.group(1))), args[i + 2])
            if isinstance(value, dict):  # a group (06's and 09's actor): a folder this spread reruns moves too
                value = {k: str(tmp / v) if isinstance(v, str) and v.startswith(rerun) else v for k, v in value.items()}
            args[i], args[i + 2] = "-p", json.dumps(value) if isinstance(value, (dict, list, bool)) else str(value)
    args[args.index("-m") + 3] = str(tmp / f"{stage}.ipynb")  # the executed notebook
    for i, a in enumerate(args[:-2]):
        if a != "-p":
            continue
        name, value = args[i + 1], args[i + 2]
        if name == "seed" and seed is not None:
            args[i + 2] = str(seed)
        elif value.startswith(REPORT_PREFIXES) or value.startswith(rerun):
            args[i + 2] = str(tmp / value)
    return [sys.executable if args[0] == "python" else args[0]] + args[1:]


def pretrained(seed: int, tmp: Path, params: dict) -> tuple[dict, Path]:
    """``make pretrain`` with pretraining seed ``seed`` into ``tmp/actor`` (its corpus under ``tmp``), its
    model card kept beside the result file; ``params`` with that folder as the actor 04-09 play, and the
    file they are written to (every stage reads its sections from there)."""
    edited = json.loads(json.dumps(params))
    edited["pretrain"]["seed"] = seed
    params_file = tmp / "params.yaml"
    params_file.parent.mkdir(parents=True, exist_ok=True)
    params_file.write_text(yaml.safe_dump(edited, sort_keys=False))
    subprocess.run([sys.executable, "-m", "guimem.pipeline.pretrain", "--params", str(params_file), "--out",
                    str(tmp / "actor"), "--work", str(tmp / "corpus")], cwd=ROOT, check=True)
    cards = RESULTS / "pretraining_cards"
    cards.mkdir(exist_ok=True)
    (cards / f"seed{seed}.json").write_text((tmp / "actor" / "pretraining.json").read_text())
    edited["closed_loop"]["actor"]["actor_model"] = edited["actor"]["actor_dir"] = str(tmp / "actor")
    played = tmp / "played.yaml"
    played.write_text(yaml.safe_dump(edited, sort_keys=False))
    return edited, played


def write_summary(mode: str, runs: dict[int, dict[str, Any]], seconds: dict[int, float],
                  reused: list[int]) -> dict:
    """Per headline metric: its value at each seed measured so far, their mean and (population) std."""
    seeds = sorted(runs)
    names = sorted(n for n in runs[seeds[0]] if all(isinstance(runs[s].get(n), (int, float)) and
                                                    not isinstance(runs[s].get(n), bool) for s in seeds))
    result = {
        "what": MODES[mode]["what"],
        "seeds": seeds,
        "from_workspace": reused,  # seeds whose numbers are the workspace's metrics/ (the lock's run), not rerun
        "machine": machine(),
        "commit": git("rev-parse", "HEAD"),
        "seconds_per_seed": seconds,
        "metrics": {n: {"per_seed": [runs[s][n] for s in seeds],
                        "mean": round(statistics.fmean(runs[s][n] for s in seeds), 4),
                        "std": round(statistics.pstdev(runs[s][n] for s in seeds), 4)} for n in names},
    }
    write_json(MODES[mode]["out"], result)
    return result


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def workspace_current(stages: tuple[str, ...]) -> bool:
    """Whether ``dvc status`` finds ``stages`` (and what they depend on) up to date in the workspace."""
    out = subprocess.run(["dvc", "status", "--quiet", *stages], cwd=ROOT, capture_output=True, text=True)
    return out.returncode == 0


def measured(mode: str) -> tuple[dict[int, dict[str, Any]], dict[int, float], list[int]]:
    """The seeds the result file already holds, when it was measured on this commit (a clean work
    tree) and this machine: each seed's metrics, seconds, and the seeds taken from the workspace."""
    path = MODES[mode]["out"]
    if not path.exists() or git("status", "--porcelain", "--untracked-files=no", "src", "notebooks", "params.yaml"):
        return {}, {}, []
    old = read_json(path)
    if old.get("commit") != git("rev-parse", "HEAD") or old.get("machine") != machine():
        return {}, {}, []
    runs = {s: {n: m["per_seed"][i] for n, m in old["metrics"].items()} for i, s in enumerate(old["seeds"])}
    return runs, {int(s): t for s, t in old["seconds_per_seed"].items()}, list(old["from_workspace"])


def main(argv: list[str]) -> None:
    rerun, resume = "--rerun" in argv, "--resume" in argv
    argv = [a for a in argv if a not in ("--rerun", "--resume")]
    mode = argv.pop(0) if argv and argv[0] in MODES else "world"
    seeds = tuple(int(a) for a in argv) or SEEDS
    stages = MODES[mode]["stages"]
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    runs, seconds, reused = measured(mode) if resume else ({}, {}, [])
    runs = {s: v for s, v in runs.items() if s in seeds}
    with tempfile.TemporaryDirectory(prefix="guimem-seeds-") as root:
        for seed in seeds:
            if seed in runs:
                print(f"== {mode} seed {seed}: measured on this commit and machine before (--resume)", flush=True)
                continue
            if not rerun and seed == lookup(params, MODES[mode]["seed"]) and workspace_current(stages):
                print(f"== {mode} seed {seed}: the workspace's metrics/ (dvc status: up to date)", flush=True)
                metrics, seconds[seed] = ROOT / "metrics", 0.0
                reused.append(seed)
            else:
                tmp = Path(root) / f"seed{seed}"
                t0 = time.perf_counter()
                run_params, stage_seed, params_file = params, seed, None
                if mode == "pretraining":  # this seed's actor, on the workspace's world
                    (run_params, params_file), stage_seed = pretrained(seed, tmp, params), None
                for stage in stages:
                    print(f"== {mode} seed {seed}: {stage}", flush=True)
                    subprocess.run(stage_command(stage, stage_seed, tmp, run_params, stages, params_file), cwd=ROOT,
                                   check=True)
                seconds[seed] = round(time.perf_counter() - t0, 1)
                metrics = tmp / "metrics"
            runs[seed] = {f"{s}.{k}": v for s in stages for k, v in read_json(metrics / f"{s}.json").items()}
            result = write_summary(mode, runs, seconds, reused)
    result = write_summary(mode, runs, seconds, reused)
    for n, m in result["metrics"].items():
        print(f"{n:50s} {m['mean']:8.4f} ± {m['std']:.4f}  {m['per_seed']}")


if __name__ == "__main__":
    main(sys.argv[1:])
