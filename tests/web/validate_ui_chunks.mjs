// Validates UI message stream chunks with the `ai` package's own uiMessageChunkSchema.
// Reads one JSON chunk a line on stdin; prints `ok N` and exits 0 when every chunk is
// valid, else prints each invalid chunk with zod's message and exits 1. Run it from a
// directory where `ai` is installed (tests/web/test_web_node.py does).
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const require = createRequire(path.join(process.cwd(), 'package.json'));
const ai = await import(pathToFileURL(require.resolve('ai')).href);
const schema = ai.asSchema(ai.uiMessageChunkSchema);

let input = '';
for await (const piece of process.stdin) input += piece;
const lines = input.split('\n').filter((line) => line.trim());
let bad = 0;
for (const line of lines) {
  const result = await schema.validate(JSON.parse(line));
  if (!result.success) {
    bad += 1;
    console.log(`invalid: ${line}\n  ${String(result.error?.message ?? result.error).split('\n').join('\n  ')}`);
  }
}
console.log(bad ? `${bad} of ${lines.length} invalid` : `ok ${lines.length}`);
process.exit(bad ? 1 : 0);
