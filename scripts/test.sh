#!/bin/sh
# Set up (scripts/setup.sh) and run every test: pytest, then lit/FileCheck.
set -e
cd "$(dirname "$0")/.."
sh scripts/setup.sh
. .venv/bin/activate
python -m pytest -q -p no:logging tests
lit -q lit_tests examples/custom_dialect
