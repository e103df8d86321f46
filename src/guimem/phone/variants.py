"""App variants: the same app as different phone makers and versions ship it.

Variant 0 of every app is its reference design (:data:`guimem.phone.toolkit.REFERENCE`). Every
other variant is drawn, deterministically from ``(app, index)`` and whether it is a training or an
evaluation variant, by :func:`app_variant`:

* **synonyms**: each of the app's own labels keeps its reference word or takes one of its
  synonyms (:data:`SYNONYMS`), so "Dark mode" may read "Night mode" and "Trash" "Bin". A label's
  last synonym is kept for evaluation variants (:func:`synonym_pools`): a word no training
  variant ever shows, so on an evaluation phone only experience tells that "Bin" is the trash;
* **glyph designs**: each toolbar function (search, add, favourite, ...) is drawn in the design of
  the variant (:data:`DESIGNED_GLYPHS`). Training variants keep the familiar drawing or use a
  design of their own; evaluation variants always use a design of their own, so the designs seen
  in training and in evaluation are disjoint and what a new glyph does is known only from a
  picture of having used it;
* **labelled or label-free controls**: on a training variant each toolbar glyph carries an
  accessibility label (``"Search"``) or stays a bare icon; evaluation variants label none;
* **where a function sits**: the app's settings open from the overflow (⋮) menu or from a gear
  in the top bar, and some switches sit on another settings page;
* **order**: menus, tabs and dialog buttons have this variant's order (icon toolbars are
  reordered per episode, :data:`guimem.phone.toolkit.EPISODE_KEYS`).

A phone runs variant ``i`` of every app (one maker's phone). The actor learns on some variants
and is evaluated on others (``params.yaml: world.phone.train_variants``): on an unfamiliar variant only
experience tells where things are, what they are called and what a bare icon does.
"""

from __future__ import annotations

import functools
import random
from typing import Mapping, Sequence

from guimem.phone.apps import APPS
from guimem.phone.toolkit import DESIGNED_GLYPHS, GLYPH_WORDS, AppVariant, stable_int

SYNONYMS: dict[str, dict[str, tuple[str, ...]]] = {
    "settings": {
        "Network & internet": ("Connections", "Wireless & networks"), "Display": ("Screen", "Display & brightness"),
        "Sound": ("Sounds & vibration", "Audio"), "Notifications": ("Alerts",), "Apps": ("Applications", "App manager"),
        "Battery": ("Power", "Battery & power"), "Wi-Fi": ("WLAN",), "Dark theme": ("Dark mode", "Night mode"),
        "Auto-rotate": ("Rotate screen",), "Do not disturb": ("Silent mode", "Quiet hours"),
        "Battery saver": ("Power saving", "Low power mode"), "Vibrate on ring": ("Vibrate for calls",),
        "Airplane mode": ("Flight mode",), "Clear cache": ("Delete cache", "Free up space"), "Font size": ("Text size",),
        "Ringtone": ("Phone ringtone",), "Search settings": ("Find a setting",)},
    "notes": {
        "Preferences": ("Settings", "Options"), "Display": ("Appearance", "Look"), "Editor": ("Writing", "Editing"),
        "Backup": ("Sync", "Cloud"), "Dark mode": ("Night mode", "Dark theme"), "Large text": ("Bigger text", "Large font"),
        "Show previews": ("Note previews", "Preview lines"), "Auto-save": ("Save automatically",),
        "Spell check": ("Check spelling", "Spelling"), "Trash": ("Bin", "Recently deleted"),
        "Delete": ("Remove", "Move to bin"), "Pin": ("Keep on top", "Star"), "Rename": ("Edit title",),
        "Restore": ("Put back", "Recover"), "Delete forever": ("Erase", "Delete permanently"),
        "Empty trash": ("Empty bin", "Clear all")},
    "messages": {
        "Settings": ("Options", "More"), "Chats": ("Conversations", "Inbox"), "Calls": ("Call log",),
        "Appearance": ("Display", "Chat style"), "Notifications": ("Alerts",), "Privacy": ("Security",),
        "Dark mode": ("Night mode", "Dark theme"), "Large text": ("Bigger text",),
        "Bubble colours": ("Coloured bubbles", "Chat colours"), "Sounds": ("Message sounds", "Tones"),
        "Vibrate": ("Vibration",), "Message previews": ("Show previews", "Preview text"),
        "Read receipts": ("Read reports", "Seen status"), "Typing indicator": ("Show typing",),
        "Mute": ("Silence", "Mute notifications"), "Delete chat": ("Remove chat", "Delete conversation"),
        "Delete": ("Remove",), "Block": ("Block contact",)},
    "shop": {
        "Account": ("Profile", "Me"), "Deals": ("Offers", "Sales"), "Settings": ("Preferences",),
        "Appearance": ("Display", "Theme"), "Notifications": ("Alerts",), "Dark mode": ("Night mode", "Dark theme"),
        "Compact list": ("Dense list", "Small rows"), "Deal alerts": ("Offer alerts",),
        "Order updates": ("Delivery updates",), "Add to cart": ("Add to basket", "Buy"),
        "Checkout": ("Go to checkout", "Pay now"), "Place order": ("Buy now", "Confirm order"),
        "Orders": ("My orders", "Purchases"), "Wishlist": ("Saved items", "Favourites"), "Cart": ("Basket", "Bag")},
    "gallery": {
        "Albums": ("Collections", "Library"), "Photos": ("Pictures", "All photos"), "Settings": ("Preferences", "Options"),
        "Dark mode": ("Night mode", "Dark theme"), "Show dates": ("Show date taken",),
        "Auto backup": ("Cloud backup", "Sync photos"), "Trash": ("Bin", "Recently deleted"),
        "Restore": ("Recover", "Put back"), "Delete": ("Remove", "Move to bin"), "Delete forever": ("Erase",),
        "Edit": ("Adjust",)},
    "clock": {
        "Alarm": ("Alarms",), "Timer": ("Countdown",), "World": ("Cities",), "Stopwatch": ("Chrono",),
        "Settings": ("Preferences", "Options"), "Display": ("Appearance", "Clock style"),
        "Alarms": ("Alarm settings", "Alarm options"), "Dark mode": ("Night mode", "Dark theme"),
        "24-hour clock": ("24-hour time", "Use 24-hour format"), "Show seconds": ("Display seconds",),
        "Gradual volume": ("Gentle wake-up", "Increase volume slowly"), "Vibrate": ("Vibration",),
        "Delete": ("Remove",), "Start": ("Go", "Begin"), "Skip next": ("Skip once",)},
}
"""Per app: its own labels (reference words) and the synonyms other variants use instead."""

