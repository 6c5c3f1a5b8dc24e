"""`json_depth`: how deeply a request body's JSON nests, found before any parser recurses.

A served loop (the web app, the A2A server) refuses JSON nested deeper than
`MAX_JSON_DEPTH`: Python's parser recurses as deep as the brackets go, and the
interpreter's stack, not a rule, would otherwise decide where it stops.
"""

from __future__ import annotations

import itertools
import operator
import re

#: How deeply a body's JSON arrays and objects may nest (no route reads past a few levels).
MAX_JSON_DEPTH = 64
#: A JSON string (possessive: an unterminated one costs one scan, not a backtrack).
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
#: Every byte but brackets (deleted), and the brackets as steps: opening 2, closing 0.
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")


def json_depth(raw: bytes) -> int:
    """How deeply the arrays and objects of the JSON text `raw` nest (brackets in strings
    do not count), found before parsing. Linear; C loops only."""
    steps = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS).translate(_STEPS)
    levels = itertools.accumulate(map(operator.sub, steps, itertools.repeat(1)))
    return max(levels, default=0)
