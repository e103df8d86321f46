"""The miniature actor with and without a history that says what it did (issue 51's first step).

Stage 04 trained twice on the workspace's data, with the pipeline's parameters (params.yaml ``actor``):
``off`` as they are, ``on`` with the actor's history reading the screens its actions were taken on
(``history_words: 4``: what each touched or typed; ``history_effect``: whether the screen changed
after it; ``done_match``: the goal words the history holds; ``quoted_spans``: typed text never across
a quote). Same seed, same budget, one run each: a difference smaller than the training-seed spread
(``benchmarks/results/seed_spread.json``) is not a finding. Writes
``benchmarks/results/actor_history.json``: each run's headline metrics, its action-type accuracy and
its step and type accuracy by the true action's type (no memory), and its time.

The data are copied to a temporary folder first, so a ``dvc repro`` meanwhile cannot pull them away.
About 10 minutes per run on a 2-core machine (20 when another job shares it). Run::

    python benchmarks/actor_history.py                  # both runs
    python benchmarks/actor_history.py --runs DIR       # summarise runs already in DIR/off and DIR/on
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from guimem.core.io import read_json, write_json
from guimem.pipeline.verify import machine

ROOT = Path(__file__).resolve().parent.parent
OUT = Path(__file__).parent / "results" / "actor_history.json"
INPUTS = ("world", "segmentation", "graph_build", "retrieval_eval")
RUNS = {
    "off": [],
    "on": ["-p", "model.history_words", "4", "-p", "model.history_effect", "true",
           "-p", "model.done_match", "true", "-p", "model.quoted_spans", "true"],
}


def run(name: str, data: Path, out: Path) -> float:
    """Stage 04 with the ``name`` run's fields on ``data``, into ``out``; its seconds."""
    args = [sys.executable, "-m", "guimem.pipeline.runner", "notebooks/04_actor.py", str(out / "report.ipynb"),
            "-f", "params.yaml:actor", *RUNS[name],
            "-p", "world_dir", str(data / "world"), "-p", "subgoals_dir", str(data / "segmentation"),
            "-p", "memories_dir", str(data / "graph_build"), "-p", "retrieval_dir", str(data / "retrieval_eval"),
            "-p", "out_dir", str(out), "-p", "figures_dir", str(out / "figures"), "-p", "plots_dir", str(out / "plots"),
            "-p", "metrics_path", str(out / "metrics.json"), "-p", "results_path", str(out / "results.json")]
    start = time.monotonic()
    subprocess.run(args, cwd=ROOT, check=True)
    return round(time.monotonic() - start, 1)


def summary(folder: Path) -> dict:
    """What one run measured: headline metrics, type accuracy and the no-memory scores by true type."""
    results = read_json(folder / "results.json")
    return {"metrics": read_json(folder / "metrics.json"),
            "type_accuracy_none": results["type_accuracy"]["none"],
            "by_type_none": results["by_type_none"]}


def main(argv: list[str]) -> None:
    seconds: dict[str, float | None] = {}
    if "--runs" in argv:
        runs = Path(argv[argv.index("--runs") + 1])
        seconds = {name: None for name in RUNS}
    else:
        runs = Path(tempfile.mkdtemp(prefix="actor_history-"))
        data = runs / "data"
        for stage in INPUTS:
            shutil.copytree(ROOT / "data" / stage, data / stage)
        for name in RUNS:
            seconds[name] = run(name, data, runs / name)
    write_json(OUT, {"what": __doc__.splitlines()[0], "machine": machine(),
                     "runs": {name: {"fields": RUNS[name], "seconds": seconds[name], **summary(runs / name)}
                              for name in RUNS}})
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main(sys.argv[1:])
