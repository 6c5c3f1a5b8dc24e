"""`json_text`: what the web sends as JSON is JSON a browser can parse.

A model may write `NaN` or `Infinity` in a call's arguments (Python's json reads
them, and the core keeps what it read, so journals replay as they were), but
they are not JSON: a browser's `JSON.parse` refuses the whole part, and the page
loses the message. They are sent as `null`, as `JSON.stringify` itself sends
them; the journal keeps the value the tool got.
"""

from __future__ import annotations

import json
import math
from typing import Any


def json_text(data: Any) -> str:
    """`data` as compact JSON text (UTF-8 kept), with NaN and the infinities as null."""
    try:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a non-finite float somewhere: rare, so only then walked
        return json.dumps(_finite(data), ensure_ascii=False, separators=(",", ":"))


def _finite(data: Any) -> Any:
    """`data` with every non-finite float replaced by None."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: _finite(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [_finite(value) for value in data]
    return data
