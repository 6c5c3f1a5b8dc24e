"""The built docs site: every page there, every public name in its reference, nothing from
the network, the CLI page made from the commands, llms.txt and llms-full.txt beside it."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import click
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "docs" / "hooks" / "cli_reference.py"
PACKAGES = ["core", "adapters", "shell", "testing", "web", "otel", "mcp", "open_agent", "temporal"]
GUIDES = [
    "tools",
    "providers",
    "structured-output",
    "streaming",
    "approval",
    "budgets",
    "images",
    "mcp",
    "testing",
    "journals",
    "scaling",
    "observability",
    "security",
]


def page(site: Path, path: str) -> str:
    """A built page's HTML (`path` as the nav has it, e.g. "guides/tools.md")."""
    folder = site if path == "index.md" else site / path.removesuffix(".md")
    return (folder / "index.html").read_text(encoding="utf-8")


def nav_pages() -> list[str]:
    """Every page mkdocs.yml's nav lists."""
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    found: list[str] = []

    def walk(items: object) -> None:
        if isinstance(items, list):
            for item in items:
                walk(item)
        elif isinstance(items, dict):
            for value in items.values():
                walk(value)
        elif isinstance(items, str):
            found.append(items)

    walk(config["nav"])
    return found


def test_every_markdown_page_is_in_the_nav_and_built(site: Path) -> None:
    listed = nav_pages()
    written = {
        str(path.relative_to(ROOT / "docs"))
        for path in (ROOT / "docs").rglob("*.md")
        if "hooks" not in path.parts
    }
    assert set(listed) == written
    for path in listed:
        assert "<h1" in page(site, path), path


def test_there_is_a_guide_and_an_example_for_each_subject(site: Path) -> None:
    for guide in GUIDES:
        html = page(site, f"guides/{guide}.md")
        assert "examples/" in html, f"guides/{guide}.md shows no example program"


#: The public submodules, each documented on its package's reference page.
SUBMODULES = {
    "core": ["notices", "outcomes", "budget", "policies", "hooks", "images", "bulk"],
    "adapters": ["providers", "redaction", "records", "replay", "transcript"],
    "shell": ["errors", "hooks", "callbacks", "telemetry", "scripted", "engine"],
    "web": ["streams"],
}
MODULES = [
    *[(package, package) for package in PACKAGES],
    *[(package, f"{package}.{sub}") for package, subs in SUBMODULES.items() for sub in subs],
]


@pytest.mark.parametrize(("package", "module_name"), MODULES)
def test_the_reference_lists_every_public_name(site: Path, package: str, module_name: str) -> None:
    """The reference is made from `__all__`: a name added there is documented at once."""
    module = importlib.import_module(f"toolreel.{module_name}")
    html = page(site, f"reference/{package}.md")
    anchors = set(re.findall(rf'id="toolreel\.{re.escape(module_name)}\.(\w+)"', html))
    missing = [
        name
        for name in module.__all__
        if name not in anchors and f"<code>{name}</code>" not in html
    ]
    assert not missing


def console_script_group() -> click.Group:
    """The click group the `toolreel` script runs, found as the docs hook finds it."""
    spec = importlib.util.spec_from_file_location("cli_reference", HOOK)
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    module, name = hook.click_command()
    group = getattr(importlib.import_module(module), name)
    assert isinstance(group, click.Group)
    return group


def test_the_cli_page_documents_every_command(site: Path) -> None:
    html = page(site, "cli.md")
    cli = console_script_group()
    for name, command in cli.commands.items():
        assert f'id="toolreel-{name}"' in html, name
        for option in command.params:
            for flag in option.opts:
                if flag.startswith("--"):
                    assert flag in html, f"toolreel {name} {flag}"


def test_the_site_needs_no_network(site: Path) -> None:
    """No font, script, style or image comes from elsewhere (Material's Google fonts are off)."""
    for path in site.rglob("*.html"):
        html = path.read_text(encoding="utf-8")
        tags = re.findall(r"<(?:script|link|img|iframe)\b[^>]*>", html)
        fetched = [
            tag
            for tag in tags
            if re.search(r'\b(?:src|href)="(?:https?:)?//', tag) and 'rel="canonical"' not in tag
        ]
        assert not fetched, f"{path} loads from the network: {fetched}"
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html, path
    for path in site.rglob("*.css"):
        assert "@import url(http" not in path.read_text(encoding="utf-8"), path


def test_llms_txt_lists_the_pages_and_llms_full_holds_them(site: Path) -> None:
    index = (site / "llms.txt").read_text(encoding="utf-8")
    assert index.startswith("# toolreel")
    for guide in GUIDES:
        assert f"guides/{guide}/" in index, guide
    assert "getting-started/" in index and "reducer/" in index
    full = (site / "llms-full.txt").read_text(encoding="utf-8")
    assert "requires_approval=True" in full  # the human approval guide, as Markdown
    assert "def add(a: float, b: float) -> float:" in full  # code blocks kept
