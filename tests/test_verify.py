"""make verify: each headline number against the reference within the measured seed spread, each stated
finding checked; the committed reference, spread and findings agree with each other and the README."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from guimem.core.data import DataError
from guimem.core.io import MARKER
from guimem.pipeline import verify as v
from guimem.pipeline.report import stage_order

ROOT = Path(__file__).resolve().parent.parent
WIDTH = 120  # the terminal the README promises make verify fits


def _spread(**metrics: list[float]) -> dict:
    import statistics
    n = len(next(iter(metrics.values())))
    return {"seeds": list(range(n)), "metrics": {
        name: {"per_seed": vals, "mean": round(statistics.fmean(vals), 4), "std": round(statistics.pstdev(vals), 4)}
        for name, vals in metrics.items()}}


def _repo(tmp_path: Path, reference: dict, run: dict, spread: dict, findings: str) -> Path:
    """A repository with stages ``world`` and ``actor``: the reference, this run's metrics, a spread."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "dvc.yaml").write_text("stages:\n  world:\n    cmd: x\n  actor:\n    cmd: y\n")
    for folder, headlines in (("reference/metrics", reference), ("metrics", run)):
        (tmp_path / folder).mkdir(parents=True)
        for stage, metrics in headlines.items():
            (tmp_path / folder / f"{stage}.json").write_text(json.dumps(metrics))
    (tmp_path / "reference" / "findings.yaml").write_text(findings)
    (tmp_path / "spread.json").write_text(json.dumps(spread))
    return tmp_path


REFERENCE = {"world": {"episodes": 400}, "actor": {"text_minus_image": 0.10, "acc_none": 0.50}}
SPREAD = _spread(**{"actor.text_minus_image": [0.10, 0.06, 0.14, 0.08, 0.12],
                    "actor.acc_none": [0.50, 0.49, 0.51, 0.50, 0.50]})
FINDINGS = """findings:
  - id: text-wins
    claim: Text beats the image.
    holds_when:
      - [actor.text_minus_image, ">", 0]
"""


def _verify(root: Path) -> tuple[int, str]:
    lines: list[str] = []
    rc = v.verify(root, root / "metrics", root / "reference", root / "spread.json", out=lines.append)
    return rc, "\n".join(lines)


def test_a_run_equal_to_the_reference_or_within_the_spread_reproduces(tmp_path):
    run = {"world": {"episodes": 400}, "actor": {"text_minus_image": 0.03, "acc_none": 0.52}}
    rc, text = _verify(_repo(tmp_path, REFERENCE, run, SPREAD, FINDINGS))
    assert rc == 0, text
    rows = {line.split()[0]: line.split()[-1] for line in text.splitlines() if line.startswith(("world.", "actor."))}
    assert rows == {"world.episodes": "same", "actor.text_minus_image": "within", "actor.acc_none": "within"}
    assert "text-wins" in text and max(map(len, text.splitlines())) <= WIDTH


def test_a_perturbed_metric_fails_and_is_named(tmp_path):
    run = {"world": {"episodes": 400}, "actor": {"text_minus_image": 0.10, "acc_none": 0.60}}  # far: 0.50 ± 0.054
    rc, text = _verify(_repo(tmp_path, REFERENCE, run, SPREAD, FINDINGS))
    assert rc == 1
    assert "NOT REPRODUCED" in text and "actor.acc_none: far-outside" in text


def test_the_interval_is_students_prediction_interval_of_one_more_draw():
    spread = v.load_spread_entry("a.x", _spread(x=[0.50, 0.49, 0.51])["metrics"]["x"], Path("s.json"))
    # three seeds, sample sd 0.01: t(0.995, 2) = 9.925, times sqrt(1 + 1/3)
    assert spread.half_width(0.99) == pytest.approx(9.9248 * 0.01 * (4 / 3) ** 0.5, rel=1e-4)
    assert spread.contains(0.61, 0.99) and not spread.contains(0.62, 0.99)
    more = v.Spread((0.50, 0.49, 0.51, 0.50, 0.50))  # more seeds, a narrower interval
    assert more.half_width(0.99) < spread.half_width(0.99) / 2
    assert v.Spread((0.5,)).half_width(0.99) == 0.0  # one seed: the number must be the same


