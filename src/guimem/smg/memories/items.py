"""What a memory returns: :class:`MemoryItem` (one past subgoal, step or trajectory, ready to render)
and :class:`Retrieved` (the items of one query, best first), and the checks an item read back passes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from guimem.core.data import SUCCESS_LABELS, Action, DataError, UIElement
from guimem.core.io import check_number, relative_path

ITEM_KINDS: tuple[str, ...] = ("subgoal", "step", "task")  # what one item stands for


@dataclass(frozen=True)
class MemoryItem:
    """One retrieved experience: a subgoal, a step or a whole trajectory of a past episode."""

    id: str  # "<memory>:<episode id>#<index>" (index: subgoal, step, or 0 for a trajectory)
    kind: str  # "subgoal", "step" or "task"
    episode_id: str
    first_step: int  # steps first..last (inclusive) of the past episode
    last_step: int
    success: str  # the judge's label: yes / no / uncertain
    goal: str  # the past task's goal
    text: str  # the sub-intent (subgoal), the action in words (step), the goal (task)
    effect: str  # what changed from the first to the last screen
    anchor: str  # screenshot (relative to the store) the first action was taken on
    outcome: str  # screenshot after the last action
    actions: tuple[Action, ...]
    phrases: tuple[str, ...]  # each action in words, on its own screen (guimem.core.describe)
    targets: tuple[UIElement | None, ...]  # each action's target element on its own screen
    shots: tuple[str, ...] = ()  # each action's own screenshot (relative to the store); () = all on the anchor
    score: float = 0.0  # screen cosine that retrieved it (its node's, for graph memories)
    goal_score: float | None = None  # cosine of its goal to the query goal (when ranked by goal)
    node: int | None = None  # the graph node it left from (graph memories)

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in ("id", "kind", "episode_id", "first_step", "last_step", "success",
                                           "goal", "text", "effect", "anchor", "outcome", "phrases",
                                           "score", "goal_score", "node")}
        d["phrases"] = list(self.phrases)
        d["actions"] = [a.to_dict() for a in self.actions]
        d["targets"] = [t.to_dict() if t is not None else None for t in self.targets]
        d["shots"] = list(self.shots)
        return d

    def shot(self, j: int) -> str:
        """The screenshot action ``j`` was taken on."""
        return self.shots[j] if self.shots else self.anchor

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], path: str | None = None) -> "MemoryItem":
        """An item read back, every field checked; a :class:`DataError` at ``path`` names the bad one."""
        if not isinstance(d, Mapping):
            raise DataError("item", f"expected an object, got {type(d).__name__}", path)
        for name in ("id", "kind", "episode_id", "success", "goal", "text", "effect", "anchor", "outcome"):
            if not isinstance(d.get(name), str):
                raise DataError(name, f"expected a string, got {d.get(name)!r:.60}", path)
        for name, allowed in (("kind", ITEM_KINDS), ("success", SUCCESS_LABELS)):
            if d[name] not in allowed:
                raise DataError(name, f"expected one of {allowed}, got {d[name]!r:.60}", path)
        for name in ("anchor", "outcome"):
            relative_path(d[name], name, path)
        first = check_number(d.get("first_step"), "first_step", lo=0, integer=True, path=path)
        last = check_number(d.get("last_step"), "last_step", lo=0, integer=True, path=path)
        if last < first:
            raise DataError("last_step", f"must be >= first_step ({first}), got {last}", path)
        n = last - first + 1
        for name in ("actions", "phrases", "targets"):
            if not isinstance(d.get(name), list) or len(d[name]) != n:
                raise DataError(name, f"expected a list of {n} (steps {first}..{last}), got {d.get(name)!r:.60}", path)
        if not all(isinstance(t, str) for t in d["phrases"]):
            raise DataError("phrases", "expected strings", path)
        actions, targets = [], []
        for j, (a, t) in enumerate(zip(d["actions"], d["targets"])):
            try:
                actions.append(Action.from_dict(a))
            except DataError as err:
                raise err.at(path, f"actions[{j}]") from None
            try:
                targets.append(UIElement.from_dict(t) if t is not None else None)
            except DataError as err:
                raise err.at(path, f"targets[{j}]") from None
        shots = d.get("shots", [])
        if not isinstance(shots, list) or (shots and len(shots) != n):
            raise DataError("shots", f"expected a list of {n} screenshots (steps {first}..{last}), got {shots!r:.60}", path)
        for j, rel in enumerate(shots):
            relative_path(rel, f"shots[{j}]", path)
        if shots and shots[0] != d["anchor"]:  # the first action is taken on the anchor screen
            raise DataError("shots", f"the first action's screenshot {shots[0]!r:.80} is not the anchor "
                                     f"{d['anchor']!r:.80}", path)
        goal_score, node = d.get("goal_score"), d.get("node")
        return cls(id=d["id"], kind=d["kind"], episode_id=d["episode_id"], first_step=first, last_step=last,
                   success=d["success"], goal=d["goal"], text=d["text"], effect=d["effect"], anchor=d["anchor"],
                   outcome=d["outcome"], actions=tuple(actions), phrases=tuple(d["phrases"]), targets=tuple(targets),
                   shots=tuple(shots),
                   score=float(check_number(d.get("score", 0.0), "score", path=path)),
                   goal_score=None if goal_score is None else check_number(goal_score, "goal_score", path=path),
                   node=None if node is None else check_number(node, "node", lo=0, integer=True, path=path))


@dataclass(frozen=True)
class Retrieved:
    """What a memory returned for one query, in order (best first)."""

    memory: str
    items: tuple[MemoryItem, ...]
    nodes: tuple[tuple[int, float], ...] = ()  # (node, cosine) of graph memories, best first

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(i.id for i in self.items)

    def to_dict(self) -> dict[str, Any]:
        return {"memory": self.memory, "nodes": [list(n) for n in self.nodes],
                "items": [i.to_dict() for i in self.items]}

