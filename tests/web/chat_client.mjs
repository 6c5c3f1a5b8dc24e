// A real React `useChat()` (@ai-sdk/react, over the `ai` package's Chat and
// DefaultChatTransport) rendered in Node by react-test-renderer, chatting with a running
// `toolreel serve`: the code a Next.js page runs, minus the DOM.
//
//   cd ~/.cache/toolreel/ai-sdk && node chat_client.mjs http://127.0.0.1:PORT CHAT_ID [SCENARIO]
//
// (run from the folder where the npm packages are installed). SCENARIO `model-error`: one
// turn ("hi") against a server whose model fails. SCENARIO `calculator` (the default), for
// the scripted calculator model: one chat id, so one session on the server, five turns:
//   1. "What is 25 plus 17?"            sent; waits until the component renders status "ready"
//   2. "What's 7 times 8, then add 5?"  the same chat, continued
//   3. "What is 144 divided by 12?"     `divide` never returns: stop() once its tool part
//                                       renders, then wait until the server has journaled the
//                                       turn (GET /api/sessions/{id})
//   4. "What is 2 plus 3?"              the chat goes on after the stop
//   5. "What is 3 times 4?"             from a second component mounted with the same id and
//                                       `resume: true` (a reloaded page), which first asks the
//                                       server for a stream to resume (GET /api/chat/{id}/stream)
// then regenerate(), which the server refuses (its journal keeps every turn).
// SCENARIO `approval`, for the calculator with `multiply` held for approval, useChat given
// `sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses`:
//   1. "What is 7 times 8?"  the message ends with the multiply part `approval-requested`;
//                            addToolApprovalResponse({id, approved: true}) sends it back by
//                            itself and the same message goes on to the answer
//   2. "What is 6 times 7?"  the same, answered {approved: false, reason: "not now"}
// noting each body the transport posted (the approval requests' closing messages).
// Prints one JSON line: per turn, the statuses the component rendered, what onFinish and
// onError said, and the assistant message (metadata, compact parts); what stop() left; the
// resume and regenerate checks; the text rendered; the server's session detail after turn 3
// and at the end. Exits 1 (with the summary so far and `failure`) when a wait runs out.
// The checks are in tests/web/test_web_usechat.py.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const require = createRequire(path.join(process.cwd(), 'package.json'));
const load = async (name) => import(pathToFileURL(require.resolve(name)).href);
const React = (await load('react')).default;
const TestRenderer = (await load('react-test-renderer')).default;
const { useChat } = await load('@ai-sdk/react');
const { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } =
  await load('ai');

const base = process.argv[2];
const chatId = process.argv[3] ?? `usechat-${Date.now()}`;
const WAIT_MS = 10_000;

// What the mounted component last rendered (useChat's helpers), the statuses it rendered
// with, and what the chat's callbacks reported, since the current turn began.
let view = null;
let statuses = [];
let finished = [];
let errors = [];

/** DefaultChatTransport, noting how each attempt to resume a stream ended. */
class NotingTransport extends DefaultChatTransport {
  resumes = [];

  async reconnectToStream(options) {
    try {
      const stream = await super.reconnectToStream(options);
      this.resumes.push(stream === null ? 'no stream' : 'a stream');
      return stream;
    } catch (error) {
      this.resumes.push(`error: ${error?.message ?? error}`);
      throw error;
    }
  }
}

function text(message) {
  return message.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
}

function App({ id, transport, resume, sendAutomaticallyWhen }) {
  const chat = useChat({
    id,
    transport,
    resume,
    sendAutomaticallyWhen,
    onFinish: ({ isAbort, isDisconnect, isError, finishReason }) =>
      finished.push({ isAbort, isDisconnect, isError, finishReason }),
    onError: (error) => errors.push(String(error?.message ?? error)),
  });
  view = chat;
  if (statuses.at(-1) !== chat.status) statuses.push(chat.status);
  return React.createElement(
    'ol',
    null,
    chat.messages.map((m) =>
      React.createElement('li', { key: m.id, 'data-role': m.role }, text(m)),
    ),
  );
}

// The component on screen (one at a time: mounting another unmounts it, as a reload does).
let mounted = null;

function mount(props) {
  mounted?.unmount();
  view = null;
  mounted = TestRenderer.create(React.createElement(App, { id: chatId, ...props }));
  return mounted;
}

function rendered(renderer) {
  return (renderer.toJSON()?.children ?? []).map((li) => ({
    role: li.props['data-role'],
    text: (li.children ?? []).join(''),
  }));
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check, what) {
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    const found = await check();
    if (found) return found;
    await sleep(20);
  }
  throw new Error(`never happened within ${WAIT_MS} ms: ${what}`);
}

function compact(part) {
  const { type } = part;
  if (type === 'text' || type === 'reasoning') return { type, text: part.text, state: part.state };
  if (type.startsWith('tool-')) {
    const { toolCallId, state, input, output, errorText, approval } = part;
    return { type, toolCallId, state, input, output, errorText, approval };
  }
  return { type, data: part.data };
}

function assistant() {
  const last = view.messages.at(-1);
  if (!last || last.role !== 'assistant') return null;
  return { id: last.id, metadata: last.metadata, parts: last.parts.map(compact) };
}

