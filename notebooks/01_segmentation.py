# %% [markdown]
# # 01 · Segmentation: cutting trajectories into subgoals, and judging them
#
# **What this stage does.** It cuts every demonstration of `00_world` into *subgoals* —
# contiguous runs of actions with one sub-intent ("open the Display screen", "type 'milk'
# into Search and submit") — and annotates each with its `text` (the intent), its `effect`
# (what changed between its first and last screen), its `behaviour` (the pattern of its
# actions, e.g. `scroll x2, tap`) and `success` (yes / no / uncertain, from a judge that sees
# only what a real judge would see). It then scores the cuts against the world's ground truth.
#
# **Why.** A subgoal is the unit the memory graph stores: an edge from the screen where it
# starts to the screen where it ends. Cut too coarsely and experience is too task-specific to
# transfer; cut too finely and an edge says nothing about *why*. Failures are worth
# remembering too, so each subgoal carries a success label.
#
# **Reads** `data/world/{train,test,memory}/`. **Writes** `data/segmentation/{train,test,memory}.jsonl`
# (one subgoal per line), its headline numbers to `metrics/segmentation.json`, every score
# behind them to `results/segmentation.json`, `figures/segmentation_boundaries.png` and
# `figures/segmentation_judge_confusion.png`.
#
# **Running it yourself.** `dvc repro` runs this notebook with the paths above. Opened in
# JupyterLab (`make lab`), it reads the pipeline's `data/` and its defaults below write under
# `scratch/`, so trying a parameter here never touches the pipeline's outputs. Saving the
# notebook keeps only your edits to its cells (`git checkout notebooks/01_segmentation.py`
# undoes them).
#
# **Paper.** The segmentation step of the Subgoal-aware Memory Graph (SMG): trajectories are
# split into subgoals with an LLM and each is stored as ⟨s_from, s_to; text, effect,
# behaviour, successor, success⟩. Here the default segmenter is rule-based (it reads the
# screens' UI trees and the actions), and a small LLM (SmolLM2-135M-Instruct, offline) runs
# beside it on a sample so that both can be compared against the truth.

# %% tags=["parameters"]
world_dir = "data/world"  # episode stores from 00_world (train/, test/ and memory/ are read)
out_dir = "scratch/segmentation"  # where {train,test,memory}.jsonl are written (the pipeline: data/segmentation)
segmenter = "rule"  # the segmenter whose subgoals are written: rule, llm or ground_truth
judge = "rule"  # the success judge: rule (default) or llm (SmolLM2's yes/no probabilities per episode)
judge_evidence = 0.5  # rule judge: share of the goal's key words the agent must have acted on (or made appear) for "yes"
boundary_tolerance = 0  # a predicted boundary matches a true one at most this many steps away
llm_sample = 8  # test episodes the LLM segmenter also runs on, beside the rule one (0: skip the LLM)
llm_mode = "guided"  # how SmolLM2 is asked: guided (each answer line started for it) or free (one answer)
llm_tokens_per_line = 20  # tokens the LLM may write per answer line
llm_cache_dir = ".cache/guimem/llm"  # de-quantized SmolLM2 kept here after the first load (not tracked)
text_embedder = "minilm"  # embedder for intent agreement: minilm (all-MiniLM-L6-v2) or hashing
embed_cache_dir = ".cache/guimem/embeddings"  # content-hash embedding cache (not tracked)
max_episodes = 0  # size knob: only the first N episodes of each split (0: all)
figures_dir = "scratch/figures"  # where the figures go (the pipeline: figures)
metrics_path = "scratch/metrics/segmentation.json"  # headline numbers (the pipeline: metrics/segmentation.json)
results_path = "scratch/results/segmentation.json"  # every score behind them (the pipeline: results/segmentation.json)

# %%
import json
from collections import Counter
from pathlib import Path

import torch

from guimem.core.data import group_by_episode
from guimem.core.store import SPLITS, load_episodes, save_subgoals
from guimem.models.embedding import cached_text_embedder
from guimem.pipeline.paths import enter_repo_root
from guimem.pipeline.report import report
from guimem.smg.judge import LLMJudge, RuleJudge
from guimem.smg.llm_segmenter import LLMSegmenter, LLMStats
from guimem.smg.figures import draw_boundaries, draw_judge_confusion
from guimem.smg.segmentation_scores import every_step_spans, judge_confusion, sample_evenly, score_segmentation
from guimem.smg.screens import read_episode, trajectory_text
from guimem.smg.segment import make_segmenter, segment_episodes
from guimem.smg.segmenters import GroundTruthSegmenter, rule_spans
from guimem.viz.plotting import figure_path, save_figure

# %%
enter_repo_root()
torch.set_num_threads(1)  # the machine is shared; greedy decoding gives the same answer either way
episodes = {split: load_episodes(Path(world_dir) / split) for split in SPLITS}
if max_episodes:
    episodes = {split: eps[:max_episodes] for split, eps in episodes.items()}
print({split: len(eps) for split, eps in episodes.items()}, "episodes")

