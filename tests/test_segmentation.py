"""Segmentation: rule and ground-truth segmenters on hand-made episodes, annotations, metrics, storage."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

import handmade_episodes as hm
from guimem.core.data import Action, DataError, Subgoal
from guimem.core.store import load_subgoals, save_subgoals
from guimem.models.embedding import HashingTextEmbedder
from guimem.smg.annotate import NO_CHANGE, behaviour_of
from guimem.smg.segmentation_scores import (
    BoundaryScores,
    boundaries,
    boundary_scores,
    corpus_boundary_scores,
    intent_agreement,
    judge_confusion,
    match_boundaries,
    step_intents,
)
from guimem.smg.screens import Context, blind, read_episode, screen_contexts, trajectory_text
from guimem.smg.segment import make_segmenter, segment_episodes
from guimem.smg.segmenters import (
    GroundTruthSegmenter,
    RuleSegmenter,
    Span,
    build_subgoals,
    rule_spans,
    spans_from_starts,
)


# ----------------------------------------------------------------------------- reading screens
def test_screen_contexts_name_titles_home_and_windows():
    ep = hm.dark_theme_episode()
    contexts = screen_contexts(ep.observations)
    assert contexts[0] == Context("the home screen")  # launcher: no title, mostly app cells
    assert contexts[1] == Context("the home screen", "Enjoying Settings?")  # the window hides the screen: name carried
    assert contexts[2] == Context("Settings")
    assert contexts[3] == Context("About phone")
    assert contexts[-1] == Context("Display")
    assert contexts[1].words() == "the home screen + 'Enjoying Settings?' window"


def test_step_kinds_of_the_dark_theme_episode():
    kinds = read_episode(hm.dark_theme_episode()).kinds
    assert kinds == ("effective", "effective", "detour", "detour", "scroll", "effective", "effective", "end")


def test_a_tap_that_changes_nothing_is_noise():
    kinds = read_episode(hm.new_note_episode()).kinds
    assert kinds[2] == "noise"  # the stray tap on empty space
    assert kinds[1] == "effective"  # focusing a field changes the pixels (same UI tree)


# ----------------------------------------------------------------------------- rule segmenter
@pytest.mark.parametrize("make", hm.ALL, ids=lambda f: f.__name__)
def test_rule_boundaries_match_the_known_ones(make):
    ep = make()
    assert boundaries(rule_spans(ep)) == hm.TRUE_BOUNDARIES[ep.id]


@pytest.mark.parametrize("make", hm.ALL, ids=lambda f: f.__name__)
def test_ground_truth_boundaries_and_texts_come_from_labels(make):
    ep = make()
    spans = GroundTruthSegmenter().spans(ep)
    assert boundaries(spans) == hm.TRUE_BOUNDARIES[ep.id]
    for span in spans:
        assert {s.subgoal.text for s in ep.steps[span.first:span.last + 1]} == {span.text}


@pytest.mark.parametrize("make", hm.ALL, ids=lambda f: f.__name__)
def test_rule_segmenter_never_reads_labels_screens_success_or_provenance(make):
    ep = make()
    tampered = hm.without_truth(ep, success=not ep.success)
    assert rule_spans(tampered) == rule_spans(ep)
    assert RuleSegmenter().segment(tampered) == RuleSegmenter().segment(ep)


def test_blind_drops_every_hidden_field():
    ep = blind(hm.dark_theme_episode())
    assert ep.success is None and dict(ep.provenance) == {}
    assert all(s.subgoal is None and s.observation.screen is None for s in ep.steps)
    assert ep.final.screen is None


def test_rule_intents_name_what_each_subgoal_did():
    texts = [s.text for s in rule_spans(hm.dark_theme_episode())]
    assert texts[2] == "open the Display screen"
    assert texts[3] == "turn on 'Dark theme'"
    assert rule_spans(hm.search_episode())[1].text == "type 'milk' into \"Search notes\" and submit"
    assert rule_spans(hm.give_up_episode())[-1].text == "give up on the task"


def test_subgoals_carry_effect_behaviour_screens_and_successors():
    ep = hm.dark_theme_episode()
    subgoals = RuleSegmenter().segment(ep)
    assert [s.index for s in subgoals] == [0, 1, 2, 3]
    assert [s.successor for s in subgoals] == [1, 2, 3, None]
    detour = subgoals[2]
    assert (detour.first_step, detour.last_step) == (2, 5)
    assert detour.behaviour == "tap, back, scroll, tap"
    assert detour.effect == "The screen changed from 'Settings' to 'Display'."
    assert detour.from_screenshot == ep.steps[2].screenshot and detour.to_screenshot == ep.steps[6].screenshot
    assert detour.actions == tuple(s.action for s in ep.steps[2:6])
    assert subgoals[3].effect == "'Dark theme' switched on."
    assert subgoals[3].to_screenshot == ep.final.screenshot
    assert all(s.goal == ep.goal and s.app == ep.app and s.episode_id == ep.id for s in subgoals)
    assert subgoals[-1].success == "yes"


def test_effect_of_a_span_that_changed_nothing():
    subgoals = RuleSegmenter().segment(hm.give_up_episode())
    assert subgoals[-1].effect == NO_CHANGE


def test_typing_effect_names_the_field_by_its_hint():
    subgoals = RuleSegmenter().segment(hm.new_note_episode())
    assert subgoals[1].effect == "\"Title\" now reads 'Errands'."
    assert subgoals[1].behaviour == "tap x2, type"


def test_behaviour_folds_repeats():
    acts = [Action("swipe", (0.5, 0.8), (0.5, 0.2))] * 2 + [Action("tap", (0.5, 0.5)), Action("type", text="a"),
                                                             Action("type", text="b"), Action("enter")]
    assert behaviour_of(acts) == "scroll x2, tap, type x2, enter"
    assert behaviour_of([]) == ""


def test_ground_truth_needs_every_step_labelled():
    ep = hm.search_episode()
    steps = list(ep.steps)
    steps[2] = replace(steps[2], subgoal=None)
    with pytest.raises(DataError, match=r"steps\[2\]\.subgoal"):
        GroundTruthSegmenter().spans(replace(ep, steps=tuple(steps)))


def test_build_subgoals_refuses_spans_that_do_not_tile():
    ep = hm.search_episode()
    with pytest.raises(DataError, match=r"spans\[1\]'.*'hand-search'.*starting at step 1, got 2\.\.5"):
        build_subgoals(ep, [Span(0, 0, "a"), Span(2, 5, "b")], ["yes", "yes"])
    with pytest.raises(DataError, match="6 steps"):
        build_subgoals(ep, [Span(0, 3, "a")], ["yes"])
    with pytest.raises(DataError, match="verdicts"):
        build_subgoals(ep, [Span(0, 5, "a")], [])


def test_spans_from_starts_adds_zero_and_drops_out_of_range():
    assert spans_from_starts([3, 0, 9, -1, 3], 5, {3: "b"}) == [Span(0, 2, ""), Span(3, 4, "b")]


def test_make_segmenter_knows_its_names():
    assert make_segmenter("rule").name == "rule"
    assert make_segmenter("ground_truth").name == "ground_truth"
    with pytest.raises(DataError, match="unknown segmenter 'magic'"):
        make_segmenter("magic")


def test_segment_episodes_keeps_episode_order():
    eps = [hm.search_episode(), hm.dark_theme_episode()]
    subgoals = segment_episodes(eps, make_segmenter("rule"), progress=False)
    assert [s.episode_id for s in subgoals] == ["hand-search"] * 3 + ["hand-dark"] * 4


def test_trajectory_text_is_compact_and_label_free():
    text = trajectory_text(hm.search_episode())
    assert text.splitlines() == [
        "Goal: Open the note about milk",
        "Steps:",
        '1. [the home screen] open app "Notes"',
        "2. [Notes] tap an unlabeled icon at top right",
        '3. [Search] type "milk" into "Search notes"',
        "4. [Search] press enter",
        '5. [Search] tap "Groceries" (list_item)',
        "6. [Groceries] done",
        "End: [Groceries]",
    ]
    assert "search_for" not in text and "notes/search" not in text


# ----------------------------------------------------------------------------- boundary metrics
def test_match_boundaries_exact_and_with_tolerance():
    assert match_boundaries([2, 5, 9], [2, 6, 9]) == 2
    assert match_boundaries([2, 5, 9], [2, 6, 9], tolerance=1) == 3
    assert match_boundaries([4, 5], [5], tolerance=1) == 1  # one-to-one: a true boundary is used once
    assert match_boundaries([1, 3], [2], tolerance=1) == 1
    with pytest.raises(ValueError):
        match_boundaries([1], [1], tolerance=-1)


def test_greedy_matching_is_maximal():
    # p=3 could take t=2 or t=4; greedy takes 2, leaving 4 for p=5.
    assert match_boundaries([3, 5], [2, 4], tolerance=1) == 2


def test_boundary_scores_edge_cases():
    none = boundary_scores([], [])
    assert (none.precision, none.recall, none.f1) == (1.0, 1.0, 1.0)
    missed = boundary_scores([], [3])
    assert (missed.precision, missed.recall, missed.f1) == (0.0, 0.0, 0.0)
    spurious = boundary_scores([3], [])
    assert (spurious.precision, spurious.recall, spurious.f1) == (0.0, 0.0, 0.0)
    every = boundary_scores([1, 2, 3, 4, 5], [2, 4])  # a boundary before every step
    assert (every.precision, every.recall) == (0.4, 1.0)
    assert every.f1 == pytest.approx(2 * 0.4 / 1.4)


def test_corpus_scores_are_micro_averaged():
    pred = {"a": [Span(0, 1, ""), Span(2, 3, "")], "b": [Span(0, 0, ""), Span(1, 1, ""), Span(2, 2, "")]}
    true = {"a": [Span(0, 1, ""), Span(2, 3, "")], "b": [Span(0, 2, "")]}
    total = corpus_boundary_scores(pred, true)
    assert total == BoundaryScores(tp=1, n_pred=3, n_true=1)
    assert total.to_dict()["precision"] == pytest.approx(1 / 3)
    with pytest.raises(DataError, match="'c'"):
        corpus_boundary_scores({"c": []}, true)


def test_rule_beats_one_big_subgoal_on_hand_made_episodes():
    eps = [make() for make in hm.ALL]
    true = {e.id: GroundTruthSegmenter().spans(e) for e in eps}
    rule = corpus_boundary_scores({e.id: rule_spans(e) for e in eps}, true)
    whole = corpus_boundary_scores({e.id: [Span(0, len(e.steps) - 1, "")] for e in eps}, true)
    assert rule.f1 == 1.0 and whole.f1 == 0.0


# ----------------------------------------------------------------------------- intent agreement
def test_intent_agreement_is_one_for_identical_texts_and_step_weighted():
    emb = HashingTextEmbedder()
    true = {"a": [Span(0, 2, "open the Display page"), Span(3, 3, "turn on Dark theme")]}
    assert intent_agreement(true, true, emb) == pytest.approx(1.0)
    pred = {"a": [Span(0, 3, "open the Display page")]}
    vecs = emb.embed(["open the Display page", "turn on Dark theme"])
    expected = (3 * 1.0 + float(vecs[0] @ vecs[1])) / 4
    assert intent_agreement(pred, true, emb) == pytest.approx(expected)
    assert step_intents(pred["a"]) == ["open the Display page"] * 4


def test_intent_agreement_edge_cases():
    emb = HashingTextEmbedder()
    assert math.isnan(intent_agreement({}, {}, emb))
    with pytest.raises(DataError, match="3 predicted steps but 4"):
        intent_agreement({"a": [Span(0, 2, "x")]}, {"a": [Span(0, 3, "x")]}, emb)


# ----------------------------------------------------------------------------- judge metrics
def test_judge_confusion_counts_and_accuracies():
    scores = judge_confusion(["yes", "yes", "no", "uncertain", "no", "yes"], [True, False, False, True, None, True])
    assert scores.matrix == ((2, 1), (0, 1), (1, 0))
    assert scores.n == 5 and scores.correct == 3
    assert scores.accuracy == pytest.approx(3 / 5)
    assert scores.decided_accuracy == pytest.approx(3 / 4)
    assert scores.coverage == pytest.approx(4 / 5)
    d = scores.to_dict()
    assert d["rows"] == ["yes", "no", "uncertain"] and d["matrix"] == [[2, 1], [0, 1], [1, 0]]
    with pytest.raises(DataError, match="maybe"):
        judge_confusion(["maybe"], [True])
    assert math.isnan(judge_confusion([], []).accuracy)


# ----------------------------------------------------------------------------- storage
def test_save_load_round_trip(tmp_path):
    subgoals = segment_episodes([make() for make in hm.ALL], make_segmenter("rule"), progress=False)
    path = tmp_path / "seg" / "train.jsonl"
    save_subgoals(path, subgoals)
    assert load_subgoals(path) == subgoals
    assert [p.name for p in path.parent.iterdir()] == ["train.jsonl"]  # no temp file left


def test_save_is_atomic_when_writing_fails(tmp_path):
    path = tmp_path / "s.jsonl"
    good = RuleSegmenter().segment(hm.search_episode())
    save_subgoals(path, good)
    before = path.read_bytes()

    def broken():
        yield good[0]
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError):
        save_subgoals(path, broken())
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["s.jsonl"]


def _line(sg: Subgoal, **changes) -> str:
    d = sg.to_dict()
    d.update(changes)
    return json.dumps(d)


def test_load_errors_name_file_line_and_field(tmp_path):
    sg = RuleSegmenter().segment(hm.search_episode())[0]
    path = tmp_path / "bad.jsonl"
    path.write_text(_line(sg) + "\n" + _line(sg, index=1, success="maybe") + "\n")
    with pytest.raises(DataError, match=r"bad\.jsonl, line 2: field 'success'"):
        load_subgoals(path)
    path.write_text(_line(sg) + "\n{not json\n")
    with pytest.raises(DataError, match=r"line 2: field 'line': malformed JSON"):
        load_subgoals(path)
    d = sg.to_dict()
    del d["effect"]
    path.write_text(json.dumps(d) + "\n")
    with pytest.raises(DataError, match=r"line 1: field 'effect': missing"):
        load_subgoals(path)
    path.write_text(_line(sg) + "\n" + _line(sg) + "\n")
    with pytest.raises(DataError, match=r"line 2: field 'id': duplicate subgoal"):
        load_subgoals(path)
    path.write_text(_line(sg, actions=[{"type": "fly"}]) + "\n")
    with pytest.raises(DataError, match=r"line 1: field 'actions\[0\]\.type'"):
        load_subgoals(path)
    with pytest.raises(DataError, match="field 'file': missing"):
        load_subgoals(tmp_path / "missing.jsonl")


def test_load_skips_blank_lines(tmp_path):
    subgoals = RuleSegmenter().segment(hm.search_episode())
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(_line(s) for s in subgoals) + "\n\n")
    assert load_subgoals(path) == subgoals



# ----------------------------------------------------------------------------- the notebook
@pytest.fixture(scope="module")
def segmentation_run(tmp_path_factory, repo_root, llm_cache):
    """01_segmentation on a tiny world, with SmolLM2 on one test episode ("it runs"; its GGUF file
    converted once per session, not again in this kernel: tests/conftest.py)."""
    from guimem.phone.config import WorldConfig
    from guimem.phone.demonstrator import generate_dataset
    from nbsmoke import run_notebook

    tmp = tmp_path_factory.mktemp("segmentation_nb")
    generate_dataset(WorldConfig(n_train=8, n_test=4, n_memory=6), tmp / "data" / "world", seed=0, progress=False)
    metrics = run_notebook("01_segmentation", tmp, **_segmentation_params(tmp, repo_root))
    return tmp, metrics


def _segmentation_params(tmp, repo_root):
    return dict(text_embedder="hashing", llm_sample=1, llm_cache_dir=str(repo_root / ".cache" / "guimem" / "llm"),
                embed_cache_dir=str(tmp / "cache"))


@pytest.mark.notebook
@pytest.mark.slow
def test_segmentation_reporting_knobs_change_nothing_later_stages_read(segmentation_run, repo_root, tmp_path):
    from nbsmoke import rerun_changes_only_the_report

    from guimem.pipeline.params import find_stage

    tmp, _ = segmentation_run
    changed = dict(boundary_tolerance=1, llm_sample=0, llm_mode="free", llm_tokens_per_line=12, text_embedder="minilm")
    assert set(changed) == set(find_stage("01_segmentation").reporting)
    rerun_changes_only_the_report("01_segmentation", tmp, tmp_path / "again",
                                  **{**_segmentation_params(tmp, repo_root), **changed})


@pytest.mark.notebook
@pytest.mark.slow
def test_segmentation_notebook_writes_its_outputs(segmentation_run):
    tmp, metrics = segmentation_run
    for split in ("train", "test"):
        subgoals = load_subgoals(tmp / "data" / "segmentation" / f"{split}.jsonl")
        assert len(subgoals) == metrics["subgoals"][split] > 0
    for what in ("boundaries", "judge_confusion"):
        assert (tmp / "figures" / f"segmentation_{what}.png").stat().st_size > 10_000


@pytest.mark.notebook
@pytest.mark.slow
def test_segmentation_notebook_numbers(segmentation_run):
    _, metrics = segmentation_run
    assert metrics["episodes"] == {"train": 8, "test": 4, "memory": 6}
    for split in ("train", "test", "memory"):
        rule, every = metrics["scores"][split]["rule"], metrics["scores"][split]["every_step"]
        assert every["recall"] == 1.0 and every["tp"] == rule["n_true"]
        assert rule["f1"] > every["f1"] and rule["f1"] >= 0.8
        assert -1.0 <= rule["intent_agreement"] <= 1.0
        judge = metrics["judge_scores"][split]
        assert judge["n"] == metrics["episodes"][split] and sum(map(sum, judge["matrix"])) == judge["n"]
    llm = metrics["llm"]
    assert llm["sample"] == llm["episodes"] == 1
    assert llm["ok"] + llm["repaired"] + llm["unparseable"] == 1
    assert set(llm["scores"]) == {"llm", "rule", "every_step"}


def test_params_yaml_section_matches_the_notebook_defaults(repo_root):
    import ast

    import yaml

    from nbsmoke import notebook_parameters

    section = yaml.safe_load((repo_root / "params.yaml").read_text())["segmentation"]
    defaults = notebook_parameters(repo_root / "notebooks" / "01_segmentation.py")
    assert set(section) <= set(defaults)
    assert {k: ast.literal_eval(defaults[k]) for k in section} == section
