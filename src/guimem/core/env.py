"""The environment interface every phone implements — the built-in world and a real device alike.

An environment is started on a :class:`Task` with ``reset(task, seed)`` and driven with
``step(action)``; both return a :class:`WorldObservation` (the screen's picture and UI tree).
A task is goal-first: what the agent reads is its ``goal``; a real phone or a recorded data set
needs nothing more (the app, when known). Tasks of the built-in world also carry the template
and parameters they were drawn from (:func:`guimem.phone.tasks.make_task`), which the world
needs to set the phone up and to check success.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Protocol

from PIL import Image

from guimem.core.data import Action, DataError, Observation, UIElement


@dataclass(frozen=True)
class Task:
    """What the agent is asked to do: the ``goal`` it reads, and where the task came from."""

    goal: str  # the instruction the agent reads
    app: str | None = None  # key of the app the task is about, when known
    template: str | None = None  # the built-in world's template id; None for any other task
    params: tuple[tuple[str, str], ...] = ()  # the template's parameters, sorted by name

    @property
    def p(self) -> dict[str, str]:
        """The template parameters as a dict."""
        return dict(self.params)

    def to_dict(self) -> dict[str, Any]:
        """A template task is stored as its template and parameters (the goal follows from them);
        any other task as its goal and app."""
        if self.template is not None:
            return {"template": self.template, "params": dict(self.params)}
        return {"goal": self.goal, "app": self.app}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], path: str | None = None) -> "Task":
        """A task stored by :meth:`to_dict` without a template (template tasks are rebuilt by
        :func:`guimem.phone.tasks.task_from_dict`, which knows the templates)."""
        if not isinstance(d, Mapping):
            raise DataError("task", f"expected an object, got {type(d).__name__}", path)
        if "template" in d:
            raise DataError("task.template", "a template task is rebuilt by guimem.phone.tasks.task_from_dict", path)
        goal, app = d.get("goal"), d.get("app")
        if not isinstance(goal, str) or not goal.strip():
            raise DataError("task.goal", f"expected a non-empty string, got {goal!r:.60}", path)
        if app is not None and not isinstance(app, str):
            raise DataError("task.app", f"expected a string or null, got {app!r:.60}", path)
        return cls(goal=goal, app=app)


@dataclass(frozen=True)
class WorldObservation:
    """One screen: the picture, its UI tree, the true screen type, and a content key for caching."""

    image: Image.Image | None  # None only from a world that does not render (planning on a copy)
    elements: tuple[UIElement, ...]
    screen: str | None  # true screen type (analysis only: no method may read it); None when unknown (a real phone)
    key: str  # 16 hex digits identifying the rendered pixels (equal keys -> equal images)

    def to_observation(self, screenshot: str) -> Observation:
        """The :class:`guimem.core.data.Observation` of this screen, with its screenshot at ``screenshot``."""
        return Observation(screenshot=screenshot, elements=self.elements, screen=self.screen)


class Env(Protocol):
    """The interface the world and the real-device backend share."""

    def reset(self, task: Task, seed: int, variant: int = 0) -> WorldObservation:
        """Start ``task`` (``seed`` fixes all randomness; ``variant``: which variant of the apps a
        simulated phone runs) and return the first screen."""
        ...

    def step(self, action: Action) -> tuple[WorldObservation, bool, dict[str, Any]]:
        """Run ``action``; return the next screen, whether the episode ended, and info."""
        ...
