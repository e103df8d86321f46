"""A stage's report and the pipeline's headline numbers, as terminal tables.

Each stage writes its headline numbers, flat and few, to ``metrics/<stage>.json`` (the tables
behind them go to ``results/<stage>.json``): a stage notebook's last cell hands both to
:func:`report`, which writes them and prints the headlines. DVC prints numbers one column per
number, which is wide; this module prints them one row per number instead::

    python -m guimem.pipeline.report metrics          # or: make metrics
    python -m guimem.pipeline.report headline --out metrics/headline.json   # the headline stage

``metrics`` reads the workspace's metrics files (``--rev REV``: the files as committed at a git
revision). DVC itself is told of one metrics file only, ``metrics/headline.json`` (dvc.yaml's
``metrics:``), which ``headline`` (the ``headline`` stage) copies from the stages' files
(:data:`HEADLINE`): a few numbers, so that ``dvc metrics show|diff`` and ``dvc exp show`` print
tables that fit a terminal. What experiments changed, from every stage's file, is
:mod:`guimem.pipeline.compare`'s (``make compare``). Numbers are rounded to 4 significant places,
as ``dvc metrics show`` rounds to 5 decimals.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from guimem.core.data import DataError
from guimem.core.io import parse_json, read_json, write_metrics, write_stage_results
from guimem.pipeline.paths import repo_root

MISSING = "-"


HEADLINE_STAGE = "headline"
"""The stage that writes ``metrics/headline.json`` (:data:`HEADLINE`), copied from the other stages'."""

HEADLINE: dict[str, tuple[str, str]] = {  # name in metrics/headline.json: (stage, its metric); few and short
    "smg_hit@1": ("retrieval_eval", "smg_hit@1"),  # the SMG's top-1 holds the true next subgoal type (test steps)
    "success_none": ("closed_loop", "success_rate_none"),  # held-out tasks completed in closed loop, no memory (%)
    "success_smg": ("closed_loop", "success_rate_smg"),  # the same with the Subgoal-Graph memory (%)
    "step_text": ("probe_router", "smg_text"),  # step score on held-out steps, the SMG's top-1 as text
    "step_image": ("probe_router", "smg_image"),  # the same, as an image
    "switchmem": ("probe_router", "smg_switchmem"),  # the same, text or image as SwitchMem's router picks
}


