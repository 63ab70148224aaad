# syntax=docker/dockerfile:1
# One image for every Agent-Reach process; the command picks it (see docker-compose.yml):
#   node packages/cli/bin/agent-reach.js scheduler | executor | llm-sim
# The workspace ships TypeScript sources that tsx compiles on load: there is no build step. The first
# stage installs the production dependencies of every workspace package; the second keeps the result
# without pnpm, its store or the build tools.

FROM node:20-slim AS deps
WORKDIR /app
RUN npm install -g pnpm@10
# Fetching from the lockfile alone keeps this layer cached until dependencies change.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
RUN pnpm fetch --prod
COPY packages ./packages
RUN pnpm install --frozen-lockfile --offline --prod

FROM node:20-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app ./
COPY tsconfig.base.json tsconfig.json ./
COPY config ./config
# The only directory the processes write to (write_markdown_file); owned by the unprivileged user.
RUN mkdir -p /app/outputs && chown node:node /app/outputs
USER node
# API, executor metrics, scheduler metrics, llm-sim.
EXPOSE 8080 9464 9465 4010
CMD ["node", "packages/cli/bin/agent-reach.js", "--help"]