# %% [markdown]
# ## What the rule segmenter reads
# The rule segmenter sees only what an agent sees: for every step, the screen's UI tree (and
# whether its screenshot changed) and the action taken. It never reads the ground-truth labels,
# the true screen types or whether the episode succeeded: it works on a *blind* copy of each
# episode. It reads each step as one of five kinds:
#
# - **effective**: the screen changed (a new screen, a window, a switch, a field's text);
# - **noise**: nothing visible changed (a tap on empty space);
# - **scroll**: a swipe that moved a list;
# - **detour**: a step into a screen or menu that a `back` undid, leaving the screen exactly as it was;
# - **end**: `done` or `impossible`.
#
# A subgoal *ends* with an effective step; noise, scrolls and detours join the effective step
# they led to. An effective step *continues* the subgoal before it when it carries on the same
# sub-intent: typing and `enter` after the field tap (or the search opened), the tap that
# submits what was just typed (save, send, start), a choice in the menu or window the previous
# touch opened, a run of touches from page to page (navigation), the same control pressed
# again. A step that closes a window the agent did not open (a popup) is a subgoal of its own.
# `done` closes the last subgoal while `impossible` gives up on a new one. Here is one test
# trajectory, as the LLM will also see it, and the kind the rule segmenter reads in each step.

# %%
example = next((e for e in episodes["test"] if len(e.steps) >= 6), max(episodes["test"], key=lambda e: len(e.steps)))
reading = read_episode(example)
lines = trajectory_text(example).splitlines()
print("\n".join(lines[:2]))
for line, kind in zip(lines[2:], reading.kinds):
    print(f"{kind:>9}  {line}")
print(lines[-1])

# %% [markdown]
# ## Segmenting every trajectory
# Each subgoal gets its intent from its most telling step (typing, a switch, the screen it
# opened), its effect from the difference between the UI trees of its first and last
# screens, and its success from the judge. The judge decides the episode from how it ended
# (`impossible`, or out of steps: no), from the final screen (the switch the goal names is in
# the state it asks for), from typed text that contradicts the goal, and otherwise from how
# many of the goal's key words the agent acted on; an earlier subgoal is `no` when it left
# the screen exactly as it found it (a dead end).

# %%
judge_impl = RuleJudge(evidence=judge_evidence)
llm = None
if judge == "llm" or segmenter == "llm" or llm_sample > 0:
    from guimem.models.llm import load_llm

    llm = load_llm(cache_dir=Path(llm_cache_dir))
if judge == "llm":
    judge_impl = LLMJudge(llm, rules=judge_impl)
chosen = make_segmenter(segmenter, judge=judge_impl, llm=llm, llm_mode=llm_mode)
subgoals = {split: segment_episodes(eps, chosen) for split, eps in episodes.items()}
for split, sgs in subgoals.items():
    save_subgoals(Path(out_dir) / f"{split}.jsonl", sgs)
    print(f"{split}: {len(sgs)} subgoals" + (f", {len(sgs) / len(episodes[split]):.2f} per episode"
                                             if episodes[split] else " (no episodes)"))

# %%
for sg in group_by_episode(subgoals["test"])[example.id]:
    print(f"[{sg.first_step}-{sg.last_step}] {sg.text!r}  ({sg.behaviour}; {sg.success})\n        {sg.effect}")

# %% [markdown]
# ## How good are the cuts?
# A *boundary* is a step where a new subgoal starts (step 0 excluded). Precision is the share
# of predicted boundaries that are true, recall the share of true ones found, both counted
# over all episodes (micro-averaged); with `boundary_tolerance` = 0 a boundary must be at
# exactly the right step. *Intent agreement* is the cosine (MiniLM) between the predicted and
# the true intent of every step, averaged over steps. Two references frame the numbers: the
# ground truth against itself (1.0 by construction) and a boundary before *every* step
# (recall 1, low precision). The truth is every step's subgoal: the world knows it for each
# episode; recorded runs have it where they were cut by hand (`recorded.subgoal_labels`), and only
# those are scored (Android in the Wild, say, has none: then nothing is).

# %%
labelled = {split: [e for e in eps if all(s.subgoal is not None for s in e.steps)] for split, eps in episodes.items()}
truth = {split: {e.id: GroundTruthSegmenter().spans(e) for e in eps} for split, eps in labelled.items()}
print({split: f"{len(labelled[split])} of {len(eps)} episodes labelled" for split, eps in episodes.items()})
texts = cached_text_embedder(text_embedder, embed_cache_dir)
scores = {split: {
    segmenter: score_segmentation({i: sgs for i, sgs in group_by_episode(subgoals[split]).items() if i in truth[split]},
                                  truth[split], texts, boundary_tolerance),
    "every_step": score_segmentation({e.id: every_step_spans(e) for e in labelled[split]}, truth[split],
                                     tolerance=boundary_tolerance),
} if truth[split] else None for split in episodes}  # None: no labelled episode to score
print(json.dumps(scores, indent=1))