def stage_order(root: Path) -> tuple[str, ...]:
    """The stages of ``root/dvc.yaml`` that write their own ``metrics/<stage>.json``, in the pipeline's
    order: all but :data:`HEADLINE_STAGE`, whose numbers are copies (read here: importing the stage
    specs would import every layer of the package, seconds of start-up for printing a few numbers)."""
    stages = yaml.safe_load((root / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    return tuple(s for s in stages if s != HEADLINE_STAGE)


def fmt(value: Any) -> str:
    """One cell: a float to 4 significant places, a list compactly, anything else as text."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(fmt(v) for v in value) + "]"
    return str(value)


def render(header: Sequence[str], rows: Iterable[Sequence[str]], right_from: int = 1) -> str:
    """A plain text table: columns padded to their widest cell; columns from ``right_from`` right-aligned."""
    rows = [list(header), *[list(r) for r in rows]]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for row in rows:
        cells = [c.rjust(w) if i >= right_from else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


# ----------------------------------------------------------------------------- a stage's report
def report(results_path: str | Path, results: Mapping[str, Any], metrics_path: str | Path,
           metrics: Mapping[str, Any]) -> None:
    """Write a stage's report, as every stage notebook's last cell does: ``results`` (every table
    behind the headline numbers) to ``results_path``, then ``metrics`` (the headline numbers: flat,
    at most 12) to ``metrics_path``, and print the headlines one per row.

    The files are those of :func:`guimem.core.io.write_stage_results` and
    :func:`guimem.core.io.write_metrics` (keys sorted, NaN as null, a nested headline refused
    before its file is written); the values are written as given, so a notebook rounds its
    headline numbers itself, and a last cell that called the two writers calls this instead
    without changing a byte of either file::

        report(results_path, {"tables": tables, "findings": findings}, metrics_path,
               {"smg_text": round(t["text"], 4), "steps": len(held)})
    """
    write_stage_results(results_path, results)
    write_metrics(metrics_path, metrics)
    print(metrics_table({Path(metrics_path).stem: metrics}))


# ----------------------------------------------------------------------------- metrics
def read_headlines(folder: Path, stages: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Each of ``stages``' headline metrics from ``folder/<stage>.json``, in that order (absent files left out)."""
    out: dict[str, dict[str, Any]] = {}
    for stage in stages:
        path = folder / f"{stage}.json"
        if path.is_file():
            data = read_json(path)
            if not isinstance(data, dict):
                raise DataError("metrics", f"expected an object, got {type(data).__name__}", str(path))
            out[stage] = data
    return out


def metrics_table(headlines: Mapping[str, Mapping[str, Any]]) -> str:
    """One row per headline number: stage, metric, value (a nested file, as committed before the
    headline numbers were flat, is flattened to dotted names)."""
    rows = [(stage, name, fmt(value)) for stage, metrics in headlines.items()
            for name, value in flatten(dict(metrics)).items()]
    return render(("stage", "metric", "value"), rows, right_from=2)


def headlines_at(rev: str, root: Path, stages: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The metrics files of ``stages`` as committed at git revision ``rev``."""
    out: dict[str, dict[str, Any]] = {}
    for stage in stages:
        shown = subprocess.run(["git", "show", f"{rev}:metrics/{stage}.json"], cwd=root, capture_output=True, text=True)
        if shown.returncode == 0:
            out[stage] = parse_json(shown.stdout, f"{rev}:metrics/{stage}.json")
    return out


def headline(headlines: Mapping[str, Mapping[str, Any]], folder: str | Path = "metrics") -> dict[str, Any]:
    """The pipeline's headline numbers (:data:`HEADLINE`) from the stages' metrics (``{stage: {name:
    value}}``, read from ``folder``); a file or a number missing there is a DataError naming it."""
    out: dict[str, Any] = {}
    for name, (stage, metric) in HEADLINE.items():
        if stage not in headlines:
            raise DataError("metrics", f"no metrics of stage {stage} (run it first)", str(Path(folder) / f"{stage}.json"))
        if metric not in headlines[stage]:
            raise DataError(metric, "not among the stage's headline numbers", str(Path(folder) / f"{stage}.json"))
        out[name] = headlines[stage][metric]
    return out


def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` to ``{"a.b": 1}``; lists stay values."""
    if not isinstance(node, dict):
        return {prefix: node}
    out: dict[str, Any] = {}
    for key, value in node.items():
        out |= flatten(value, f"{prefix}.{key}" if prefix else str(key))
    return out


# ----------------------------------------------------------------------------- command line
def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m guimem.pipeline.report", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("metrics", help="the headline numbers of every stage, one per row")
    m.add_argument("--rev", help="read the metrics files committed at this git revision instead of the workspace")
    h = sub.add_parser("headline", help="write the pipeline's headline numbers, copied from the stages' metrics")
    h.add_argument("--metrics", default="metrics", help="the folder of the stages' metrics files (default: metrics)")
    h.add_argument("--out", required=True, help="the file to write (the pipeline: metrics/headline.json)")
    args = p.parse_args(argv)
    root = repo_root(Path.cwd())
    try:
        stages = stage_order(root)
        if args.what == "metrics":
            headlines = headlines_at(args.rev, root, stages) if args.rev else read_headlines(root / "metrics", stages)
            print(metrics_table(headlines) if headlines else "no metrics yet: run `make repro` (dvc repro)")
        else:
            numbers = headline(read_headlines(Path(args.metrics), stages), args.metrics)
            write_metrics(args.out, numbers)
            print(metrics_table({HEADLINE_STAGE: numbers}))
    except DataError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
