"""What is available by name: judge providers, rubrics, reference metrics, output targets.

Built from the plugin hooks (``hookspecs``) so built-ins, conftest files and installed
packages all register the same way. Precedence, lowest first: built-ins, installed
plugins (entry points, ``-p``), conftest files; so a conftest can override a built-in
rubric. Metrics are built from ``metrics`` by :func:`pytest_llmjudge.metrics.resolve_metric`
(the one way to build a metric; it also reads the ``@K`` suffix of ``citation_recall@10``).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from pytest_llmjudge.errors import ConfigError
from pytest_llmjudge.judges.base import JudgeProvider
from pytest_llmjudge.judges.rubrics import RUBRIC_ALIASES, Rubric
from pytest_llmjudge.metrics import find_metric


@dataclass(frozen=True)
class ProviderFactory:
    """How to build one kind of judge provider and where its key comes from."""

    name: str
    create: Callable[[str | None, str | None, float], JudgeProvider]
    """``create(api_key, base_url, timeout)``."""
    api_key_env: str | None = None
    requires_base_url: bool = False

    def credentials_problem(self, base_url: str | None, api_key_env: str | None) -> str | None:
        """Why this provider can't be called, or None. Checked before any request."""
        variable = api_key_env or self.api_key_env
        if self.requires_base_url and not base_url:
            return (
                f"judge provider '{self.name}' needs a base_url: set judge.base_url in the suite "
                "or pass --llmjudge-base-url"
            )
        if base_url or variable is None or os.environ.get(variable, "").strip():
            return None
        return (
            f"needs a live judge: set {variable} to call provider '{self.name}', or give the judge a base_url "
            "(judge.base_url in the suite or --llmjudge-base-url)"
        )

    def api_key(self, api_key_env: str | None) -> str | None:
        """The key in the provider's variable, stripped of surrounding whitespace (a key file's or a
        CI secret's trailing newline is not part of the key, and would make an illegal header)."""
        variable = api_key_env or self.api_key_env
        key = os.environ.get(variable, "").strip() if variable else ""
        return key or None


def _precedence(plugin: object) -> int:
    """Built-ins first, then installed plugins, then conftest files: later ones win."""
    if getattr(plugin, "__name__", "") == "pytest_llmjudge.builtin_plugins":
        return 0
    if Path(str(getattr(plugin, "__file__", "") or "")).name == "conftest.py":
        return 2
    return 1


def _collect(hook_caller: Any) -> dict[str, Any]:
    """Call every implementation of one registration hook and merge by precedence."""
    implementations = sorted(hook_caller.get_hookimpls(), key=lambda impl: _precedence(impl.plugin))
    merged: dict[str, Any] = {}
    for implementation in implementations:
        mapping = implementation.function()
        if mapping:
            merged.update(mapping)
    return merged


@dataclass
class Registry:
    providers: dict[str, ProviderFactory] = field(default_factory=dict)
    rubrics: dict[str, Rubric] = field(default_factory=dict)
    metrics: dict[str, Callable[..., Any]] = field(default_factory=dict)
    targets: dict[str, Callable[..., Any]] = field(default_factory=dict)

    @classmethod
    def from_hook(cls, hook: Any) -> Registry:
        return cls(
            providers=_collect(hook.pytest_llmjudge_providers),
            rubrics=_collect(hook.pytest_llmjudge_rubrics),
            metrics=_collect(hook.pytest_llmjudge_metrics),
            targets=_collect(hook.pytest_llmjudge_targets),
        )

    def rubric(self, name: str) -> Rubric | None:
        return self.rubrics.get(name) or self.rubrics.get(RUBRIC_ALIASES.get(name, ""))

    def provider(self, name: str) -> ProviderFactory:
        try:
            return self.providers[name]
        except KeyError:
            raise ConfigError(f"unknown judge provider {name!r}; known: {', '.join(sorted(self.providers))}") from None

    def has_metric(self, name: str) -> bool:
        """Whether a suite's metric name (spelt exactly) is a registered metric."""
        return find_metric(name, self.metrics, as_written=True) is not None

    def known_names(self) -> list[str]:
        return sorted(set(self.rubrics) | {name.removesuffix("@K") for name in self.metrics})

    def target(self, spec: str, search_paths: Sequence[Path] = ()) -> Callable[..., Any]:
        """A registered target by name, or ``module:function`` imported.

        A module that isn't importable as is is looked up in ``search_paths`` (the suite's
        directory, then the working directory), which are then kept on ``sys.path`` so the
        module's own imports work too.
        """
        if spec in self.targets:
            return self.targets[spec]
        module_name, sep, attr = spec.partition(":")
        if not sep or not module_name or not attr:
            raise ConfigError(f"output target {spec!r} is neither a registered target nor 'module:function'")
        module = _import(module_name, missing_ok=bool(search_paths))
        if module is None:
            for directory in search_paths:
                if str(directory) not in sys.path:
                    sys.path.insert(0, str(directory))
            module = _import(module_name, missing_ok=False)
        function: Any = module
        for part in attr.split("."):
            try:
                function = getattr(function, part, None)
            except Exception as exc:  # a module __getattr__ or property is user code too
                raise ConfigError(
                    f"module {module_name!r}: reading {attr!r} raised {type(exc).__name__}: {exc}"
                ) from exc
            if function is None:
                raise ConfigError(f"module {module_name!r} has no attribute {attr!r}")
        if not callable(function):
            raise ConfigError(f"output target {spec!r} is not callable")
        target: Callable[..., Any] = function
        return target


def _import_error(module_name: str, exc: BaseException) -> ConfigError:
    detail = f"{type(exc).__name__}: {exc}" if not isinstance(exc, ImportError) else str(exc)
    return ConfigError(f"can't import output target module {module_name!r}: {detail}")


def _import(module_name: str, *, missing_ok: bool) -> ModuleType | None:
    """Import a target module; whatever it raises (SystemExit too) becomes a ConfigError.

    A target module is user code run at collection: a SyntaxError, a RuntimeError or a
    ``sys.exit()`` in it must fail its suite, not the session. KeyboardInterrupt still stops
    the run. With ``missing_ok``, a module that doesn't exist at all gives None (the caller
    then retries with the suite's directory on ``sys.path``).
    """
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if missing_ok and exc.name == module_name.split(".")[0]:
            return None
        raise _import_error(module_name, exc) from exc
    except (Exception, SystemExit) as exc:
        raise _import_error(module_name, exc) from exc
