#!/usr/bin/env bash
# open-agent-sdk's own test suite, run against toolreel.open_agent (`make compat`).
#
# Downloads open-agent-sdk's sdist (MIT) with pip into a temporary folder, rewrites only
# its import lines and patch targets (`open_agent` -> `toolreel.open_agent`), deletes its
# `open_agent/` package so nothing can reach the original, installs what its tests need
# into $VENV (`make compat`: build/compat-venv, never .venv) and runs its tests/ with pytest. Nothing of it is kept or
# committed. Prints pytest's summary, each failure with the private names it touches, and
# one line: "N passed, ..., M excluded internals". Exit status: pytest's.
#
#   tests/compat/open_agent_suite.sh            # or: make compat
#   KEEP=1 tests/compat/open_agent_suite.sh     # keep the rewritten suite, print where
#   tests/compat/open_agent_suite.sh -k query   # extra arguments go to pytest
set -euo pipefail

VERSION=0.4.2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=$(cd "${VENV:-$ROOT/.venv}" && pwd)
PY=$VENV/bin/python
# A test that hangs (a stream nobody ends) fails after this many seconds instead.
TEST_TIMEOUT=${TEST_TIMEOUT:-30}

# Tests of open_agent's private internals (names starting with `_`), which toolreel's
# package does not reproduce: deselected, one line each with the reason. (Measured: each
# fails only on its private line; every public assertion before it passes.)
EXCLUDED_INTERNALS=(
    "tests/test_client.py::test_client_initialization|last line asserts Client._aggregator is None: open_agent's per-stream ToolCallAggregator; toolreel's codec decodes the stream"
    "tests/test_client.py::test_client_format_history_entry_text_only|calls Client._format_history_entry(blocks): open_agent's private history builder; toolreel derives message_history from its records"
    "tests/test_client.py::test_client_format_history_entry_with_tools|calls Client._format_history_entry(blocks), as above"
    "tests/test_client.py::test_client_format_history_entry_tools_only|calls Client._format_history_entry(blocks), as above"
    "tests/test_client.py::test_client_query_failure_does_not_mutate_history|last line asserts Client._aggregator is None (history and response_stream checks before it pass)"
    "tests/test_interrupt.py::test_interrupt_basic|last line asserts Client._aggregator is None (the interrupt and response_stream checks before it pass)"
)

# Tests that cannot pass here on any implementation, open_agent's own included.
NOT_RUNNABLE=(
    "tests/test_hooks.py::TestPreToolUseHook::test_pre_tool_use_allows_execution|fixture fake_client_with_tools: its conftest.py is not in the sdist"
    "tests/test_hooks.py::TestPreToolUseHook::test_pre_tool_use_blocks_execution|fixture fake_client_with_tools: its conftest.py is not in the sdist"
    "tests/test_hooks.py::TestPreToolUseHook::test_pre_tool_use_modifies_input|fixture fake_client_with_tools: its conftest.py is not in the sdist"
    "tests/test_hooks.py::TestPreToolUseHook::test_pre_tool_use_with_query_function|fixture fake_client_with_tools: its conftest.py is not in the sdist"
    "tests/test_hooks.py::TestPostToolUseHook::test_post_tool_use_observes_result|fixture fake_client_with_tools: its conftest.py is not in the sdist"
    "tests/test_hooks.py::TestPostToolUseHook::test_post_tool_use_logs_with_reason|fixture fake_client_with_tools: its conftest.py is not in the sdist"
    "tests/test_hooks.py::TestUserPromptSubmitHook::test_user_prompt_submit_allows_query|fixture fake_client_no_tools: its conftest.py is not in the sdist"
    "tests/test_hooks.py::TestUserPromptSubmitHook::test_user_prompt_submit_blocks_query|fixture fake_client_no_tools: its conftest.py is not in the sdist"
    "tests/test_hooks.py::TestUserPromptSubmitHook::test_user_prompt_submit_modifies_prompt|fixture fake_client_no_tools: its conftest.py is not in the sdist"
    "tests/test_hooks.py::TestUserPromptSubmitHook::test_user_prompt_submit_with_query_function|fixture fake_client_no_tools: its conftest.py is not in the sdist"
    "tests/test_hooks.py::TestMultipleHooks::test_multiple_hooks_run_in_order|fixture fake_client_no_tools: its conftest.py is not in the sdist"
    "tests/test_hooks.py::TestMultipleHooks::test_hook_exception_propagates|fixture fake_client_no_tools: its conftest.py is not in the sdist"
    "tests/test_hooks.py::TestHookEventData::test_pre_tool_use_event_has_history|fixture fake_client_with_tools: its conftest.py is not in the sdist"
    "tests/test_hooks.py::TestHookEventData::test_post_tool_use_event_has_result|fixture fake_client_with_tools: its conftest.py is not in the sdist"
)
if [[ $(id -u) == 0 ]]; then
    NOT_RUNNABLE+=("tests/test_config.py::test_load_config_file_unreadable_raises|chmod 000 does not stop root from reading the file (run as root)")
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/open_agent_suite.XXXXXX")
if [[ -n "${KEEP:-}" ]]; then
    echo "keeping $work"
