"""The closed loop's results beside the paper's: the SMG table, and what the numbers say in words.

``table`` is :func:`guimem.eval.closed_loop.success_table`'s output: per memory, the success rate's
mean and spread over world seeds (percent) and its value per seed.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

from guimem.eval.closed_loop import ENDINGS, Trace

PAPER_SR: dict[str, float] = {"none": 34.19, "flat": 30.77, "action_graph": 38.46, "task_graph": 36.75, "smg": 45.30}
"""The SMG paper's success rates (SPA-Bench single-app level 3, Qwen3-VL-8B actor, mean of 3 runs)."""



def table_rows(table: Mapping[str, Mapping[str, Any]], paper: Mapping[str, float], order: Sequence[str],
               labels: Mapping[str, str], paired: Mapping[str, Mapping[str, Any]] | None = None
               ) -> tuple[list[str], list[list[str]]]:
    """The SMG table's header and rows: SR mean ± std over seeds here, the seeds, (with ``paired``:
    :func:`~guimem.eval.closed_loop.paired_success` per memory) the episodes each memory completes
    that no memory does not and the reverse, with the sign test's p, and the paper's SR."""
    header = ["memory", "SR here (%)", "seeds", *(["vs none (p)"] if paired is not None else []),
              "paper SR (%)"]
    rows = []
    for name in order:
        row = table.get(name)
        ref = paper.get(name, math.nan)
        cells = [labels.get(name, name), f"{row['mean']:.1f} ± {row['std']:.1f}" if row else "—",
                 str(len(row["per_seed"]) if row else 0)]
        if paired is not None:
            c = paired.get(name)
            cells.append(f"+{c['fixed']} / −{c['broken']}, p = {c['p_value']:.2g}" if c else "—")
        rows.append(cells + ["—" if math.isnan(ref) else f"{ref:.2f}"])
    return header, rows


def markdown_table(table: Mapping[str, Mapping[str, Any]], paper: Mapping[str, float], order: Sequence[str],
                   labels: Mapping[str, str], paired: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """The SMG table (:func:`table_rows`) as markdown."""
    header, rows = table_rows(table, paper, order, labels, paired)
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def ended_counts(traces: Iterable[Trace], memories: Sequence[str]) -> dict[str, dict[str, int]]:
    """Per memory, how many episodes ended with the actor's ``done``, its ``impossible``, or the budget."""
    traces = list(traces)
    return {n: {e: sum(t.ended == e for t in traces if t.memory == n) for e in ENDINGS} for n in memories}


def mean_steps(traces: Iterable[Trace], memories: Sequence[str]) -> dict[str, float]:
    """Per memory, the mean number of steps an episode took."""
    traces = list(traces)
    return {n: sum(len(t.steps) for t in traces if t.memory == n) / max(1, sum(t.memory == n for t in traces))
            for n in memories}


def comparison_lines(table: Mapping[str, Mapping[str, Any]], memories: Sequence[str], labels: Mapping[str, str],
                     paper: Mapping[str, float] = PAPER_SR) -> list[str]:
    """Each memory against no memory here (read against the larger spread) and in the paper; then
    the ordering here and the paper's."""
    base = table["none"]["mean"] if "none" in table else float("nan")
    lines = []
    for name in memories:
        if name == "none":
            continue
        delta, spread = table[name]["mean"] - base, max(table[name]["std"], table.get("none", {}).get("std", 0.0))
        verdict = "within the spread of" if abs(delta) <= spread else ("above" if delta > 0 else "below")
        lines.append(f"{labels.get(name, name)}: {delta:+.1f} points vs no memory ({verdict} no memory); "
                     f"paper: {paper[name] - paper['none']:+.2f}")
    ours = sorted(memories, key=lambda n: -table[n]["mean"])
    theirs = sorted(memories, key=lambda n: -paper[n])
    lines.append("ordering here:  " + " > ".join(labels.get(n, n) for n in ours))
    lines.append("paper ordering: " + " > ".join(labels.get(n, n) for n in theirs))
    return lines


def in_short(table: Mapping[str, Mapping[str, Any]], ended: Mapping[str, Mapping[str, int]], n_episodes: int,
             memories: Sequence[str], labels: Mapping[str, str], paper: Mapping[str, float] = PAPER_SR) -> str:
    """One sentence: the best memory here (or that none completed a task), the paper's best, how
    often the actor ended its episodes itself, and how far the gaps can be read."""
    base = table["none"]["mean"] if "none" in table else float("nan")
    best = sorted(memories, key=lambda n: -table[n]["mean"])[0]
    gap = table[best]["mean"] - base
    self_ended = {n: 100.0 * (ended[n]["done"] + ended[n]["impossible"]) / n_episodes for n in memories}
    reading = ("the actor rarely completes a task, so these gaps are a handful of episodes and say little about "
               "the ordering" if table[best]["mean"] < 10 else "read each gap against the spread above")
    if table[best]["mean"] > 0:
        lead = (f"{labels.get(best, best)} is best here at {table[best]['mean']:.1f}% ({gap:+.1f} points over no "
                f"memory, about {gap / 100 * n_episodes:.0f} of {n_episodes} episodes)")
    else:
        lead = f"the actor completed none of the {n_episodes} episodes per memory, with any memory or none"
    return (f"In short: {lead}; the paper's best is Subgoal-Graph ({paper['smg'] - paper['none']:+.2f} points "
            "over no memory). The actor ended its episodes itself (done or impossible) in "
            + ", ".join(f"{labels.get(n, n)} {self_ended[n]:.0f}%" for n in memories) + f" of them; {reading}.")


def action_score_results(scores: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, float]]:
    """05's step-level action score as its results (``action_score_aitw``: step and type accuracy
    and steps per memory modality) and its headline metrics (``action_score_<modality>``)."""
    results = {"action_score_aitw": {m: {"step_accuracy": round(s["step_accuracy"], 4),
                                         "type_accuracy": round(s["type_accuracy"], 4), "steps": s["n_steps"]}
                                     for m, s in scores.items()}}
    return results, {f"action_score_{m}": results["action_score_aitw"][m]["step_accuracy"] for m in scores}


def closed_loop_results(table: Mapping[str, Mapping[str, Any]], traces: Sequence[Trace], memories: Sequence[str],
                        **counts: Any) -> tuple[dict[str, Any], dict[str, float]]:
    """05's closed loop as results and headline metrics: each memory's success rate (mean, spread
    and per seed), its mean steps, and ``counts`` as they are (tasks, seeds, modality, max_steps,
    ended, stalled_share, paired_vs_none, holds_everywhere_share, success_by_need); the metrics are
    the tasks and each memory's mean success rate."""
    results = {
        **counts, "episodes": len(traces), "paper_success_rate": PAPER_SR,
        "success_rate": {n: {"mean": round(table[n]["mean"], 4), "std": round(table[n]["std"], 4),
                             "per_seed": [round(v, 4) for v in table[n]["per_seed"]]} for n in memories},
        "mean_steps": {n: round(v, 4) for n, v in mean_steps(traces, memories).items()},
    }
    return results, {"tasks": counts["tasks"]} | {f"success_rate_{n}": results["success_rate"][n]["mean"]
                                                  for n in memories}
