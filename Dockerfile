# Production image: the server installed from its wheel (no source tree), uvicorn workers
# behind your TLS-terminating proxy.   docker build -t chatgpt-app-server .
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml setup.py README.md LICENSE ./
COPY app ./app
COPY migrations ./migrations
RUN pip wheel --no-deps -w /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN useradd --system --uid 10001 --home-dir /srv --create-home app
# Every dependency at the version and with the hashes of requirements.lock (./dev lock; CI checks it matches
# pyproject.toml), in a layer of its own (a code change reinstalls none of them); then the server itself
# without resolving anything again, and pip's check that the two agree.
COPY requirements.lock /tmp/requirements.lock
RUN pip install --require-hashes --no-deps -r /tmp/requirements.lock && rm /tmp/requirements.lock
COPY --from=build /wheels /wheels
RUN pip install --no-deps /wheels/*.whl && rm -rf /wheels && pip check
WORKDIR /srv
USER app
# SQLite under /srv/var unless APP_DATABASE_URL points at PostgreSQL (docker-compose.yml does).
# APP_ENV=production: set APP_OAUTH_SIGNING_KEYS and APP_SECRET_KEY, or the server refuses to start
# (docs/oauth.md); no demo accounts are seeded.
RUN mkdir -p /srv/var
ENV APP_ENV=production APP_LOG_FORMAT=json APP_DATABASE_URL=sqlite:////srv/var/app.db
# Who the client is: X-Forwarded-For is believed only from these peers (addresses or networks of the proxies in
# front of the container; never "*", which lets every client choose its own address). Limits are counted per
# worker unless APP_REDIS_URL points at a Redis the workers and replicas share.
ENV APP_TRUSTED_PROXIES=127.0.0.1,::1
# /metrics answers APP_METRICS_SCRAPERS only (loopback by default; set the network your Prometheus scrapes
# from). The workers' samples meet in a temporary directory under $TMPDIR: on a read-only root filesystem,
# mount a writable emptyDir at /tmp or point APP_METRICS_DIR at one (docs/observability.md).
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=4s --retries=3 \
  CMD python -c "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=3).status != 200)"
# serve migrates and seeds once (replicas take turns on PostgreSQL advisory locks), then forks
# the workers. A release step (`python -m app migrate && python -m app seed`) with
# APP_MIGRATE_ON_START=false APP_SEED_ON_START=false keeps replica start-up short.
CMD ["python", "-m", "app", "serve", "--host", "0.0.0.0", "--port", "8000", "--workers", "2"]
