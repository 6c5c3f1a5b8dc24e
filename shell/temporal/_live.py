"""A model call's activity puts the text the model writes on its session's stream, as it comes.

The activity publishes to the stream of the workflow that scheduled it (Temporal's
Workflow Streams, `WorkflowStreamClient.from_within_activity`): each text and
reasoning delta, redacted and well-formed exactly as the workflow will fold it,
tagged with the call's key (its activity id) and the attempt. Deltas go in batches,
every `seconds`, as signals the workflow's stream takes and deduplicates; the last
batch goes before the activity returns, so a caller reads every live delta of a
call before the workflow tells the call's folded events (shell/temporal/_told.py).

The stream is a preview: a batch that cannot be sent is logged, never a failure
of the model call.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

from temporalio import activity
from temporalio.contrib.workflow_streams import WorkflowStreamClient

from toolreel.adapters import converter
from toolreel.core import Event, ModelEvent, well_formed

from ._told import TOPIC, is_live, live_item

#: How long the last batch may take to be sent before the call's result goes without it.
RETRY = timedelta(seconds=30)

#: What the activity calls with each event the model sent (redacted).
Tell = Callable[[ModelEvent], None]


def _untold(_: ModelEvent) -> None:
    """Tell nobody (live text is off)."""


@contextlib.asynccontextmanager
async def live(seconds: float) -> AsyncIterator[Tell]:
    """While the block runs, what puts a delta on the stream (every `seconds`; 0: nothing)."""
    if seconds <= 0:
        yield _untold
        return
    info = activity.info()
    stream = WorkflowStreamClient.from_within_activity(
        batch_interval=timedelta(seconds=seconds), max_retry_duration=RETRY
    )
    topic = stream.topic(TOPIC)

    def tell(event: ModelEvent) -> None:
        if is_live(event):
            data = converter.unstructure(well_formed(event), Event)
            topic.publish(live_item(info.activity_id, info.attempt, data))

    await stream.__aenter__()
    try:
        yield tell
    finally:
        try:
            await stream.__aexit__(None, None, None)
        except Exception as exc:  # the preview is lost, not the call
            activity.logger.warning("live text not sent to the session's stream: %r", exc)
