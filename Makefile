# Two commands a newcomer needs: `make room` (a live room with bots) and `make test`.
# Each bootstraps .venv with the project and its dependencies on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NATIVE := $(VENV)/.compiled

.PHONY: room test test-fast bench schema clean

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $(STAMP) $(NATIVE)

# The domain is compiled with mypyc when installed (setup.py); an edited rule is
# recompiled before anything runs (until then the package runs its pure Python source).
$(NATIVE): $(STAMP) $(wildcard domain/*.py)
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(NATIVE)

room: $(NATIVE)
	$(BIN)/studroom room $(ARGS)

test: $(NATIVE)
	$(BIN)/python -m pytest $(ARGS)

test-fast: $(NATIVE)
	$(BIN)/python -m pytest -m "not integration" $(ARGS)

bench: $(NATIVE)
	$(BIN)/studroom bench $(ARGS)

schema: $(NATIVE)
	$(BIN)/studroom schema

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build domain/*.so
