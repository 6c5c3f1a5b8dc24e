"""A worker: the session workflow and its activities, served on a task queue.

The worker holds what a session's effects need — the model connection, the
tools (MCP servers connected for the worker's life), the hooks — from the
same `AgentOptions` a Client takes. Toolreel's modules are passed through
Temporal's sandbox: the reducer is pure, and re-importing it per workflow
would only cost time.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from toolreel.adapters import ModelPort
from toolreel.adapters.records import get_converter
from toolreel.shell import AgentDefinition, AgentOptions
from toolreel.shell.engine import sources_opened

from ._activities import SessionActivities
from ._wire import TASK_QUEUE
from ._workflow import SessionWorkflow

#: Modules the workflow shares with the worker rather than re-imports: toolreel (its
#: reducer is pure) and the record libraries it folds with.
PASSED_THROUGH = ("toolreel", "attr", "attrs", "cattrs", "returns", "orjson")


def workflow_runner() -> SandboxedWorkflowRunner:
    """Temporal's sandbox with toolreel passed through (the worker's and a replayer's)."""
    get_converter()  # built out here: its lazy `import cattrs` would run in the sandbox
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSED_THROUGH)
    return SandboxedWorkflowRunner(restrictions=restrictions)


@contextlib.asynccontextmanager
async def session_worker(
    client: Client,
    options: AgentOptions,
    *,
    task_queue: str = TASK_QUEUE,
    model: ModelPort | None = None,
    sticky_seconds: float = 5.0,
    agents: Mapping[str, AgentDefinition[Any, Any]] | None = None,
    **worker_options: Any,
) -> AsyncIterator[Worker]:
    """A worker serving sessions on `task_queue` while the block runs.

    `model` (default: the options' connection, opened here and closed after)
    answers the model calls. `sticky_seconds`: how long a workflow waits for
    the worker that last ran it before any other worker takes it over (a
    killed worker delays its sessions by this much). `agents`: the agent
    definitions this worker runs, by the name `run_agent` asks for (with the
    options' connection, tool timeout, concurrency and hooks). Other keyword
    arguments go to `temporalio.worker.Worker`.
    """
    async with sources_opened(options) as opened:
        port = model or opened.connection.open_model()
        try:
            worker = Worker(
                client,
                task_queue=task_queue,
                workflows=[SessionWorkflow],
                activities=SessionActivities(opened, port, agents).all(),
                workflow_runner=workflow_runner(),
                sticky_queue_schedule_to_start_timeout=timedelta(seconds=sticky_seconds),
                **worker_options,
            )
            async with worker:
                yield worker
        finally:
            if model is None:
                await port.aclose()
