"""The app variants and the expert: single-app starts, variants that rename, move and relabel,
routes found on the phone, and the right next action from any state."""

from __future__ import annotations

import copy
import random

import pytest

from guimem.core.data import Action
from guimem.phone.apps import APPS
from guimem.phone.config import WorldConfig
from guimem.phone.demonstrator import plan_tasks, run_episode
from guimem.phone.expert import DONE, Expert, ExpertLost, loc_of, perturbed_completion, play, route
from guimem.phone.tasks import TEMPLATES, make_task
from guimem.phone.toolkit import DESIGNED_GLYPHS, AppVariant
from guimem.phone.variants import SYNONYMS, app_variant, phone_variants, unseen_words
from guimem.phone.world import World


def quiet(**kw) -> World:
    return World(WorldConfig(dialog_prob=0.0, **kw))


EVAL = WorldConfig().eval_variants[0]  # the default world's evaluation phone


def dark_mode(app: str = "notes") -> object:
    tid = {"notes": "notes.display", "clock": "clock.display", "gallery": "gallery.settings"}[app]
    return make_task(tid, (("option", "Dark mode"), ("state", "on")))


# ----------------------------------------------------------------------------- starts
def test_an_episode_starts_inside_its_app_or_on_the_launcher():
    w = quiet()
    assert w.reset(dark_mode(), 0).screen == "notes/list"
    assert TEMPLATES["notes.display"].full_plan({"option": "Dark mode", "state": "on"})[0].type == "navigate"
    w = quiet(start="launcher")
    assert w.reset(dark_mode(), 0).screen == "launcher/home"
    assert TEMPLATES["notes.display"].full_plan({"option": "Dark mode", "state": "on"}, "launcher")[0].type == "open_app"
    ep = run_episode(w, dark_mode(), 3, "x", None, mode="clean", strict=True)
    assert ep.success and ep.steps[0].subgoal.type == "open_app"


# ----------------------------------------------------------------------------- variants
def test_variant_zero_is_the_reference_design_and_variants_are_fixed():
    for app in APPS:
        assert app_variant(app, 0) == AppVariant(app)  # no synonym, no label, no move, the reference order
        assert app_variant(app, 0).say("Dark mode") == "Dark mode" and app_variant(app, 0).order_seed is None
    with pytest.raises(ValueError):
        app_variant("notes", -1)
    with pytest.raises(KeyError):
        app_variant("camera", 1)


def test_variants_differ_in_words_icons_placement_and_order():
    for app in APPS:
        vs = [app_variant(app, i) for i in range(4)]
        assert len({(v.words, v.labelled, v.settings_entry, v.moved) for v in vs}) == 4, app
        for v in vs[1:]:
            assert all(label in SYNONYMS[app] and new in SYNONYMS[app][label] for label, new in v.words)
    assert {app_variant(a, i).settings_entry for a in ("notes", "gallery", "clock") for i in range(1, 4)} == {"overflow", "toolbar"}


def test_a_synonym_replaces_the_reference_word_on_screen_and_the_goal_keeps_it():
    found = 0
    for i in (*WorldConfig().train_variants[1:], EVAL):
        v = app_variant("notes", i, evaluation=i == EVAL)
        say = v.say("Dark mode")
        if say == "Dark mode":
            continue
        found += 1
        w = quiet()
        w.reset(dark_mode(), 0, variant=i)
        expert = Expert(w)
        rng = random.Random(0)
        while expert.decide(w).subgoal == 0:
            w.step(expert.act(w, rng)[0])
        texts = [e.text for e in w._observe().elements]
        assert say in texts and "Dark mode" not in texts
        assert "Dark mode" in w.task.goal
    assert found >= 2


def test_where_settings_and_switches_sit_changes_the_route():
    routes = set()
    for i in range(4):
        w = quiet()
        w.reset(dark_mode(), 0, variant=i)
        trace = Expert(w).trace
        routes.add(tuple(e.move for e in trace if e.subgoal == 0))
        gear = any(e.move == ("tap", "icon:settings") for e in trace)
        assert gear == (app_variant("notes", i).settings_entry == "toolbar")
    assert len(routes) >= 3


def test_toolbar_order_belongs_to_the_episode_and_its_glyphs_to_the_variant():
    def toolbar(seed, variant):
        w = quiet()
        w.reset(dark_mode(), seed, variant=variant)
        return tuple(x.glyph for x in w.layout.widgets if x.kind == "icon" and x.box[1] < 44 and x.glyph != "back")
    for variant in (2, EVAL):
        orders = {toolbar(s, variant) for s in range(8)}
        assert len(orders) > 1  # the same variant, other episodes: the icons move ...
        assert len({frozenset(o) for o in orders}) == 1  # ... and stay the same glyphs
    assert len({frozenset(toolbar(0, v)) for v in range(WorldConfig().variants)}) > 1  # variants draw them differently


def test_menus_keep_their_variants_order():
    def menu(seed):
        w = quiet()
        w.reset(dark_mode(), seed, variant=3)
        w.step(Action("tap", point=next(e.center for e in w._observe().elements if e.role == "icon"
                                         and w.layout.hit(e.center[0] * 180, e.center[1] * 360).id == "icon:more")))
        return tuple(x.text for x in w.layout.overlay if x.kind == "menu_item")
    assert len({menu(s) for s in range(5)}) == 1 and menu(0)