def test_m_counts_distinct_random_numbers_and_sets_both_chance_rules():
    spread = {"a.x": v.Spread((0.1, 0.2, 0.3)), "b.x": v.Spread((0.1, 0.2, 0.3)),  # one quantity, two stages
              "a.steps": v.Spread((740.0, 740.0, 740.0)), "a.y": v.Spread((1.0, 2.0, 2.0))}
    assert v.distinct_random(["a.x", "b.x", "a.steps", "a.y", "a.unknown"], spread) == 2
    assert v.far_level(50) == pytest.approx(1 - 0.025 / 50)
    # among 50 numbers at 1% each, P(more than 2 outside) = 1.4% <= 2.5% < P(more than 1) = 8.9%
    assert v.outside_allowance(50) == 2 and v.outside_allowance(10) == 1 and v.outside_allowance(0) == 0


def test_a_few_numbers_outside_pass_and_more_than_chance_allows_fail(tmp_path):
    names = [f"n{i}" for i in range(10)]
    seeds = [0.50, 0.49, 0.51, 0.50, 0.52]  # 99% interval ± 0.058, far (10 numbers) ± 0.071
    reference = {"world": {"episodes": 400}, "actor": {n: 0.50 for n in names}}
    spread = _spread(**{f"actor.{n}": [x + i * 1e-3 for x in seeds] for i, n in enumerate(names)})
    findings = "findings:\n  - {id: f, claim: c, holds_when: [[world.episodes, '>', 0]]}\n"
    one_out = {"world": {"episodes": 400}, "actor": {**reference["actor"], "n0": 0.57}}
    rc, text = _verify(_repo(tmp_path / "one", reference, one_out, spread, findings))
    assert rc == 0 and "1 outside" in text and "more than 1 of its 10 random numbers" in text, text
    two_out = {"world": {"episodes": 400}, "actor": {**one_out["actor"], "n5": 0.435}}
    rc, text = _verify(_repo(tmp_path / "two", reference, two_out, spread, findings))
    assert rc == 1 and "2 numbers outside their 99% intervals, more than the 1 chance allows among 10: actor.n0, " \
                       "actor.n5" in text, text


def test_a_spread_whose_mean_or_std_is_not_its_seeds_is_refused(tmp_path):
    entry = _spread(x=[0.50, 0.49, 0.51])["metrics"]["x"]
    with pytest.raises(DataError) as err:
        v.load_spread_entry("a.x", {**entry, "mean": 0.6}, tmp_path / "s.json")
    assert err.value.field == "metrics.a.x.mean"
    with pytest.raises(DataError) as err:
        v.load_spread_entry("a.x", {**entry, "std": 0.0}, tmp_path / "s.json")
    assert err.value.field == "metrics.a.x.std"


def test_a_number_without_a_spread_must_be_exact_and_a_missing_one_fails(tmp_path):
    run = {"world": {"episodes": 401}, "actor": {"text_minus_image": 0.10}}
    rc, text = _verify(_repo(tmp_path, REFERENCE, run, SPREAD, FINDINGS))
    assert rc == 1
    assert "world.episodes: differs" in text and "actor.acc_none: missing" in text


def test_a_finding_that_does_not_hold_fails_even_within_the_spread(tmp_path):
    run = {"world": {"episodes": 400}, "actor": {"text_minus_image": -0.01, "acc_none": 0.50}}
    spread = _spread(**{"actor.text_minus_image": [0.10, 0.02, 0.18], "actor.acc_none": [0.50, 0.49, 0.51]})
    rc, text = _verify(_repo(tmp_path, REFERENCE, run, spread, FINDINGS))  # 0.10 ± 0.57 (99%): within
    assert rc == 1
    assert "finding text-wins: does not hold (actor.text_minus_image > 0.0)" in text
    assert "actor.text_minus_image: " not in text.split("NOT REPRODUCED")[1]  # the number itself is within