else
    trap 'rm -rf "$work"' EXIT
fi

echo "== open-agent-sdk $VERSION: downloading its sdist"
"$PY" -m pip download -q --no-deps --no-binary :all: -d "$work" "open-agent-sdk==$VERSION" \
    2>&1 | grep -v "^WARNING: Location" || true
[[ -f "$work/open_agent_sdk-$VERSION.tar.gz" ]] || { echo "download failed" >&2; exit 2; }
tar -xzf "$work/open_agent_sdk-$VERSION.tar.gz" -C "$work"
suite=$work/open_agent_sdk-$VERSION
rm -rf "$suite/open_agent"

echo "== installing its test requirements into $VENV"
# Its runtime dependencies and its `dev` extra, less the formatter and linter (black,
# ruff) its tests never import; plus pytest-timeout, ours, so a hanging test fails.
mapfile -t requirements < <("$PY" - "$suite/pyproject.toml" <<'EOF'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
wanted = project["dependencies"] + project["optional-dependencies"]["dev"]
for requirement in wanted:
    name = requirement.split(">")[0].split("=")[0].split("<")[0].strip().lower()
    if name not in {"black", "ruff"}:
        print(requirement)
EOF
)
"$PY" -m pip install -q "${requirements[@]}" "pytest-timeout>=2.1" 2>&1 | grep -v "^WARNING: Location" || true

echo "== rewriting its imports and patch targets to toolreel.open_agent"
"$PY" - "$suite/tests" <<'EOF'
import pathlib, re, sys
IMPORT = re.compile(r"^(\s*)(from|import)\s+open_agent\b")
TARGET = re.compile(r"""(["'])open_agent\.""")  # "open_agent.client.create_client"
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.py")):
    lines, changed = [], 0
    for line in path.read_text().splitlines(keepends=True):
        new = IMPORT.sub(lambda m: f"{m[1]}{m[2]} toolreel.open_agent", line)
        if new.lstrip().startswith("import toolreel.open_agent") and " as " not in new:
            new = new.replace("import toolreel.open_agent", "import toolreel.open_agent as open_agent", 1)
        new = TARGET.sub(r"\1toolreel.open_agent.", new)
        changed += new != line
        lines.append(new)
    path.write_text("".join(lines))
    print(f"   {path.name}: {changed} line(s)")
EOF

deselect=()
for entry in "${EXCLUDED_INTERNALS[@]}" "${NOT_RUNNABLE[@]}"; do
    deselect+=(--deselect "${entry%%|*}")
done

echo "== running its tests"
status=0
(cd "$suite" && "$VENV/bin/pytest" tests -p no:cacheprovider -o asyncio_mode=strict -o asyncio_default_fixture_loop_scope=function \
    --continue-on-collection-errors --timeout="$TEST_TIMEOUT" -rfE --tb=line --junitxml="$work/junit.xml" \
    "${deselect[@]}" "$@") || status=$?

