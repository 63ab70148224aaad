import { describe, expect, it } from 'vitest';
import { foldAliases } from './reach-policy.js';
import { withRunAliases } from './run-aliases.js';

const tool = foldAliases({ city: { canton: '广州', shanghai: '上海' } });

describe('withRunAliases', () => {
  it("adds a run's aliases beside the tool's, the run's entry winning for an alias both define", () => {
    const merged = withRunAliases(tool, {
      city: { ' 广州省 ': '广州', Canton: '深圳' },
      unit: { c: 'celsius' },
    });
    expect(merged?.get('city')?.get('广州省')).toBe('广州');
    expect(merged?.get('city')?.get('canton')).toBe('深圳');
    expect(merged?.get('city')?.get('shanghai')).toBe('上海');
    expect(merged?.get('unit')?.get('c')).toBe('celsius');
    // The tool's own table is not changed by a run's.
    expect(tool?.get('city')?.get('canton')).toBe('广州');
  });

  it("keeps the tool's aliases alone when the run has none or sends a table that is not strings", () => {
    expect(withRunAliases(tool, undefined)).toBe(tool);
    expect(withRunAliases(tool, { city: { x: 1 } })).toBe(tool);
    expect(withRunAliases(tool, ['city'])).toBe(tool);
    expect(withRunAliases(undefined, { city: 'x' })).toBeUndefined();
  });
});
