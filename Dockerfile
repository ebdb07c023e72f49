# Mimic as a container image (docs/container.md).
#
#   docker build -t mimic .
#   docker run --rm -p 127.0.0.1:8000:8000 -p 127.0.0.1:5020:5020 -e MIMIC_PRODUCT_KEY=... \
#     -v mimic-snapshots:/var/lib/mimic/snapshots -v "$PWD/examples/container:/etc/mimic:ro" \
#     mimic --system /etc/mimic/system.yaml
#
# BASE is a Debian-based Node 24 image with npm, used by both stages: the official node:24-slim by
# default; scripts/test-image.sh builds a stand-in from Debian packages and the npm registry where
# no image registry can be reached. The build stage needs the npm registry; the runtime stage needs
# Debian's packages only when BASE has no python3.
ARG BASE=node:24-slim

# Build: install every dependency, compile, then pack the package and install the tarball the way
# a user does (`npm install -g`), so the runtime holds exactly what `npm pack` ships plus the
# production dependencies: no sources, tests or dev dependencies. (Without install scripts: the
# package has none, and the only dependency that has one sends usage analytics.)
FROM ${BASE} AS build
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false SCARF_ANALYTICS=false
WORKDIR /src
# The manifests and the lock first (the workspaces under packages/ with them), so the dependency
# layer is built again only when they change. No install scripts: the project's own `prepare`
# would build here, before the sources are in, and no dependency needs one (esbuild finds its
# binary in its platform package).
COPY package.json package-lock.json ./
COPY packages/ packages/
RUN npm ci --ignore-scripts
COPY . .
RUN npm run build \
  && mkdir /tmp/pack \
  && npm pack --ignore-scripts --pack-destination /tmp/pack \
  && npm install -g --prefix /opt/mimic --prefer-offline --ignore-scripts /tmp/pack/mimic-sim-*.tgz \
  && /opt/mimic/bin/mimic --version

FROM ${BASE} AS runtime
# Python-backed models run in python3 worker processes (standard library only).
RUN if ! command -v python3 >/dev/null 2>&1; then \
      apt-get update \
      && apt-get install -y --no-install-recommends python3 \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
  && python3 --version
# A user of its own: the server never runs as root. /var/lib/mimic is its home and holds the
# snapshots (a volume) and the OPC UA certificates; /etc/mimic is where a system file and the
# extensions are mounted, read-only.
RUN groupadd --gid 10001 mimic \
  && useradd --uid 10001 --gid mimic --no-create-home --home-dir /var/lib/mimic --shell /usr/sbin/nologin mimic \
  && mkdir -p /var/lib/mimic/snapshots /var/lib/mimic/pki /etc/mimic/extensions \
  && chown -R mimic:mimic /var/lib/mimic
COPY --from=build /opt/mimic /opt/mimic
ENV PATH=/opt/mimic/bin:$PATH \
  NODE_ENV=production \
  PYTHONDONTWRITEBYTECODE=1 \
  MIMIC_HOST=0.0.0.0 \
  MIMIC_PORT=8000 \
  MIMIC_SNAPSHOTS_DIR=/var/lib/mimic/snapshots \
  MIMIC_EXTENSIONS=/etc/mimic/extensions \
  MIMIC_PKI_DIR=/var/lib/mimic/pki
WORKDIR /var/lib/mimic
USER mimic:mimic
# Snapshots outlive the container. (The system file and extensions are inputs: bind-mount them.)
VOLUME ["/var/lib/mimic/snapshots"]
# The HTTP API and dashboard; the usual ports of the protocol adapters, as documentation: a
# model's own settings decide what listens (Modbus TCP 502 or 5020 up, OPC UA 4840, text
# instruments 5025 up), and it must listen on 0.0.0.0 to be reached from outside the container.
# The embedded MQTT broker listens on 127.0.0.1 only: from a container, publish to a broker of its
# own (compose.yaml).
EXPOSE 8000 502 5020 4840 5025
# Node has fetch; the slim images have no curl.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.MIMIC_PORT || 8000) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM stops stepping, saves a snapshot when MIMIC_SNAPSHOT_ON_SHUTDOWN is set, closes every
# listener and exits 0 (forced after 10 s: give `docker stop` more, e.g. -t 20).
STOPSIGNAL SIGTERM
ENTRYPOINT ["mimic", "serve"]
