import { describe, expect, it } from 'vitest';
import { parseProviders, undeclaredModels } from './providers.js';

describe('the providers file', () => {
  it('refuses a base_url that holds credentials, pointing at api_key_env', () => {
    const text = JSON.stringify({
      providers: [{ name: 'p', base_url: 'https://user:secret@example.com/v1', models: ['m'] }],
    });
    expect(() => parseProviders(text, 'providers.yaml')).toThrow(
      'providers.yaml: provider "p": base_url holds credentials; put the key in a variable named by api_key_env',
    );
  });

  it('names the agents file, the agent, the field, the declared choices and where to declare an undeclared model', () => {
    const problems = undeclaredModels(
      { name: 'a', model: 'p/x', fallback: ['gpt-4o-mini', 'q/y'] },
      {
        declared: new Set(['p/m']),
        defaultModel: 'gpt-4o-mini',
        agentsFile: 'agents.yaml',
        providersFile: 'providers.yaml',
      },
    );
    expect(problems).toEqual([
      `agents.yaml: agent "a": model "p/x" is not declared; declared: gpt-4o-mini, p/m; declare it under a provider's models in providers.yaml, or add it to ALLOWED_MODELS for the default provider`,
      `agents.yaml: agent "a": fallback "q/y" is not declared; declared: gpt-4o-mini, p/m; declare it under a provider's models in providers.yaml, or add it to ALLOWED_MODELS for the default provider`,
    ]);
  });

  it('keeps the file it was read from, for errors that name it', () => {
    expect(parseProviders('prices: {}', 'here.yaml').path).toBe('here.yaml');
  });
});
