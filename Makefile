# Two entry points, both self-contained on a fresh machine with Python >= 3.11:
#   make serve   set everything up, then serve the tutorial site on http://127.0.0.1:8000
#   make test    set everything up, then run the whole test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export NO_MKDOCS_2_WARNING := 1
PACKAGES := packages/tensor packages/autodiff packages/graph packages/nn

.PHONY: setup serve test lint bench clean

$(STAMP): pyproject.toml $(foreach p,$(PACKAGES),$(p)/pyproject.toml)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --group dev $(foreach p,$(PACKAGES),-e $(p))
	touch $(STAMP)

setup: $(STAMP)

serve: $(STAMP)
	$(BIN)/mkdocs serve -f site/mkdocs.yml -a 127.0.0.1:8000

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) build
