"""What `import toolreel.shell` loads: the library, not the command line (click, rich) nor
httpx2 (whose own import loads click and rich when they are installed), nor Pydantic or griffe;
the first HTTP model loads httpx2 (never httpx, which is not toolreel's), and the cattrs
converter is built the first time something is (de)serialised — never for a tool of scalar
parameters (PERF.md: that import, and the full garbage collection it set off, cost ~22 ms
inside a process's first conversation). What a program talking to one OpenAI-compatible
server does not use (the other codecs, the SQLite, JSON lines and PostgreSQL journals,
sessions and diffs, agents, fork, rerun, replay, evaluations) is imported when its name
is first asked for (issue 22: `import toolreel.shell` <= 1.5x `import httpx2`).
Each check runs in a fresh interpreter; none times anything (tests/bench/bench_import.py
measures the cold start)."""

from __future__ import annotations

import json
import subprocess
import sys

CLI_ONLY = {"click", "rich", "pygments"}


def loaded_after(statements: str) -> set[str]:
    """The top-level names in sys.modules once a fresh interpreter has run `statements`."""
    program = f"{statements}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    modules = json.loads(done.stdout.splitlines()[-1])
    return {name.split(".")[0] for name in modules} | set(modules)


def test_importing_the_shell_loads_neither_the_cli_nor_an_http_client() -> None:
    loaded = loaded_after("import toolreel.shell")
    assert loaded & CLI_ONLY == set()
    assert {"httpx", "httpx2", "httpcore", "httpcore2"} & loaded == set()
    assert "toolreel.cli" not in loaded


def test_importing_the_shell_loads_neither_pydantic_nor_griffe() -> None:
    loaded = loaded_after("import toolreel.shell")
    assert loaded & {"pydantic", "pydantic_core", "annotated_types", "griffe"} == set()


SCALAR_TOOL = '''
import anyio
from toolreel.shell import tool

@tool
async def add(a: int, b: float, note: str | None = None) -> dict:
    """Add two numbers."""
    return {"sum": a + b, "note": note}

assert anyio.run(add.run, '{"a": 1, "b": 2}').unwrap() == '{"sum": 3.0, "note": null}'
'''


def test_a_tool_of_scalar_parameters_runs_without_cattrs_griffe_or_pydantic() -> None:
    loaded = loaded_after(SCALAR_TOOL)
    assert loaded & {"cattrs", "griffe", "pydantic"} == set()


DOCUMENTED_TOOL = '''
from toolreel.shell import tool

@tool
def add(a: int) -> int:
    """Add.

    Args:
        a: A number.
    """
    return a

assert add.parameters["properties"]["a"]["description"] == "A number."
'''


def test_griffe_is_loaded_for_a_docstring_with_a_parameter_section() -> None:
    loaded = loaded_after(DOCUMENTED_TOOL)
    assert "griffe" in loaded
    assert "pydantic" not in loaded


def test_importing_the_shell_builds_no_converter() -> None:
    loaded = loaded_after(
        "import toolreel.shell\n"
        "from toolreel.adapters._serde import get_converter\n"
        "assert get_converter.cache_info().currsize == 0, 'converter built at import'"
    )
    assert "cattrs.strategies" not in loaded


def test_the_first_http_model_loads_httpx2_and_not_httpx() -> None:
    loaded = loaded_after(
        "from toolreel.adapters import http_model\n"
        "http_model('openai', base_url='http://127.0.0.1:9/v1')"
    )
    assert "httpx2" in loaded
    assert "httpx" not in loaded


def test_options_given_an_http_client_import_no_other_client_library() -> None:
    loaded = loaded_after(
        "import httpx2\n"
        "from toolreel.shell import AgentOptions\n"
        "AgentOptions(model='m', base_url='http://127.0.0.1:9/v1',\n"
        "             http_client=httpx2.AsyncClient())"
    )
    assert "httpx" not in loaded


def test_the_converter_is_built_on_first_use_and_is_the_one_exported() -> None:
    loaded = loaded_after(
        "import toolreel.adapters as adapters\n"
        "from toolreel.adapters import _serde\n"
        "from toolreel.core import TextDelta\n"
        "assert adapters.converter is _serde.converter is _serde.get_converter()\n"
        "assert _serde.event_to_json(TextDelta(text='x')) == "
        '\'{"text":"x","type":"TextDelta"}\''
    )
    assert "cattrs.strategies" in loaded


