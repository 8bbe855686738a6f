"""Run settings (``settings.resolve_settings``): command line > environment > ini > default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_llmjudge.errors import ConfigError
from pytest_llmjudge.settings import OPTIONS, Settings, ci_detected, resolve_settings

ROOT = Path("/project/root")


def resolve(
    cli: dict[str, Any] | None = None, ini: dict[str, Any] | None = None, env: dict[str, str] | None = None
) -> Settings:
    return resolve_settings(cli or {}, ini or {}, env or {}, ROOT)


def test_defaults() -> None:
    settings = resolve()

    assert settings == Settings(cache_dir=ROOT / ".llmjudge_cache")
    assert (settings.concurrency, settings.requests_per_minute, settings.max_retries, settings.timeout) == (
        16,
        None,
        4,
        60.0,
    )
    assert (settings.cache_mode, settings.provider, settings.model, settings.base_url) == ("use", None, None, None)
    assert settings.require_judge is None, "unset: follows CI"
    assert (settings.target_timeout, settings.ci) == (300.0, False)


def test_options_table_matches_the_settings_fields() -> None:
    # ``ci`` is read from the CI variable, not an option of its own.
    assert [option.name for option in OPTIONS] == [name for name in Settings.__dataclass_fields__ if name != "ci"]
    for option in OPTIONS:
        assert option.flag == "--llmjudge-" + {
            "requests_per_minute": "rpm",
            "cache_mode": "cache",
            "tokens_per_minute": "tpm",
            "languages": "language",
        }.get(option.name, option.name.replace("_", "-"))
        assert option.env.startswith("LLMJUDGE_")


# --------------------------------------------------------------------------- precedence

# (option, cli value, env value, ini value, default, parsed cli, parsed env, parsed ini)
PRECEDENCE = [
    ("concurrency", "3", "5", "7", 16, 3, 5, 7),
    ("requests_per_minute", "30", "60.5", "90", None, 30.0, 60.5, 90.0),
    ("max_retries", "0", "2", "9", 4, 0, 2, 9),
    ("timeout", "1.5", "2", "30", 60.0, 1.5, 2.0, 30.0),
    ("cache_mode", "off", "refresh", "use", "use", "off", "refresh", "use"),
    ("provider", "anthropic", "openai-compatible", "my-plugin", None, "anthropic", "openai-compatible", "my-plugin"),
    ("model", "m-cli", "m-env", "m-ini", None, "m-cli", "m-env", "m-ini"),
    (
        "base_url",
        "http://cli/v1",
        "http://env/v1",
        "http://ini/v1",
        None,
        "http://cli/v1",
        "http://env/v1",
        "http://ini/v1",
    ),
    ("require_judge", True, "false", "true", None, True, False, True),
    ("target_timeout", "0.5", "2", "30", 300.0, 0.5, 2.0, 30.0),
    ("languages", "hi, ta,hi", "de", "fr,ja", (), ("hi", "ta"), ("de",), ("fr", "ja")),
    ("progress_interval", "0.5", "2", "30", 10.0, 0.5, 2.0, 30.0),
]


@pytest.mark.parametrize(
    ("name", "cli_value", "env_value", "ini_value", "default", "from_cli", "from_env", "from_ini"), PRECEDENCE
)
def test_precedence_per_option(
    name: str,
    cli_value: Any,
    env_value: str,
    ini_value: str,
    default: Any,
    from_cli: Any,
    from_env: Any,
    from_ini: Any,
) -> None:
    option = next(o for o in OPTIONS if o.name == name)
    cli, env, ini = {name: cli_value}, {option.env: env_value}, {name: ini_value}

    assert getattr(resolve(cli, ini, env), name) == from_cli
    assert getattr(resolve({}, ini, env), name) == from_env
    assert getattr(resolve({}, ini, {}), name) == from_ini
    assert getattr(resolve(), name) == default


def test_cache_dir_precedence(tmp_path: Path) -> None:
    cli, env, ini = {"cache_dir": "/c"}, {"LLMJUDGE_CACHE_DIR": "/e"}, {"cache_dir": "/i"}
    assert resolve(cli, ini, env).cache_dir == Path("/c")
    assert resolve({}, ini, env).cache_dir == Path("/e")
    assert resolve({}, ini, {}).cache_dir == Path("/i")


@pytest.mark.parametrize("unset", [None, False])
def test_an_unset_flag_falls_through(unset: Any) -> None:
    # argparse leaves unset options as None (store_true flags default to None or False).
    settings = resolve({"concurrency": unset, "require_judge": unset}, env={"LLMJUDGE_CONCURRENCY": "4"})
    assert settings.concurrency == 4
    assert settings.require_judge is None


@pytest.mark.parametrize("empty", ["", None, []])
def test_an_empty_ini_value_falls_through(empty: Any) -> None:
    assert resolve(ini={"concurrency": empty}).concurrency == 16


def test_an_empty_environment_variable_falls_through() -> None:
    assert resolve(ini={"concurrency": "9"}, env={"LLMJUDGE_CONCURRENCY": ""}).concurrency == 9


def test_options_are_resolved_independently() -> None:
    settings = resolve(
        {"concurrency": "2"},
        {"max_retries": "1", "concurrency": "99"},
        {"LLMJUDGE_TIMEOUT": "5", "LLMJUDGE_MAX_RETRIES": "3"},
    )
    assert (settings.concurrency, settings.max_retries, settings.timeout) == (2, 3, 5.0)


# --------------------------------------------------------------------------- value parsing


@pytest.mark.parametrize(("raw", "expected"), [("use", "use"), (" Refresh ", "refresh"), ("OFF", "off")])
def test_cache_mode_is_case_insensitive(raw: str, expected: str) -> None:
    assert resolve({"cache_mode": raw}).cache_mode == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", True),
        ("true", True),
        ("Yes", True),
        (" on ", True),
        ("0", False),
        ("false", False),
        ("NO", False),
        ("off", False),
    ],
)
def test_booleans(raw: str, expected: bool) -> None:
    assert resolve(env={"LLMJUDGE_REQUIRE_JUDGE": raw}).require_judge is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("1", True), ("yes", True), ("anything", True), ("", False), ("0", False), ("false", False)],
)
def test_ci_is_any_value_of_the_ci_variable_but_a_false_word(value: str, expected: bool) -> None:
    assert ci_detected({"CI": value}) is expected
    assert resolve(env={"CI": value}).ci is expected
    assert ci_detected({}) is False


def test_require_judge_is_three_valued() -> None:
    assert resolve().require_judge is None
    assert resolve({"require_judge": True}).require_judge is True
    assert resolve(ini={"require_judge": "false"}).require_judge is False
    # --llmjudge-allow-no-judge says false, and as a command-line flag wins over the environment and ini.
    overridden = resolve({"allow_no_judge": True}, {"require_judge": "true"}, {"LLMJUDGE_REQUIRE_JUDGE": "1"})
    assert overridden.require_judge is False
    assert resolve({"allow_no_judge": False}, env={"LLMJUDGE_REQUIRE_JUDGE": "1"}).require_judge is True


def test_require_and_allow_no_judge_together_are_an_error() -> None:
    with pytest.raises(ConfigError, match="contradict"):
        resolve({"require_judge": True, "allow_no_judge": True})


@pytest.mark.parametrize("mode", ["use", "refresh", "off"])
def test_no_cache_forces_off(mode: str) -> None:
    assert resolve({"no_cache": True, "cache_mode": mode}).cache_mode == "off"
    assert resolve({"no_cache": True}, env={"LLMJUDGE_CACHE": mode}).cache_mode == "off"
    assert resolve({"no_cache": False, "cache_mode": mode}).cache_mode == mode


def test_a_relative_cache_dir_is_taken_from_rootdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the working directory must not matter
    assert resolve().cache_dir == ROOT / ".llmjudge_cache"
    assert resolve({"cache_dir": "build/judge-cache"}).cache_dir == ROOT / "build" / "judge-cache"
    assert resolve(env={"LLMJUDGE_CACHE_DIR": "env-cache"}).cache_dir == ROOT / "env-cache"
    assert resolve(ini={"cache_dir": "./ini-cache"}).cache_dir == ROOT / "ini-cache"


def test_an_absolute_cache_dir_is_kept(tmp_path: Path) -> None:
    assert resolve({"cache_dir": str(tmp_path / "c")}).cache_dir == tmp_path / "c"


def test_a_home_relative_cache_dir_is_expanded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve({"cache_dir": "~/judge-cache"}).cache_dir == tmp_path / "judge-cache"


# --------------------------------------------------------------------------- errors name their source

BAD_VALUES = [
    ("concurrency", "many", "must be a whole number"),
    ("concurrency", "0", "must be at least 1"),
    ("concurrency", "-3", "must be at least 1"),
    ("concurrency", "1.5", "must be a whole number"),
    ("requests_per_minute", "fast", "must be a number"),
    ("requests_per_minute", "0", "must be positive"),
    ("requests_per_minute", "-10", "must be positive"),
    ("requests_per_minute", "nan", "must be positive"),
    ("max_retries", "-1", "can't be negative"),
    ("max_retries", "x", "must be a whole number"),
    ("timeout", "0", "must be positive"),
    ("timeout", "soon", "must be a number"),
    ("cache_mode", "sometimes", "must be one of use, refresh, off"),
    ("require_judge", "maybe", "must be true or false"),
    ("target_timeout", "0", "must be positive"),
    ("target_timeout", "forever", "must be a number"),
]


@pytest.mark.parametrize(("name", "raw", "message"), BAD_VALUES)
def test_a_bad_flag_names_the_flag(name: str, raw: str, message: str) -> None:
    option = next(o for o in OPTIONS if o.name == name)
    with pytest.raises(ConfigError) as excinfo:
        resolve({name: raw})
    text = str(excinfo.value)
    assert text.startswith(option.flag + " ")
    assert message in text
    assert repr(raw) in text or raw in text


@pytest.mark.parametrize(("name", "raw", "message"), BAD_VALUES)
def test_a_bad_environment_variable_names_the_variable(name: str, raw: str, message: str) -> None:
    option = next(o for o in OPTIONS if o.name == name)
    with pytest.raises(ConfigError) as excinfo:
        resolve(env={option.env: raw})
    assert str(excinfo.value).startswith(option.env + " ")
    assert message in str(excinfo.value)


@pytest.mark.parametrize(("name", "raw", "message"), BAD_VALUES)
def test_a_bad_ini_value_names_the_ini_key(name: str, raw: str, message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        resolve(ini={name: raw})
    option = next(o for o in OPTIONS if o.name == name)
    assert str(excinfo.value).startswith(f"ini {option.ini} ")
    assert message in str(excinfo.value)


def test_a_bad_lower_priority_value_is_ignored_when_overridden() -> None:
    # Only the value that wins is parsed.
    assert resolve({"concurrency": "2"}, {"concurrency": "junk"}, {"LLMJUDGE_CONCURRENCY": "junk"}).concurrency == 2


def test_config_error_is_an_llmjudge_error() -> None:
    from pytest_llmjudge.errors import LLMJudgeError

    assert issubclass(ConfigError, LLMJudgeError)
