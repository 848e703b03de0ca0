# Two commands: `make run` and `make test`. Both create .venv and install what they need.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export TF_CPP_MIN_LOG_LEVEL := 3
export PYTHONHASHSEED := 0

.PHONY: run test build check verify report bench corpus lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/hogen build specs/log1pexp.yaml
	$(BIN)/python examples/run_log1pexp.py

test: $(STAMP)
	$(BIN)/python -m pytest tests

build: $(STAMP)
	$(BIN)/hogen build

check: $(STAMP)
	$(BIN)/hogen build --check

verify: $(STAMP)
	$(BIN)/hogen verify

report: $(STAMP)
	$(BIN)/hogen report

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_ops.py
	$(BIN)/python benchmarks/bench_build.py
	$(BIN)/python benchmarks/bench_backends.py
	$(BIN)/python benchmarks/keras_fit.py

# The generalization corpus (issue 13); CORPUS_ARGS e.g. "--part dev --samples 400".
corpus: $(STAMP)
	$(BIN)/python benchmarks/corpus.py $(CORPUS_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check codegen tests generated generated_jax generated_torch benchmarks

clean:
	rm -rf $(VENV) .hogen-cache .pytest_cache
