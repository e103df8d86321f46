"""A stage's report, the pipeline's headline numbers, and experiments side by side, as terminal tables.

Each stage writes its headline numbers, flat and few, to ``metrics/<stage>.json`` (the tables
behind them go to ``results/<stage>.json``): a stage notebook's last cell hands both to
:func:`report`, which writes them and prints the headlines. DVC prints them one column per
number, which is wide; this module prints them one row per number instead::

    python -m guimem.pipeline.report metrics          # or: make metrics
    python -m guimem.pipeline.report experiments      # or: make compare

``metrics`` reads the workspace's metrics files (``--rev REV``: the files as committed at a git
revision). ``experiments`` reads ``dvc exp show --json`` and prints a row for every parameter and
headline number that differs between the revisions it lists (the workspace, ``HEAD`` and each
experiment of ``HEAD``; ``--all-rows`` prints the unchanged ones too), with the revisions as
columns; when an experiment named ``baseline`` exists (``make baseline``: this machine's run of
HEAD's parameters), the experiments are compared with it alone. Numbers are rounded to 4 significant places, as ``dvc metrics show`` rounds to 5 decimals.
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


def stage_order(root: Path) -> tuple[str, ...]:
    """The stages of ``root/dvc.yaml``, in the pipeline's order (read here: importing the stage specs
    would import every layer of the package, seconds of start-up for printing a few numbers)."""
    return tuple(yaml.safe_load((root / "dvc.yaml").read_text(encoding="utf-8"))["stages"])


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
            for name, value in _flatten(dict(metrics)).items()]
    return render(("stage", "metric", "value"), rows, right_from=2)


def headlines_at(rev: str, root: Path, stages: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The metrics files of ``stages`` as committed at git revision ``rev``."""
    out: dict[str, dict[str, Any]] = {}
    for stage in stages:
        shown = subprocess.run(["git", "show", f"{rev}:metrics/{stage}.json"], cwd=root, capture_output=True, text=True)
        if shown.returncode == 0:
            out[stage] = parse_json(shown.stdout, f"{rev}:metrics/{stage}.json")
    return out


