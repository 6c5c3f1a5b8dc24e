// Checks UI message stream chunks with the `ai` package itself: each chunk against its
// uiMessageChunkSchema, then the whole stream through readUIMessageStream (what useChat
// uses to build the assistant message, which throws on chunks out of order).
// Reads one JSON chunk a line on stdin; prints {"invalid": [...], "error": ..., "message": ...,
// "tools": [...]} (the last message read; each state a tool part showed in any snapshot, as
// [toolCallId, state, input], in the order first seen) and exits 0 when every chunk is valid and the stream reads cleanly.
// Run it from a directory where `ai` is installed (tests/web/test_web_node.py does).
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const require = createRequire(path.join(process.cwd(), 'package.json'));
const ai = await import(pathToFileURL(require.resolve('ai')).href);
const schema = ai.asSchema(ai.uiMessageChunkSchema);

let input = '';
for await (const piece of process.stdin) input += piece;
const chunks = input.split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line));

const invalid = [];
for (const chunk of chunks) {
  const result = await schema.validate(chunk);
  if (!result.success) invalid.push({ chunk, error: String(result.error?.message ?? result.error).slice(0, 300) });
}

let message = null;
let error = null;
const tools = [];
const seen = new Set();
try {
  const stream = new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  for await (const snapshot of ai.readUIMessageStream({ stream, onError: (e) => { error = String(e?.message ?? e); } })) {
    message = snapshot;
    for (const part of snapshot.parts) {
      if (!part.toolCallId) continue;
      const shown = [part.toolCallId, part.state, part.input ?? null];
      const key = JSON.stringify(shown);
      if (!seen.has(key)) { seen.add(key); tools.push(shown); }
    }
  }
} catch (e) {
  error = `readUIMessageStream threw: ${e?.message ?? e}`;
}
process.stdout.write(JSON.stringify({ invalid, error, message, tools }) + '\n');
process.exit(invalid.length || (error && error.startsWith('readUIMessageStream')) ? 1 : 0);
