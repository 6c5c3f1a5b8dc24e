"""toolreel.open_agent.config: presets, environment variables and the config file, as open_agent."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from toolreel.core import ToolreelError
from toolreel.open_agent.config import (
    ENV_BASE_URL,
    ENV_MODEL,
    PROVIDER_DEFAULTS,
    ConfigFileError,
    config_search_paths,
    get_base_url,
    get_model,
    load_config_file,
)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No OPEN_AGENT_* variable or real config file of the machine leaks into a test."""
    monkeypatch.delenv(ENV_BASE_URL, raising=False)
    monkeypatch.delenv(ENV_MODEL, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setattr(Path, "home", lambda: home)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)


def test_the_environment_variables_are_open_agents() -> None:
    assert (ENV_BASE_URL, ENV_MODEL) == ("OPEN_AGENT_BASE_URL", "OPEN_AGENT_MODEL")


def test_presets_are_the_four_local_servers_default_endpoints() -> None:
    assert dict(PROVIDER_DEFAULTS) == {
        "lmstudio": "http://localhost:1234/v1",
        "ollama": "http://localhost:11434/v1",
        "llamacpp": "http://localhost:8080/v1",
        "vllm": "http://localhost:8000/v1",
    }


def test_presets_cannot_be_changed_by_accident() -> None:
    with pytest.raises(TypeError):
        PROVIDER_DEFAULTS["ollama"] = "http://elsewhere/v1"  # type: ignore[index]


@pytest.mark.parametrize("provider", ["ollama", "OLLAMA", " Ollama "])
def test_provider_names_match_in_any_case(provider: str) -> None:
    assert get_base_url(provider=provider) == "http://localhost:11434/v1"


def test_without_anything_the_base_url_is_lm_studios() -> None:
    assert get_base_url() == "http://localhost:1234/v1"


def test_an_unknown_provider_falls_back_to_lm_studio_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolreel.open_agent"):
        assert get_base_url(provider="koboldcpp") == "http://localhost:1234/v1"
    assert "unknown provider 'koboldcpp'" in caplog.text


def test_base_url_precedence_explicit_then_environment_then_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert get_base_url("http://explicit:1/v1", provider="vllm") == "http://explicit:1/v1"
    monkeypatch.setenv(ENV_BASE_URL, "http://env:2/v1")
    assert get_base_url(provider="vllm") == "http://env:2/v1"
    assert get_base_url("http://explicit:1/v1", provider="vllm") == "http://explicit:1/v1"


@pytest.mark.parametrize("blank", ["", "   "])
def test_blank_base_urls_count_as_unset(monkeypatch: pytest.MonkeyPatch, blank: str) -> None:
    monkeypatch.setenv(ENV_BASE_URL, blank)
    assert get_base_url(blank, provider="llamacpp") == "http://localhost:8080/v1"


def test_model_comes_from_the_environment_before_the_fallback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert get_model() is None
    assert get_model("qwen2.5-32b-instruct") == "qwen2.5-32b-instruct"
    monkeypatch.setenv(ENV_MODEL, "llama3.1:70b")
    assert get_model("qwen2.5-32b-instruct") == "llama3.1:70b"
    assert get_model() == "llama3.1:70b"


def test_prefer_env_false_ignores_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MODEL, "llama3.1:70b")
    assert get_model("qwen2.5-32b-instruct", prefer_env=False) == "qwen2.5-32b-instruct"
    assert get_model(prefer_env=False) is None


def test_a_blank_model_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MODEL, "")
    assert get_model("fallback") == "fallback"
    assert get_model("  ") is None


def test_search_paths_are_project_then_xdg_then_home_dotfile() -> None:
    home = Path.home()
    assert config_search_paths() == (
        Path.cwd() / "open-agent.yaml",
        home / ".config" / "open-agent" / "config.yaml",
        home / ".open-agent.yaml",
    )


