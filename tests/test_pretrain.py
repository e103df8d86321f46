"""Pretraining (``make pretrain``, :mod:`guimem.pipeline.pretrain`): a corpus of training phones only, the
actor saved with its model card in one save, and a pipeline that reads the committed actor and never
trains it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from guimem.actors.mini.policy import CARD_FILES, CARD_JSON, CARD_README, MiniActor
from guimem.core.data import DataError
from guimem.core.store import load_episodes
from guimem.phone.config import WorldConfig
from guimem.pipeline.pretrain import MemorySettings, PretrainConfig, corpus_world, pretrain, read_settings

REPO = Path(__file__).resolve().parents[1]
COMMITTED = REPO / "pretrained" / "actor"


def test_the_corpus_runs_on_training_phones_only():
    phone = WorldConfig()  # variants 0-3 train, 4 evaluation
    world = corpus_world(PretrainConfig(phones=(0, 1, 5, 9), episodes_per_phone=10), phone)
    assert world.train_variants == (0, 1, 5, 9) and 4 not in world.train_variants and world.variants == 10
    assert (world.n_train, world.n_test, world.n_memory) == (40, 0, 0)
    with pytest.raises(DataError) as err:
        corpus_world(PretrainConfig(phones=(0, 4)), phone)
    assert err.value.field == "pretrain.phones" and "[4]" in err.value.message


@pytest.mark.slow
def test_a_tiny_pretraining_saves_the_actor_and_its_card(tmp_path):
    config = PretrainConfig(seed=3, phones=(0, 6), episodes_per_phone=5, k_folds=2, model={"hidden_size": 16,
                            "intermediate_size": 32, "num_hidden_layers": 2, "history_words": 2, "done_match": True},
                            training={"epochs": 1}, dagger_rounds=1, dagger_tasks=3, dagger_epochs=1,
                            dagger_max_steps=5, embed_workers=1, torch_threads=1)
    memory = MemorySettings(image_embedder="pixels", text_embedder="hashing", pca_dim=8)
    out = tmp_path / "actor"
    card = pretrain(config, WorldConfig(), memory, out, tmp_path / "work", cache_dir=tmp_path / "cache",
                    progress=False, command="test")
    corpus = load_episodes(tmp_path / "work" / "world" / "train", verify_images=False)
    assert {e.phone for e in corpus} == {0, 6} and len(corpus) == 10
    assert card["corpus"]["episodes"] == 10 and card["corpus"]["phones"] == [0, 6]
    assert card["pretrain"] == config.to_dict() and card["world"]["train_variants"] == [0, 6]
    (dagger,) = card["history"]["dagger"]
    assert dagger["episodes"] == 3 and card["corpus"]["dagger_examples"] == dagger["kept"]
    assert len(card["history"]["train_loss"]) == 2 and card["history"]["behaviour_cloning_epochs"] == 1
    for rule in ("aitw", "element"):
        scores = card["validation"][rule]
        assert set(scores) == {"none", "text", "image", "type_none"} and all(0 <= v <= 1 for v in scores.values())
    assert card["validation"]["element"]["none"] <= card["validation"]["aitw"]["none"]
    actor = MiniActor.load(out)
    assert actor.config.hidden_size == 16 and actor.config.history_words == 2
    assert json.loads((out / CARD_JSON).read_text()) == card
    assert "pretraining seed 3" in (out / CARD_README).read_text()


def test_params_yaml_holds_the_configs_defaults_beside_the_recipe_of_the_actor():
    """Each key of params.yaml's pretrain section outside the actor's recipe (``model``, ``training``:
    the committed actor's shape and schedule) is PretrainConfig's default: one default, one place."""
    section = yaml.safe_load((REPO / "params.yaml").read_text())["pretrain"]
    defaults = PretrainConfig().to_dict()
    assert set(section) == set(defaults)
    assert {k: v for k, v in section.items() if k not in ("model", "training")} == \
        {k: v for k, v in defaults.items() if k not in ("model", "training")}


def test_a_save_without_a_card_leaves_no_stale_card_and_refuses_other_names(tmp_path):
    from actor_fixtures import tiny_actor

    actor, folder = tiny_actor(), tmp_path / "actor"
    actor.save(folder, card={CARD_JSON: "{}\n", CARD_README: "# card\n"})
    assert CARD_FILES <= {p.name for p in folder.iterdir()}
    (folder / "README.md").write_text("mine")  # a user's file is carried on, a README too
    actor.save(folder)
    names = {p.name for p in folder.iterdir()}
    assert not CARD_FILES & names and "README.md" in names  # the old card described other weights
    with pytest.raises(DataError) as err:
        actor.save(folder, card={"config.json": "{}"})
    assert err.value.field == "card"
    assert (folder / "README.md").read_text() == "mine"


# ----------------------------------------------------------------------------- the pipeline never trains it
def _dvc() -> dict:
    return yaml.safe_load((REPO / "dvc.yaml").read_text())


def test_no_stage_writes_or_trains_the_actor():
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    actor_model = params["closed_loop"]["actor"]["actor_model"]
    assert actor_model == "pretrained/actor"
    for name, stage in _dvc()["stages"].items():
        outs = [next(iter(o)) if isinstance(o, dict) else o for o in stage.get("outs", [])]
        assert not any(o.startswith("pretrained") or "actor_model" in o for o in outs), name
        assert "guimem.pipeline.pretrain" not in stage["cmd"], name
    assert "${actor.actor_dir}" in _dvc()["stages"]["actor"]["deps"]
    assert params["actor"]["actor_dir"] == actor_model  # 04 meets the actor 05-09 play
    for notebook in sorted((REPO / "notebooks").glob("*.py")):
        text = notebook.read_text()
        trains = r"^[^#\n]*\b(train_actor|run_dagger|pretrain)\(|^\s*(from|import) guimem\.train\.pretrain\b"
        assert not re.search(trains, text, re.M), notebook.name


def test_the_lock_records_the_committed_actor_as_an_input():
    """A fresh clone's ``dvc repro`` finds the committed actor unchanged (the lock's hash of it) and
    plays it; nothing in the lock lists it as an output."""
    lock = yaml.safe_load((REPO / "dvc.lock").read_text())["stages"]
    for name in ("actor", "closed_loop", "layer_analysis", "routing_stats"):
        assert "pretrained/actor" in {d["path"] for d in lock[name]["deps"]}, name
    assert not any(o["path"].startswith("pretrained") for s in lock.values() for o in s.get("outs", []))


def test_the_committed_actor_is_what_params_yaml_pretrains():
    actor = MiniActor.load(COMMITTED)
    card = json.loads((COMMITTED / CARD_JSON).read_text())
    config, phone, memory, evidence = read_settings(REPO / "params.yaml")
    assert card["pretrain"] == config.to_dict() and card["memory"] == memory.to_dict()
    assert card["judge_evidence"] == evidence
    assert card["world"] == corpus_world(config, phone).to_dict()
    assert not set(card["world"]["train_variants"]) & set(phone.eval_variants)
    assert actor.config.max_history == config.actor_config().max_history
    assert re.fullmatch(r"[0-9a-f]{40}", card["commit"]), "pretrained from a clean, committed tree"
    assert card["parameters"] == sum(p.numel() for p in actor.model.parameters())
