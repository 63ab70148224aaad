import type { FastifyInstance } from 'fastify';
import { OPENAI_CHAT_PATH, OPENAI_MODELS_PATH, OPENAI_RESPONSES_PATH } from '../constants.js';
import type { ApiContext } from '../options.js';
import { chatCompletion } from './chat-completions.js';
import { createRunFollower } from './door-run.js';
import { openAiErrorHandler } from './openai-error.js';
import { createModelsDoor } from './models.js';
import { createResponse } from './responses.js';

const OPEN_BODY = {
  type: 'object',
  description:
    'an OpenAI request body; the door itself checks each field, and names the first it cannot honour',
} as const;

/**
 * The OpenAI-compatible door: agents as models. Its routes answer errors in OpenAI's shape
 * (`{ error: { message, type, param, code } }`), except those the authentication and rate limit hooks
 * answer before a route runs. See docs/openai-door.md.
 */
export async function openAiRoutes(app: FastifyInstance, ctx: ApiContext): Promise<void> {
  const follower = createRunFollower(ctx);
  const models = createModelsDoor(ctx);
  await app.register(async (scope) => {
    scope.setErrorHandler(openAiErrorHandler(ctx.log));
    scope.get(
      OPENAI_MODELS_PATH,
      {
        schema: {
          tags: ['openai'],
          summary: 'OpenAI models: the agents the key may use, each a `model` of the door',
          description:
            'A list (`object: "list"`) of `{ id, object: "model", created, owned_by }`, one per agent the key may use, with the agent\'s `description` and the `models` it is declared to ask. See docs/openai-door.md.',
        },
      },
      (request) => models.list(request),
    );
    scope.get<{ Params: { id: string } }>(
      `${OPENAI_MODELS_PATH}/:id`,
      {
        schema: {
          tags: ['openai'],
          summary: 'OpenAI model: one agent the key may use; 404 `model_not_found` for any other',
          params: {
            type: 'object',
            properties: { id: { type: 'string', minLength: 1, maxLength: 200 } },
            required: ['id'],
          },
        },
      },
      (request) => models.retrieve(request),
    );
    scope.post<{ Headers: { traceparent?: string } }>(
      OPENAI_CHAT_PATH,
      {
        schema: {
          tags: ['openai'],
          summary: 'OpenAI chat completions: `model` names an agent, the last user message is the run input',
          description:
            'Starts a durable run as `POST /v1/runs` does (same checks and limits; metadata `door: openai`), waits for it and answers a `chat.completion` (or `chat.completion.chunk` events ending `data: [DONE]` with `stream: true`). The run id is in the `x-agent-reach-run-id` header. Unsupported fields are a 400 naming them. See docs/openai-door.md.',
          body: OPEN_BODY,
        },
      },
      (request, reply) => chatCompletion(ctx, follower, request, reply),
    );
    scope.post<{ Headers: { traceparent?: string } }>(
      OPENAI_RESPONSES_PATH,
      {
        schema: {
          tags: ['openai'],
          summary: 'OpenAI responses: `model` names an agent, `input` (text or messages) is the run input',
          description:
            "Starts a durable run as `POST /v1/chat/completions` does and answers a `response` whose `output_text` is the run's answer (or, with `stream: true`, Responses API events: `response.output_text.delta`, ending `response.completed`). The run id is in the `x-agent-reach-run-id` header. See docs/openai-door.md.",
          body: OPEN_BODY,
        },
      },
      (request, reply) => createResponse(ctx, follower, request, reply),
    );
  });
}
