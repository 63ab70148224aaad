import { defineTool, noResult, Type } from '@agent-reach/protocol';

const STATES = ['pending_payment', 'paid', 'packed', 'shipped', 'delivered'] as const;

/** Order status from canned data derived from the id: deterministic, no network. */
export const queryOrderStatus = defineTool({
  name: 'query_order_status',
  description:
    'Status of one customer order by its id (ORD- followed by six digits, e.g. ORD-123456). Demo tool: the data is ' +
    'canned and derived from the id, not a real order system. Ids ending in 000 do not exist. Set include_history ' +
    'to also get the status changes so far. Does not change orders.',
  parameters: Type.Object(
    {
      order_id: Type.String({ pattern: '^ORD-\\d{6}$', examples: ['ORD-123456'] }),
      include_history: Type.Optional(Type.Boolean({ default: false })),
    },
    { additionalProperties: false },
  ),
  timeoutMs: 2000,
  accessScope: 'order_service',
  readOnly: true,
  handler: ({ order_id, include_history }) => {
    const n = Number(order_id.slice(4));
    if (n % 1000 === 0) return noResult(`no order ${order_id} exists; check the id with the customer`);
    const stage = n % STATES.length;
    const status = STATES[stage] as (typeof STATES)[number];
    const base = Date.UTC(2026, 10, 1) + (n % 20) * 86_400_000;
    const history = STATES.slice(0, stage + 1).map((s, i) => ({
      status: s,
      at: new Date(base + i * 86_400_000).toISOString(),
    }));
    return {
      order_id,
      status,
      updated_at: history.at(-1)?.at,
      source: 'canned demo data',
      ...(include_history ? { history } : {}),
    };
  },
});
