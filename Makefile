# Two entry points, both self-contained on a fresh machine with Python >= 3.11:
#   make serve   set everything up, then serve the tutorial site on http://127.0.0.1:8000
#   make test    set everything up, then run the whole test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export NO_MKDOCS_2_WARNING := 1
PACKAGES := packages/tensor packages/autodiff packages/graph packages/nn packages/distribute
# The site's diagrams use mermaid.js. Material for MkDocs 9.x loads mermaid@11 from unpkg.com
# unless the page already has one; site/hooks.py ships this local copy instead, so the site
# works offline. Installed (not committed) into build/npm, which git ignores.
MERMAID_VERSION := 11.17.2
# Chapter 15's live demo runs the exported FizzBuzz model in the page with onnxruntime-web's
# WebAssembly build; site/hooks.py ships its files with the site (no CDN). Same npm step.
ONNXRUNTIME_WEB_VERSION := 1.30.0
NPM_DIR := build/npm

.PHONY: setup serve test lint coverage bench clean conformance-record tf-interop-record

# Also redone when the Makefile changes, so a new set-up step (or MERMAID_VERSION) takes effect,
# and when VERSION changes, since editable installs record their version when installed.
$(STAMP): pyproject.toml VERSION $(foreach p,$(PACKAGES),$(p)/pyproject.toml) Makefile
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --group dev $(foreach p,$(PACKAGES),-e $(p))
	@if command -v npm >/dev/null 2>&1; then \
	  echo "npm install mermaid@$(MERMAID_VERSION) onnxruntime-web@$(ONNXRUNTIME_WEB_VERSION) into $(NPM_DIR)"; \
	  npm install --prefix $(NPM_DIR) --no-save --no-audit --no-fund --loglevel=error \
	    mermaid@$(MERMAID_VERSION) onnxruntime-web@$(ONNXRUNTIME_WEB_VERSION) \
	  || echo "npm install of mermaid and onnxruntime-web failed: the site's diagrams will load mermaid from its CDN, and chapter 15's live demo will say it cannot run"; \
	else \
	  echo "npm not found: skipping the local mermaid and onnxruntime-web; the site's diagrams will load mermaid from its CDN, and chapter 15's live demo will say it cannot run"; \
	fi
	touch $(STAMP)

setup: $(STAMP)

# EAGERFLOW_SITE_CACHE=1: a code block whose source (and the packages') has not changed shows
# its output from build/exec-cache/ instead of running again (site/exec_cache.py). (Not --dirty,
# which would rebuild only the edited page: mkdocs warns about it, and the site is strict.)
serve: $(STAMP)
	EAGERFLOW_SITE_CACHE=1 $(BIN)/mkdocs serve -f site/mkdocs.yml -a 127.0.0.1:8000

# The same checks as lint (so CI, which runs make test, catches unformatted code), then the tests,
# in two processes (pytest-xdist; CI has two cores): `make test WORKERS=auto` uses every core.
# loadfile runs a file's tests on one worker, so a module's fixtures are made once (the browser
# tests load each page once); the site is built once for both (tests/site/conftest.py).
WORKERS ?= 2
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n $(WORKERS) --dist loadfile

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The suite under coverage.py (lines and branches), then one line per package with its percentage.
coverage: $(STAMP)
	$(BIN)/coverage run -m pytest
	@for layer in tensor autodiff graph nn distribute; do \
	  printf '%-9s %s%%\n' $$layer \
	    "$$($(BIN)/coverage report --include="packages/$$layer/*" --format=total)"; \
	done

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

# TensorFlow's results for tests/conformance, recorded in a virtual environment of their own
# (TensorFlow is never a dependency: CI compares with the committed JSON file).
TF_VENV := .venv-tf
conformance-record:
	test -x $(TF_VENV)/bin/python || $(PYTHON) -m venv $(TF_VENV)
	$(TF_VENV)/bin/python -m pip install --quiet "tensorflow-cpu==2.21.*"
	$(TF_VENV)/bin/python tests/conformance/record.py

# The same for tests/tf_interop: the TensorFlow-frozen models eagerflow imports
# (make_fixtures.py), and what TensorFlow computes with the GraphDefs eagerflow writes (record.py)
tf-interop-record: $(STAMP)
	test -x $(TF_VENV)/bin/python || $(PYTHON) -m venv $(TF_VENV)
	$(TF_VENV)/bin/python -m pip install --quiet "tensorflow-cpu==2.21.*"
	$(TF_VENV)/bin/python tests/tf_interop/make_fixtures.py
	EAGERFLOW_TF_PYTHON=$(TF_VENV)/bin/python $(BIN)/python tests/tf_interop/record.py

clean:
	rm -rf $(VENV) build