# ----------------------------------------------------------------------------- experiments
def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` to ``{"a.b": 1}``; lists stay values."""
    if not isinstance(node, dict):
        return {prefix: node}
    out: dict[str, Any] = {}
    for key, value in node.items():
        out |= _flatten(value, f"{prefix}.{key}" if prefix else str(key))
    return out


def _metrics_of(data: Mapping[str, Any]) -> dict[str, Any]:
    """``metrics/actor.json: {"x": 1}`` to ``{"actor.x": 1}`` (a file's stem names its stage)."""
    out: dict[str, Any] = {}
    for path, entry in (data.get("metrics") or {}).items():
        out |= _flatten(entry.get("data") or {}, Path(path).stem)
    return out


def _params_of(data: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entry in (data.get("params") or {}).values():
        out |= _flatten(entry.get("data") or {})
    return out


def revisions(exp_show: Sequence[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``(name, params, metrics)`` of every revision in ``dvc exp show --json`` output: the workspace,
    each baseline commit, then the experiments run on it (queued, running and failed ones left out)."""
    out = []

    def add(name: str, data: Mapping[str, Any] | None) -> None:
        if data:
            out.append((name, _params_of(data), _metrics_of(data)))

    for entry in exp_show:
        add(_label(entry), entry.get("data"))
        for group in entry.get("experiments") or []:
            for run in group.get("revs") or []:
                data = run.get("data") or {}
                if run.get("error") or data.get("status") in ("Queued", "Failed", "Running"):
                    continue
                add(_label(run), data)
    return out


def _label(entry: Mapping[str, Any]) -> str:
    """A revision's column title: its name (branch, experiment), ``workspace``, or a short commit hash."""
    rev = str(entry.get("rev", "?"))
    return entry.get("name") or (rev[:7] if len(rev) == 40 else rev)


BASELINE = "baseline"
"""The experiment ``make baseline`` records: this machine's run of HEAD's parameters."""


def _changed_rows(revs: Sequence[tuple[str, dict[str, Any], dict[str, Any]]], all_rows: bool) -> list[list[str]]:
    """Parameters, then headline metrics, one row each, one cell per revision; only the rows whose
    values differ between ``revs`` unless ``all_rows``."""
    out = []
    for kind, label in ((1, "param"), (2, "metric")):
        for n in dict.fromkeys(n for rev in revs for n in rev[kind]):
            cells = [fmt(rev[kind][n]) if n in rev[kind] else MISSING for rev in revs]
            if all_rows or len(set(cells)) > 1:
                out.append([f"{label} {n}", *cells])
    return out


def experiments_table(exp_show: Sequence[Mapping[str, Any]], all_rows: bool = False) -> str:
    """What the experiments changed, one row per parameter and headline metric, one column per revision.

    With an experiment named :data:`BASELINE` (``make baseline``: this machine's run of HEAD's
    parameters), each experiment is compared with it, first and alone: the columns are the baseline
    and the other experiments, so a number that moves is the experiment's doing, not this machine's.
    How far the baseline itself lies from the committed run (HEAD) follows as one line (``make
    verify`` judges it against the seed spread). Without one, the workspace, each commit and its
    experiments are the columns. By default only the rows whose values differ are printed."""
    revs = revisions(exp_show)
    if not revs:
        return "no revision to show"
    base = next((r for r in revs if r[0] == BASELINE), None)
    if base is None:
        body = _changed_rows(revs, all_rows)
        table = (render(["", *[r[0] for r in revs]], body) if body
                 else "the revisions do not differ in any parameter or headline metric")
        return table + ("\n(make baseline records this machine's run of HEAD's parameters; the experiments are\n"
                        "then compared with it, without this machine's drift from HEAD)" if len(revs) > 2 else "")
    commits = [r for r in revs if r[0] != "workspace" and r is not base and not _is_experiment(exp_show, r[0])]
    shown = [base, *(r for r in revs if r is not base and _is_experiment(exp_show, r[0]))]
    body = _changed_rows(shown, all_rows)
    lines = [render(["", *[r[0] for r in shown]], body) if len(shown) > 1 and body
             else "no experiment besides the baseline" if len(shown) == 1
             else "the experiments do not differ from the baseline in any parameter or headline metric"]
    for head in commits[:1]:
        drift = [row[0] for row in _changed_rows([base, head], False)]
        lines.append(f"\nbaseline vs {head[0]} (the committed run): "
                     + (f"{len(drift)} rows differ (make verify: within the seed spread?)" if drift
                        else "the same numbers"))
    return "\n".join(lines)


def _is_experiment(exp_show: Sequence[Mapping[str, Any]], name: str) -> bool:
    """Whether ``name`` is an experiment of a commit in ``dvc exp show --json`` (not the workspace or a commit)."""
    return any((run.get("name") or _label(run)) == name
               for entry in exp_show for group in entry.get("experiments") or [] for run in group.get("revs") or [])


def dvc_exp_show(root: Path, extra: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The output of ``dvc exp show --json`` in ``root``."""
    done = subprocess.run([sys.executable, "-m", "dvc", "exp", "show", "--json", *extra], cwd=root,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"dvc exp show failed: {done.stderr.strip()}")
    data = parse_json(done.stdout, "dvc exp show --json")
    if not isinstance(data, list):
        raise DataError("dvc exp show", f"expected a list of revisions, got {type(data).__name__}")
    return data


# ----------------------------------------------------------------------------- command line
def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m guimem.pipeline.report", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    m = sub.add_parser("metrics", help="the headline numbers of every stage, one per row")
    m.add_argument("--rev", help="read the metrics files committed at this git revision instead of the workspace")
    e = sub.add_parser("experiments", help="parameters and headline numbers that differ between experiments")
    e.add_argument("--all-rows", action="store_true", help="print unchanged rows too")
    e.add_argument("dvc_args", nargs="*", help="passed to `dvc exp show` (e.g. -- --all-commits)")
    args = p.parse_args(argv)
    root = repo_root(Path.cwd())
    try:
        if args.what == "metrics":
            stages = stage_order(root)
            headlines = headlines_at(args.rev, root, stages) if args.rev else read_headlines(root / "metrics", stages)
            print(metrics_table(headlines) if headlines else "no metrics yet: run `make repro` (dvc repro)")
        else:
            print(experiments_table(dvc_exp_show(root, args.dvc_args), all_rows=args.all_rows))
    except (DataError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
