#!/usr/bin/env bash
# Refresh constraints.txt on purpose: a fresh venv, the newest releases pyproject.toml allows
# (runtime, every extra), the project's test suite, then the freeze. Commit the diff with the
# test result; CI installs only what this file pins, so a new release never turns CI red by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(mktemp -d)/venv
python3 -m venv "$venv"
# shellcheck disable=SC1091
. "$venv/bin/activate"
python -m pip install --quiet --upgrade pip
extras=$(python3 -c 'import tomllib; print(",".join(sorted(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"])))')
python -m pip install --quiet --upgrade -e ".[${extras}]"
pytest -n auto -q
{
    echo "# Pins for CI and the README's two commands; refreshed on purpose by scripts/update_constraints.sh."
    echo "# The weekly workflow .github/workflows/dependency-drift.yml runs the tests against the newest releases."
    python -m pip freeze --exclude-editable | grep -v -i '^pytest-llmjudge'
} > constraints.txt
echo "constraints.txt refreshed: review 'git diff constraints.txt' and commit it"