// Sends `prompt` and waits until the component renders the turn as done ("ready" or
// "error", its onFinish called). `during()` runs while it streams; it may stop the turn.
async function turn(prompt, during) {
  statuses = [view.status];
  finished = [];
  errors = [];
  const before = view.messages.length;
  const sent = view.sendMessage({ text: prompt });
  if (during) await during();
  await until(
    () =>
      finished.length > 0 &&
      view.messages.length > before &&
      ['ready', 'error'].includes(view.status),
    `the turn "${prompt}" rendered as done`,
  );
  await sent;
  return {
    prompt,
    statuses: [...statuses],
    finished: [...finished],
    errors: [...errors],
    error: view.error ? String(view.error.message ?? view.error) : null,
    message: assistant(),
  };
}

async function sessionDetail() {
  const response = await fetch(`${base}/api/sessions/${encodeURIComponent(chatId)}`);
  return response.ok ? response.json() : null;
}

async function journaled(count) {
  return until(async () => {
    const detail = await sessionDetail();
    return detail?.turns?.length === count ? detail : null;
  }, `the server journaled ${count} turns`);
}

const api = `${base}/api/chat`;

/** The five turns (and the refused regenerate) against the calculator model. */
async function calculator(summary) {
  const first = mount({ transport: new NotingTransport({ api }) });
  await until(() => view !== null, 'the component rendered');
  summary.turns.push(await turn('What is 25 plus 17?'));
  summary.turns.push(await turn("What's 7 times 8, then add 5?"));
  summary.turns.push(
    await turn('What is 144 divided by 12?', async () => {
      const part = await until(
        () => assistant()?.parts.find((p) => p.type === 'tool-divide'),
        'the divide tool part rendered',
      );
      summary.stopped = { status: view.status, part };
      await view.stop(); // the server is running the tool by now
    }),
  );
  summary.sessions.afterStop = await journaled(3);
  summary.turns.push(await turn('What is 2 plus 3?'));
  summary.rendered = rendered(first);

  // A reloaded page: the same chat id, `resume: true`, no messages kept.
  const transport = new NotingTransport({ api });
  statuses = [];
  errors = [];
  mount({ transport, resume: true });
  await until(() => transport.resumes.length > 0, 'the reloaded chat asked to resume');
  const failed = transport.resumes[0].startsWith('error');
  await until(() => view.status === (failed ? 'error' : 'ready'), 'the resume rendered');
  summary.resume = {
    resumes: [...transport.resumes],
    statuses: [...statuses],
    errors: [...errors],
  };
  summary.turns.push(await turn('What is 3 times 4?'));
  summary.sessions.end = await journaled(5);

  // regenerate() asks the server to redo the last answer, which it refuses (400).
  errors = [];
  await view.regenerate();
  await until(() => view.status === 'error', 'the refused regenerate rendered');
  summary.regenerate = { status: view.status, error: view.error?.message, errors: [...errors] };
}

/** Answers the approval the last message asks for, and waits until the chat sent the answer
 * by itself (sendAutomaticallyWhen) and rendered what the server streamed back as done. */
async function decide(answer) {
  const held = assistant();
  const part = held?.parts.find((p) => p.state === 'approval-requested');
  if (!part) throw new Error('no approval-requested part to answer');
  statuses = [view.status];
  finished = [];
  errors = [];
  await view.addToolApprovalResponse({ id: part.approval.id, ...answer });
  await until(
    () => finished.length > 0 && ['ready', 'error'].includes(view.status),
    `the answer ${JSON.stringify(answer)} rendered as done`,
  );
  return {
    answer,
    held,
    statuses: [...statuses],
    finished: [...finished],
    errors: [...errors],
    error: view.error ? String(view.error.message ?? view.error) : null,
    message: assistant(),
    messages: view.messages.length,
  };
}

/** A fetch that notes each body it posts (the bodies DefaultChatTransport sends). */
function notingFetch(bodies) {
  return async (url, init) => {
    bodies.push(JSON.parse(init.body));
    return fetch(url, init);
  };
}

/** Two held multiply calls: one approved, one denied, each answered in the chat itself. */
async function approval(summary) {
  const bodies = [];
  mount({
    transport: new DefaultChatTransport({ api, fetch: notingFetch(bodies) }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  await until(() => view !== null, 'the component rendered');
  summary.turns.push(await turn('What is 7 times 8?'));
  summary.decisions.push(await decide({ approved: true }));
  summary.turns.push(await turn('What is 6 times 7?'));
  summary.decisions.push(await decide({ approved: false, reason: 'not now' }));
  summary.bodies = bodies.map(({ id, trigger, messageId, messages }) => ({
    id,
    trigger,
    messageId,
    last: { id: messages.at(-1).id, role: messages.at(-1).role, parts: messages.at(-1).parts },
  }));
  summary.sessions.end = await journaled(2);
}

/** One turn against a server whose model fails. */
async function modelError(summary) {
  mount({ transport: new DefaultChatTransport({ api }) });
  await until(() => view !== null, 'the component rendered');
  summary.turns.push(await turn('hi'));
}

const scenarios = { calculator, 'model-error': modelError, approval };
const scenario = scenarios[process.argv[4] ?? 'calculator'];
const summary = { chatId, turns: [], decisions: [], stopped: null, sessions: {}, resume: null };
try {
  await scenario(summary);
} catch (error) {
  summary.failure = String(error?.stack ?? error);
}
mounted?.unmount();
process.stdout.write(JSON.stringify(summary) + '\n');
process.exit(summary.failure ? 1 : 0);
