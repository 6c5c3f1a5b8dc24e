"""toolreel.web is an extra: neither the library nor the command line loads Starlette or uvicorn."""

from __future__ import annotations

import json
import subprocess
import sys

WEB_ONLY = {"starlette", "uvicorn"}


def loaded_after(statements: str) -> set[str]:
    """The top-level module names a fresh interpreter has loaded after `statements`."""
    program = f"{statements}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60
    )
    return {name.split(".")[0] for name in json.loads(done.stdout.splitlines()[-1])}


def test_the_shell_and_the_command_line_load_no_web_framework() -> None:
    assert loaded_after("import toolreel.shell\nimport toolreel.cli") & WEB_ONLY == set()


def test_toolreel_web_loads_starlette_but_not_uvicorn() -> None:
    loaded = loaded_after("import toolreel.web")
    assert "starlette" in loaded
    assert "uvicorn" not in loaded


def test_toolreel_web_loads_ag_ui_only_when_the_ag_ui_route_answers() -> None:
    assert "ag_ui" not in loaded_after("import toolreel.web\nimport toolreel.web.streams")
