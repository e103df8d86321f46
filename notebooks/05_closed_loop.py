# %% [markdown]
# # 05 · Closed loop: does memory make the frozen actor succeed more often?
#
# **What this stage does.** The actor trained in `04_actor` is frozen. It now *plays* the
# held-out tasks in the world, step by step, with a step budget: at every screen the memory
# retrieves experience for that screen, the actor reads it and acts, and the world's own
# success check judges the final state. We do this once per memory — none, Subgoal-Flat,
# Action-Graph, Task-Graph and the Subgoal-aware Memory Graph (SMG), all built from the
# *memory* episodes (past experience of other tasks on the same unfamiliar app variants) —
# and for several world seeds (the same tasks, on the same app variant, in differently
# shuffled, themed and interrupted phones), reporting the mean success rate and its spread.
#
# It also scores single steps: on held-out *demonstration* steps, how often the actor's
# action matches the demonstrator's under the AITW rules, with the SMG's memory shown as
# none / text / image / both. Step accuracy isolates "does memory change the next action";
# closed-loop success adds compounding errors, recoveries and popups.
#
# **Reads** `data/world/test/` (`data/recorded/test/` with `base.episodes: recorded`),
# `data/graph_build/` (memories), the actor's folder (`pretrained/actor/`, or a Hugging Face
# checkpoint's), `data/retrieval_eval/<memory>/steps.jsonl` (the memory retrieved at every held-out step).
# **Writes** `data/closed_loop/traces.jsonl` (every episode: actions, retrieved memory ids,
# outcome — SwitchMem's analyses replay these), `data/closed_loop/smg_table.md`,
# `figures/closed_loop_smg_table.png`, `figures/closed_loop_action_scores.png`, its headline
# numbers to `metrics/closed_loop.json` and every count behind them (per-seed success, how
# episodes ended, stalls, steps) to `results/closed_loop.json`.
#
# **Running it yourself.** `dvc repro` runs this notebook with the paths above. Opened in
# JupyterLab (`make lab`), it reads the pipeline's `data/` and its defaults below write under
# `scratch/`, so trying a parameter here never touches the pipeline's outputs. Saving the
# notebook keeps only your edits to its cells (`git checkout notebooks/05_closed_loop.py`
# undoes them).
#
# **Paper.** The SMG paper's main table (success rate on a SPA-Bench subset with a
# Qwen3-VL-8B actor: None 34.19, Flat 30.77, Action-Graph 38.46, Task-Graph 36.75,
# Subgoal-Graph 45.30) — here with a miniature actor in a miniature world.

# %% tags=["parameters"]
seed = 0  # master seed: draws the sample of max_tasks tasks and seeds torch (each replay's world seeds come from its episode)
n_seeds = 3  # world seeds per task: seed 0 is the demonstration's own, the others reshuffle the phone
max_tasks = 48  # size knob: replay N held-out tasks drawn at random by `seed` (0: all 120; 48 keeps the pipeline within 15 min)
memories = ["none", "flat", "action_graph", "task_graph", "smg"]  # memories compared ("none": no memory)
modality = "text"  # how the retrieved memory is shown in closed loop: text, image or both
k = 0  # anchors retrieved per query (nodes, Flat subgoals, Task trajectories); 0: each memory's own default
history_len = 4  # earlier actions of the episode the actor sees (the pipeline: pretrain.model.max_history, the frozen miniature's own)
max_steps = 20  # step budget per episode: no successful demonstration is longer than 15 steps (test: 11; median 6)
batch_size = 0  # episodes played in lock-step (0: all of a memory's at once; fewer: less memory, more ticks)
executor = {}  # where the episodes are played and the held-out steps scored (ExecutorSpec in guimem.core.executor: kind local or ray, address, workers, gpus_per_worker; a key left out: its default; traces and scores do not depend on it)
action_score_modalities = ["none", "text", "image", "both"]  # memory conditions of the step-level action score
action_score_memory = "smg"  # whose memory the step-level score shows
world_dir = "data/world"  # episode stores: 00_world's (test/ is replayed; memory/ holds the memories' screens) or 00_recorded's (data/recorded: scored step by step only, no environment to replay in)
memories_dir = "data/graph_build"  # memories from 02_graph_build
retrieval_dir = "data/retrieval_eval"  # per-step retrievals from 03_retrieval_eval (the step-level action score reuses them)
actor = {}  # the frozen actor of 05-09 (ActorSpec in guimem.actors.loading: actor_model, a folder: the pretrained miniature's pretrained/actor, the default, or a Hugging Face VLM checkpoint; batch_size, torch_threads, coords, answer_format, max_new_tokens; a key left out: its default)
image_embedder = "efficientnet_lite0"  # must be the embedder the memories were built with
text_embedder = "minilm"  # must be the intent embedder the memories were built with
cache_dir = ".cache/guimem/embeddings"  # content-hash embedding cache (not tracked)
chunks_dir = ".cache/guimem/chunks"  # finished chunks of actor work, by content key: a stopped run resumes from them ("": keep none; not tracked)
out_dir = "scratch/closed_loop"  # traces and the markdown table (the pipeline: data/closed_loop)
figures_dir = "scratch/figures"  # where the figures go (the pipeline: figures)
metrics_path = "scratch/metrics/closed_loop.json"  # headline numbers (the pipeline: metrics/closed_loop.json)
results_path = "scratch/results/closed_loop.json"  # every count behind them (the pipeline: results/closed_loop.json)

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import torch

