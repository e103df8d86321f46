"""Hand-made episodes with known subgoal boundaries, for the segmentation and judge tests.

The screens follow the built-in world's UI-tree conventions (a top-bar ``title`` element,
windows as a ``dialog`` element with their texts inside, toggles whose description is
``on``/``off``, fields whose text is their content) but are written out by hand, so the
tests do not depend on the world's generator. Each ``*_episode`` function documents its
true boundaries; its steps carry ground-truth labels the way the world's demonstrator
assigns them (noise steps belong to the subgoal they were attempting).
"""

from __future__ import annotations

from dataclasses import replace

from guimem.core.data import Action, Episode, Observation, Step, SubgoalLabel, UIElement


def el(id: str, role: str, text: str = "", desc: str = "", bounds=(0.0, 0.0, 1.0, 1.0), clickable: bool = False) -> UIElement:
    """A UI element."""
    return UIElement(id, role, text, desc, bounds, clickable)


def topbar(title: str, icons: tuple[str, ...] = ()) -> list[UIElement]:
    """A back arrow, the title, and label-free icons at the top right (ids ``icon:<name>``)."""
    out = [el("nav:back", "icon", bounds=(0.01, 0.04, 0.15, 0.12), clickable=True),
           el("title", "text", title, bounds=(0.18, 0.05, 0.7, 0.11))]
    for i, name in enumerate(icons):
        x0 = 0.85 - 0.15 * i
        out.append(el(f"icon:{name}", "icon", bounds=(x0, 0.04, x0 + 0.14, 0.12), clickable=True))
    return out


def rows(labels: list[str], role: str = "list_item", states: dict[str, str] | None = None, y0: float = 0.13) -> list[UIElement]:
    """One full-width row per label (toggles get their state as description)."""
    states = states or {}
    return [el(f"row:{label.lower().replace(' ', '_')}", role, label, states.get(label, ""),
               (0.0, y0 + 0.08 * i, 1.0, y0 + 0.08 * (i + 1)), True) for i, label in enumerate(labels)]


def window(title: str, buttons: list[str]) -> tuple[UIElement, ...]:
    """A modal window: what the UI tree shows while it is open (the screen below is hidden)."""
    out = [el("dialog", "dialog", bounds=(0.08, 0.35, 0.92, 0.62)),
           el("dialog:title", "text", title, bounds=(0.13, 0.37, 0.8, 0.42))]
    for i, label in enumerate(buttons):
        out.append(el(f"btn:{label.lower().replace(' ', '_')}", "button", label,
                      bounds=(0.12 + 0.4 * i, 0.52, 0.48 + 0.4 * i, 0.6), clickable=True))
    return tuple(out)


HOME = tuple([el("text:clock", "text", "9:41", bounds=(0.05, 0.08, 0.95, 0.19))]
             + [el(f"app:{a.lower()}", "grid_cell", a, bounds=(0.02 + 0.24 * i, 0.3, 0.24 + 0.24 * i, 0.45), clickable=True)
                for i, a in enumerate(["Settings", "Notes", "Shop", "Clock"])])
SETTINGS = tuple(topbar("Settings") + rows(["Network", "Display", "Sound", "About phone"])
                 + [el("list", "list", bounds=(0.0, 0.13, 1.0, 0.9))])
SETTINGS_SCROLLED = tuple(topbar("Settings") + rows(["Display", "Sound", "About phone", "Battery"])
                          + [el("list", "list", bounds=(0.0, 0.13, 1.0, 0.9))])
ABOUT = tuple(topbar("About phone") + [el("text:1", "text", "Nothing to change here.", bounds=(0.0, 0.2, 1.0, 0.25))])
RATE = window("Enjoying Settings?", ["Not now", "Rate"])


def display(dark: str, rotate: str = "off") -> tuple[UIElement, ...]:
    """The Display screen with its two switches in the given states."""
    return tuple(topbar("Display") + rows(["Dark theme", "Auto-rotate"], role="toggle",
                                          states={"Dark theme": dark, "Auto-rotate": rotate}))


def notes_list(titles: list[str]) -> tuple[UIElement, ...]:
    return tuple(topbar("Notes", icons=("search", "add")) + rows(titles))


