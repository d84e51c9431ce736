"""The files demo's deployment pieces, fenced with its name in deploy/ and docker-compose.yml so
that a fork removing the demo removes them with this module: its sweeper runs everywhere the app
does, one run at a time, and its spool is on the writable mount."""

from __future__ import annotations

import pytest
import yaml

from tests.unit.test_deploy import OVERLAYS, ROOT, by_kind, config, pod_spec, render

pytestmark = pytest.mark.demo("files")


@pytest.mark.parametrize("overlay", OVERLAYS, ids=[p.name for p in OVERLAYS])
def test_every_overlay_sweeps_one_run_at_a_time_and_spools_on_the_writable_mount(overlay):
    docs = [doc for doc in yaml.safe_load_all(render(overlay)) if doc]
    (cron,) = by_kind(docs, "CronJob")
    assert pod_spec(cron)["containers"][0]["args"] == ["python", "-m", "app", "files", "sweep"]
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    # The development cluster keeps files on the app pod's own disk, out of a sweeper pod's reach.
    assert cron["spec"].get("suspend", False) is (overlay.name == "dev")
    data = config(docs)
    assert data["APP_FILES_DIR"].startswith(data["APP_VAR_DIR"] + "/")


def test_compose_runs_the_sweeper_beside_the_app():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert "python -m app files sweep" in " ".join(services["sweeper"]["command"])
    migrated = services["sweeper"]["depends_on"]["migrate"]
    assert migrated == {"condition": "service_completed_successfully"}
