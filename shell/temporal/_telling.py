"""The session workflow's side of its stream: what it tells its callers as it folds.

A Temporal Workflow Stream (`temporalio.contrib.workflow_streams`, Temporal's way of
streaming from a workflow and its activities) lives in the workflow: items are
published by the workflow in memory (rebuilt the same on replay: no command, no
history event) and by activities as signals; callers read them by polling
updates. The items and how a caller reads them: shell/temporal/_told.py.

What the workflow keeps of it when it continues as new: the items from its last
turn's first on (a caller may still be reading that turn), and the publishers'
deduplication state.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from temporalio import workflow
from temporalio.contrib.workflow_streams import WorkflowStream, WorkflowStreamState

from ._told import TOPIC, calling_item, told_item

#: The stream's query of its length, by the name every SDK's Workflow Streams register.
OFFSET_QUERY = "__temporal_workflow_stream_offset"


class Telling:
    """A workflow's stream (construct it in the workflow's `__init__`, once)."""

    def __init__(self, prior: WorkflowStreamState | None) -> None:
        """The stream, going on from `prior` (a run continued as new) or new."""
        self._stream = WorkflowStream(prior)
        self._topic = self._stream.topic(TOPIC)
        #: Where the last turn's items begin (what continuing as new keeps).
        self._turn_began = prior.base_offset if prior is not None else 0

    def offset(self) -> int:
        """The stream's length: the offset the next item gets."""
        handler = workflow.get_query_handler(OFFSET_QUERY)
        assert handler is not None, "WorkflowStream registers it as it is made"
        return int(handler())

    def turn_begins(self) -> None:
        """A turn begins: its items, from here on, are the ones to keep."""
        self._turn_began = self.offset()

    def told(self, turn: int, effect: dict[str, Any], call: str | None = None) -> None:
        """Tell an effect (JSON data) `step` returned in `turn`; `call`: the model call
        whose events were folded."""
        self._topic.publish(told_item(turn, effect, call))

    def calling(self, turn: int, call: str) -> None:
        """Tell that the model call `call` of `turn` starts (its live text may follow)."""
        self._topic.publish(calling_item(turn, call))

    def detach(self) -> None:
        """Let every caller's poll go (before the run ends or continues as new)."""
        self._stream.detach_pollers()

    def kept(self) -> WorkflowStreamState:
        """What the next run goes on from: the last turn's items on, and the publishers."""
        state = self._stream.get_state()
        dropped = max(0, min(self._turn_began - state.base_offset, len(state.log)))
        return dataclasses.replace(
            state, log=state.log[dropped:], base_offset=state.base_offset + dropped
        )