def new_note(title: str = "", body: str = "") -> tuple[UIElement, ...]:
    return tuple(topbar("New note", icons=("save",))
                 + [el("field:title", "field", title, "Title", (0.04, 0.14, 0.96, 0.2), True),
                    el("field:body", "field", body, "Note", (0.04, 0.22, 0.96, 0.5), True)])


def search(query: str = "", results: tuple[str, ...] = ()) -> tuple[UIElement, ...]:
    return tuple(topbar("Search") + [el("field:search", "field", query, "Search notes", (0.04, 0.14, 0.96, 0.2), True)]
                 + rows(list(results), y0=0.22))


def obs(elements: tuple[UIElement, ...], shot: str, screen: str) -> Observation:
    """An observation; ``shot`` names its (content-addressed) screenshot."""
    return Observation(f"screens/{shot}.png", tuple(elements), screen=screen)


def tap(elements: tuple[UIElement, ...], id: str) -> Action:
    """A tap at the centre of the element ``id``."""
    return Action("tap", next(e for e in elements if e.id == id).center)


def episode(eid: str, goal: str, app: str, steps: list[tuple[Observation, Action, tuple[int, str, str]]],
            final: Observation, success: bool | None) -> Episode:
    """An episode from (observation, action, (label index, type, text)) triples."""
    return Episode(eid, app, goal, tuple(Step(o, a, SubgoalLabel(*lab)) for o, a, lab in steps), final, success,
                   {"seed": 0, "source": "handmade"})


def dark_theme_episode(success: bool = True) -> Episode:
    """Open Settings (a rate-us window pops up), dismiss it, a dead end (About phone, back),
    a scroll, open Display, switch Dark theme on, done. True boundaries: 1, 2, 6."""
    open_app, dismiss = (0, "open_app", "open Settings"), (1, "dismiss_popup", "dismiss the rate-this-app popup")
    section, toggle = (2, "open_section", "open the Display page"), (3, "toggle_option", "turn on Dark theme")
    steps = [
        (obs(HOME, "home", "launcher/home"), tap(HOME, "app:settings"), open_app),
        (obs(RATE, "rate", "settings/main"), tap(RATE, "btn:not_now"), dismiss),
        (obs(SETTINGS, "settings", "settings/main"), tap(SETTINGS, "row:about_phone"), section),
        (obs(ABOUT, "about", "settings/info"), Action("back"), section),
        (obs(SETTINGS, "settings", "settings/main"), Action("swipe", (0.5, 0.8), (0.5, 0.3)), section),
        (obs(SETTINGS_SCROLLED, "settings2", "settings/main"), tap(SETTINGS_SCROLLED, "row:display"), section),
        (obs(display("off"), "display-off", "settings/display"), tap(display("off"), "row:dark_theme"), toggle),
        (obs(display("on"), "display-on", "settings/display"), Action("done"), toggle),
    ]
    return episode("hand-dark", "Turn on Dark theme", "Settings", steps,
                   obs(display("on"), "display-on", "settings/display"), success)


def wrong_switch_episode() -> Episode:
    """Goal: Dark theme on; the agent switches Auto-rotate instead and says done. True boundaries: 1, 2."""
    steps = [
        (obs(HOME, "home", "launcher/home"), Action("open_app", text="Settings"), (0, "open_app", "open Settings")),
        (obs(SETTINGS, "settings", "settings/main"), tap(SETTINGS, "row:display"), (1, "open_section", "open the Display page")),
        (obs(display("off"), "display-off", "settings/display"), tap(display("off"), "row:auto-rotate"),
         (2, "toggle_option", "turn on Dark theme")),
        (obs(display("off", "on"), "display-rot", "settings/display"), Action("done"), (2, "toggle_option", "turn on Dark theme")),
    ]
    return episode("hand-wrong-switch", "Turn on Dark theme", "Settings", steps,
                   obs(display("off", "on"), "display-rot", "settings/display"), False)


