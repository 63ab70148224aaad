// The benchmark's MCP server over stdio: one tool, `bench_noop`, the same no-op as the benchmark's own
// TypeScript tool (it echoes its payload, as structured content with the text that repeats it, so the
// result the platform hands on is `{ echo }` either way). Started by the executor as `node <this file>`.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const tool = {
  name: 'bench_noop',
  description: 'Echoes its payload; does nothing else. For benchmarks.',
  inputSchema: {
    type: 'object',
    properties: { payload: { type: 'string' } },
    required: ['payload'],
    additionalProperties: false,
  },
  annotations: { readOnlyHint: true },
};
const server = new Server({ name: 'bench', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [tool] }));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const echo = { echo: String(req.params.arguments?.payload ?? '') };
  return { content: [{ type: 'text', text: JSON.stringify(echo) }], structuredContent: echo };
});
await server.connect(new StdioServerTransport());