from guimem.actors.loading import ActorSpec, check_reads_recorded, describe_actor
from guimem.core.executor import ExecutorSpec, make_executor
from guimem.core.io import atomic_write_text
from guimem.core.resume import ChunkCache
from guimem.core.store import load_episodes
from guimem.eval.closed_loop import (
    NO_ENVIRONMENT,
    NO_MEMORY,
    paired_success,
    pick_tasks,
    replay_tasks,
    replay_world,
    save_traces,
    stalled_share,
    success_table,
)
from guimem.eval.jobs import PlayEpisodes, condition_plays, play_all, score_steps
from guimem.eval.tables import (PAPER_SR, action_score_results, closed_loop_results, comparison_lines,
                                ended_counts, in_short, markdown_table, table_rows)
from guimem.pipeline.paths import enter_repo_root
from guimem.pipeline.report import report
from guimem.viz.plotting import MEMORY_LABELS, figure_path, notice_figure, save_figure, table_figure

# %% [markdown]
# ## The held-out tasks, the frozen actor and the memories
#
# Each held-out episode records the task it demonstrated and the world seed it ran in, so the
# actor can be dropped into exactly that situation (seed 0) or the same task in a reshuffled
# phone (seeds 1, 2, ...), always on the episode's own app variant — one the actor never
# trained on. The world is the one the test store was recorded in (its manifest), with this
# stage's step budget. The memories were built in `02_graph_build` from the memory episodes
# only; the actor has never seen a test episode or an evaluation variant.
#
# **Recorded runs** (`base.episodes: recorded`) come without an environment: nothing can replay
# their tasks, so the closed loop is skipped (said below, and in the results), and only the
# step-level score at the end runs, on the recorded test steps against the recorded actions. They
# need a Hugging Face VLM: the miniature actor knows only the world's phones.
#
# **The step budget.** The demonstrations' lengths set it: the median held-out demonstration
# takes 6 steps, 95% take at most 11, and no successful demonstration (training or test) is
# longer than 15; only give-ups that wander run to the world's 30. A budget of 20 leaves room to
# recover from a few wrong taps without paying for 10 more steps of an actor that is stuck.

# %%
enter_repo_root()
torch.manual_seed(seed)
actor_spec = ActorSpec(**actor)
torch.set_num_threads(actor_spec.torch_threads)
test_root = Path(world_dir) / "test"
all_test = load_episodes(test_root)
world_config = replay_world(test_root, max_steps)  # None: recorded runs, with no environment to replay them in
closed_loop = world_config is not None
if not closed_loop:
    check_reads_recorded(actor_spec, str(test_root))
policy = actor_spec.load()  # loaded once in this process; worker processes load their own
print("actor:", describe_actor(policy, actor_spec.actor_model))

# %%
if closed_loop:
    test_episodes = pick_tasks(all_test, max_tasks, seed)
    replays = replay_tasks(test_episodes, n_seeds)
    task = PlayEpisodes(actor_spec, world_config, memories_dir, tuple(m for m in memories if m != NO_MEMORY),
                        str(Path(world_dir) / "memory"), image_embedder, text_embedder, cache_dir, k=k or None,
                        history_len=history_len)
    print(f"{len(test_episodes)} of {len(all_test)} held-out tasks x {n_seeds} seeds = {len(replays)} episodes per "
          f"memory, at most {max_steps} steps each; memories: {list(task.memories)}")
