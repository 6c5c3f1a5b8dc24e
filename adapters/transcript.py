"""What the transcript renderers share with toolreel's own layers.

`render_transcript` and `render_agent_transcript` (in `toolreel.adapters`) render
a session; `hide=` leaves out the parts named in `HIDEABLE` ("usage", "ids",
"timings", "retries"), which `hidden` checks (toolreel.testing's
`transcript_snapshot.hide` uses it). `output_tool` is a structured output's tool
name as transcripts and telemetry show it ("" for a text answer).
"""

from __future__ import annotations

from ._transcript import HIDEABLE, hidden, output_tool

__all__ = ["HIDEABLE", "hidden", "output_tool"]
