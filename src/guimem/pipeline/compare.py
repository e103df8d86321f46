"""What experiments changed, one row per parameter and headline number (``make compare``).

``python -m guimem.pipeline.compare`` reads ``dvc exp show --json`` for the revisions it lists
(the workspace, ``HEAD`` and each experiment of ``HEAD``) and every stage's own metrics file
(``metrics/<stage>.json``) as each revision holds it — DVC reports only ``metrics/headline.json``,
a few of them — and prints a row for every parameter and headline number that differs between
them (``--all-rows``: the unchanged ones too), the revisions as columns. When an experiment named
``baseline`` exists (``make baseline``: this machine's run of HEAD's parameters), the experiments
are compared with it alone. Not a stage's code: changing it reruns nothing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from guimem.core.data import DataError
from guimem.core.io import parse_json
from guimem.pipeline.paths import repo_root
from guimem.pipeline.report import MISSING, flatten, fmt, headlines_at, read_headlines, render, stage_order


def _metrics_of(data: Mapping[str, Any]) -> dict[str, Any]:
    """``metrics/actor.json: {"x": 1}`` to ``{"actor.x": 1}`` (a file's stem names its stage)."""
    out: dict[str, Any] = {}
    for path, entry in (data.get("metrics") or {}).items():
        out |= flatten(entry.get("data") or {}, Path(path).stem)
    return out


def _params_of(data: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entry in (data.get("params") or {}).values():
        out |= flatten(entry.get("data") or {})
    return out


def with_stage_metrics(exp_show: Sequence[Mapping[str, Any]],
                       read: Callable[[str], Mapping[str, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """``dvc exp show --json`` output with each revision's metrics replaced by every stage's own file as
    that revision holds it: ``read(rev)`` gives ``{stage: metrics}`` for a revision's ``rev`` (a commit
    or an experiment's hash, or ``workspace``). DVC reports only ``metrics/headline.json``, a copy of a
    few of them; what an experiment changed is read from all."""
    def fill(entry: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(entry)
        if out.get("data"):
            stages = read(str(out.get("rev", "")))
            out["data"] = {**out["data"], "metrics": {f"metrics/{s}.json": {"data": dict(m)} for s, m in stages.items()}}
        if out.get("experiments"):
            out["experiments"] = [{**group, "revs": [fill(run) if _finished(group, run) else run
                                                     for run in group.get("revs") or []]}
                                  for group in out["experiments"]]
        return out

    return [fill(entry) for entry in exp_show]


def _finished(group: Mapping[str, Any], run: Mapping[str, Any]) -> bool:
    """Whether an experiment of ``dvc exp show --json`` ran to its end: not queued, running or failed
    (DVC 3 says so in its group's ``executor.state``, DVC 2 in the run's ``data.status``). A queued
    one's commit holds the workspace's files of when it was queued, a running one's is the workspace."""
    state = (group.get("executor") or {}).get("state")
    status = (run.get("data") or {}).get("status")
    return not run.get("error") and state in (None, "success") and status not in ("Queued", "Failed", "Running")


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
                if _finished(group, run):
                    add(_label(run), run.get("data"))
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


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m guimem.pipeline.compare", description=__doc__.split("\n\n")[0])
    p.add_argument("--all-rows", action="store_true", help="print unchanged rows too")
    p.add_argument("dvc_args", nargs="*", help="passed to `dvc exp show` (e.g. -- --all-commits)")
    args = p.parse_args(argv)
    root = repo_root(Path.cwd())
    stages = stage_order(root)

    def read(rev: str) -> dict[str, dict[str, Any]]:
        return read_headlines(root / "metrics", stages) if rev == "workspace" else headlines_at(rev, root, stages)

    try:
        print(experiments_table(with_stage_metrics(dvc_exp_show(root, args.dvc_args), read), all_rows=args.all_rows))
    except (DataError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