else:
    print(f"{len(all_test)} recorded test episodes: {NO_ENVIRONMENT}")

# %% [markdown]
# ## Playing the tasks
#
# All episodes of one memory run in lock-step batches: the actor answers every unfinished
# episode of the batch at once, then each world takes its action. A trace keeps, per step,
# the action and the ids of the memory items the actor was shown.
#
# Nothing is asked twice within a chunk of work (below: a memory's episodes). The actor is
# frozen and decodes by argmax, so an input it has answered (same goal, screen, UI tree and
# visible history, hence the same memory) gets the same action again; a stuck episode, tapping
# the same spot until the budget, costs world steps only. A screen is embedded for retrieval once per worker, whichever memory and
# episode meets it (new screens of a tick in one batch, through the content-hash cache), a
# retrieval is done once per goal and screen, and only the modality shown is rendered. The counts
# below say how much work that leaves.
#
# **Where it runs.** Each memory's episodes are one chunk of work (with `batch_size`, each lock-step
# batch is one), played by the executor the `executor` group describes: here in this process, or on
# `executor.workers` processes or Ray workers, each loading the actor and the memories once. A chunk is the same
# call wherever it runs, so the traces are the same; only the work counts say what was shared.

# %%
resumed = ChunkCache(chunks_dir) if chunks_dir else None
run_on = make_executor(ExecutorSpec(**executor))
if closed_loop:
    plays = [p for name in memories
             for p in condition_plays(name, None if name == NO_MEMORY else name,
                                      "none" if name == NO_MEMORY else modality, replays, batch_size)]
    traces, work = play_all(task, plays, run_on, resumed)
    if resumed is not None:
        resumed.tell_hits(f"of {len(plays)} plays")  # on the terminal: the report does not depend on it
    for name in memories:
        w = work[name]
        print(f"{name}: {w.steps} steps, {w.actor_inputs} distinct actor inputs, {w.retrievals} retrievals, "
              f"{w.renders} renderings, {w.embedded} screens embedded")

# %% [markdown]
# The traces are saved for SwitchMem's analyses; each memory's success rate is the share of its
# episodes the world judged complete, per seed, then averaged over seeds:

# %%
save_traces(Path(out_dir) / "traces.jsonl", traces if closed_loop else [])  # no traces: none played
if closed_loop:
    table = success_table(traces)
    ended = ended_counts(traces, memories)
    for name in memories:
        row = table[name]
        print(f"{MEMORY_LABELS.get(name, name):>14}: SR {row['mean']:5.1f} ± {row['std']:4.1f}  "
              f"per seed {row['per_seed']}  ended {ended[name]}")

# %% [markdown]
# A difference of success rates is read pair by pair: every memory played the same tasks in the
# same world seeds as no memory, so each (task, seed) is a pair, and only the pairs one of the two
# completed carry evidence. The exact sign test on them (McNemar's) gives the chance of a split at
# least this uneven if the memory made no difference.

# %%
if closed_loop:
    paired = {n: paired_success(traces, n) for n in memories if n != NO_MEMORY and NO_MEMORY in memories}
    for name, c in paired.items():
        print(f"{MEMORY_LABELS.get(name, name):>14} vs none: completes {c['fixed']} episodes none does not, "
              f"fails {c['broken']} none completes, of {c['pairs']} (sign test p = {c['p_value']:.4f})")

# %% [markdown]
# ## The SMG table, beside the paper's
#
# The numbers are not comparable in absolute terms — a 6-layer actor pretrained for half an hour on a
# synthetic phone versus Qwen3-VL-8B on SPA-Bench — but the *ordering* is the claim under
# test: does subgoal-level experience, merged by screen and retrieved by the current
# screenshot, help more than no memory, than the same subgoals without a graph, and than
# step- or task-level experience? Read the spread before reading a difference: with N tasks
# per seed, one task is 100 / N points (about 2.1 at the default 48).

# %%
if closed_loop:
    md = markdown_table(table, PAPER_SR, memories, MEMORY_LABELS, paired)
    fig = table_figure(*table_rows(table, PAPER_SR, memories, MEMORY_LABELS, paired),
                       f"Closed-loop success on {len(test_episodes)} held-out tasks (memory as {modality})",
                       note="vs none: +won / −lost, the episodes (task x world seed) only this memory completes / "
                            "only no memory completes;\n(p) the exact sign test on them (McNemar's). Paper: the SMG "
                            "paper's SR (Qwen3-VL-8B on SPA-Bench).")