def search_episode() -> Episode:
    """Open Notes, search for 'milk' (tap the search icon, type, enter), open the result, done.
    True boundaries: 1, 4."""
    notes = notes_list(["Groceries", "Travel plans"])
    sg = (1, "search_for", "search for 'milk'")
    steps = [
        (obs(HOME, "home", "launcher/home"), Action("open_app", text="Notes"), (0, "open_app", "open Notes")),
        (obs(notes, "notes", "notes/list"), tap(notes, "icon:search"), sg),
        (obs(search(), "search", "notes/search"), Action("type", text="milk"), sg),
        (obs(search("milk"), "search-milk", "notes/search"), Action("enter"), sg),
        (obs(search("milk", ("Groceries",)), "search-hits", "notes/search"), tap(search("milk", ("Groceries",)), "row:groceries"),
         (2, "select_list_item", "open Groceries")),
        (obs(tuple(topbar("Groceries")), "groceries", "notes/view"), Action("done"), (2, "select_list_item", "open Groceries")),
    ]
    return episode("hand-search", "Open the note about milk", "Notes", steps,
                   obs(tuple(topbar("Groceries")), "groceries", "notes/view"), True)


def new_note_episode(body: str = "buy stamps") -> Episode:
    """Create a note: tap +, tap Title, a stray tap on nothing, type, tap Note, type ``body``, save,
    done. True boundaries: 1, 4 (writing the text and saving it is one subgoal). Succeeds only
    when ``body`` is the goal's 'buy stamps'."""
    notes = notes_list(["Groceries"])
    title_sg = (1, "type_into_field", "type 'Errands' as the title")
    body_sg = (2, "write_and_submit", f"write '{body}' as the text and save it")
    steps = [
        (obs(notes, "notes", "notes/list"), tap(notes, "icon:add"), (0, "create_new", "start a new note")),
        (obs(new_note(), "nn", "notes/edit"), tap(new_note(), "field:title"), title_sg),
        (obs(new_note(), "nn-focus", "notes/edit"), Action("tap", (0.5, 0.8)), title_sg),  # focus shows only in pixels
        (obs(new_note(), "nn-focus", "notes/edit"), Action("type", text="Errands"), title_sg),
        (obs(new_note("Errands"), "nn-t", "notes/edit"), tap(new_note("Errands"), "field:body"), body_sg),
        (obs(new_note("Errands"), "nn-t-focus", "notes/edit"), Action("type", text=body), body_sg),
        (obs(new_note("Errands", body), "nn-tb", "notes/edit"), tap(new_note("Errands", body), "icon:save"), body_sg),
        (obs(notes_list(["Errands", "Groceries"]), "notes2", "notes/list"), Action("done"), body_sg),
    ]
    return episode("hand-note", "Create a note titled 'Errands' that says 'buy stamps'", "Notes", steps,
                   obs(notes_list(["Errands", "Groceries"]), "notes2", "notes/list"), body == "buy stamps")


def give_up_episode() -> Episode:
    """Open Settings, open Display, then declare the task impossible. True boundaries: 1, 2."""
    steps = [
        (obs(HOME, "home", "launcher/home"), tap(HOME, "app:settings"), (0, "open_app", "open Settings")),
        (obs(SETTINGS, "settings", "settings/main"), tap(SETTINGS, "row:display"), (1, "open_section", "open the Display page")),
        (obs(display("off"), "display-off", "settings/display"), Action("impossible"), (2, "toggle_option", "turn on Dark theme")),
    ]
    return episode("hand-give-up", "Turn on Dark theme", "Settings", steps,
                   obs(display("off"), "display-off", "settings/display"), False)


def one_step_episode() -> Episode:
    """A single ``done``: no boundaries at all."""
    return episode("hand-one", "Do nothing", "Settings",
                   [(obs(SETTINGS, "settings", "settings/main"), Action("done"), (0, "noop", "do nothing"))],
                   obs(SETTINGS, "settings", "settings/main"), None)


ALL = (dark_theme_episode, wrong_switch_episode, search_episode, new_note_episode, give_up_episode, one_step_episode)
TRUE_BOUNDARIES = {"hand-dark": [1, 2, 6], "hand-wrong-switch": [1, 2], "hand-search": [1, 4], "hand-note": [1, 4],
                   "hand-give-up": [1, 2], "hand-one": []}


def without_truth(ep: Episode, success: bool | None = None, screen: str | None = "tampered") -> Episode:
    """The same episode with its hidden fields changed: success, true screen types, labels, provenance."""
    def hide(o: Observation) -> Observation:
        return replace(o, screen=screen)

    steps = tuple(replace(s, observation=hide(s.observation), subgoal=SubgoalLabel(0, "x", "tampered")) for s in ep.steps)
    return replace(ep, steps=steps, final=hide(ep.final), success=success, provenance={"task": "tampered"})
