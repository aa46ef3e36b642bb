# Two commands a newcomer needs: `make room` (a live room with bots) and `make test`.
# Each bootstraps .venv with the project and its dependencies on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
NATIVE := $(VENV)/.compiled
# The suite runs in this many pytest-xdist processes, a test file to a process (its
# module fixtures set up once). Many integration tests wait on servers more than they
# compute; on 2 cores two processes took 14.6 minutes where one took 16.0 (2026-12-03:
# the CPU-bound tests slow each other down). Each process starts its own embedded
# servers and its own shared live room (tests/conftest.py); TEST_WORKERS=0: one process.
TEST_WORKERS ?= 2

.PHONY: room test test-fast bench schema clean

# pip stays quiet (its lines for dozens of packages would bury everything else): each
# step says first what it does and, for the long one, roughly how long it takes.
$(STAMP): pyproject.toml setup.py
	@echo "creating the virtual environment .venv"
	$(PYTHON) -m venv $(VENV)
	@echo "updating pip in .venv"
	$(BIN)/pip install --quiet --upgrade pip
	@echo "installing Studroom and its dependencies into .venv (about 4 minutes the first time: the rules are compiled with mypyc)"
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $(STAMP) $(NATIVE)

# The domain is compiled with mypyc when installed (setup.py); an edited rule is
# recompiled before anything runs (until then the package runs its pure Python source).
# Make decides before $(STAMP)'s install ran, so it asks again here: right after a fresh
# install (which compiled and touched $(NATIVE)) no rule is newer and nothing is compiled twice.
$(NATIVE): $(STAMP) $(wildcard domain/*.py)
	@if [ -z "$$(find domain -name '*.py' -newer $(NATIVE) 2>/dev/null)" ] && [ -f $(NATIVE) ]; then \
	    echo "the rules are compiled"; \
	else \
	    echo "compiling the rules (mypyc, about a minute)"; $(BIN)/pip install --quiet --no-deps -e .; \
	fi
	touch $(NATIVE)

room: $(NATIVE)
	$(BIN)/studroom room $(ARGS)

test: $(NATIVE)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(ARGS)

test-fast: $(NATIVE)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile -m "not integration" $(ARGS)

bench: $(NATIVE)
	$(BIN)/studroom bench $(ARGS)

schema: $(NATIVE)
	$(BIN)/studroom schema

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build domain/*.so
