import { readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ScenarioValidationError, validateScenario } from './scenario-validation.js';
import type { Scenario } from './types.js';

const SCENARIO_EXTENSIONS = ['.yaml', '.yml', '.json'];

/** Parses one scenario file (YAML or JSON) and validates it; errors name the file and the field. */
export function loadScenarioFile(file: string): Scenario {
  const text = readFileSync(file, 'utf8');
  let raw: unknown;
  try {
    raw = extname(file) === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    const format = extname(file) === '.json' ? 'JSON' : 'YAML';
    throw new ScenarioValidationError(file, [
      { path: '', message: `is not valid ${format}: ${String(err)}` },
    ]);
  }
  return validateScenario(raw, file);
}

/**
 * Loads every `*.yaml`, `*.yml` and `*.json` file directly inside `dir`, in name order.
 * Throws {@link ScenarioValidationError} on the first bad file, or when two files share a name.
 */
export function loadScenarios(dir: string): Scenario[] {
  const files = readdirSync(dir)
    .filter((f) => SCENARIO_EXTENSIONS.includes(extname(f)))
    .sort();
  const seen = new Map<string, string>();
  return files.map((f) => {
    const file = join(dir, f);
    const scenario = loadScenarioFile(file);
    const other = seen.get(scenario.name);
    if (other !== undefined) {
      throw new ScenarioValidationError(file, [
        { path: 'name', message: `'${scenario.name}' is already used by ${other}` },
      ]);
    }
    seen.set(scenario.name, file);
    return scenario;
  });
}