# %% [markdown]
# ## SmolLM2 beside the rules
# The LLM segmenter shows SmolLM2-135M-Instruct the compact trajectory above after two worked
# examples, and reads its answer, one line per subgoal: `<first>-<last>: <intent>`. In
# `guided` mode each line is started for the model (`"4-"`) and it writes the rest, so ranges
# cannot overlap. Every answer is parsed leniently (bullets, `Steps 3-5`, `3 to 5`, intents
# before or after the range) and checked strictly; fixes are counted as *repaired*, and an
# answer with no usable range is *unparseable* and that episode falls back to the rule cuts.
# A model this small tends to copy the examples' rhythm rather than read the trajectory —
# compare its F1 with the every-step reference. Its speed is measured by
# `benchmarks/bench_segmentation.py` (timings would make this notebook's outputs differ run to run).

# %%
sample = sample_evenly(labelled["test"], llm_sample)  # scored against the truth
llm_scores, llm_counts, llm_spans = {}, LLMStats().summary(), {}
if sample:
    llm_seg = LLMSegmenter(llm, judge_impl, mode=llm_mode, tokens_per_line=llm_tokens_per_line)
    llm_spans = {e.id: llm_seg.spans(e) for e in sample}
    sample_truth = {e.id: truth["test"][e.id] for e in sample}
    llm_scores = {
        "llm": score_segmentation(llm_spans, sample_truth, texts, boundary_tolerance),
        "rule": score_segmentation({e.id: rule_spans(e) for e in sample}, sample_truth, texts, boundary_tolerance),
        "every_step": score_segmentation({e.id: every_step_spans(e) for e in sample}, sample_truth,
                                             tolerance=boundary_tolerance),
    }
    llm_counts = llm_seg.stats.summary()
    for record in llm_seg.stats.records[:3]:
        print(f"--- {record.episode_id} ({record.status}{': ' + '; '.join(record.problems) if record.problems else ''})")
        print(record.answer.strip())
    print(json.dumps({"counts": llm_counts, "scores": llm_scores}, indent=1))

# %%
shown = {**({"truth": truth["test"][example.id]} if example.id in truth["test"] else {}), "rule": rule_spans(example)}
if sample:
    example = sample[0]
    shown = {"truth": truth["test"][example.id], "rule": rule_spans(example), "SmolLM2": llm_spans[example.id]}
fig = draw_boundaries(example, shown)
save_figure(fig, figure_path(figures_dir, "segmentation", "boundaries"))

# %% [markdown]
# ## The success judge against the truth
# The world knows whether each episode really succeeded (`Episode.success`, from its hidden
# final state); the judge never sees it. Rows are the judge's verdicts, columns the truth.
# *Accuracy* counts `uncertain` as wrong; *decided accuracy* is over yes/no only; *coverage*
# is the share of episodes the judge dared to decide. A wrong `yes` is the costly mistake:
# the memory would then offer a failure as a success.

# %%
# Each judge gives an episode's last subgoal the episode's verdict.
verdicts = {split: [s.success for s in sgs if s.successor is None] for split, sgs in subgoals.items()}
judge_scores = {split: judge_confusion(verdicts[split], [e.success for e in episodes[split]]) for split in episodes}
for split, js in judge_scores.items():
    print(split, json.dumps(js.to_dict()))
fig = draw_judge_confusion(judge_scores)
save_figure(fig, figure_path(figures_dir, "segmentation", "judge_confusion"))

# %% [markdown]
# ## Metrics
# The headline numbers, all on the test split (`make metrics`; a few of them in `metrics/headline.json`, `dvc metrics show`): the chosen
# segmenter's boundary F1 and intent agreement beside the every-step reference, the judge's
# accuracy and coverage, and SmolLM2's boundary F1 on its sample (null when it did not run).
# Every score behind them, both splits, goes to `results/segmentation.json`.

# %%
results = {
    "segmenter": segmenter,
    "judge": judge,
    "boundary_tolerance": boundary_tolerance,
    "text_embedder": text_embedder,
    "episodes": {split: len(eps) for split, eps in episodes.items()},
    "subgoals": {split: len(sgs) for split, sgs in subgoals.items()},
    "subgoal_success": {split: dict(sorted(Counter(s.success for s in sgs).items())) for split, sgs in subgoals.items()},
    "scores": scores,
    "judge_scores": {split: js.to_dict() for split, js in judge_scores.items()},
    "llm": {"sample": len(sample), "mode": llm_mode, **llm_counts, "scores": llm_scores},
}

# %%
test_scores, test_judge = (scores["test"] or {}).get(segmenter, {}), judge_scores["test"]
metrics = {
    "test_subgoals": len(subgoals["test"]),
    "boundary_f1": test_scores.get("f1"),
    "every_step_boundary_f1": (scores["test"] or {}).get("every_step", {}).get("f1"),
    "intent_agreement": test_scores.get("intent_agreement"),
    "judge_accuracy": round(test_judge.accuracy, 4),
    "judge_coverage": round(test_judge.coverage, 4),
    "llm_boundary_f1": llm_scores["llm"]["f1"] if llm_scores else None,
}
report(results_path, results, metrics_path, metrics)
