"""Run settings: command line, then environment, then ini/pyproject, then defaults; resolved once.

Each setting has one name in each place:

=====================  ===============================  ==========================  ===========
command line           environment                      ini (pytest.ini/pyproject)  default
=====================  ===============================  ==========================  ===========
--llmjudge-concurrency LLMJUDGE_CONCURRENCY             llmjudge_concurrency        16
--llmjudge-rpm         LLMJUDGE_RPM                     llmjudge_rpm                (no limit)
--llmjudge-max-retries LLMJUDGE_MAX_RETRIES             llmjudge_max_retries        4
--llmjudge-timeout     LLMJUDGE_TIMEOUT                 llmjudge_timeout            60 (seconds)
--llmjudge-cache-dir   LLMJUDGE_CACHE_DIR               llmjudge_cache_dir          .llmjudge_cache
--llmjudge-cache-url   LLMJUDGE_CACHE_URL               llmjudge_cache_url          (the cache dir)
--llmjudge-cache       LLMJUDGE_CACHE                   llmjudge_cache              use
--llmjudge-provider    LLMJUDGE_PROVIDER                llmjudge_provider           (suite's)
--llmjudge-model       LLMJUDGE_MODEL                   llmjudge_model              (suite's)
--llmjudge-base-url    LLMJUDGE_BASE_URL                llmjudge_base_url           (suite's)
--llmjudge-require-judge  LLMJUDGE_REQUIRE_JUDGE        llmjudge_require_judge      (follows CI)
--llmjudge-target-timeout LLMJUDGE_TARGET_TIMEOUT       llmjudge_target_timeout     300 (seconds)
--llmjudge-tpm         LLMJUDGE_TPM                     llmjudge_tpm                (no limit)
--llmjudge-rate-limits LLMJUDGE_RATE_LIMITS             llmjudge_rate_limits        (none)
--llmjudge-batch       LLMJUDGE_BATCH                   llmjudge_batch              false
--llmjudge-batch-poll  LLMJUDGE_BATCH_POLL              llmjudge_batch_poll         30 (seconds)
--llmjudge-batch-wait  LLMJUDGE_BATCH_WAIT              llmjudge_batch_wait         (until it ends)
--llmjudge-retry-backoff  LLMJUDGE_RETRY_BACKOFF        llmjudge_retry_backoff      0.5 (seconds)
--llmjudge-language    LLMJUDGE_LANGUAGE                llmjudge_language           (all languages)
--llmjudge-progress-interval LLMJUDGE_PROGRESS_INTERVAL llmjudge_progress_interval  10 (seconds)
--llmjudge-max-calls   LLMJUDGE_MAX_CALLS               llmjudge_max_calls          (no cap)
--llmjudge-max-cost    LLMJUDGE_MAX_COST                llmjudge_max_cost           (no cap; USD)
--llmjudge-max-tokens  LLMJUDGE_MAX_TOKENS              llmjudge_max_tokens         (no cap)
--llmjudge-cache-fallback LLMJUDGE_CACHE_FALLBACK       llmjudge_cache_fallback     none
--llmjudge-lease-ttl   LLMJUDGE_LEASE_TTL               llmjudge_lease_ttl          30 (seconds)
--llmjudge-sequential  LLMJUDGE_SEQUENTIAL              llmjudge_sequential         false
--llmjudge-sequential-round LLMJUDGE_SEQUENTIAL_ROUND   llmjudge_sequential_round   20 (cases per row)
--llmjudge-sequential-seed  LLMJUDGE_SEQUENTIAL_SEED    llmjudge_sequential_seed    0
=====================  ===============================  ==========================  ===========

``--llmjudge-cache`` is one of ``use`` (read and write), ``refresh`` (write only: re-judge
everything and overwrite) or ``off``; ``--llmjudge-no-cache`` is short for ``off``. A
relative cache directory is taken from pytest's rootdir. ``--llmjudge-cache-url`` puts the
replies in another store (docs/remote-cache.md); run-scoped files (xdist sharing, batch
records) stay in the cache directory. ``--llmjudge-rpm`` and
``--llmjudge-tpm`` are budgets of each provider endpoint; ``--llmjudge-rate-limits`` sets
them per provider name (``openai:rpm=500:tpm=200000,anthropic:rpm=50``), falling back to the
two for what an entry doesn't say (docs/scale.md).

``--llmjudge-cache-fallback`` says what a remote store (``--llmjudge-cache-url``) that fails
its start-up probe does: ``none`` (the default) stops the run with a usage error naming the
store and the cause; ``local`` runs on the cache directory instead, with a red headline.
``--llmjudge-lease-ttl`` is how long a prompt's lease on a shared store lives without its
holder's heartbeat (renewed every third of it while the call is in flight): a crashed
holder's prompts are taken over after at most that long (docs/remote-cache.md).

``require_judge`` has three states: true (an item whose judge can't be called fails),
false (it is skipped), and unset, which follows the ``CI`` environment variable (set and not
``0``/``false``/``no``/``off``: GitHub Actions, GitLab and most CI services set ``CI=true``),
so a release gate that judged nothing fails in CI without anyone remembering a flag.
``--llmjudge-allow-no-judge`` is the command-line way to say false. The decision itself is
:func:`pytest_llmjudge.judges.no_judge_policy.judge_required`.

``target_timeout`` bounds one call of a suite's output target (the model under test); a
suite's ``outputs.timeout`` wins over it. The default, 300 s, is far above one generation of
a slow or cold self-hosted model, and still ends a run whose target hangs. Bad values raise
:class:`~pytest_llmjudge.errors.ConfigError`, which the plugin turns into a usage error
before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pytest_llmjudge.errors import ConfigError

CacheMode = Literal["use", "refresh", "off"]


@dataclass(frozen=True)
class Settings:
    concurrency: int = 16
    requests_per_minute: float | None = None
    max_retries: int = 4
    timeout: float = 60.0
    cache_dir: Path = Path(".llmjudge_cache")
    cache_url: str | None = None
    """Where judge replies live (``redis://``, ``s3://``, ``sqlite://``, a path); None: ``cache_dir``."""
    cache_mode: CacheMode = "use"
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    require_judge: bool | None = None
    """True: fail judge items that can't run; False: skip them; None: fail only in CI (:attr:`ci`)."""
    target_timeout: float = 300.0
    tokens_per_minute: float | None = None
    rate_limits: tuple[tuple[str, float | None, float | None], ...] = ()
    """``(provider, rpm, tpm)`` entries of ``--llmjudge-rate-limits``."""
    batch: bool = False
    batch_poll: float = 30.0
    batch_wait: float | None = None
    retry_backoff: float = 0.5
    languages: tuple[str, ...] = ()
    """``--llmjudge-language hi,ta``: run only items of these languages (empty: all); selection/run_phase.py."""
    progress_interval: float = 10.0
    """Seconds between progress lines when the terminal is not a TTY (CI logs); progress/run_phase.py."""
    ci: bool = False
    """Whether the run is in CI (the ``CI`` environment variable); not an option of its own."""
    max_calls: int | None = None
    """Hard cap on judge requests sent by the run (``execution/spend.py``); None: no cap."""
    max_cost: float | None = None
    """Hard cap on the run's estimated judge cost, USD, priced as the report prices it; None: no cap."""
    max_tokens: int | None = None
    """Hard cap on the run's judge tokens (input + output); None: no cap."""
    cache_fallback: Literal["none", "local"] = "none"
    """What a remote cache store that fails its start-up probe does: stop the run, or use the cache dir."""
    lease_ttl: float = 30.0
    """Seconds a lease on a shared store lives without a heartbeat (renewed every third of it)."""
    sequential: bool = False
    """Judge aggregate rows in rounds and stop a row once its verdict is settled (``execution/sequential.py``)."""
    sequential_round: int = 20
    """Cases per aggregate row per round of sequential judging."""
    sequential_seed: int = 0
    """Seed of sequential judging's case order."""


@dataclass(frozen=True)
class Option:
    name: str
    flag: str
    env: str
    help: str
    default: Any
    switch: bool = False
    """A command-line flag without a value (also every option whose default is a bool)."""

    @property
    def is_switch(self) -> bool:
        return self.switch or isinstance(self.default, bool)

    @property
    def ini(self) -> str:
        """The ini key: the flag without its dashes (``--llmjudge-rpm`` -> ``llmjudge_rpm``)."""
        return self.flag.lstrip("-").replace("-", "_")


OPTIONS: tuple[Option, ...] = (
    Option(
        "concurrency",
        "--llmjudge-concurrency",
        "LLMJUDGE_CONCURRENCY",
        "Judge requests in flight at once (default 16).",
        16,
    ),
    Option(
        "requests_per_minute",
        "--llmjudge-rpm",
        "LLMJUDGE_RPM",
        "Limit judge requests per minute (default: no limit).",
        None,
    ),
    Option(
        "max_retries",
        "--llmjudge-max-retries",
        "LLMJUDGE_MAX_RETRIES",
        "Retries of a failed judge request (429, 5xx, timeouts; default 4).",
        4,
    ),
    Option(
        "timeout",
        "--llmjudge-timeout",
        "LLMJUDGE_TIMEOUT",
        "Seconds one judge request may take as a whole, connecting to the last byte, per attempt (default 60).",
        60.0,
    ),
    Option(
        "cache_dir",
        "--llmjudge-cache-dir",
        "LLMJUDGE_CACHE_DIR",
        "Judge reply cache directory (default .llmjudge_cache under rootdir).",
        ".llmjudge_cache",
    ),
    Option(
        "cache_url",
        "--llmjudge-cache-url",
        "LLMJUDGE_CACHE_URL",
        "Judge reply store: redis://, s3://bucket/prefix, sqlite:///file or a path (default: the cache dir).",
        None,
    ),
    Option(
        "cache_mode",
        "--llmjudge-cache",
        "LLMJUDGE_CACHE",
        "Cache mode: use (default), refresh (re-judge and overwrite) or off.",
        "use",
    ),
    Option("provider", "--llmjudge-provider", "LLMJUDGE_PROVIDER", "Override every suite's judge provider.", None),
    Option("model", "--llmjudge-model", "LLMJUDGE_MODEL", "Override every suite's judge model.", None),
    Option(
        "base_url",
        "--llmjudge-base-url",
        "LLMJUDGE_BASE_URL",
        "Override the judge endpoint (OpenAI-compatible server, proxy).",
        None,
    ),
    Option(
        "require_judge",
        "--llmjudge-require-judge",
        "LLMJUDGE_REQUIRE_JUDGE",
        "Fail judge items whose judge can't be called (no key, unknown provider) instead of skipping them "
        "(default: fail in CI, i.e. env CI set, skip elsewhere).",
        None,
        switch=True,
    ),
    Option(
        "target_timeout",
        "--llmjudge-target-timeout",
        "LLMJUDGE_TARGET_TIMEOUT",
        "Seconds one call of an output target may take before its case is unscored (default 300).",
        300.0,
    ),
    Option(
        "tokens_per_minute",
        "--llmjudge-tpm",
        "LLMJUDGE_TPM",
        "Limit judge tokens per minute, per provider endpoint (default: no limit).",
        None,
    ),
    Option(
        "rate_limits",
        "--llmjudge-rate-limits",
        "LLMJUDGE_RATE_LIMITS",
        "Per-provider budgets, e.g. 'openai:rpm=500:tpm=200000,anthropic:rpm=50'.",
        "",
    ),
    Option(
        "batch",
        "--llmjudge-batch",
        "LLMJUDGE_BATCH",
        "Send uncached judge requests through the provider's batch API (half price, slower), then run.",
        False,
    ),
    Option(
        "batch_poll",
        "--llmjudge-batch-poll",
        "LLMJUDGE_BATCH_POLL",
        "Seconds between polls of a pending batch (default 30).",
        30.0,
    ),
    Option(
        "batch_wait",
        "--llmjudge-batch-wait",
        "LLMJUDGE_BATCH_WAIT",
        "Give up waiting for pending batches after this many seconds; a re-run collects them (default: no limit).",
        None,
    ),
    Option(
        "retry_backoff",
        "--llmjudge-retry-backoff",
        "LLMJUDGE_RETRY_BACKOFF",
        "Base of the exponential back-off between retries, in seconds (default 0.5; Retry-After wins).",
        0.5,
    ),
    Option(
        "languages",
        "--llmjudge-language",
        "LLMJUDGE_LANGUAGE",
        "Run only items of these languages, comma-separated (e.g. 'hi,ta'); others are deselected.",
        "",
    ),
    Option(
        "progress_interval",
        "--llmjudge-progress-interval",
        "LLMJUDGE_PROGRESS_INTERVAL",
        "Seconds between progress lines when the output is not a terminal, e.g. in CI logs (default 10).",
        10.0,
    ),
    Option(
        "max_calls",
        "--llmjudge-max-calls",
        "LLMJUDGE_MAX_CALLS",
        "Hard cap on judge requests (retries and re-asks count; cache hits are free); calls past it fail.",
        None,
    ),
    Option(
        "max_cost",
        "--llmjudge-max-cost",
        "LLMJUDGE_MAX_COST",
        "Hard cap on the estimated judge cost in USD (the price table of the cost report); calls past it fail.",
        None,
    ),
    Option(
        "max_tokens",
        "--llmjudge-max-tokens",
        "LLMJUDGE_MAX_TOKENS",
        "Hard cap on judge tokens, input + output (each request reserves its upper bound); calls past it fail.",
        None,
    ),
    Option(
        "cache_fallback",
        "--llmjudge-cache-fallback",
        "LLMJUDGE_CACHE_FALLBACK",
        "What a remote cache store that fails its start-up check does: none (default: stop with a usage error) "
        "or local (run on the cache dir, replies not shared).",
        "none",
    ),
    Option(
        "lease_ttl",
        "--llmjudge-lease-ttl",
        "LLMJUDGE_LEASE_TTL",
        "Seconds a prompt's lease on a shared cache store lives without its holder's heartbeat (default 30).",
        30.0,
    ),
    Option(
        "sequential",
        "--llmjudge-sequential",
        "LLMJUDGE_SEQUENTIAL",
        "Judge each aggregate row's cases in seeded random rounds and stop once an anytime-valid bound "
        "settles its verdict (docs/scale.md).",
        False,
    ),
    Option(
        "sequential_round",
        "--llmjudge-sequential-round",
        "LLMJUDGE_SEQUENTIAL_ROUND",
        "Cases per aggregate row per round of sequential judging (default 20).",
        20,
    ),
    Option(
        "sequential_seed",
        "--llmjudge-sequential-seed",
        "LLMJUDGE_SEQUENTIAL_SEED",
        "Seed of sequential judging's case order (default 0).",
        0,
    ),
)


def _positive_int(name: str, raw: Any) -> int:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    if value < 1:
        raise ConfigError(f"{name} must be at least 1, got {value}")
    return value


def _non_negative_int(name: str, raw: Any) -> int:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    if value < 0:
        raise ConfigError(f"{name} can't be negative, got {value}")
    return value


def _positive_float(name: str, raw: Any) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if not value > 0:
        raise ConfigError(f"{name} must be positive, got {raw!r}")
    return value


def _non_negative_float(name: str, raw: Any) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if not (value >= 0 and value != float("inf")):
        raise ConfigError(f"{name} must be a finite number >= 0, got {raw!r}")
    return value


def _boolean(name: str, raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


def _rate_limits(name: str, raw: Any) -> tuple[tuple[str, float | None, float | None], ...]:
    from pytest_llmjudge.execution.ratelimit import parse_rate_limits

    try:
        limits = parse_rate_limits(str(raw))
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    return tuple((provider, b.requests_per_minute, b.tokens_per_minute) for provider, b in limits.items())


def _languages(name: str, raw: Any) -> tuple[str, ...]:
    """``hi,ta`` (or a list, from an ini ``linelist``) as language codes, each once; no empty names."""
    if not str(raw).strip():
        return ()  # the default: every language
    parts = raw if isinstance(raw, list) else str(raw).split(",")
    languages = [str(part).strip() for part in parts]
    if any(not language or any(ch.isspace() for ch in language) for language in languages):
        raise ConfigError(f"{name} must be comma-separated language codes like 'hi,ta', got {raw!r}")
    return tuple(dict.fromkeys(languages))


def _cache_mode(name: str, raw: Any) -> CacheMode:
    text = str(raw).strip().lower()
    if text not in ("use", "refresh", "off"):
        raise ConfigError(f"{name} must be one of use, refresh, off; got {raw!r}")
    return text  # type: ignore[return-value]


def _cache_fallback(name: str, raw: Any) -> Literal["none", "local"]:
    text = str(raw).strip().lower()
    if text not in ("none", "local"):
        raise ConfigError(f"{name} must be none or local; got {raw!r}")
    return text  # type: ignore[return-value]


def ci_detected(environ: Mapping[str, str]) -> bool:
    """Whether ``CI`` is set to something other than a false word (``CI=true`` on GitHub and GitLab)."""
    value = environ.get("CI", "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


def resolve_settings(
    cli: Mapping[str, Any],
    ini: Mapping[str, Any],
    environ: Mapping[str, str],
    rootdir: Path,
) -> Settings:
    """Merge the sources (command line > environment > ini > default) into :class:`Settings`."""

    def pick(option: Option) -> tuple[str, Any]:
        value = cli.get(option.name)
        if value is not None and value is not False:
            return option.flag, value
        if environ.get(option.env) not in (None, ""):
            return option.env, environ[option.env]
        value = ini.get(option.name)
        if value not in (None, "", []):
            return f"ini {option.ini}", value
        return option.flag, option.default

    parsed: dict[str, Any] = {}
    parsers: dict[str, Callable[[str, Any], Any]] = {
        "concurrency": _positive_int,
        "requests_per_minute": _positive_float,
        "max_retries": _non_negative_int,
        "timeout": _positive_float,
        "cache_mode": _cache_mode,
        "require_judge": _boolean,
        "target_timeout": _positive_float,
        "tokens_per_minute": _positive_float,
        "rate_limits": _rate_limits,
        "batch": _boolean,
        "sequential": _boolean,
        "sequential_round": _positive_int,
        "sequential_seed": _non_negative_int,
        "batch_poll": _positive_float,
        "batch_wait": _positive_float,
        "retry_backoff": _positive_float,
        "languages": _languages,
        "progress_interval": _positive_float,
        "max_calls": _non_negative_int,
        "max_cost": _non_negative_float,
        "max_tokens": _non_negative_int,
        "cache_fallback": _cache_fallback,
        "lease_ttl": _positive_float,
    }
    for option in OPTIONS:
        source, raw = pick(option)
        parser = parsers.get(option.name)
        if raw is None:
            parsed[option.name] = None
        elif parser is not None:
            parsed[option.name] = parser(source, raw)
        else:
            parsed[option.name] = str(raw)
    if cli.get("no_cache"):
        parsed["cache_mode"] = "off"
    if cli.get("allow_no_judge"):
        if cli.get("require_judge"):
            raise ConfigError("--llmjudge-require-judge and --llmjudge-allow-no-judge contradict each other")
        parsed["require_judge"] = False
    parsed["ci"] = ci_detected(environ)
    cache_dir = Path(parsed["cache_dir"]).expanduser()
    if not cache_dir.is_absolute():
        cache_dir = rootdir / cache_dir
    parsed["cache_dir"] = cache_dir
    return Settings(**parsed)