def test_training_and_evaluation_variants_share_no_glyph_design_word_or_label():
    train, evaluation = range(6), (6, 7)
    for app in APPS:
        seen = {d for i in train for d in app_variant(app, i).designs}
        held = [app_variant(app, i, evaluation=True) for i in evaluation]
        assert all(not v.labelled for v in held)  # evaluation phones label no glyph
        assert all({g for g, _ in v.designs} == DESIGNED_GLYPHS for v in held)  # every glyph in a design of its own
        assert not seen & {d for v in held for d in v.designs}
        assert not {w for i in train for _, w in app_variant(app, i).words} & {w for v in held for _, w in v.words}
    words = unseen_words(train, evaluation)
    assert "Bin" in words or "Recently deleted" in words or "Empty bin" in words or len(words) >= 10
    assert not words & {label for labels in SYNONYMS.values() for label in labels}
    with pytest.raises(ValueError, match="reference"):
        app_variant("notes", 0, evaluation=True)


def test_a_variant_draws_a_glyph_in_its_design_everywhere_the_glyph_shows():
    v = app_variant("notes", EVAL, evaluation=True)
    assert v.draw("search") == f"search@{EVAL}" and v.draw("star_filled") == f"star_filled@{EVAL}"
    assert v.draw("back") == "back"
    w = quiet()
    w.reset(dark_mode(), 0, variant=EVAL)
    glyphs = {x.glyph for x in w.layout.widgets if x.kind == "icon"}
    assert "back" not in glyphs and all(f"@{EVAL}" in g for g in glyphs if g.split("@")[0] in DESIGNED_GLYPHS)


def test_labelled_glyphs_carry_a_description_and_bare_ones_none():
    for i in range(4):
        v = app_variant("notes", i)
        w = quiet()
        obs = w.reset(dark_mode(), 0, variant=i)
        search = next(e for e in obs.elements if e.role == "icon" and e.bounds[1] < 0.13
                      and w.layout.hit(e.center[0] * 180, e.center[1] * 360).glyph.split("@")[0] == "search")
        assert (search.description == "Search") == ("search" in v.labelled)


def test_phone_variants_cover_every_app():
    assert set(phone_variants(3)) == set(APPS)
    assert all(v.index == 3 for v in phone_variants(3).values())


def test_a_world_refuses_a_variant_it_does_not_have():
    n = WorldConfig().variants
    with pytest.raises(ValueError, match=f"variant {n}"):
        quiet().reset(dark_mode(), 0, variant=n)


# ----------------------------------------------------------------------------- routes
def test_route_is_empty_when_there_and_none_when_unreachable():
    w = quiet()
    w.reset(dark_mode(), 0)
    assert route(w.state, ("widget", "icon:more")) == []
    assert route(w.state, ("widget", "no:such:widget")) is None


def test_route_changes_nothing_on_the_phone():
    w = quiet()
    w.reset(dark_mode(), 0, variant=1)
    before = copy.deepcopy(w.state)
    path = route(w.state, ("widget", "toggle:dark_mode"))
    assert path and w.state == before


@pytest.mark.parametrize("variant", range(4))
def test_every_template_is_played_by_the_expert_on_every_variant(variant):
    w = quiet()
    for tid, t in TEMPLATES.items():
        for params in t.combos()[:2]:
            w.reset(make_task(tid, params), 11, variant=variant)
            twin = w.fork()
            play(twin, t.full_plan(dict(params)), strict=True)
            assert twin.holds(("task",)), (tid, params, variant)


# ----------------------------------------------------------------------------- the expert from any state
def test_the_expert_finishes_with_done_once_the_check_holds():
    w = quiet()
    w.reset(dark_mode(), 0, variant=2)
    expert, rng = Expert(w), random.Random(0)
    for _ in range(20):
        action, decision = expert.act(w, rng)
        w.step(action)
        if w.ended:
            break
    assert w.ended == "done" and w.success() and decision.index == DONE


def test_the_expert_goes_back_from_where_it_strayed():
    w = quiet()
    w.reset(dark_mode(), 0, variant=0)
    expert, rng = Expert(w), random.Random(0)
    w.step(expert.act(w, rng)[0])  # the ⋮ menu opens
    w.state.overlay = None
    w.state.stack.append(APPS["notes"].new_page("notes/trash", "", w.state))  # somewhere the trace never goes
    action, _ = expert.act(w, rng)
    assert action.type == "back"
    w.step(action)
    assert loc_of(w.state)[1] == "notes/list"


def test_the_expert_completes_97_percent_of_perturbed_tasks():
    cfg = WorldConfig()  # the rest are tasks a random action made impossible (an alarm or a photo deleted)
    jobs = plan_tasks(cfg, 0)
    result = perturbed_completion(World(cfg, render=False), jobs["test"] + jobs["memory"], seed=0)
    assert result["tasks"] == 360
    assert result["completion_rate"] >= 0.97, result


def test_the_expert_says_impossible_when_the_task_was_made_impossible():
    w = quiet()
    task = make_task("notes.pin", (("title", "Groceries"),))
    w.reset(task, 0)
    expert = Expert(w)
    w.state.data["notes"]["notes"] = [n for n in w.state.data["notes"]["notes"] if n["title"] != "Groceries"]
    w._layout = None
    action, _ = expert.act(w, random.Random(0))
    assert action.type == "impossible" and "groceries" in expert.lost


def test_strict_play_names_an_unmet_postcondition():
    from guimem.phone.subgoals import SubgoalSpec

    w = quiet()
    w.reset(dark_mode(), 0)
    bad = [SubgoalSpec("navigate", "go nowhere", (("reach", ("widget", "icon:more")),), ("screen", "notes/trash"))]
    with pytest.raises(ExpertLost, match="notes/trash"):
        play(w.fork(), bad, strict=True)


def test_a_demonstration_follows_the_variant_and_records_it():
    w = World(WorldConfig())
    ep = run_episode(w, dark_mode("clock"), 5, "c", None, mode="clean", variant=3)
    assert ep.provenance["variant"] == 3 and ep.success
    assert all(s.subgoal is not None for s in ep.steps)
    assert [s.action for s in ep.steps][-1] == Action("done")