# The config file: these need PyYAML, as open_agent's do.


def _write(path: Path, text: str) -> Path:
    """`text` in `path`, creating its folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_an_explicit_file_is_read_as_yaml(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    path = _write(tmp_path / "agent.yaml", "model: qwen\ntemperature: 0.7\nmax_tokens: 4096\n")
    assert load_config_file(path) == {"model": "qwen", "temperature": 0.7, "max_tokens": 4096}
    assert load_config_file(str(path)) == {
        "model": "qwen",
        "temperature": 0.7,
        "max_tokens": 4096,
    }


def test_an_explicit_path_skips_the_search(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    _write(Path.cwd() / "open-agent.yaml", "model: from-project\n")
    assert load_config_file(tmp_path / "missing.yaml") == {}


def test_the_first_existing_search_path_wins() -> None:
    pytest.importorskip("yaml")
    project, xdg, dotfile = config_search_paths()
    _write(dotfile, "model: from-dotfile\n")
    assert load_config_file() == {"model": "from-dotfile"}
    _write(xdg, "model: from-xdg\n")
    assert load_config_file() == {"model": "from-xdg"}
    _write(project, "model: from-project\n")
    assert load_config_file() == {"model": "from-project"}


def test_no_file_anywhere_is_an_empty_config() -> None:
    assert load_config_file() == {}


@pytest.mark.parametrize("text", ["", "null\n", "# only a comment\n"])
def test_an_empty_file_is_an_empty_config(tmp_path: Path, text: str) -> None:
    pytest.importorskip("yaml")
    assert load_config_file(_write(tmp_path / "c.yaml", text)) == {}


def test_without_pyyaml_a_file_is_ignored_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml -> ImportError
    path = _write(tmp_path / "c.yaml", "model: qwen\n")
    with caplog.at_level(logging.WARNING, logger="toolreel.open_agent"):
        assert load_config_file(path) == {}
    assert "needs PyYAML" in caplog.text


def test_invalid_yaml_raises_an_error_that_is_also_a_yaml_error(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    path = _write(tmp_path / "bad.yaml", "model: [unclosed bracket\ntemperature: 0.7\n")
    with pytest.raises(ConfigFileError, match="not valid YAML") as caught:
        load_config_file(path)
    assert isinstance(caught.value, yaml.YAMLError)
    assert isinstance(caught.value, ToolreelError)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "1: one\n"])
def test_a_file_that_is_not_a_mapping_of_names_is_refused(tmp_path: Path, text: str) -> None:
    yaml = pytest.importorskip("yaml")
    with pytest.raises(ConfigFileError, match="must hold a mapping") as caught:
        load_config_file(_write(tmp_path / "c.yaml", text))
    assert isinstance(caught.value, yaml.YAMLError)


def test_an_unreadable_file_raises_an_error_that_is_also_a_permission_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("yaml")
    path = _write(tmp_path / "c.yaml", "model: qwen\n")

    def refuse(self: Path, *args: object, **kwargs: object) -> str:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_text", refuse)  # root reads even a chmod 000 file
    with pytest.raises(PermissionError) as caught:
        load_config_file(path)
    assert isinstance(caught.value, ConfigFileError)
    assert "cannot read config file" in str(caught.value)
    assert isinstance(caught.value.__cause__, PermissionError)


def test_an_explicit_path_to_a_folder_is_an_error_a_folder_on_the_search_path_is_not(
    tmp_path: Path,
) -> None:
    pytest.importorskip("yaml")
    with pytest.raises(IsADirectoryError) as caught:
        load_config_file(tmp_path)
    assert isinstance(caught.value, ConfigFileError)
    config_search_paths()[0].mkdir()
    assert load_config_file() == {}


def test_a_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    path = tmp_path / "c.yaml"
    path.write_bytes(b"model: \xff\xfe\n")
    with pytest.raises(ConfigFileError, match="not UTF-8"):
        load_config_file(path)
