# syntax=docker/dockerfile:1
# One image for every Agent-Reach process; the command picks it (see docker-compose.yml):
#   agent-reach scheduler | executor | llm-sim
# The image runs built JavaScript, installed the way any other project installs the packages: the build
# stage compiles and packs every workspace package (the tarballs test/pack-install.test.ts installs and
# runs), the install stage installs those tarballs with their production dependencies only, and the
# runtime stage keeps that node_modules, without pnpm, TypeScript, sources or the build tools.

FROM node:20-slim AS build
WORKDIR /src
RUN npm install -g pnpm@10
# Fetching from the lockfile alone keeps this layer cached until dependencies change.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
RUN pnpm fetch
COPY LICENSE tsconfig.base.json tsconfig.build.json ./
COPY packages ./packages
RUN pnpm install --frozen-lockfile --offline
# `pnpm pack` builds each package first and writes its published manifest (exports and bin on dist/,
# workspace dependencies as version ranges).
RUN mkdir /tarballs \
  && for p in protocol shared archive executor scheduler llm-sim client cli; do \
       (cd "packages/$p" && pnpm pack --pack-destination /tarballs); \
     done

FROM node:20-slim AS install
WORKDIR /app
COPY --from=build /tarballs /tarballs
RUN echo '{ "name": "agent-reach-image", "private": true, "type": "module" }' > package.json \
  && npm install --omit=dev --no-audit --no-fund /tarballs/*.tgz

FROM node:20-slim AS runtime
ENV NODE_ENV=production
ENV PATH=/app/node_modules/.bin:$PATH
WORKDIR /app
COPY --from=install /app/package.json ./
COPY --from=install /app/node_modules ./node_modules
COPY config ./config
# The only directory the processes write to (write_markdown_file); owned by the unprivileged user.
RUN mkdir -p /app/outputs && chown node:node /app/outputs
USER node
# API, executor metrics, scheduler metrics, llm-sim.
EXPOSE 8080 9464 9465 4010
CMD ["agent-reach", "--help"]
