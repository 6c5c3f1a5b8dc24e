"""What tracing costs when unused: `import toolreel.shell` never loads OpenTelemetry, and
`toolreel.otel` without it installed says which extra to install. Each check runs in a
fresh interpreter (nothing is timed)."""

from __future__ import annotations

import json
import subprocess
import sys


def run(program: str) -> subprocess.CompletedProcess[str]:
    """`program` in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-c", program], check=False, capture_output=True, text=True, timeout=60
    )


def loaded_after(statements: str) -> set[str]:
    """The modules in sys.modules once a fresh interpreter has run `statements`."""
    done = run(f"{statements}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))")
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_importing_the_shell_loads_no_opentelemetry() -> None:
    loaded = loaded_after("import toolreel.shell")
    assert {name for name in loaded if name.split(".")[0] == "opentelemetry"} == set()


def test_without_opentelemetry_toolreel_otel_names_the_extra_to_install() -> None:
    done = run("import sys\nsys.modules['opentelemetry'] = None\nimport toolreel.otel")
    assert done.returncode == 1
    assert "ImportError: toolreel.otel needs OpenTelemetry: pip install 'toolreel[otel]'" in (
        done.stderr
    )
