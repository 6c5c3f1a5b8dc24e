"""An evaluation's report as a table, as Markdown and as HTML (`toolreel eval --report`).

One table serves all three: a row per session — each check's pass or FAIL, the
tokens, cost and tool calls of the original and the candidate, the rerun's
seconds — then the failures, a line each. Latency has no original to compare
with: a journal keeps no clock, so the seconds are the rerun's own. Every text
from a session (ids, check names, reasons) is escaped: `|` and line breaks in
Markdown, everything in HTML.
"""

from __future__ import annotations

import html as escaping

from ._eval import CaseResult, EvalReport

COLUMNS = ("tokens", "cost", "tool calls", "seconds", "result")


def header(report: EvalReport) -> list[str]:
    """The table's column names: the session, each check, the deltas, the result."""
    return ["session", *report.checks, *COLUMNS]


def row(case: CaseResult, checks: tuple[str, ...]) -> list[str]:
    """One session's cells."""
    verdicts = dict(case.verdicts)
    marks = [_mark(verdicts[name].passed) if name in verdicts else "-" for name in checks]
    if case.resumed:
        seconds = "resumed"
    else:
        seconds = f"{case.seconds:.2f}" if case.seconds is not None else "-"
    return [
        case.session_id,
        *marks,
        _counts(case.tokens),
        _costs(case.cost) if case.candidate is not None else "-",
        _counts(case.tool_calls),
        seconds,
        "pass" if case.passed else ("ERROR" if case.error is not None else "FAIL"),
    ]


def summary(report: EvalReport) -> str:
    """One line: how many passed, the rate, the model, the tool mode."""
    return (
        f"{report.passed}/{len(report.cases)} sessions passed ({report.pass_rate:.0%}); "
        f"candidates {report.name}* (model {report.model or '-'}, tools {report.tools})"
    )


def _mark(passed: bool) -> str:
    """A check's cell."""
    return "pass" if passed else "FAIL"


def _counts(pair: tuple[int, int] | None) -> str:
    """ "120 → 150 (+30)"."""
    if pair is None:
        return "-"
    before, after = pair
    return f"{before} → {after} ({after - before:+d})"


def _costs(pair: tuple[float | None, float | None]) -> str:
    """ "$0.000120 → $0.000150 (+$0.000030)", or what is unpriced."""
    before, after = pair
    if before is None or after is None:
        return "unpriced"
    sign = "+" if after >= before else "-"
    return f"${before:.6f} → ${after:.6f} ({sign}${abs(after - before):.6f})"


def _md(text: str) -> str:
    """Text safe in a Markdown table cell: no line break, pipes and HTML escaped."""
    flat = " ".join(text.split())
    return escaping.escape(flat, quote=False).replace("|", "\\|")


def markdown(report: EvalReport) -> str:
    """The report as Markdown."""
    names = header(report)
    lines = [f"# Evaluation {_md(report.name)}", "", _md(summary(report)), ""]
    lines += ["| " + " | ".join(_md(name) for name in names) + " |"]
    lines += ["|" + "|".join("---" for _ in names) + "|"]
    for case in report.cases:
        lines += ["| " + " | ".join(_md(cell) for cell in row(case, report.checks)) + " |"]
    found = report.failures()
    if found:
        lines += ["", "## Failures", ""]
        lines += [f"- **{_md(session)}**: {_md(why)}" for session, why in found]
    return "\n".join(lines) + "\n"


STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2em}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em}"
    ".pass{color:#1a7f37}.FAIL,.ERROR{color:#cf222e;font-weight:bold}"
)


def html(report: EvalReport) -> str:
    """The report as a standalone HTML page."""
    e = escaping.escape
    head = "".join(f"<th>{e(name)}</th>" for name in header(report))
    body = []
    for case in report.cases:
        cells = "".join(
            f'<td class="{e(cell)}">{e(cell)}</td>'
            if cell in {"pass", "FAIL", "ERROR"}
            else f"<td>{e(cell)}</td>"
            for cell in row(case, report.checks)
        )
        body.append(f"<tr>{cells}</tr>")
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Evaluation {e(report.name)}</title><style>{STYLE}</style></head><body>",
        f"<h1>Evaluation {e(report.name)}</h1>",
        f"<p>{e(summary(report))}</p>",
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>",
    ]
    found = report.failures()
    if found:
        items = "".join(f"<li><b>{e(session)}</b>: {e(why)}</li>" for session, why in found)
        parts += [f"<h2>Failures</h2><ul>{items}</ul>"]
    parts += ["</body></html>"]
    return "\n".join(parts) + "\n"