else:  # the table's files say why there is no table
    md = f"No closed loop: {NO_ENVIRONMENT}.\n"
    fig = notice_figure("Closed-loop success", f"No closed loop: {NO_ENVIRONMENT}.")
atomic_write_text(Path(out_dir) / "smg_table.md", md)
print(md)
save_figure(fig, figure_path(figures_dir, "closed_loop", "smg_table"))
plt.close(fig)

# %% [markdown]
# ## Where it differs from the paper, and why
#
# The cell below states, from the numbers above, how each memory compares with no memory and
# whether the paper's ordering holds here. Reasons worth keeping in mind when it does not:
# the paper's actor is a large pretrained VLM that reads *all* out-edges of a node, with
# success and failure, and reasons over them; ours was pretrained for half an hour (behaviour cloning
# on the expert's actions, then DAgger rounds on its own rollouts) with memory, and reads the top
# items of the block and the top-1 item as an image. Step-level experience (Action-Graph) hands
# it exactly the next touch on a screen like this one, which suits an actor that decides one
# step at a time; a subgoal edge tells the next several actions at once, which a larger reader
# uses better. And a memory can only change the outcome of an actor that can finish tasks at
# all: where episodes run out of budget (the `ended` counts above) the differences are a few
# tasks each, and the step-level score below says more about what the memory changes. The
# traces show how often an episode
# stalls: the same screen for five steps or more in a row.

# %%
if closed_loop:
    print("\n".join(comparison_lines(table, memories, MEMORY_LABELS)))
    stalled = stalled_share(traces, min_steps=5)
    print("episodes stalled on one screen for >= 5 steps: "
          + ", ".join(f"{MEMORY_LABELS.get(n, n)} {stalled[n]:.0%}" for n in memories))
    print("\n" + in_short(table, ended, len(replays), memories, MEMORY_LABELS))

# %% [markdown]
# ## Which tasks can be done without experience
#
# On the evaluation phone most tasks pass a word, a glyph or a switch that only experience of this
# phone explains. Some do not: the expert's path on this phone is, move for move, its path on the
# reference design (`guimem.phone.demonstrator.holds_everywhere`: no synonym, no glyph of the
# phone's own design, no moved switch, no other route — in this world seed, whose shuffles can
# move a control). Without memory an actor can complete those, and others only where it guesses the
# phone's own word, glyph or place; so the share of such tasks tells how far no memory can get on
# its knowledge of other phones, and a memory's gain shows on the others.

# %%
from guimem.eval.closed_loop import success_by_need

if closed_loop:
    share, by_need = success_by_need(traces, replays, world_config)
    print(f"episodes (task x world seed) whose expert path holds on every variant: {share:.0%} of {len(replays)}")
    for name in memories:
        print(f"{MEMORY_LABELS.get(name, name):>14}: " + ", ".join(
            f"{group} {c['successes']}/{c['episodes']} ({c['success_rate']:.1f}%)" for group, c in by_need[name].items()))

# %% [markdown]
# ## What experience is worth
#
# Two references on the same tasks and world seeds. **The training phones**: every replay played
# on a phone pretraining showed (seed index *i* on the *i*-th training phone), with no memory —
# what the frozen actor does where nothing is unfamiliar. The gap between it and the evaluation
# phone without memory is what experience of this phone can recover. **The oracle memory**: each
# replay reads a Subgoal-aware Memory Graph built from one clean expert demonstration of that very
# task, on its phone, in its world seed, cut at the true subgoal boundaries (with the pipeline's SMG
# settings): retrieval by the current screen returns the true next subgoal's own experience. It is
# shown as text and as an image. How much of the gap each memory closes, against how much the
# oracle closes, says what retrieval leaves on the table and what this actor can read at all.
# Beside each: the share of episodes that end with `done` said while the task is not done.

# %%
from guimem.eval.figures import experience_worth_figure
from guimem.eval.oracle import ORACLE, TRAINING_PHONES, on_training_phones, oracle_demonstrations, play_oracle, wrong_done
from guimem.smg.memories import load_memories

