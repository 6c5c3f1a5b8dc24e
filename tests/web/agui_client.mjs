// The official AG-UI client (@ag-ui/client's HttpAgent) talking to a running `toolreel serve`
// (scripted calculator, `multiply` held for approval: browser_approval_tools.py):
//
//   cd ~/.cache/toolreel/ai-sdk && node agui_client.mjs http://127.0.0.1:PORT THREAD_ID
//
// (run from the folder where the npm packages are installed). One agent, one thread:
//   1. "What is 25 plus 17?"   a tool round and the answer
//   2. "What is 7 times 8?"    the run ends with an interrupt for the held `multiply`
//   3. resume: approved        buildResumeArray(pendingInterrupts, {id: {status: "resolved",
//                              payload: {approved: true}}}): the call runs, the answer follows
//   4. "What is 6 times 7?"    held again; resume cancelled: the model reads the refusal
// Prints one JSON line: per run, the event types the agent's subscriber saw, the run's
// result, the interrupts it left pending, errors, and the agent's messages at the end.
// Exits 1 (with the summary so far and `failure`) if a run throws. The checks are in
// tests/web/test_web_agui_node.py.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const require = createRequire(path.join(process.cwd(), 'package.json'));
const load = async (name) => import(pathToFileURL(require.resolve(name)).href);
const { HttpAgent, buildResumeArray } = await load('@ag-ui/client');

const base = process.argv[2];
const threadId = process.argv[3] ?? `agui-${Date.now()}`;
const agent = new HttpAgent({ url: `${base}/api/agui`, threadId });
const summary = { runs: [] };

/** One run: its events (type, and what identifies them), result, pending interrupts. */
async function run(label, parameters) {
  const seen = { label, events: [], errors: [] };
  summary.runs.push(seen);
  const subscriber = {
    onEvent({ event }) {
      const noted = { type: event.type };
      for (const key of ['toolCallId', 'toolCallName', 'delta', 'stepName', 'content', 'runId', 'threadId', 'outcome', 'message', 'code']) {
        if (event[key] !== undefined) noted[key] = event[key];
      }
      seen.events.push(noted);
    },
    onRunErrorEvent({ event }) {
      seen.errors.push(event.message);
    },
  };
  const result = await agent.runAgent({ runId: `${label}-${Date.now()}`, ...parameters }, subscriber);
  seen.result = result.result ?? null;
  seen.newMessages = result.newMessages.map((m) => ({ role: m.role, content: m.content ?? null, toolCalls: m.toolCalls ?? null, toolCallId: m.toolCallId ?? null }));
  seen.pending = agent.pendingInterrupts.map((i) => ({ id: i.id, reason: i.reason, toolCallId: i.toolCallId ?? null }));
}

function say(text) {
  agent.addMessage({ id: `u-${summary.runs.length}`, role: 'user', content: text });
}

try {
  say('What is 25 plus 17?');
  await run('add', {});
  say('What is 7 times 8?');
  await run('held', {});
  const approve = Object.fromEntries(
    agent.pendingInterrupts.map((i) => [i.id, { status: 'resolved', payload: { approved: true } }]),
  );
  await run('approved', { resume: buildResumeArray(agent.pendingInterrupts, approve) });
  say('What is 6 times 7?');
  await run('held-again', {});
  const cancel = Object.fromEntries(agent.pendingInterrupts.map((i) => [i.id, { status: 'cancelled' }]));
  await run('cancelled', { resume: buildResumeArray(agent.pendingInterrupts, cancel) });
  summary.messages = agent.messages.map((m) => ({ role: m.role, content: m.content ?? null }));
  console.log(JSON.stringify(summary));
} catch (error) {
  summary.failure = String(error?.stack ?? error);
  console.log(JSON.stringify(summary));
  process.exit(1);
}
