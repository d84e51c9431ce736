"""The deployment artefacts, validated offline (no cluster, no Docker engine here): every kustomize overlay
renders and validates strictly against the Kubernetes API's schemas, and says what the server needs;
docker-compose.yml follows the Compose Specification and has the whole stack; the image installs from the
lock file. What a deletable part adds (the files demo's sweeper, the authorization server's
endpoints) is fenced with its name, and checked only while the part is there
(tests/unit/test_files_deploy.py): these tests hold in a fork that removed it as docs/forking.md
says."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.demos import PACKAGES, authserver_installed
from tests.routes import INTERNAL_PATHS, INTERNAL_PREFIXES, served_paths

ROOT = Path(__file__).resolve().parents[2]
OVERLAYS = sorted(p for p in (ROOT / "deploy" / "k8s" / "overlays").iterdir() if p.is_dir())
# The oldest Kubernetes still maintained by the big providers, and the newest kubernetes-validate knows.
KUBERNETES = ("1.29.0", "1.37.0")
WORKLOADS = ("Deployment", "Job", "CronJob")

def _kubectl() -> None:
    if shutil.which("kubectl") is None:
        if os.environ.get("APP_REQUIRE_KUBECTL") == "1":
            pytest.fail("APP_REQUIRE_KUBECTL=1 but kubectl is not installed")
        pytest.skip("kubectl (with kustomize) is not installed")


def render(overlay: Path) -> str:
    _kubectl()
    done = subprocess.run(["kubectl", "kustomize", str(overlay)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module", params=OVERLAYS, ids=[p.name for p in OVERLAYS])
def overlay(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    text = render(request.param)
    path = tmp_path_factory.mktemp(request.param.name) / "rendered.yaml"
    path.write_text(text)
    return path, [doc for doc in yaml.safe_load_all(text) if doc]


def by_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d["kind"] == kind]


def pod_spec(doc: dict) -> dict[str, Any]:
    spec = doc["spec"]
    if doc["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return spec["template"]["spec"]


def config(docs: list[dict]) -> dict[str, str]:
    (config_map,) = by_kind(docs, "ConfigMap")
    return config_map["data"]


def validate(path: Path, version: str = KUBERNETES[-1]) -> subprocess.CompletedProcess[str]:
    # This interpreter's (a dev dependency), whatever PATH says or where the scripts are.
    return subprocess.run([sys.executable, "-m", "kubernetes_validate", "-k", version, "--strict", "--quiet",
                           str(path)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("version", KUBERNETES)
def test_every_overlay_renders_and_validates_strictly(overlay, version):
    path, docs = overlay
    done = validate(path, version)
    assert done.returncode == 0, done.stdout + done.stderr
    # A CronJob too while a feature has one (files: its sweeper).
    assert {d["kind"] for d in docs} >= {"Deployment", "Service", "Ingress", "HorizontalPodAutoscaler",
                                         "PodDisruptionBudget", "Job", "NetworkPolicy", "ConfigMap",
                                         "ServiceAccount"}


def test_strict_validation_refuses_a_field_kubernetes_does_not_have(overlay, tmp_path):
    _, docs = overlay
    (deployment,) = by_kind(docs, "Deployment")
    pod_spec(deployment)["containers"][0]["readOnlyRootFileSystem"] = True  # the real field: ...Filesystem
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(deployment))
    assert validate(broken).returncode != 0


def test_no_setting_trusts_every_proxy_or_every_scraper(overlay):
    _, docs = overlay
    data = config(docs)
    for name in ("APP_TRUSTED_PROXIES", "APP_METRICS_SCRAPERS"):
        assert data[name] and "*" not in data[name] and "0.0.0.0/0" not in data[name], (name, data[name])
    rendered = json.dumps(docs).lower()
    assert "forwarded-allow-ips" not in rendered and "forwarded_allow_ips" not in rendered


def test_every_pod_runs_unprivileged_on_a_read_only_root_with_its_config_and_secrets(overlay):
    _, docs = overlay
    workloads = [d for d in docs if d["kind"] in WORKLOADS]
    assert {d["kind"] for d in workloads} >= {"Deployment", "Job"}
    for doc in workloads:
        spec = pod_spec(doc)
        assert spec["securityContext"]["runAsNonRoot"] is True and spec["automountServiceAccountToken"] is False
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True and context["allowPrivilegeEscalation"] is False
            assert context["capabilities"]["drop"] == ["ALL"]
            assert "/tmp" in {m["mountPath"] for m in container["volumeMounts"]}
            sources = {next(iter(ref)): ref[next(iter(ref))]["name"] for ref in container["envFrom"]}
            assert sources["secretRef"] == "chatgpt-mcp-app-secrets"
            assert sources["configMapRef"] == by_kind(docs, "ConfigMap")[0]["metadata"]["name"]


def test_the_server_probes_drains_and_leaves_migrations_to_the_release_job(overlay):
    _, docs = overlay
    (deployment,) = by_kind(docs, "Deployment")
    spec = pod_spec(deployment)
    (app,) = spec["containers"]
    assert app["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert app["livenessProbe"]["httpGet"]["path"] == app["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert app["args"][:4] == ["python", "-m", "app", "serve"]
    data = config(docs)
    assert (data["APP_MIGRATE_ON_START"], data["APP_SEED_ON_START"]) == ("false", "false")
    # preStop, then APP_SHUTDOWN_GRACE for requests in flight, then at most 5 s of trace flushing: all before SIGKILL.
    pause = int(app["lifecycle"]["preStop"]["exec"]["command"][-1])
    assert spec["terminationGracePeriodSeconds"] >= pause + int(data["APP_SHUTDOWN_GRACE"]) + 5 + 5
    assert {m["mountPath"]: m["name"] for m in app["volumeMounts"]}[data["APP_METRICS_DIR"]] == "metrics"
    (job,) = by_kind(docs, "Job")
    assert pod_spec(job)["containers"][0]["args"] == ["sh", "-c", "python -m app migrate && python -m app seed"]


def _feature_commands() -> set[tuple[str, str]]:
    from app.main import discover_features

    features = discover_features()
    return {(feature.name, command) for feature in features for command in feature.commands}


def test_every_cronjob_runs_an_installed_features_command_one_at_a_time(overlay):
    # A feature's command scheduled after the feature is gone would fail every run, unnoticed.
    _, docs = overlay
    for cron in by_kind(docs, "CronJob"):
        python, dash_m, app, *command = pod_spec(cron)["containers"][0]["args"]
        assert (python, dash_m, app) == ("python", "-m", "app") and len(command) == 2, command
        assert tuple(command) in _feature_commands(), command
        assert cron["spec"]["concurrencyPolicy"] == "Forbid"


def test_the_ingress_routes_the_public_paths_and_never_metrics(overlay):
    _, docs = overlay
    (ingress,) = by_kind(docs, "Ingress")
    routes = {p["path"]: p["pathType"] for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]}
    # The authorization server's endpoints while it is there (a fork with an IdP drops them).
    oauth = {"/authorize", "/token", "/jwks.json"} if authserver_installed() else set()
    assert {"/mcp", "/.well-known/"} | oauth <= set(routes)
    # Neither named nor under a prefix: "/" as a Prefix would route every path, /metrics included.
    assert "/metrics" not in routes and routes["/"] == "Exact"
    assert not [path for path, kind in routes.items() if kind == "Prefix" and "/metrics".startswith(path)]
    assert ingress["spec"]["tls"][0]["hosts"] == [ingress["spec"]["rules"][0]["host"]]
    assert config(docs)["APP_BASE_URL"] == f"https://{ingress['spec']['rules'][0]['host']}"


def test_production_runs_replicas_that_share_their_keys_and_limits():
    docs = [d for d in yaml.safe_load_all(render(ROOT / "deploy" / "k8s" / "overlays" / "production")) if d]
    (deployment,) = by_kind(docs, "Deployment")
    (hpa,) = by_kind(docs, "HorizontalPodAutoscaler")
    # The autoscaler owns the count: a count in the manifests would reset it at every apply.
    assert "replicas" not in deployment["spec"] and hpa["spec"]["minReplicas"] >= 2
    data = config(docs)
    assert data["APP_ENV"] == "production" and data["APP_STORAGE_BACKEND"] == "s3"
    # Keys, secret, database and Redis come from the Secret, never from the manifests.
    assert not by_kind(docs, "Secret")
    assert not {"APP_OAUTH_SIGNING_KEYS", "APP_SECRET_KEY", "APP_DATABASE_URL", "APP_REDIS_URL"} & set(data)


COMPOSE_SCHEMA = ROOT / "deploy" / "compose" / "compose-spec.json"
DEV_OVERRIDE = ROOT / "deploy" / "compose" / "dev.yaml"
DEV_ENV = ROOT / "deploy" / "compose" / "dev.env"


def _yaml(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def test_compose_follows_the_compose_specification_and_runs_the_whole_stack():
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    compose = _yaml(ROOT / "docker-compose.yml")
    jsonschema.validate(compose, schema, cls=jsonschema.Draft7Validator)
    jsonschema.validate(_yaml(DEV_OVERRIDE), schema, cls=jsonschema.Draft7Validator)
    services = compose["services"]
    assert {"db", "minio", "bucket", "redis", "migrate", "app", "front"} <= set(services)
    app = services["app"]
    assert app["environment"]["APP_REDIS_URL"].startswith("redis://redis:")
    assert app["environment"]["APP_S3_ENDPOINT_URL"].endswith("minio:9000}")
    assert (app["environment"]["APP_MIGRATE_ON_START"], app["environment"]["APP_SEED_ON_START"]) == ("false", "false")
    assert app["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
    # Any other `python -m app X Y` a service runs is an installed feature's command (files sweep).
    run = " ; ".join(" ".join(service.get("command", [])) for service in services.values())
    commands = set(re.findall(r"python -m app (\w+) (\w+)", run))
    assert commands <= _feature_commands(), commands


def test_compose_is_production_by_default_behind_its_https_front():
    text = (ROOT / "docker-compose.yml").read_text()
    services = _yaml(ROOT / "docker-compose.yml")["services"]
    runs_the_app = [s for s in services.values() if s.get("image") == services["app"]["image"]]
    assert len(runs_the_app) >= 2  # the release step and the server (and a demo's sweeper)
    for service in runs_the_app:
        env = service["environment"]
        assert env["APP_ENV"] == "production"
        assert env["APP_BASE_URL"].startswith("https://${DOMAIN:?")
        # Passed through from the operator's environment, never given here: production refuses to
        # start without them.
        assert env["APP_SECRET_KEY"] is None
        assert env["APP_REQUEST_STATE_KEYS"] is None
        if authserver_installed():
            assert env["APP_OAUTH_SIGNING_KEYS"] is None
    # Every password is the operator's: required, no default (a default would be public).
    assert not re.findall(r"\$\{\w*(PASSWORD|USER)\w*:-", text)
    required = set(re.findall(r"\$\{(\w+):\?", text))
    assert {"POSTGRES_PASSWORD", "MINIO_ROOT_PASSWORD", "DOMAIN"} <= required
    # The front is the only door: the app publishes no port; X-Forwarded-For is believed from the
    # front's fixed address only, which is on the stack's network.
    app, front = services["app"], services["front"]
    assert "ports" not in app
    assert set(front["ports"]) >= {"80:80", "443:443"}
    assert "./deploy/compose/Caddyfile:/etc/caddy/Caddyfile:ro" in front["volumes"]
    address = front["networks"]["default"]["ipv4_address"]
    assert app["environment"]["APP_TRUSTED_PROXIES"] == address
    network = _yaml(ROOT / "docker-compose.yml")["networks"]["default"]
    (subnet,) = [c["subnet"] for c in network["ipam"]["config"]]
    assert ipaddress.ip_address(address) in ipaddress.ip_network(subnet)
    assert front["environment"]["UPSTREAM"] == "app:8000"
    assert front["depends_on"] == {"app": {"condition": "service_healthy"}}


def test_the_development_override_keeps_the_development_stack():
    base = _yaml(ROOT / "docker-compose.yml")["services"]
    dev = _yaml(DEV_OVERRIDE)["services"]
    assert set(dev) <= set(base)
    runs_the_app = {name for name, s in base.items() if s.get("image") == base["app"]["image"]}
    assert runs_the_app <= set(dev)  # none left in production with development's database
    override = _yaml(DEV_OVERRIDE)
    (subnet,) = [c["subnet"] for c in override["networks"]["default"]["ipam"]["config"]]
    for name in runs_the_app:
        env = {**base[name]["environment"], **dev[name]["environment"]}
        assert env["APP_ENV"] == "development"
        assert env["APP_BASE_URL"] == "${APP_BASE_URL:-http://127.0.0.1:8000}"
        # A tunnel on the machine reaches the app through docker's forwarding: from the gateway.
        trusted = env["APP_TRUSTED_PROXIES"].removeprefix("${APP_TRUSTED_PROXIES:-").rstrip("}")
        assert ipaddress.ip_address(trusted) == next(ipaddress.ip_network(subnet).hosts())
    assert dev["app"]["ports"] == ["127.0.0.1:8000:8000"]  # this machine only
    # Beside a production stack on the same machine: its own project (volumes) and network.
    production = _yaml(ROOT / "docker-compose.yml")
    assert override["name"] != production["name"]
    assert not ipaddress.ip_network(subnet).overlaps(ipaddress.ip_network(
        production["networks"]["default"]["ipam"]["config"][0]["subnet"]))
    assert dev["front"]["profiles"] == ["https"]  # not started: no public name to serve
    # The env file gives every variable docker-compose.yml requires.
    required = set(re.findall(r"\$\{(\w+):\?", (ROOT / "docker-compose.yml").read_text()))
    given = dict(line.split("=", 1) for line in DEV_ENV.read_text().splitlines()
                 if line and not line.startswith("#"))
    assert required <= set(given), required - set(given)


def test_compose_validation_refuses_what_the_specification_does_not_have():
    schema = json.loads(COMPOSE_SCHEMA.read_text())
    compose = _yaml(ROOT / "docker-compose.yml")
    compose["services"]["app"]["restart_policy"] = "always"  # a deploy.restart_policy key, not a service's
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(compose, schema, cls=jsonschema.Draft7Validator)


# A deletable part's lines in the deployment files (a demo's, the authorization server's): from
# "# >>> NAME" to "# <<< NAME", which docs/forking.md deletes with it.
FENCE = re.compile(r"^\s*# (>>>|<<<) (\w+)\b")


def test_a_parts_lines_are_fenced_with_its_name_and_its_manifests_in_a_folder_of_that_name():
    # An unclosed fence would take the rest of its file along; a fence or a folder left behind by a
    # part that is gone configures what no longer exists.
    installed = {path.parent.name for path in (ROOT / "app" / "features").glob("*/__init__.py")}
    installed |= {name for name in PACKAGES if (ROOT / "app" / name / "__init__.py").is_file()}
    fenced: dict[str, set[str]] = {}
    # Every file the page's `grep -rlw "# >>> NAME" deploy docker-compose.yml` may hand to perl.
    files = [path for path in sorted((ROOT / "deploy").rglob("*")) if path.is_file()]
    for path in [*files, ROOT / "docker-compose.yml"]:
        open_fence = None
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if match := FENCE.match(line):
                where = f"{path.relative_to(ROOT)}:{number}"
                edge, name = match.groups()
                assert (edge == ">>>") is (open_fence is None), f"{where}: unpaired fence"
                assert edge == ">>>" or name == open_fence, f"{where}: closes {open_fence}?"
                open_fence = name if edge == ">>>" else None
                fenced.setdefault(name, set()).add(path.name)
        assert open_fence is None, f"{path.relative_to(ROOT)}: # >>> {open_fence} is never closed"
    folders = {p.name for p in (ROOT / "deploy" / "k8s" / "base").iterdir() if p.is_dir()}
    assert set(fenced) | folders <= installed, (fenced, folders)


def test_the_image_installs_every_dependency_from_the_hashed_lock_and_the_server_without_resolving():
    runtime = (ROOT / "Dockerfile").read_text().split("\nFROM ")[-1]
    assert "pip install --require-hashes --no-deps -r /tmp/requirements.lock" in runtime
    assert runtime.index("COPY requirements.lock") < runtime.index("COPY --from=build /wheels")
    assert "pip install --no-deps /wheels/*.whl && rm -rf /wheels && pip check" in runtime
    lock = (ROOT / "requirements.lock").read_text()
    pinned = [line for line in lock.splitlines() if line and not line.startswith((" ", "#"))]
    assert pinned and all("==" in line for line in pinned)
    assert lock.count("--hash=sha256:") >= len(pinned)


def test_every_setting_the_manifests_and_compose_give_is_one_the_server_reads(overlay):
    # A misspelt name is silently ignored by the server: caught here instead.
    from app.main import discover_features
    from app.parts import setting_names
    from app.settings import ENV_PREFIX

    known = setting_names(discover_features())
    _, docs = overlay
    given = set(config(docs)) | {k for d in by_kind(docs, "Secret") for k in d.get("data", {})}
    for path in (ROOT / "docker-compose.yml", DEV_OVERRIDE):
        for service in _yaml(path)["services"].values():
            given |= set(service.get("environment") or {})
    assert {name for name in given if name.startswith(ENV_PREFIX)} - known == set()


def test_the_ingress_paths_pass_ingress_nginx_strict_path_validation(overlay):
    # ingress-nginx 1.12+ refuses an Exact or Prefix path with a character other than these (the whole object).
    _, docs = overlay
    (ingress,) = by_kind(docs, "Ingress")
    for rule in ingress["spec"]["rules"]:
        for path in rule["http"]["paths"]:
            if path["pathType"] in ("Exact", "Prefix"):
                assert re.fullmatch(r"/[A-Za-z0-9/_-]*", path["path"]), path


def test_the_network_policy_lets_traces_out_to_the_configured_collector(overlay):
    _, docs = overlay
    endpoint = config(docs).get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if endpoint is None:
        pytest.skip("this overlay exports no traces")
    port = int(endpoint.rsplit(":", 1)[1].split("/")[0])
    (policy,) = by_kind(docs, "NetworkPolicy")
    assert any(port in {p["port"] for p in rule.get("ports", [])} for rule in policy["spec"]["egress"]), port


def _routed(routes: dict[str, str], path: str) -> bool:
    """Whether ingress-nginx sends ``path`` to the app: Exact, Prefix (whole segments), and
    ImplementationSpecific (a prefix of characters, as ingress-nginx reads it)."""
    for rule, kind in routes.items():
        if kind == "Exact" and path == rule:
            return True
        prefix = rule.rstrip("/")
        if kind == "Prefix" and (path == prefix or path.startswith(prefix + "/")):
            return True
        if kind == "ImplementationSpecific" and path.startswith(rule):
            return True
    return False


def test_the_ingress_routes_every_public_route_the_app_serves_and_no_internal_one(
    overlay, tmp_path, monkeypatch
):
    _, docs = overlay
    (ingress,) = by_kind(docs, "Ingress")
    routes = {p["path"]: p["pathType"]
              for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]}
    served = served_paths(tmp_path, monkeypatch)
    internal = [p for p in served if p in INTERNAL_PATHS or p.startswith(INTERNAL_PREFIXES)]
    public = [p for p in served if p not in internal]
    assert {"/mcp", "/healthz", "/metrics"} <= set(served)  # the table was read, not an empty one
    if authserver_installed():
        assert {"/account", "/login/p/callback", "/introspect"} <= set(public)
    assert [p for p in public if not _routed(routes, p)] == []
    assert [p for p in internal if _routed(routes, p)] == []


WORKFLOW = ROOT / ".github" / "workflows" / "image.yml"


def _check_workflow(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                           "vendor.github-workflows", str(path)],
                          capture_output=True, text=True, timeout=120)


def test_the_image_workflow_follows_githubs_workflow_schema(tmp_path):
    done = _check_workflow(WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr
    # The text itself, so that nothing else changes (PyYAML would write `on:` back as `true:`).
    (tmp_path / "broken.yml").write_text(WORKFLOW.read_text().replace("runs-on:", "runs_on:"))
    refused = _check_workflow(tmp_path / "broken.yml")
    assert refused.returncode != 0 and "runs-on" in refused.stdout + refused.stderr


def test_the_image_is_named_once_and_the_workflow_pushes_to_that_name(tmp_path):
    named = [(path.relative_to(ROOT), line.strip())
             for path in sorted((ROOT / "deploy").rglob("*.yaml"))
             for line in path.read_text().splitlines() if line.strip().startswith("newName:")]
    assert named == [(Path("deploy/k8s/base/kustomization.yaml"),
                      "newName: ghcr.io/example/chatgpt-mcp-app")]
    # No overlay names it again (each would have to be changed with it).
    for path in (ROOT / "deploy" / "k8s" / "overlays").rglob("*.yaml"):
        assert "ghcr.io/" not in path.read_text(), path
    # The workflow's own step that reads the name, run here as GitHub runs it.
    (step,) = [s for s in _yaml(WORKFLOW)["jobs"]["image"]["steps"] if s.get("id") == "name"]
    output = tmp_path / "output"
    done = subprocess.run(["bash", "-eo", "pipefail", "-c", step["run"]], cwd=ROOT,
                          capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin", "GITHUB_OUTPUT": str(output)})
    assert done.returncode == 0, done.stderr
    assert output.read_text().splitlines() == ["image=ghcr.io/example/chatgpt-mcp-app",
                                               "registry=ghcr.io"]
    # Every rendered workload runs that image.
    production = render(ROOT / "deploy" / "k8s" / "overlays" / "production")
    docs = [d for d in yaml.safe_load_all(production) if d]
    images = {c["image"].rsplit(":", 1)[0] for d in docs if d["kind"] in WORKLOADS
              for c in pod_spec(d)["containers"]}
    assert images == {"ghcr.io/example/chatgpt-mcp-app"}


def test_the_dev_overlay_runs_the_database_and_redis_it_gives_the_app_and_lets_the_app_reach_them():
    import base64
    from urllib.parse import urlsplit

    dev = render(ROOT / "deploy" / "k8s" / "overlays" / "dev")
    docs = [d for d in yaml.safe_load_all(dev) if d]
    secrets = {d["metadata"]["name"]: {k: base64.b64decode(v).decode()
                                       for k, v in d["data"].items()}
               for d in by_kind(docs, "Secret")}
    given = {name: urlsplit(secrets["chatgpt-mcp-app-secrets"][name])
             for name in ("APP_DATABASE_URL", "APP_REDIS_URL")}
    services = {d["metadata"]["name"]: d for d in by_kind(docs, "Service")}
    sets = {d["metadata"]["name"]: d for d in by_kind(docs, "StatefulSet")}
    (policy,) = by_kind(docs, "NetworkPolicy")
    for url in given.values():
        service = services[url.hostname]
        labels = sets[url.hostname]["spec"]["template"]["metadata"]["labels"]
        assert [p["port"] for p in service["spec"]["ports"]] == [url.port]
        assert service["spec"]["selector"].items() <= labels.items()
        assert any(peer.get("podSelector", {}).get("matchLabels", {}).items() <= labels.items()
                   and "podSelector" in peer and url.port in {p["port"] for p in rule["ports"]}
                   for rule in policy["spec"]["egress"] for peer in rule["to"]), url.hostname
    # The database's password is the one the app is given.
    (postgres,) = pod_spec(sets["postgres"])["containers"]
    (password,) = [e for e in postgres["env"] if e["name"] == "POSTGRES_PASSWORD"]
    ref = password["valueFrom"]["secretKeyRef"]
    assert secrets[ref["name"]][ref["key"]] == given["APP_DATABASE_URL"].password