P_SYNONYM = 0.6  # chance that a variant uses a synonym for a label (else the reference word)
P_LABELLED = 0.5  # chance that a training variant labels a toolbar glyph (evaluation variants label none)
P_OWN_DESIGN = 0.5  # chance that a training variant draws a toolbar function in a design of its own
P_MOVED = 0.35  # chance that a variant moves a switch to another settings page of the app


def synonym_pools(alternatives: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A label's synonyms for training variants and for evaluation variants: the last one is kept
    for evaluation (a word no training phone shows), the others are the training variants'."""
    return alternatives[:-1], alternatives[-1:]


@functools.lru_cache(maxsize=None)
def app_variant(app: str, index: int, evaluation: bool = False) -> AppVariant:
    """Variant ``index`` of ``app`` (0: the reference design, a training variant), the same on every
    machine; ``evaluation``: a variant held out from training (its own designs, words, no labels)."""
    if app not in APPS:
        raise KeyError(f"unknown app {app!r}")
    if index < 0:
        raise ValueError(f"a variant index is >= 0, got {index}")
    if index == 0:
        if evaluation:
            raise ValueError("variant 0 is the reference design, a training variant")
        return AppVariant(app, 0)
    rng = random.Random(stable_int("variant", app, index))
    words = []
    for label, alternatives in SYNONYMS.get(app, {}).items():
        pool = synonym_pools(alternatives)[1 if evaluation else 0]
        if rng.random() < P_SYNONYM and pool:
            words.append((label, rng.choice(pool)))
    labelled = frozenset(g for g in sorted(GLYPH_WORDS) if rng.random() < P_LABELLED and not evaluation)
    designs = tuple((g, index) for g in sorted(DESIGNED_GLYPHS) if evaluation or rng.random() < P_OWN_DESIGN)
    spec = APPS[app]
    entry = rng.choice(("overflow", "toolbar")) if spec.settings is not None else "overflow"
    return AppVariant(app, index, tuple(words), labelled, entry, _moves(spec.TOGGLE_SECTIONS, rng),
                      rng.getrandbits(32), designs)


def unseen_words(train_variants: Sequence[int], eval_variants: Sequence[int]) -> frozenset[str]:
    """The labels the evaluation variants show that no training variant (nor the reference design)
    does: the synonyms only experience of an evaluation phone teaches."""
    def shown(variants: Sequence[int], evaluation: bool) -> set[str]:
        return {word for v in variants for app in APPS for _, word in app_variant(app, v, evaluation).words}
    reference = {label for labels in SYNONYMS.values() for label in labels}
    return frozenset(shown(eval_variants, True) - shown(train_variants, False) - reference)


def _moves(sections: Mapping[str, tuple[tuple[str, str], ...]], rng: random.Random) -> tuple[tuple[str, str], ...]:
    """Switches moved to another settings page, leaving no page without a switch."""
    if len(sections) < 2:
        return ()
    left = {s: len(items) for s, items in sections.items()}
    moved = []
    for screen, items in sections.items():
        for key, _ in items:
            if left[screen] > 1 and rng.random() < P_MOVED:
                to = rng.choice([s for s in sections if s != screen])
                moved.append((key, to))
                left[screen] -= 1
                left[to] += 1
    return tuple(moved)


def phone_variants(index: int, evaluation: bool = False) -> dict[str, AppVariant]:
    """Variant ``index`` of every app: one phone maker's phone (``evaluation``: held out from training)."""
    return {key: app_variant(key, index, evaluation) for key in APPS}
