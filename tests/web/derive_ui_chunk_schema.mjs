// Derives tests/web/ui_message_chunk.schema.json from the `ai` package's own
// `uiMessageChunkSchema` (zod), so that the Python tests check the encoder against
// the protocol without Node. Run it where `ai` is installed:
//
//   cd "$AI_SDK_DIR" && node /path/to/tests/web/derive_ui_chunk_schema.mjs > ui_message_chunk.schema.json
//
// The one part zod cannot express in JSON Schema, the `data-<name>` chunk's type
// (a z.custom check that the type starts with "data-"), becomes a string pattern.
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const root = process.cwd();
const require = createRequire(path.join(root, 'package.json'));
const ai = await import(pathToFileURL(require.resolve('ai')).href);
const zodCore = path.join(path.dirname(require.resolve('zod/v4/core')), 'json-schema-processors.js');
const { allProcessors } = await import(pathToFileURL(zodCore).href);
allProcessors.custom = (schema, ctx, json) => {
  json.type = 'string';
  json.pattern = '^data-';
};
const schema = await ai.asSchema(ai.uiMessageChunkSchema).jsonSchema;
const version = require('ai/package.json').version;
const out = {
  $comment:
    `Derived from ai@${version} uiMessageChunkSchema by tests/web/derive_ui_chunk_schema.mjs ` +
    '(zod toJSONSchema, draft-7, io=input); the data-* type check is a pattern here.',
  ...schema,
};
process.stdout.write(JSON.stringify(out, null, 1) + '\n');