if closed_loop:
    ceiling_plays = condition_plays(TRAINING_PHONES, None, "none", on_training_phones(replays, world_config.train_variants),
                                    batch_size)
    ceiling, _ = play_all(task, ceiling_plays, run_on, resumed)
    demos = oracle_demonstrations(replays, world_config, Path(out_dir) / "oracle")
    like = load_memories(memories_dir, image_embedder, text_embedder, store_root=Path(world_dir) / "memory",
                         cache_dir=cache_dir, names=["smg"])["smg"]
    oracle = [t for shown in dict.fromkeys(("text", "image", modality)) for t in play_oracle(
        replays, demos, like, Path(out_dir) / "oracle", policy, world_config, shown, history_len, k or None)]
    reference = success_table(ceiling + oracle)
    worth = {TRAINING_PHONES: reference[TRAINING_PHONES], **{n: table[n] for n in memories},
             **{f"{ORACLE}/{m}": reference[f"{ORACLE}/{m}"] for m in dict.fromkeys(("text", "image", modality))}}
    said_done = wrong_done(traces + ceiling + oracle)
    for name, row in worth.items():
        print(f"{MEMORY_LABELS.get(name, name):>16}: SR {row['mean']:5.1f} ± {row['std']:4.1f}  per seed "
              f"{row['per_seed']}  done said in a wrong state in {said_done[name]:.0%} of episodes")
    fig = experience_worth_figure(worth, memories, modality, MEMORY_LABELS)
else:  # the figure's file says why there is none
    fig = notice_figure("What experience is worth", f"No closed loop: {NO_ENVIRONMENT}.")
save_figure(fig, figure_path(figures_dir, "closed_loop", "experience_worth"))
plt.close(fig)

# %% [markdown]
# ## Step-level action score by memory modality
#
# Single held-out demonstration steps, scored with the AITW rules (`guimem.eval.action_match`): the
# same retrieved experience shown as nothing, as text, as an image, or both. This is the
# quantity SwitchMem routes on: which rendering of the same experience leads the frozen actor
# to the better action. The experience is what `03_retrieval_eval` retrieved for each step
# (its text block and image), so nothing is retrieved or rendered again here; each step is
# featurised once and shown in every modality. Every held-out step is scored, not only those of
# the tasks replayed above, in chunks of a few forward batches on the same executor as the
# episodes (the same table wherever the chunks run).

# %%
from guimem.eval.action_match import MatchConfig
from guimem.train.examples import examples_from_retrieval

examples = examples_from_retrieval(all_test, test_root, retrieval_dir, [action_score_memory],
                                   max_history=history_len)
aitw = MatchConfig(variant="aitw")
scores = {m: hits.scores() for m, hits in score_steps(actor_spec, examples, action_score_modalities, aitw,
                                                      run_on, cache=resumed).items()}
for m, s in scores.items():
    print(f"{m:>5}: step accuracy {s['step_accuracy']:.3f}  type accuracy {s['type_accuracy']:.3f}  ({s['n_steps']} steps)")

# %% [markdown]
# The same scores as a table figure:

# %%
rows = [[m, f"{s['step_accuracy'] * 100:.1f}", f"{s['type_accuracy'] * 100:.1f}", str(s["n_steps"])]
        for m, s in scores.items()]
fig = table_figure(["memory shown", "step accuracy (%)", "type accuracy (%)", "steps"], rows,
                   f"AITW action score on held-out demonstration steps ({MEMORY_LABELS.get(action_score_memory)})")
save_figure(fig, figure_path(figures_dir, "closed_loop", "action_scores"))
plt.close(fig)

# %% [markdown]
# ## Metrics
# The headline numbers (`make metrics`; a few of them in `metrics/headline.json`, `dvc metrics show`): each memory's mean closed-loop
# success rate (%) and the step-level action score per modality; their spread over world
# seeds, how episodes ended, stalls and steps go to `results/closed_loop.json`.

# %%
results, metrics = action_score_results(scores)
if closed_loop:
    played, headline = closed_loop_results(
        table, traces, memories, tasks=len(test_episodes), seeds=n_seeds, modality=modality, max_steps=max_steps,
        ended=ended, stalled_share={n: round(stalled[n], 4) for n in memories}, paired_vs_none=paired,
        holds_everywhere_share=round(share, 4), success_by_need=by_need)
    results, metrics = results | played, headline | metrics
    results["experience_worth"] = {"success": worth, "wrong_done_share": {n: round(v, 4) for n, v in said_done.items()},
                                   "training_phones": list(world_config.train_variants)}
    metrics |= {"success_rate_training_phones": round(worth[TRAINING_PHONES]["mean"], 4),
                "success_rate_oracle": round(worth[f"{ORACLE}/{modality}"]["mean"], 4)}
else:
    results["closed_loop"] = f"skipped: {NO_ENVIRONMENT}"
report(results_path, results, metrics_path, metrics)
