#!/bin/sh
# Create .venv and install tessel with its test extras. torch is pinned to the CPU
# build first (2.13.0, taken from local disk where available) so that the range in
# pyproject.toml is already satisfied and no CUDA build gets downloaded.
set -e
cd "$(dirname "$0")/.."
python3 -m venv .venv
. .venv/bin/activate
pip install -q --upgrade pip
pip install -q torch==2.13.0
pip install -q -e '.[test]'
# The plugin example is part of the test suite (tests/test_extension.py, its lit test).
pip install -q -e examples/custom_dialect
