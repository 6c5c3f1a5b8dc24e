"""A tool that needs approval, for the approval tests of `toolreel` (`approval_tools:TOOLS`)."""

from __future__ import annotations

from toolreel.shell import tool

#: The paths `delete` was really called with, in this process.
DELETED: list[str] = []


@tool(requires_approval=True)
def delete(path: str) -> str:
    """Delete a file (recorded instead)."""
    DELETED.append(path)
    return f"deleted {path}"


TOOLS = [delete]