echo "== result"
printf '%s\n' "${EXCLUDED_INTERNALS[@]}" >"$work/internals.txt"
printf '%s\n' "${NOT_RUNNABLE[@]}" >"$work/not_runnable.txt"
"$PY" - "$work" "$suite" "$VERSION" <<'EOF'
import ast, pathlib, sys, xml.etree.ElementTree as ET

work, suite, version = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]

def listed(name):
    """The (node id, reason) pairs of one of the script's lists."""
    return [line.split("|", 1) for line in (work / name).read_text().splitlines() if "|" in line]

def private_names(file, test):
    """The `_name` attributes and imports a test's own source touches (dunders aside)."""
    tree = ast.parse((suite / file).read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and "open_agent" in node.module:
            names |= {a.name for a in node.names if a.name.startswith("_")}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == test:
            names |= {
                n.attr if isinstance(n, ast.Attribute) else n.id
                for n in ast.walk(node)
                if (isinstance(n, ast.Attribute) and n.attr.startswith("_"))
                or (isinstance(n, ast.Name) and n.id.startswith("_") and n.id in names)
            }
    return sorted(n for n in names if not n.startswith("__"))

def tests_in(file):
    """How many test functions a test module defines (what a collection error hides)."""
    tree = ast.parse((suite / file).read_text())
    return sum(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")
        for n in ast.walk(tree)
    )

internals, absent = listed("internals.txt"), listed("not_runnable.txt")
counts = dict(passed=0, failed=0, errors=0, skipped=0, uncollected=0)
failures = []
for case in ET.parse(work / "junit.xml").getroot().iter("testcase"):
    outcome = next((c.tag for c in case if c.tag in {"failure", "error", "skipped"}), "passed")
    key = {"failure": "failed", "error": "errors"}.get(outcome, outcome)
    detail = next((c for c in case if c.tag in {"failure", "error"}), None)
    message = " ".join((detail.get("message", "") if detail is not None else "").split())
    parts, name = case.get("classname", "").split("."), case.get("name", "")
    if parts == [""]:  # a module that could not be imported: its tests never ran
        file = name.replace(".", "/") + ".py"
        text = detail.text or "" if detail is not None else ""
        message = next((l[1:].strip() for l in reversed(text.splitlines()) if l[:1] == "E"), message)
        listed_here = sum(node.startswith(file + "::") for node, _ in internals + absent)
        counts["uncollected"] += tests_in(file) - listed_here
        failures.append((f"{file} (not collected)", private_names(file, ""), message[:200]))
        continue
    counts[key] += 1
    if key in {"failed", "errors"}:
        file = "/".join(p for p in parts if not p[:1].isupper()) + ".py"
        node = "::".join([file, *(p for p in parts if p[:1].isupper()), name])
        failures.append((node, private_names(file, name.split("[")[0]), message[:200]))

if internals:
    print("excluded, tests of open_agent's private internals:")
    for node, reason in internals:
        print(f"   {node}: {reason}")
if absent:
    print("excluded, cannot pass here on any implementation:")
    for node, reason in absent:
        print(f"   {node}: {reason}")
if failures:
    print("failing:")
    for node, touched, message in failures:
        flag = f"touches private {', '.join(touched)}" if touched else "public API only"
        print(f"   {node} [{flag}]\n      {message}")
total = sum(tests_in(p.relative_to(suite)) for p in sorted((suite / "tests").glob("test_*.py")))
print(
    f"open-agent-sdk {version} suite on toolreel.open_agent: {counts['passed']} passed, "
    f"{counts['failed']} failed, {counts['errors']} errors, {counts['skipped']} skipped, "
    f"{counts['uncollected']} not collected, {len(internals)} excluded internals, "
    f"{len(absent)} not runnable here ({total} tests in the sdist)"
)
EOF
exit "$status"