def test_a_new_metric_is_shown_but_is_no_failure(tmp_path):
    run = {**REFERENCE, "actor": {**REFERENCE["actor"], "added": 1.0}}
    rc, text = _verify(_repo(tmp_path, REFERENCE, run, SPREAD, FINDINGS))
    assert rc == 0 and "actor.added" in text and " new" in text


def test_conditions_compare_with_numbers_or_other_metrics_and_a_missing_metric_is_unknown():
    values = {"a.x": 0.3, "a.y": 0.2, "a.flag": True}
    assert v.Condition("a.x", ">", "a.y").holds(values) is True
    assert v.Condition("a.x", "<=", 0.25).holds(values) is False
    assert v.Condition("a.x", ">", "a.z").holds(values) is None
    assert v.Condition("a.flag", ">", 0.0).holds(values) is None  # a bool is not a number
    finding = v.Finding("f", "c", (v.Condition("a.x", ">", 0.0), v.Condition("a.z", ">", 0.0)))
    assert finding.holds(values) is None and finding.metrics == {"a.x", "a.z"}


@pytest.mark.parametrize("text, field", [
    ("findings: 3\n", "findings"),
    ("findings:\n  - {id: a, claim: c}\n", "findings[0].holds_when"),
    ("findings:\n  - {id: a, claim: '', holds_when: [[a.x, '>', 0]]}\n", "findings[0].claim"),
    ("findings:\n  - {id: a, claim: c, holds_when: [[a.x, '=', 0]]}\n", "findings[0].holds_when[0]"),
    ("findings:\n  - {id: a, claim: c, holds_when: [[x, '>', 0]]}\n", "findings[0].holds_when[0]"),
    ("findings:\n  - {id: a, claim: c, holds_when: [[a.x, '>', .nan]]}\n", "findings[0].holds_when[0]"),
    ("findings:\n  - {id: a, claim: c, holds_when: [[a.x, '>']]}\n", "findings[0].holds_when[0]"),
    ("findings:\n  - {id: a, claim: c, holds_when: [[a.x, '>', 0]]}\n  - {id: a, claim: d, holds_when: [[a.x, '>', 0]]}\n",
     "findings[1].id"),
])
def test_a_bad_findings_file_is_refused_naming_the_file_and_the_field(tmp_path, text, field):
    path = tmp_path / "findings.yaml"
    path.write_text(text)
    with pytest.raises(DataError) as err:
        v.load_findings(path)
    assert err.value.field == field and err.value.path == str(path)


def test_a_findings_file_cannot_run_code(tmp_path):
    path = tmp_path / "findings.yaml"
    path.write_text("findings: !!python/object/apply:os.system ['touch pwned']\n")
    with pytest.raises(DataError, match="not valid YAML"):
        v.load_findings(path)
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


@pytest.mark.parametrize("entry, field", [
    ([1, 2], "metrics.a.x"),
    ({"per_seed": [], "mean": 0, "std": 0}, "metrics.a.x.per_seed"),
    ({"per_seed": [1, "2"], "mean": 0, "std": 0}, "metrics.a.x.per_seed"),
    ({"per_seed": [1], "mean": None, "std": 0}, "metrics.a.x.mean"),
    ({"per_seed": [1], "mean": 1, "std": -1}, "metrics.a.x.std"),
])
def test_a_bad_spread_file_is_refused_naming_the_field(tmp_path, entry, field):
    path = tmp_path / "spread.json"
    path.write_text(json.dumps({"metrics": {"a.x": entry}}))
    with pytest.raises(DataError) as err:
        v.load_spread(path)
    assert err.value.field == field and err.value.path == str(path)


