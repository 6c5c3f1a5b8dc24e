"""open_agent's configuration helpers: provider presets, environment variables, a config file.

Opt-in, as in open_agent: `AgentOptions` never reads any of this; an application
calls the helpers to fill its options.

    base_url   get_base_url(base_url, provider)
               1. `base_url` when given (a non-empty string)
               2. $OPEN_AGENT_BASE_URL
               3. the `provider` preset (`lmstudio`, `ollama`, `llamacpp`, `vllm`;
                  any case; an unknown name logs a warning and counts as `lmstudio`)
               4. LM Studio's http://localhost:1234/v1
    model      get_model(model, prefer_env=True)
               $OPEN_AGENT_MODEL first (unless `prefer_env=False`), then `model`, else None
    file       load_config_file(path=None) -> dict
               `path`, or the first of ./open-agent.yaml, ~/.config/open-agent/config.yaml,
               ~/.open-agent.yaml that exists; YAML, read with PyYAML when installed
               (without it, or without a file, the answer is {})

A file that exists but cannot be used raises a `ConfigFileError` (a
`ToolreelError`) which is also an instance of what open_agent lets through:
`PermissionError` (or the other `OSError` the read failed with) for an unreadable
file, `yaml.YAMLError` for text that is not YAML or not a mapping.
"""

from __future__ import annotations

import importlib
import logging
import os
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from toolreel.core import ToolreelError

__all__ = [
    "ENV_BASE_URL",
    "ENV_MODEL",
    "PROVIDER_DEFAULTS",
    "ConfigFileError",
    "config_search_paths",
    "get_base_url",
    "get_model",
    "load_config_file",
]

_log = logging.getLogger("toolreel.open_agent")

#: The environment variable naming the server's OpenAI-compatible base URL.
ENV_BASE_URL = "OPEN_AGENT_BASE_URL"
#: The environment variable naming the model.
ENV_MODEL = "OPEN_AGENT_MODEL"

#: Each local server's default OpenAI-compatible endpoint (the port its documentation gives).
PROVIDER_DEFAULTS: Mapping[str, str] = types.MappingProxyType(
    {
        "lmstudio": "http://localhost:1234/v1",
        "ollama": "http://localhost:11434/v1",
        "llamacpp": "http://localhost:8080/v1",
        "vllm": "http://localhost:8000/v1",
    }
)
_DEFAULT_PROVIDER = "lmstudio"


class ConfigFileError(ToolreelError):
    """A config file that exists but cannot be used: unreadable, not YAML, not a mapping."""


def get_base_url(base_url: str | None = None, provider: str | None = None) -> str:
    """The base URL to use: explicit, else the environment, else a provider preset."""
    if _given(base_url):
        return cast(str, base_url)
    from_env = os.environ.get(ENV_BASE_URL)
    if _given(from_env):
        return cast(str, from_env)
    return _preset(provider)


def get_model(model: str | None = None, *, prefer_env: bool = True) -> str | None:
    """The model to use: the environment overrides the fallback unless told not to."""
    if prefer_env:
        from_env = os.environ.get(ENV_MODEL)
        if _given(from_env):
            return from_env
    return model if _given(model) else None


def config_search_paths() -> tuple[Path, ...]:
    """Where `load_config_file()` looks, first match wins (read now: cwd and home may change)."""
    home = Path.home()
    return (
        Path.cwd() / "open-agent.yaml",
        home / ".config" / "open-agent" / "config.yaml",
        home / ".open-agent.yaml",
    )


def load_config_file(config_path: Path | str | None = None) -> dict[str, Any]:
    """The settings in the config file as a dict; {} when there is none or no PyYAML."""
    path = _find_config(config_path)
    if path is None:
        return {}
    try:
        yaml = importlib.import_module("yaml")
    except ImportError:
        _log.warning("config file %s ignored: reading it needs PyYAML (pip install pyyaml)", path)
        return {}
    return _parse(yaml, path, _read(path))


def _given(value: str | None) -> bool:
    """Whether a setting was really given: None and blank strings count as unset."""
    return value is not None and value.strip() != ""


def _preset(provider: str | None) -> str:
    """The preset URL of a provider name (any case); unknown names get the default."""
    if provider is None:
        return PROVIDER_DEFAULTS[_DEFAULT_PROVIDER]
    url = PROVIDER_DEFAULTS.get(provider.strip().lower())
    if url is None:
        _log.warning(
            "unknown provider %r (known: %s); using %s",
            provider,
            ", ".join(PROVIDER_DEFAULTS),
            _DEFAULT_PROVIDER,
        )
        return PROVIDER_DEFAULTS[_DEFAULT_PROVIDER]
    return url


def _find_config(config_path: Path | str | None) -> Path | None:
    """The explicit path if it exists (a folder there is an error), else the first file found."""
    if config_path is not None:
        path = Path(config_path)
        return path if path.exists() else None
    return next((path for path in config_search_paths() if path.is_file()), None)


def _read(path: Path) -> str:
    """The file's text; a failed read is a ConfigFileError of the OSError's own kind."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise _twin(type(exc))(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigFileError(f"config file {path} is not UTF-8 text: {exc.reason}") from exc


def _parse(yaml: types.ModuleType, path: Path, text: str) -> dict[str, Any]:
    """The YAML mapping in `text`; an empty file or a bare null is {}."""
    invalid = _twin(cast(type[BaseException], yaml.YAMLError))
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise invalid(f"config file {path} is not valid YAML: {detail}") from exc
    if loaded is None:
        return {}
    if not isinstance(loaded, dict) or not all(isinstance(key, str) for key in loaded):
        kind = type(loaded).__name__
        raise invalid(f"config file {path} must hold a mapping of names to values, not a {kind}")
    return loaded


def _twin(foreign: type[BaseException]) -> type[ConfigFileError]:
    """A ConfigFileError that is also a `foreign`, for callers who catch what open_agent raised."""
    twin = _TWINS.get(foreign)
    if twin is None:
        name = f"ConfigFile{foreign.__name__}"
        twin = _TWINS[foreign] = cast(
            type[ConfigFileError], type(name, (ConfigFileError, foreign), {})
        )
    return twin


#: One twin class per foreign type, so that repeated errors share a class.
_TWINS: dict[type[BaseException], type[ConfigFileError]] = {}
