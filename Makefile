# Two commands for a fresh machine with Python 3.11+ and make:
#   make train   set up .venv and train Connect Four with the default preset
#   make test    set up .venv and run the test suite (what CI runs)
#   make docs    serve the docs site at http://127.0.0.1:8000 (mkdocs-material)
#   make board   play Connect Four against the shipped agent in a browser (http://127.0.0.1:8765)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
ARGS   ?=
# pytest-xdist workers: most of the suite is XLA compiling, one thread each. Whole files go
# to one worker (--dist loadfile) so that module fixtures still compile once. Every test's time,
# slowest first, is written to build/test-durations.txt each run.
WORKERS ?= 2

.PHONY: setup train test lint docs board system-deps clean

$(BIN)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $@

setup: $(BIN)/.installed

# Debian programs the tests drive: GNU Go (the GTP test), Chromium and its driver (the web
# board's browser tests). Needs root or sudo.
SYSTEM_DEPS := gnugo chromium chromium-driver
system-deps:
	@{ command -v gnugo || [ -x /usr/games/gnugo ]; } >/dev/null 2>&1 \
	  && command -v chromium chromedriver >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq \
	  && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(SYSTEM_DEPS) >/dev/null; }

# Ctrl-C stops a run cleanly (saved, exit 130): make reports no error for it
train: setup
	$(BIN)/jaxzero train $(ARGS) || [ $$? -eq 130 ]

test: setup system-deps
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy jaxzero envs examples
	$(BIN)/lint-imports
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site
	$(BIN)/python -m pytest -q -n $(WORKERS) --dist loadfile --durations-file build/test-durations.txt $(ARGS)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy jaxzero envs examples
	$(BIN)/lint-imports
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site

# The web board (docs/guides/board.md): ARGS names another game or agent, e.g. ARGS=tic_tac_toe
board: setup
	$(BIN)/jaxzero board $(or $(ARGS),connect_four)

# The docs site (docs/, mkdocs.yml), rebuilt on every change; `make test` builds it strictly.
docs: setup
	$(BIN)/mkdocs serve

clean:
	rm -rf $(VENV) build *.egg-info
