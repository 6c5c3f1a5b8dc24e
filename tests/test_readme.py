"""The README's Python examples run as written (the Client one against the scripted server)."""

from __future__ import annotations

import re
from pathlib import Path

from toolreel.shell.scripted import ScriptedServer, calculator

README = Path(__file__).resolve().parent.parent / "README.md"
LOCAL_SERVER = "http://localhost:1234/v1"


def python_blocks() -> list[str]:
    """Every ```python block of the README."""
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_readme_has_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert "make demo" in text
    assert "make test" in text


def test_readme_points_at_the_docs_site() -> None:
    text = README.read_text(encoding="utf-8")
    assert "make docs" in text
    assert "examples/first_agent.py" in text
    assert (README.parent / "examples" / "first_agent.py").exists()


def test_readme_core_example_runs(capsys) -> None:
    [block] = [b for b in python_blocks() if "from toolreel.core import (" in b]
    exec(compile(block, str(README), "exec"), {})
    assert "completed 25 plus 17 is 42. 1" in capsys.readouterr().out


def test_readme_client_example_runs_against_a_local_server(capsys, tmp_path, monkeypatch) -> None:
    [block] = [b for b in python_blocks() if LOCAL_SERVER in b]
    monkeypatch.chdir(tmp_path)
    with ScriptedServer(calculator) as server:
        exec(compile(block.replace(LOCAL_SERVER, server.url), str(README), "exec"), {})
    out = capsys.readouterr().out
    assert "tool: multiply {'a': 7, 'b': 8}" in out
    assert "tool: add {'a': 56, 'b': 5}" in out
    assert "The answer is 61." in out
    assert (tmp_path / "sessions.db").exists()


def test_readme_plugin_example_passes_as_a_users_test(pytester) -> None:
    [block] = [b for b in python_blocks() if "scripted_model" in b]
    pytester.makepyfile(test_example=block)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_readme_typed_tool_example_prints_what_its_comments_say(capsys) -> None:
    [block] = [b for b in python_blocks() if "class Location(BaseModel)" in b]
    exec(compile(block, str(README), "exec", dont_inherit=True), {"__name__": "readme_tool"})
    printed = capsys.readouterr().out.splitlines()
    said = [
        line.removeprefix("# ").removeprefix("print(weather.description)   # ")
        for line in block.splitlines()
        if line.startswith(("# ", "print(weather.description)"))
    ]
    said[-3:] = [" ".join(said[-3:])]  # the last comment wraps over three lines
    assert printed == said
