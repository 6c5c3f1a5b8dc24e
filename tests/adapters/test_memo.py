"""IdentityMemo (adapters/_memo.py): once per live object, forgotten when it dies."""

from __future__ import annotations

import gc

from toolreel.adapters._memo import IdentityMemo
from toolreel.core import ToolRound


def test_a_value_is_computed_once_per_object_and_dropped_with_it() -> None:
    memo: IdentityMemo[ToolRound, int] = IdentityMemo()
    calls = []
    first = ToolRound(assistant_text="a", tool_calls=(), results=())
    equal = ToolRound(assistant_text="a", tool_calls=(), results=())
    assert memo.get(first, lambda _: calls.append(1) or 1) == 1
    assert memo.get(first, lambda _: calls.append(2) or 2) == 1
    assert memo.get(equal, lambda _: calls.append(3) or 3) == 3  # identity, not equality
    assert calls == [1, 3]
    del first, equal
    gc.collect()
    assert len(memo) == 0
