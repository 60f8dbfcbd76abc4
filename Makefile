.PHONY: setup test test-fast check format bench

setup:
	python3 -m venv .venv && .venv/bin/pip install -e ".[dev]"

test:
	python -m pytest -q

test-fast:
	python -m pytest -q -m "not slow"

check:
	ruff check . && ruff format --check .

format:
	ruff check --fix . && ruff format .

bench:
	python benchmarks/verifiers.py
	python benchmarks/reward_core.py
	python benchmarks/serving.py
