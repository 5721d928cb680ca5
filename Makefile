# The two commands of the README quickstart:
#   make study   set up, build, verify, time the default study, analyse and report
#   make test    the whole test suite (on both CPUs: a module's tests on one worker, the SLURM ones together)
# and the lane a developer runs while editing:
#   make test-fast   every test that runs no real study, build or pqsimd command (tests/conftest.py
#                    sorts them), on both CPUs; no system packages installed
VENV ?= .venv
STUDY ?= study
PQSIMD = $(VENV)/bin/pqsimd

.PHONY: study test test-fast setup clean

study: $(VENV)/.installed
	tools/study-deps.sh
	$(PQSIMD) run $(STUDY)
	$(PQSIMD) analyze $(STUDY)
	$(PQSIMD) report $(STUDY)

test: $(VENV)/.installed
	tools/test-deps.sh
	PQSIMD_REQUIRE_TOOLS=1 PQSIMD_REQUIRE_SLURM=1 PQSIMD_REQUIRE_CHROMIUM=1 $(VENV)/bin/python -m pytest -q -ra -n 2 --dist loadgroup

test-fast: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q -m "not study" -n 2

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

clean:
	rm -rf $(VENV) build src/*.egg-info