def test_the_reference_is_written_whole_and_keeps_the_curated_findings(tmp_path, monkeypatch):
    root = _repo(tmp_path, REFERENCE, REFERENCE, SPREAD, FINDINGS)
    (root / "figures").mkdir()
    (root / "figures" / "actor_curve.png").write_bytes(b"png")
    (root / "reference" / "metrics" / "old.json").write_text("{}")  # an earlier stage's: dropped
    (root / "reference" / MARKER).write_text(v.REFERENCE_KIND)
    monkeypatch.setattr(v, "lock_current", lambda root: True)
    monkeypatch.setattr(v, "_git", lambda root, *args: "" if args[0] == "status" else "abc123")
    v.write_reference(root, root / "reference")
    ref = root / "reference"
    assert sorted(p.name for p in (ref / "metrics").iterdir()) == ["actor.json", "world.json"]
    assert (ref / "figures" / "actor_curve.png").read_bytes() == b"png"
    assert (ref / "findings.yaml").read_text() == FINDINGS
    run = json.loads((ref / "run.json").read_text())
    assert run["commit"] == "abc123" and run["uncommitted_changes"] is False and run["figures"] == 1


def test_the_reference_is_refused_when_the_outputs_are_not_the_locks(tmp_path, monkeypatch):
    root = _repo(tmp_path, REFERENCE, REFERENCE, SPREAD, FINDINGS)
    before = sorted(p.name for p in (root / "reference").rglob("*"))
    monkeypatch.setattr(v, "lock_current", lambda root: False)
    with pytest.raises(DataError, match="dvc repro"):
        v.write_reference(root, root / "reference")
    assert sorted(p.name for p in (root / "reference").rglob("*")) == before


def test_the_reference_never_replaces_a_folder_it_did_not_write(tmp_path, monkeypatch):
    root = _repo(tmp_path, REFERENCE, REFERENCE, SPREAD, FINDINGS)
    (root / "figures").mkdir()
    monkeypatch.setattr(v, "lock_current", lambda root: True)
    monkeypatch.setattr(v, "_git", lambda root, *args: "")
    with pytest.raises(DataError, match="refusing"):
        v.write_reference(root, root / "reference")  # no marker: someone else's folder
    assert (root / "reference" / "findings.yaml").read_text() == FINDINGS


# ----------------------------------------------------------------------------- the committed files
def test_the_committed_workspace_reproduces_the_committed_reference():
    """A fresh clone's metrics/ are the reference run's: make verify passes before anything runs."""
    lines: list[str] = []
    rc = v.verify(ROOT, ROOT / "metrics", ROOT / v.REFERENCE, ROOT / v.SPREAD, out=lines.append)
    text = "\n".join(lines)
    assert rc == 0, text
    assert max(map(len, text.splitlines())) <= WIDTH


def test_the_reference_has_every_stage_and_every_figure_a_fresh_clone_would_make():
    run = json.loads((ROOT / "reference" / "run.json").read_text())
    assert run["stages"] == list(stage_order(ROOT))
    import yaml
    declared = {out if isinstance(out, str) else next(iter(out))
                for stage in yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"].values()
                for out in stage.get("outs", [])}
    figures = {Path(p).name for p in declared if p.startswith("figures/") and p.endswith(".png")}
    assert {p.name for p in (ROOT / "reference" / "figures").glob("*.png")} == figures


def test_every_stated_finding_holds_at_every_world_seed_and_is_stated_in_the_readme():
    findings = v.load_findings(ROOT / v.REFERENCE / v.FINDINGS)
    spread = v.load_spread(ROOT / v.SPREAD)
    reference = v.flat_metrics({p.stem: json.loads(p.read_text()) for p in (ROOT / "reference/metrics").glob("*.json")})
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert findings
    for f in findings:
        assert f.holds(reference), f.id
        assert f.metrics <= set(spread) | set(reference), f.id
        for i, values in enumerate(v.seed_values(spread, len(v.spread_seeds(ROOT / v.SPREAD)))):
            assert f.holds({**reference, **values}) is True, f"{f.id} at seed index {i}"
        assert f.claim in readme, f"the README does not state finding {f.id!r} as findings.yaml words it"