#: Each lazily imported public name: (package, name, the module that defines it).
LAZY_NAMES = [
    *[
        ("toolreel.shell", name, "toolreel.shell._agent")
        for name in ("AgentDefinition", "AgentFailure", "AgentMetadata", "AgentSuccess")
    ],
    ("toolreel.shell", "execute_agent", "toolreel.shell._agent"),
    ("toolreel.shell", "resume_agent", "toolreel.shell._agent_approval"),
    ("toolreel.shell", "OutputTool", "toolreel.shell._agent_output"),
    ("toolreel.shell", "evaluate", "toolreel.shell._eval"),
    ("toolreel.shell", "fork", "toolreel.shell._fork"),
    ("toolreel.shell", "Recording", "toolreel.shell._recording"),
    ("toolreel.shell", "replay", "toolreel.shell._replay"),
    ("toolreel.shell", "rerun", "toolreel.shell._rerun"),
    ("toolreel.shell", "export_session", "toolreel.shell._transfer"),
    ("toolreel.shell", "Verdict", "toolreel.shell._verdict"),
    ("toolreel.adapters", "AnthropicCodec", "toolreel.adapters._providers._anthropic"),
    ("toolreel.adapters", "GeminiCodec", "toolreel.adapters._providers._gemini"),
    ("toolreel.adapters", "OllamaCodec", "toolreel.adapters._providers._ollama"),
    ("toolreel.adapters", "ResponsesCodec", "toolreel.adapters._providers._responses"),
    ("toolreel.adapters", "JSONLJournal", "toolreel.adapters._jsonl"),
    ("toolreel.adapters", "SQLiteJournal", "toolreel.adapters._sqlite"),
    ("toolreel.adapters", "PostgresJournal", "toolreel.adapters._postgres"),
    ("toolreel.adapters", "load_session", "toolreel.adapters._session"),
    ("toolreel.adapters", "diff_sessions", "toolreel.adapters._session_diff"),
    ("toolreel.adapters", "diff_requests", "toolreel.adapters._request_diff"),
    ("toolreel.adapters", "render_transcript", "toolreel.adapters._transcript"),
]
#: Libraries only those modules use (and email, only a dated Retry-After header; sqlite3,
#: only a SQLite journal; decimal, only a tool's Decimal, shell/_named_types.py).
LAZY_LIBRARIES = {
    *("psycopg", "openai", "difflib", "cattrs", "pydantic", "griffe", "email"),
    *("sqlite3", "decimal"),
}
#: Modules only resuming a session (folding its journal again) uses.
RESUMING = {"toolreel.shell._restore", "toolreel.adapters.replay", "toolreel.adapters._fold"}


def test_importing_the_shell_loads_none_of_the_lazy_modules() -> None:
    loaded = loaded_after("import toolreel.shell")
    assert {module for _, _, module in LAZY_NAMES} & loaded == set()
    assert RESUMING & loaded == set()
    assert LAZY_LIBRARIES & loaded == set()


def test_importing_the_shell_leaves_anyios_modules_to_the_first_request() -> None:
    """httpx2's transport loads anyio's at a program's first request; toolreel names them
    only in code that runs then (its HTTP pools' loop variable, tool threads, task groups)."""
    with_anyio = loaded_after("import anyio")
    loaded = loaded_after("import toolreel.shell")
    assert {name for name in loaded if name.startswith("anyio.")} <= with_anyio


def test_importing_the_shell_imports_no_asyncio() -> None:
    """The program's event loop imports it (as with httpx2 and anyio): toolreel names it only
    in code that runs on that loop (a call's deadline timer, a tool's cancellation check)."""
    assert "asyncio" not in loaded_after("import toolreel.shell")


def test_a_client_for_an_openai_compatible_server_loads_no_other_codec() -> None:
    loaded = loaded_after(
        "from toolreel.shell import AgentOptions, Client\n"
        "Client(AgentOptions(model='m', base_url='http://127.0.0.1:9/v1', api_key='x'))"
    )
    codecs = {module for package, _, module in LAZY_NAMES if "_providers." in module}
    assert codecs & loaded == set()
    assert "toolreel.adapters._providers._openai" in loaded


LOAD_EACH = """
import importlib, sys
for package, name, module in {names!r}:
    assert module not in sys.modules, (name, module)
    value = getattr(importlib.import_module(package), name)
    assert module in sys.modules, (name, module)
    assert value is getattr(sys.modules[module], name), name
"""


def test_each_lazy_name_is_its_modules_object_imported_when_first_asked_for() -> None:
    for entry in LAZY_NAMES:  # a fresh interpreter each: one name's module loads others
        loaded_after(LOAD_EACH.format(names=[entry]))


def test_every_public_name_of_a_lazy_package_resolves_and_is_listed_by_dir() -> None:
    loaded_after(
        "import importlib\n"
        "for package in ('toolreel.shell', 'toolreel.adapters'):\n"
        "    module = importlib.import_module(package)\n"
        "    assert set(module.__all__) <= set(dir(module)), package\n"
        "    missing = [n for n in module.__all__ if not hasattr(module, n)]\n"
        "    assert missing == [], (package, missing)\n"
        "    try:\n"
        "        module.no_such_name\n"
        "    except AttributeError:\n"
        "        pass\n"
        "    else:\n"
        "        raise AssertionError(package)\n"
    )


def test_the_cli_loads_click_and_rich() -> None:
    assert {"click", "rich"} <= loaded_after("import toolreel.cli")
