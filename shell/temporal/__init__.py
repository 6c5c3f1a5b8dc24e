"""toolreel.temporal: sessions as Temporal workflows (`pip install toolreel[temporal]`).

    client = await connect("127.0.0.1:7233")
    async with session_worker(client, AgentOptions(model=..., tools=[...])):  # or `toolreel worker`
        record = await run_session(client, "What is 25 plus 17?")
    async with session_worker(client, options, agents={"invoice": definition}):
        finish = agent_finish(await run_agent(client, "invoice", text))  # an agent run
    import_workflow(client, workflow_id, journal)        # the history becomes a journal session
    async with WorkflowChat(client, "my-chat") as chat:  # a chat, streamed to its caller
        await chat.query("What is 25 plus 17?")
        async for notice in chat.events(): ...           # text while the model writes
    app(options, sessions=WorkflowChats(client))         # toolreel.web serving such chats

The workflow folds the pure reducer `step` inside Temporal's deterministic
sandbox — a chat session's turns and an agent run alike; model calls, tool
calls, hooks, reflections and validations are activities on the workers
(shell/temporal/_workflow.py). What the workflow tells its callers, and the
text a model call's worker gets while the model writes, go on a Temporal
Workflow Stream the caller reads (shell/temporal/_told.py); the workflow folds
only what the activities return. `import toolreel.shell` never loads temporalio.
"""

from __future__ import annotations

from ._activities import SessionActivities
from ._chat import WorkflowChat, WorkflowChats
from ._errors import TemporalError
from ._sessions import (
    agent_finish,
    approve,
    connect,
    deny,
    fetch_record,
    import_record,
    import_workflow,
    last_finish,
    open_chat,
    pending_approvals,
    run_agent,
    run_session,
    send_prompt,
    start_session,
)
from ._wire import TASK_QUEUE, WORKFLOW, SessionRecord, SessionStart
from ._worker import session_worker, workflow_runner
from ._workflow import SessionWorkflow

__all__ = [
    "TASK_QUEUE",
    "WORKFLOW",
    "SessionActivities",
    "SessionRecord",
    "SessionStart",
    "SessionWorkflow",
    "TemporalError",
    "WorkflowChat",
    "WorkflowChats",
    "agent_finish",
    "approve",
    "connect",
    "deny",
    "fetch_record",
    "import_record",
    "import_workflow",
    "last_finish",
    "open_chat",
    "pending_approvals",
    "run_agent",
    "run_session",
    "send_prompt",
    "session_worker",
    "start_session",
    "workflow_runner",
]
