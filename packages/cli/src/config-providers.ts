import {
  constants,
  declaredModels,
  loadProviders,
  providersFileOf,
  undeclaredModels,
  workflowsFileOf,
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

/**
 * The optional files a configuration names that do not exist: each declares nothing until it does, and
 * every command says so the same way (a warning, never a refusal).
 */
export function missingOptionalFiles(config: AgentReachConfig): string[] {
  return [
    ...(config.workflowsFile && !workflowsFileOf(config)
      ? [
          `WORKFLOWS_FILE ${config.workflowsFile} does not exist: no workflows until it is created (schedulers watch it)`,
        ]
      : []),
    ...(config.providersFile && !providersFileOf(config)
      ? [
          `PROVIDERS_FILE ${config.providersFile} does not exist: only the default provider until it does (schedulers read it at start; config apply --providers publishes one)`,
        ]
      : []),
  ];
}

/**
 * The models a workflow node may name: `ALLOWED_MODELS` and the providers file's (a providers file that
 * cannot be read adds none here: `checkProviders` reports it).
 */
export function namedModels(config: AgentReachConfig): string[] {
  try {
    return [...config.api.allowedModels, ...declaredModels(loadProviders(config))];
  } catch {
    return [...config.api.allowedModels];
  }
}
