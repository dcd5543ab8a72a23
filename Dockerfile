# Tessera gateway image. Node 24 runs the TypeScript sources directly (type stripping); the one build is the web app's
# (web/, docs/web-app.md), made in its own stage with the dev dependencies (Vite and the app's libraries) and copied
# into the image as web/dist, which the agent service serves.
# Default command: the API (with its in-process worker); the compose `worker` service runs `node worker/main.ts`.
# Both with 64 MiB V8 semi-spaces, as `npm run api` / `npm run worker` (scripts/bootstrap.sh says why).
FROM node:24-bookworm-slim AS web
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund || npm install --no-audit --no-fund
# The whole tree: the build generates the API client's types from the agent service's OpenAPI document (api/).
COPY . .
RUN node scripts/build-web.ts --force

FROM node:24-bookworm-slim

ENV NODE_ENV=production
WORKDIR /app

# Dependencies first, for layer caching. Dev dependencies (jest, typescript, the `node` binary package...) are
# not needed at runtime: the base image already is Node 24.
# (Falls back to npm install like scripts/bootstrap.sh: some npm 11 releases write lock files without other
# platforms' optional packages and then refuse them in npm ci.)
COPY package.json package-lock.json ./
RUN (npm ci --omit=dev --no-audit --no-fund || npm install --omit=dev --no-audit --no-fund) \
  && npm cache clean --force

COPY . .
COPY --from=web /app/web/dist ./web/dist

# Conversations' sandboxes (SANDBOX_DIR; compose mounts a volume here, shared by the API and the worker). code_execute
# uses util-linux's prlimit and unshare when present (both are in the base image).
RUN mkdir -p /data/sandboxes && chown node:node /data/sandboxes
ENV SANDBOX_DIR=/data/sandboxes

USER node
EXPOSE 8080 8081
CMD ["node", "--max-semi-space-size=64", "api/server.ts"]
