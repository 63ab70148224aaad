import {
  constants,
  declaredModels,
  loadProviders,
  undeclaredModels,
  type AgentReachConfig,
  type AgentsFile,
  type ProvidersFile,
} from '@agent-reach/shared';

/**
 * Checks the providers file of a configuration (when there is one) and every agent's `model` and
 * `fallback` against the models it declares, `ALLOWED_MODELS` and the default model: each problem names
 * the agents file, the agent, the declared choices and where to declare the model. A provider whose
 * key variable is not set here is a warning: the scheduler may run with another environment.
 */
export function checkProviders(
  config: AgentReachConfig,
  env: Record<string, string | undefined>,
  agents: AgentsFile | undefined,
  print: (line: string) => void,
  file?: ProvidersFile,
): { problems: string[]; warnings: string[] } {
  let providers: ProvidersFile;
  try {
    providers = file ?? loadProviders(config);
  } catch (err) {
    const e = err as { details?: string[]; message: string };
    return { problems: e.details?.length ? [...e.details] : [e.message], warnings: [] };
  }
  for (const p of providers.providers)
    print(`provider ${p.name}: ${p.base_url}, models ${p.models.join(', ')}`);
  const warnings = providers.providers.flatMap((p) =>
    p.api_key_env !== undefined && !env[p.api_key_env]
      ? [
          `${providers.path ?? 'providers'}: provider "${p.name}": its API key variable ${p.api_key_env} is not set here; the scheduler refuses to start without it`,
        ]
      : [],
  );
  const declared = new Set([...config.api.allowedModels, ...declaredModels(providers)]);
  const where = {
    declared,
    defaultModel: config.llm.model ?? constants.DEFAULT_LLM_MODEL,
    agentsFile: config.agentsFile,
    ...(providers.path ? { providersFile: providers.path } : {}),
  };
  const problems = [...(agents?.agents.values() ?? [])].flatMap((a) => undeclaredModels(a, where));
  return { problems, warnings };
}
