"""The run's credentials, kept out of everything the plugin writes: where they come from, and the one cleaner.

Every writer (the report plugin's failure texts, JUnit values, summary and reports; the
calibration guard; saved baselines) asks :func:`run_secrets` for the strings to redact and
cleans text with :func:`clean_text` (``redaction.redact``, then control characters made
visible, ``util/escaping.py``). The sources, longest secret first:

* the environment's credential variables (``redaction.secrets_from_environment``) plus the
  ``<PROVIDER>_API_KEY`` and ``api_key_env`` variables of every judge the run uses
  (:func:`note_judge`, called where suites are collected and, under xdist, where the
  workers' suite information arrives);
* the user names and passwords in the judges' base URLs (command line, ini, suites);
* the keys the judge runner actually sent.

Degenerate cases: with no judge noted, only the generic credential variables are read;
the environment is read once per set of variable names, not per item (reading all of
``os.environ`` per item would add up over 10,000 items).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

import pytest

from pytest_llmjudge.session.state import scorer_key
from pytest_llmjudge.util.escaping import MULTILINE, escape_controls
from pytest_llmjudge.util.redaction import redact


@dataclass
class SecretSources:
    """What the run knows of where its credentials are."""

    env_names: set[str] = field(default_factory=set)
    """Environment variables holding judge keys (``OPENAI_API_KEY``, a suite's ``api_key_env``)."""
    url_secrets: set[str] = field(default_factory=set)
    """User names and passwords in the judges' base URLs."""
    env_secrets: dict[tuple[str, ...], list[str]] = field(default_factory=dict)
    """The environment's credentials by the variable names asked for (read once each)."""


secrets_key = pytest.StashKey[SecretSources]()


def _sources(config: pytest.Config) -> SecretSources:
    return config.stash.setdefault(secrets_key, SecretSources())


def note_judge(
    config: pytest.Config, provider: str, api_key_env: str | None, base_urls: Iterable[str | None] = ()
) -> None:
    """Remember a judge the run uses: its key variables, and the credentials in its base URLs."""
    from pytest_llmjudge.util.redaction import url_secrets

    sources = _sources(config)
    sources.env_names.add(f"{provider.upper().replace('-', '_')}_API_KEY")
    if api_key_env:
        sources.env_names.add(api_key_env)
    for url in base_urls:
        sources.url_secrets.update(url_secrets(url))


def run_secrets(config: pytest.Config) -> list[str]:
    """Credentials to keep out of everything written (see the module docstring), longest first."""
    from pytest_llmjudge.util.redaction import MIN_SECRET_LENGTH, secrets_from_environment, url_secrets

    sources = _sources(config)
    found = set(sources.url_secrets)
    wanted = tuple(sorted(sources.env_names))
    if wanted not in sources.env_secrets:
        sources.env_secrets[wanted] = secrets_from_environment(os.environ, wanted)
    found.update(sources.env_secrets[wanted])
    board = config.stash.get(scorer_key, None)
    if board is not None:
        found.update(url_secrets(board.settings.base_url))
        if board.runner_started:
            found.update(s for s in board.runner.secrets if s and len(s) >= MIN_SECRET_LENGTH)
    return sorted(found, key=len, reverse=True)


def clean_text(text: str, secrets: Iterable[str], keep: str = MULTILINE) -> str:
    """``text`` redacted, then with its control characters made visible: safe to write anywhere."""
    return escape_controls(redact(text, list(secrets)), keep)
