import { describe, expect, it } from 'vitest';
import type { AgentSpec, ToolCatalogEntry } from '@agent-reach/shared';
import { fleetTerms, sharedWithFleet, toolTerms } from './fleet-terms.js';
import { agentVocabulary, checkTopic } from './topic-gate.js';

/** A catalog entry as the vocabulary reads it: its name and description (no parameters). */
const tool = (name: string, description: string) => ({ name, description }) as ToolCatalogEntry;

// A billing desk that schedules payments, in a fleet where three other desks schedule other things.
const own = [
  tool('get_invoice', 'One invoice by its id: amount due and status.'),
  tool('list_invoices', 'Invoices of the account, paid and unpaid.'),
  tool('schedule_payment', 'Schedule the payment of an invoice for a date.'),
  tool('get_statement', 'The account statement of a month.'),
];
const others = [
  tool('schedule_lesson', 'Schedule a driving lesson with an instructor.'),
  tool('schedule_pickup', 'Schedule a parcel pickup at an address.'),
  tool('schedule_visit', 'Schedule a vet visit for a pet.'),
];
const billing: AgentSpec = {
  name: 'billing',
  tools: own.map((t) => t.name),
  allowed_topic: ['invoices', 'payments'],
};
const entries = new Map([...own, ...others].map((t) => [t.name, t]));
/** The catalog as the scheduler has it: it can list every tool the fleet serves. */
const fleetCatalog = (tools: Map<string, ToolCatalogEntry>) => ({
  get: (name: string) => tools.get(name),
  names: () => tools.keys(),
});

describe('words the fleet shares', () => {
  it("counts a word the fleet's other tools share as shared, so that alone it does not place a request", () => {
    // Without the fleet, "schedule" is a word of the billing desk's own; with it, every desk's.
    const alone = agentVocabulary({ ...billing }, entries);
    expect(checkTopic(billing, alone, 'Schedule a haircut for Friday')?.verdict).toBe('on_topic');
    const inFleet = agentVocabulary({ ...billing }, fleetCatalog(entries));
    expect(checkTopic(billing, inFleet, 'Schedule a haircut for Friday')).toMatchObject({
      verdict: 'off_topic',
      best: 'schedule_payment',
    });
    expect(checkTopic(billing, inFleet, 'Schedule the payment of INV-3 for Friday')?.verdict).toBe(
      'on_topic',
    );
  });

  it("shares a term only when enough of the fleet's other tools know it, not the agent's own tools", () => {
    const fleet = fleetTerms([...own, ...others]);
    const mine = new Map(own.map((t) => [t.name, toolTerms(t)]));
    const shared = sharedWithFleet(fleet, mine);
    expect(shared('schedule')).toBe(true);
    // "invoice" is in three of the billing desk's own tools and in no other desk's.
    expect(shared('invoice')).toBe(false);
    expect(shared('lesson')).toBe(false);
    expect(sharedWithFleet(undefined, mine)('schedule')).toBe(false);
  });

  it("reads the fleet again when the catalog's tools change, and not while they stay the same", () => {
    const tools = new Map(entries);
    const catalog = fleetCatalog(tools);
    const agent = { ...billing };
    const first = agentVocabulary(agent, catalog);
    expect(agentVocabulary(agent, catalog)).toBe(first);
    tools.set('schedule_class', tool('schedule_class', 'Schedule a yoga class.'));
    const second = agentVocabulary(agent, catalog);
    expect(second).not.toBe(first);
    expect(agentVocabulary(agent, catalog)).toBe(second);
  });
});
