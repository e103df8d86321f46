"""The interrupting popups (rate us, allow notifications, what's new, a survey): a modal dialog over
any app, which dismissing closes and accepting turns into a dead end.
"""

from __future__ import annotations

from guimem.phone.toolkit import Builder, Cmd, Page, PhoneState, View

POPUPS: dict[str, tuple[str, str, tuple[tuple[str, str, Cmd], ...], bool]] = {
    # kind: (title, body, buttons (label, id, command), has a label-free close icon)
    "rate": ("Enjoying {app}?", "Rate us in the store.", (("Not now", "btn:dismiss", ("dismiss",)), ("Rate", "btn:accept", ("accept",))), False),
    "notifications": ("Allow notifications?", "{app} would like to notify you.",
                      (("Don't allow", "btn:dismiss", ("dismiss",)), ("Allow", "btn:allow", ("dismiss",))), False),
    "whats_new": ("What's new in {app}", "Faster and fresher.", (("Got it", "btn:dismiss", ("dismiss",)),), True),
    "survey": ("Help us improve", "A 1-minute survey about {app}?", (("Later", "btn:dismiss", ("dismiss",)), ("Start", "btn:accept", ("accept",))), True),
}


def build_popup(b: Builder, kind: str, app_name: str, state: PhoneState) -> None:
    """Add the interrupting popup ``kind`` as a modal overlay (buttons shuffled per episode)."""
    title, body, buttons, close = POPUPS[kind]
    order = View(state, "popup", b.page or Page("")).perm(f"popup:{kind}", buttons)
    b.dialog(title.format(app=app_name), body.format(app=app_name), order, close=("dismiss",) if close else None)

