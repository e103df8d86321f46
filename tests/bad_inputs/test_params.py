"""Bad stage parameters, each with its exact outcome: a copy of the committed params.yaml with one
value changed (written as a user would write it in YAML), read as dvc.yaml's stage command reads
it, refused before any kernel starts with a DataError naming the params.yaml key and the file, or,
for a value DVC interpolates into a ``-p`` (``${base.seed}``), the parameter and no file.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from guimem.core.data import DataError
from guimem.pipeline.runner import check_parameters, main
from params_support import DVC_STAGES, REPO, edited_params, stage_argv, stage_inputs

pytestmark = pytest.mark.bad_input

PARAMS = "params.yaml"  # the expected file: the edited copy of params.yaml
NO_FILE = None  # a -p value: named by its parameter, with "(passed with -p)"

# (case id, dvc stage run, (section, key, value as written in YAML), field named, file named)
CASES = [
    # 00_world: WorldConfig's own checks, types from its defaults, and the relations it lacks
    ("world_themes_the_string_no", "world", ("world.phone", "themes", '"no"'), "world.phone.themes", PARAMS),
    ("world_shuffle_an_int", "world", ("world.phone", "shuffle", "1"), "world.phone.shuffle", PARAMS),
    ("world_n_train_1e3_is_a_yaml_string", "world", ("world.phone", "n_train", "1e3"), "world.phone.n_train", PARAMS),
    ("world_n_train_a_float", "world", ("world.phone", "n_train", "400.0"), "world.phone.n_train", PARAMS),
    ("world_n_test_negative", "world", ("world.phone", "n_test", "-5"), "world.phone.n_test", PARAMS),
    ("world_dialog_prob_above_one", "world", ("world.phone", "dialog_prob", "1.5"), "world.phone.dialog_prob", PARAMS),
    ("world_p_wrong_tap_nan", "world", ("world.phone", "p_wrong_tap", ".nan"), "world.phone.p_wrong_tap", PARAMS),
    ("world_test_unseen_share_inf", "world", ("world.phone", "test_unseen_share", ".inf"),
     "world.phone.test_unseen_share", PARAMS),
    ("world_success_min_above_max", "world", ("world.phone", "success_min", "0.95"), "world.phone.success_min", PARAMS),
    ("world_image_width_odd", "world", ("world.phone", "image_width", "181"), "world.phone.image_width", PARAMS),
    ("world_unknown_template", "world", ("world.phone", "unseen_templates", "[notes.nope]"),
     "world.phone.unseen_templates", PARAMS),
    ("world_unseen_templates_not_a_list", "world", ("world.phone", "unseen_templates", "notes.rename"),
     "world.phone.unseen_templates", PARAMS),
    ("world_typo_n_trian", "world", ("world.phone", "n_trian", "10"), "world.phone.n_trian", PARAMS),
    # 1e3 is a string to YAML 1.1 and 1000.0 to YAML 1.2 (DVC): refused as params.yaml is read, naming its key
    ("world_seed_1e3_through_dvc", "world", ("base", "seed", "1e3"), "base.seed", PARAMS),
    ("world_seed_negative_through_dvc", "world", ("base", "seed", "-1"), "base.seed", PARAMS),
    # 01_segmentation: names from smg.segment / smg.llm_segmenter / models.embedding, counts, shares
    ("segmentation_unknown_segmenter", "segmentation", ("segmentation", "segmenter", "rules"),
     "segmentation.segmenter", PARAMS),
    ("segmentation_unknown_judge", "segmentation", ("segmentation", "judge", "gpt"), "segmentation.judge", PARAMS),
    ("segmentation_judge_evidence_above_one", "segmentation", ("segmentation", "judge_evidence", "2"),
     "segmentation.judge_evidence", PARAMS),
    ("segmentation_unknown_llm_mode", "segmentation", ("segmentation", "llm_mode", "greedy"),
     "segmentation.llm_mode", PARAMS),
    ("segmentation_llm_sample_negative", "segmentation", ("segmentation", "llm_sample", "-1"),
     "segmentation.llm_sample", PARAMS),
    ("segmentation_no_tokens_per_line", "segmentation", ("segmentation", "llm_tokens_per_line", "0"),
     "segmentation.llm_tokens_per_line", PARAMS),
    ("segmentation_unknown_text_embedder", "segmentation", ("segmentation", "text_embedder", "bert"),
     "segmentation.text_embedder", PARAMS),
    # 02_graph_build: GraphConfig, the memories' constructors and RenderStyle, the sweeps
    ("graph_tau_above_one", "graph_build", ("graph_build.graph", "tau", "1.5"), "graph_build.graph.tau", PARAMS),
    ("graph_theta_nan", "graph_build", ("graph_build.graph", "theta", ".nan"), "graph_build.graph.theta", PARAMS),
    ("graph_k_nodes_negative", "graph_build", ("graph_build.retrieval", "k_nodes", "-1"),
     "graph_build.retrieval.k_nodes", PARAMS),
    ("graph_flat_k_a_float", "graph_build", ("graph_build.retrieval", "flat_k", "3.0"),
     "graph_build.retrieval.flat_k", PARAMS),
    ("graph_max_items_negative", "graph_build", ("graph_build", "max_items", "-2"), "graph_build.max_items", PARAMS),
    ("graph_task_alpha_above_one", "graph_build", ("graph_build.retrieval", "task_alpha", "1.5"),
     "graph_build.retrieval.task_alpha", PARAMS),
    ("graph_unknown_rank_by", "graph_build", ("graph_build.retrieval", "rank_by", "score"),
     "graph_build.retrieval.rank_by", PARAMS),
    ("graph_memory_image_too_low", "graph_build", ("graph_build", "memory_image_height", "10"),
     "graph_build.memory_image_height", PARAMS),
    ("graph_tau_sweep_out_of_range", "graph_build", ("graph_build", "tau_sweep", "[0.8, 1.2]"),
     "graph_build.tau_sweep", PARAMS),
    ("graph_theta_sweep_not_a_list", "graph_build", ("graph_build", "theta_sweep", "0.9"),
     "graph_build.theta_sweep", PARAMS),
    ("graph_unknown_image_embedder", "graph_build", ("graph_build", "image_embedder", "resnet"),
     "graph_build.image_embedder", PARAMS),
    ("graph_batch_size_zero", "graph_build", ("graph_build", "batch_size", "0"), "graph_build.batch_size", PARAMS),
    ("graph_typo_tua", "graph_build", ("graph_build", "tua", "0.9"), "graph_build.tua", PARAMS),
    ("graph_typo_tua_in_its_group", "graph_build", ("graph_build.graph", "tua", "0.9"),
     "graph_build.graph.tua", PARAMS),
    ("graph_group_a_number", "graph_build", ("graph_build", "graph", "0.9"), "graph_build.graph", PARAMS),
    ("real_graph_tau_above_one", "real_graph", ("real_graph.graph", "tau", "1.5"), "real_graph.graph.tau", PARAMS),
    # 03_retrieval_eval: hit@k list, the tau sweep, and the embedder DVC passes with -p
    ("retrieval_ks_empty", "retrieval_eval", ("retrieval_eval", "ks", "[]"), "retrieval_eval.ks", PARAMS),
    ("retrieval_ks_zero", "retrieval_eval", ("retrieval_eval", "ks", "[0, 3]"), "retrieval_eval.ks", PARAMS),
    ("retrieval_k_nodes_negative", "retrieval_eval", ("retrieval_eval", "k_nodes", "-1"),
     "retrieval_eval.k_nodes", PARAMS),
    ("retrieval_tau_sweep_nan", "retrieval_eval", ("retrieval_eval", "tau_sweep", "[.nan]"),
     "retrieval_eval.tau_sweep", PARAMS),
    ("retrieval_image_embedder_through_dvc", "retrieval_eval", ("graph_build", "image_embedder", "resnet"),
     "graph_build.image_embedder", PARAMS),
    # 04_actor: the frozen actor it meets, the sample of steps
    ("actor_no_torch_threads", "actor", ("actor", "torch_threads", "0"), "actor.torch_threads", PARAMS),
    ("actor_seed_a_float_through_dvc", "actor", ("base", "seed", "0.5"), "base.seed", PARAMS),
    ("actor_max_eval_steps_negative", "actor", ("actor", "max_eval_steps", "-1"), "actor.max_eval_steps", PARAMS),
    ("actor_dir_a_hugging_face_model", "actor", ("actor", "actor_dir", "models/vlm"), "actor.actor_dir", PARAMS),
    # the committed actor was pretrained on phones 5-11: a world whose evaluation phones include them is refused
    ("actor_pretrained_on_an_evaluation_phone", "actor", ("world.phone", "variants", "8"), "actor.actor_dir", PARAMS),
    ("closed_loop_actor_pretrained_on_an_evaluation_phone", "closed_loop", ("world.phone", "variants", "8"),
     "closed_loop.actor.actor_model", PARAMS),
    # 05_closed_loop: memory and modality names, counts, the actor's answer conventions
    ("closed_loop_repeated_memory", "closed_loop", ("closed_loop", "memories", "[none, smg, smg]"),
     "closed_loop.memories", PARAMS),
    ("closed_loop_unknown_memory", "closed_loop", ("closed_loop", "memories", "[none, graph]"),
     "closed_loop.memories", PARAMS),
    ("closed_loop_no_memories", "closed_loop", ("closed_loop", "memories", "[]"), "closed_loop.memories", PARAMS),
    ("closed_loop_unknown_modality", "closed_loop", ("closed_loop", "modality", "video"),
     "closed_loop.modality", PARAMS),
    ("closed_loop_unknown_score_modality", "closed_loop", ("closed_loop", "action_score_modalities", "[text, audio]"),
     "closed_loop.action_score_modalities", PARAMS),
    ("closed_loop_score_memory_none", "closed_loop", ("closed_loop", "action_score_memory", "none"),
     "closed_loop.action_score_memory", PARAMS),
    ("closed_loop_unknown_coords", "closed_loop", ("closed_loop.actor", "coords", "pixels"),
     "closed_loop.actor.coords", PARAMS),
    ("closed_loop_actor_typo", "closed_loop", ("closed_loop.actor", "actor_modle", "mini"),
     "closed_loop.actor.actor_modle", PARAMS),
    ("closed_loop_executor_typo", "closed_loop", ("closed_loop.executor", "worker", "2"),
     "closed_loop.executor.worker", PARAMS),
    ("layer_analysis_samples_zero", "layer_analysis", ("layer_analysis.preference", "n_samples", "0"),
     "layer_analysis.preference.n_samples", PARAMS),
    ("layer_analysis_unknown_rule", "layer_analysis", ("layer_analysis.preference", "rule", "aitw2"),
     "layer_analysis.preference.rule", PARAMS),
    ("probe_router_hidden_a_float", "probe_router", ("probe_router.router", "hidden", "64.0"),
     "probe_router.router.hidden", PARAMS),
    ("probe_router_lr_zero", "probe_router", ("probe_router.router", "lr", "0.0"), "probe_router.router.lr", PARAMS),
    ("closed_loop_no_seeds", "closed_loop", ("closed_loop", "n_seeds", "0"), "closed_loop.n_seeds", PARAMS),
    ("closed_loop_empty_actor_model", "closed_loop", ("closed_loop.actor", "actor_model", '""'),
     "closed_loop.actor.actor_model", PARAMS),
    ("layer_analysis_actor_coords_from_05", "layer_analysis", ("closed_loop.actor", "coords", "pixels"),
     "closed_loop.actor.coords", PARAMS),
    ("closed_loop_history_a_float_through_dvc", "closed_loop", ("pretrain.model", "max_history", "2.5"),
     "pretrain.model.max_history", PARAMS),
]


@pytest.mark.parametrize("case, stage, edit, field, file", CASES, ids=[c[0] for c in CASES])
def test_bad_parameter(case, stage, edit, field, file, tmp_path):
    params = edited_params(tmp_path, *edit)
    with pytest.raises(DataError) as err:  # a value YAML 1.1 and 1.2 read differently is refused as the file is read
        check_parameters(*stage_inputs(stage, params))
    assert (err.value.field, err.value.path) == (field, str(params) if file == PARAMS else None)
    assert err.value.message.endswith("(passed with -p)") == (file is NO_FILE)


# ----------------------------------------------------------------------------- make pretrain's section
# (case id, (section, key, value as written in YAML), field named): read_settings refuses it, naming the file
PRETRAIN_CASES = [
    ("lr_zero", ("pretrain.training", "lr", "0"), "pretrain.training.lr"),
    ("lr_negative", ("pretrain.training", "lr", "-0.003"), "pretrain.training.lr"),
    ("epochs_zero", ("pretrain.training", "epochs", "0"), "pretrain.training.epochs"),
    ("three_modality_weights", ("pretrain.training", "modality_weights", "[1.0, 1.0, 1.0]"),
     "pretrain.training.modality_weights"),
    ("modality_weights_all_zero", ("pretrain.training", "modality_weights", "[0, 0, 0, 0]"),
     "pretrain.training.modality_weights"),
    ("modality_weight_nan", ("pretrain.training", "modality_weights", "[1, .nan, 1, 1]"),
     "pretrain.training.modality_weights"),
    ("heads_do_not_divide_width", ("pretrain.model", "num_attention_heads", "3"), "pretrain.model.num_attention_heads"),
    ("one_fold", ("pretrain", "k_folds", "1"), "pretrain.k_folds"),
    ("exact_match_the_string_yes", ("pretrain.model", "exact_match", '"yes"'), "pretrain.model.exact_match"),
    ("goal_dropout_above_one", ("pretrain.training", "goal_dropout", "1.5"), "pretrain.training.goal_dropout"),
    ("typo_in_the_model_group", ("pretrain.model", "hiden_size", "32"), "pretrain.model.hiden_size"),
    ("grad_clip_not_a_knob", ("pretrain.training", "grad_clip", "1.0"), "pretrain.training.grad_clip"),
    ("no_torch_threads", ("pretrain", "torch_threads", "0"), "pretrain.torch_threads"),
    ("seed_a_float", ("pretrain", "seed", "0.5"), "pretrain.seed"),
    ("seed_negative", ("pretrain", "seed", "-1"), "pretrain.seed"),
    ("phones_without_the_reference", ("pretrain", "phones", "[1, 2]"), "pretrain.phones"),
    ("phones_twice", ("pretrain", "phones", "[0, 1, 1]"), "pretrain.phones"),
    ("phones_the_evaluation_phone", ("pretrain", "phones", "[0, 1, 4]"), "pretrain.phones"),
    ("beta_above_one", ("pretrain", "dagger_beta", "1.5"), "pretrain.dagger_beta"),
    ("typo_episodes_per_phon", ("pretrain", "episodes_per_phon", "10"), "pretrain.episodes_per_phon"),
    ("wide_head_rate_above_one", ("pretrain.training", "wide_lr_scale", "1000"), "pretrain.training.wide_lr_scale"),
    ("done_match_without_history_words", ("pretrain.model", "history_words", "0"), "pretrain.model.done_match"),
    ("kinds_per_step_above_the_kinds", ("pretrain", "kinds_per_step", "5"), "pretrain.kinds_per_step"),
    ("hidden_size_a_billion", ("pretrain.model", "hidden_size", "1000000000"), "pretrain.model.hidden_size"),
    ("modality_weights_overflow", ("pretrain.training", "modality_weights", "[1.0e+308, 1.0, 1.0, 1.0]"),
     "pretrain.training.modality_weights"),
    ("type_balance_overflows", ("pretrain.training", "type_balance", "100.0"), "pretrain.training.type_balance"),
    ("lr_above_one", ("pretrain.training", "lr", "3.0"), "pretrain.training.lr"),
    ("dropout_of_one", ("pretrain.model", "dropout", "1.0"), "pretrain.model.dropout"),
    # the sections pretraining reads beside its own, checked by their stages' schemas
    ("judge_evidence_a_word", ("segmentation", "judge_evidence", "high"), "segmentation.judge_evidence"),
    ("judge_evidence_above_one", ("segmentation", "judge_evidence", "5"), "segmentation.judge_evidence"),
    ("retrieval_typo", ("graph_build.retrieval", "bogus", "1"), "graph_build.retrieval.bogus"),
    ("max_items_a_word", ("graph_build", "max_items", "x"), "graph_build.max_items"),
    ("pca_dim_negative", ("graph_build", "pca_dim", "-1"), "graph_build.pca_dim"),
    ("tau_above_one", ("graph_build.graph", "tau", "5"), "graph_build.graph.tau"),
    ("unknown_image_embedder", ("graph_build", "image_embedder", "nope"), "graph_build.image_embedder"),
    ("world_phone_not_a_mapping", ("world", "phone", "[1, 2]"), "world.phone"),
]


@pytest.mark.parametrize("case, edit, field", PRETRAIN_CASES, ids=[c[0] for c in PRETRAIN_CASES])
def test_bad_pretrain_parameter(case, edit, field, tmp_path):
    from guimem.pipeline.pretrain import main, read_settings

    params = edited_params(tmp_path, *edit)
    with pytest.raises(DataError) as err:
        read_settings(params)
    assert (err.value.field, err.value.path) == (field, str(params))
    assert main(["--params", str(params), "--out", str(tmp_path / "actor"), "--work", str(tmp_path / "work")]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]  # nothing written


# ----------------------------------------------------------------------------- the command line, end to end
# (case id, dvc stage, edit, what stderr says)
CLI_CASES = [
    ("world_themes", "world", ("world.phone", "themes", '"no"'),
     "field 'world.phone.themes': expected true or false, got str 'no'"),
    ("graph_tau", "graph_build", ("graph_build.graph", "tau", "1.5"),
     "field 'graph_build.graph.tau': must be in [-1.0, 1.0], got 1.5"),
    ("closed_loop_seed", "closed_loop", ("base", "seed", "0.5"),
     "field 'base.seed': expected an integer, got float 0.5 (read by -y seed {base.seed})"),
]


@pytest.mark.parametrize("case, stage, edit, says", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_the_runner_exits_2_names_the_value_and_writes_nothing(case, stage, edit, says, tmp_path, capsys):
    params = edited_params(tmp_path, *edit)
    out = tmp_path / "reports" / "stage.ipynb"
    assert main(stage_argv(stage, params, out)) == 2
    err = capsys.readouterr().err
    assert says in err and f"{params}: field" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]  # no report, no reports/ folder


# (case id, params.yaml bytes, what the refusal says after "<file>: cannot read parameters: ")
UNREADABLE = [
    ("nested_too_deep", b"world: " + b"[" * 5000 + b"]" * 5000 + b"\n", "maximum recursion depth exceeded"),
    ("not_utf8", b"world:\n  themes: \xff\n", "'utf-8' codec can't decode byte 0xff"),
    ("malformed_yaml", b"world: [1, 2\n", "while parsing a flow sequence"),
    ("section_a_list", b"world: [1, 2]\n", None),
]


@pytest.mark.parametrize("case, data, says", UNREADABLE, ids=[c[0] for c in UNREADABLE])
def test_an_unreadable_params_file_exits_2_naming_it(case, data, says, tmp_path, capsys):
    params = tmp_path / "params.yaml"
    params.write_bytes(data)
    out = tmp_path / "reports" / "00_world.ipynb"
    with pytest.raises(SystemExit) as exit_:
        main([str(REPO / "notebooks" / "00_world.py"), str(out), "-f", f"{params}:world"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    expected = f"{params}: 'world' must be a mapping of parameters, got list" if says is None else \
        f"{params}: cannot read parameters: {says}"
    assert expected in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


@pytest.mark.slow  # a fresh interpreter imports the package: seconds on two cores
def test_python_m_runner_refuses_before_a_kernel_starts(tmp_path):
    params = edited_params(tmp_path, "world.phone", "success_min", "0.95")
    out = tmp_path / "reports" / "00_world.ipynb"
    run = subprocess.run([sys.executable, "-m", "guimem.pipeline.runner", *stage_argv("world", params, out)],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 2
    assert run.stderr == (f"error: {params}: field 'world.phone.success_min': must be at most success_max (0.92), "
                          "got 0.95\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


# ============================================================================= values that must not reach a shell
@pytest.mark.parametrize("stage", ["layer_analysis", "routing_stats", "closed_loop"])
@pytest.mark.parametrize("value", ['"models/my tiny"', '"models/tiny;touch PLANTED"', '"models/$(touch PLANTED)"',
                                   "\"models/tiny' && touch PLANTED && echo '\""])
def test_a_text_value_reaches_its_notebook_whole_and_no_shell_reads_it(stage, value, tmp_path):
    """The stage's command, run by a shell as DVC runs it, in a folder whose params.yaml names the
    actor's folder with a space, a ';', a command substitution or a quote: nothing runs, and the
    notebook would get the value whole (the command holds no ${...} for DVC to paste)."""
    params = edited_params(tmp_path, "closed_loop.actor", "actor_model", value)
    (tmp_path / "notebooks").symlink_to(REPO / "notebooks")
    cmd = DVC_STAGES[stage]["cmd"]
    done = subprocess.run(["bash", "-c", f"{cmd} --check"], cwd=tmp_path, capture_output=True, text=True)
    assert not (tmp_path / "PLANTED").exists() and not (REPO / "PLANTED").exists()
    assert "unrecognized arguments" not in done.stderr, done.stderr
    _, values, _ = stage_inputs(stage, params)
    actor = values["actor"]
    assert actor["actor_model"] == value.strip('"'), actor


def test_a_path_parameter_with_a_byte_that_is_not_utf8_is_refused_before_anything_runs(tmp_path, capsys):
    out = tmp_path / "reports" / "stage.ipynb"
    argv = stage_argv("segmentation", REPO / "params.yaml", out)
    argv[argv.index("figures_dir") + 1] = "figures/\udcff"  # how a command-line byte 0xff reaches Python
    assert main([*argv, "--check"]) == 2
    err = capsys.readouterr().err
    assert "field 'figures_dir': holds a byte that is not UTF-8" in err and "(passed with -p)" in err
    assert not out.exists()
