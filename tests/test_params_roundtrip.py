"""params.yaml survives ``dvc exp run -S key=value``: DVC rewrites the file with the override and
nothing else changes, neither a value nor a comment nor the layout.

``dvc exp run -S`` applies its overrides with ``dvc.utils.hydra.apply_overrides``, which loads
params.yaml with ruamel.yaml (round-trip), replaces every value with the overridden config and
dumps it again (block style). The tests call that function on a copy of params.yaml.
"""

from __future__ import annotations

import copy
import difflib
from pathlib import Path
from typing import Any

import pytest
import yaml
from dvc.utils.hydra import apply_overrides

PARAMS = Path(__file__).resolve().parents[1] / "params.yaml"

# ``-S`` overrides that set a key to the value it already has: one per kind of value.
NO_OP = [
    "base.seed=0",
    "graph_build.graph.tau=0.9",  # a key of a group (the config it builds)
    "layer_analysis.preference.n_samples=8",  # a key of a group
    "world.phone.themes=true",
    "segmentation.judge=rule",
    "retrieval_eval.ks=[1,3,5]",
]

# (override, the key it sets, the value params.yaml must then hold)
CHANGES = [
    ("graph_build.graph.tau=0.85", "graph_build.graph.tau", 0.85),  # float, in a group
    ("real_graph.graph.theta=0.8", "real_graph.graph.theta", 0.8),
    ("pretrain.model.exact_match=false", "pretrain.model.exact_match", False),  # bool, in a group
    ("pretrain.phones=[0,1,2,3,5]", "pretrain.phones", [0, 1, 2, 3, 5]),  # a list that shrinks
    ("world.phone.n_train=200", "world.phone.n_train", 200),  # int
    ("world.phone.themes=false", "world.phone.themes", False),  # bool
    ("segmentation.judge=llm", "segmentation.judge", "llm"),  # string
    ("retrieval_eval.ks=[1,3]", "retrieval_eval.ks", [1, 3]),  # a list that shrinks
    ("retrieval_eval.ks=[1,3,5,10]", "retrieval_eval.ks", [1, 3, 5, 10]),  # a list that grows
    ("graph_build.theta_sweep=[0.7,0.8,0.9,0.95,0.99]", "graph_build.theta_sweep", [0.7, 0.8, 0.9, 0.95, 0.99]),
]


def overridden(tmp_path: Path, override: str) -> tuple[str, str]:
    """params.yaml's text before and after ``dvc exp run -S <override>`` rewrites a copy of it."""
    path = tmp_path / "params.yaml"
    original = PARAMS.read_text()
    path.write_text(original)
    apply_overrides(path, [override])
    return original, path.read_text()


def value_lines(text: str, key: str) -> set[int]:
    """0-based lines of ``text`` that hold the value of the dotted ``key`` (every item of a list)."""
    node = yaml.compose(text)
    for part in key.split("."):
        node = next(value for name, value in node.value if name.value == part)
    lines: set[int] = set()
    pending = [node]
    while pending:
        node = pending.pop()
        if isinstance(node, yaml.ScalarNode):
            lines.update(range(node.start_mark.line, node.end_mark.line + 1))
        else:  # a sequence (or mapping): its scalars' lines, not the lines after its end
            pending.extend(node.value)
    return lines


def changed_lines(before: str, after: str) -> set[int]:
    """0-based lines of ``before`` that a line diff to ``after`` replaces or deletes; lines
    inserted count as a change of the line they follow."""
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    changed: set[int] = set()
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            changed.update(range(i1, i2))
        elif tag == "insert":
            changed.add(i1 - 1)
    return changed


def with_value(params: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of ``params`` whose dotted ``key`` holds ``value``."""
    updated = copy.deepcopy(params)
    *sections, last = key.split(".")
    target = updated
    for section in sections:
        target = target[section]
    target[last] = value
    return updated


@pytest.mark.parametrize("override", NO_OP)
def test_an_override_to_the_current_value_leaves_the_file_byte_for_byte(tmp_path: Path, override: str) -> None:
    original, rewritten = overridden(tmp_path, override)
    diff = "".join(difflib.unified_diff(original.splitlines(True), rewritten.splitlines(True), n=0))
    assert rewritten == original, f"dvc exp run -S {override} rewrites params.yaml:\n{diff}"


@pytest.mark.parametrize(("override", "key", "value"), CHANGES, ids=[case[0] for case in CHANGES])
def test_an_override_changes_only_the_lines_of_its_value(tmp_path: Path, override: str, key: str, value: Any) -> None:
    original, rewritten = overridden(tmp_path, override)

    assert yaml.safe_load(rewritten) == with_value(yaml.safe_load(original), key, value)
    changed = changed_lines(original, rewritten)
    diff = "".join(difflib.unified_diff(original.splitlines(True), rewritten.splitlines(True), n=0))
    assert changed, f"dvc exp run -S {override} left params.yaml as it was"
    assert changed <= value_lines(original, key), f"dvc exp run -S {override} changes more than {key}:\n{diff}"
