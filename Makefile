# Two commands a newcomer needs: `make room` (a live room with bots) and `make test`.
# Each bootstraps .venv with the project and its dependencies on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: room test test-fast bench schema clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $(STAMP)

room: $(STAMP)
	$(BIN)/studroom room $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest $(ARGS)

test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not integration" $(ARGS)

bench: $(STAMP)
	$(BIN)/studroom bench $(ARGS)

schema: $(STAMP)
	$(BIN)/studroom schema

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
