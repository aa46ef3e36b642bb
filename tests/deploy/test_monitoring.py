"""deploy/monitoring: the scrape configuration and the alert rules pass ``promtool check``
(Debian's promtool, fetched by deploy/monitoring/get-promtool when none is on PATH);
each alert fires on the series that should fire it (``promtool test rules``) and says
where its runbook is in docs/operating.md; every service has a scrape target; and every
metric the alert rules and the Grafana dashboard query is one our services expose, read
from the running services' own ``/metrics`` (the shared live room), the reconcile's
textfile as deploy/monitoring/reconcile-textfile writes it on that room, or one of the
exporters' few names; the dashboard's rake per hour, run on the books of a ``studroom
room`` run, sums to what the ledger's rake report says."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from live_room import RoomCommand
from monitoring_kit import (
    ALERTS,
    ALERTS_TEST,
    DASHBOARD,
    KIT,
    FOREIGN,
    RECONCILE_TEXTFILE,
    SCRAPE,
    alert_rules,
    dashboard_targets,
    exposed_names,
    metric_names,
    promtool,
    queried_names,
    run_promtool,
)
from studroom.services.cli.health import ask_all
from studroom.services.cli.main import SERVICES, build_parser
from studroom.services.runtime.processes import process
from studroom.services.runtime.servers.embedded_postgres import EmbeddedPostgres
from studroom.services.runtime.settings import DATABASE_URL_VAR
from test_docs_links import REPOSITORY, _anchors

# bots are players, not deployed services; the console answers no discovery and serves no metrics
SERVED = sorted(set(SERVICES) - {"bot", "console"})
OPERATING = REPOSITORY / "docs" / "operating.md"


@pytest.fixture(scope="session")
def promtool_path() -> str:
    return promtool()


def test_the_alert_rules_pass_promtool_check_rules(promtool_path: str) -> None:
    out = run_promtool(promtool_path, "check", "rules", ALERTS.name)
    assert f"SUCCESS: {len(list(alert_rules()))} rules found" in out


def test_the_scrape_configuration_passes_promtool_check_config(promtool_path: str) -> None:
    out = run_promtool(promtool_path, "check", "config", SCRAPE.name)
    assert "is valid prometheus config file syntax" in out and "1 rule files found" in out


def test_each_alert_fires_on_what_should_fire_it_and_a_healthy_room_fires_none(
        promtool_path: str, tmp_path: Path) -> None:
    # promtool 2.42 compares annotations too: the rules are tested without theirs (the
    # texts are checked by `check rules` above and the runbook test below).
    rules = yaml.safe_load(ALERTS.read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp_path / ALERTS.name).write_text(yaml.safe_dump(rules))
    (tmp_path / ALERTS_TEST.name).write_text(ALERTS_TEST.read_text())
    out = run_promtool(promtool_path, "test", "rules", ALERTS_TEST.name, cwd=tmp_path)
    assert "SUCCESS" in out
    tested = {case["alertname"] for test in yaml.safe_load(ALERTS_TEST.read_text())["tests"]
              for case in test["alert_rule_test"] if case["exp_alerts"]}
    assert tested == {rule["alert"] for rule in alert_rules()} - {"StudroomReconcileNotRun"}, \
        "every alert but the 26-hour one has a case that fires it"


def test_every_alert_has_a_runbook_line_into_operating_md() -> None:
    anchors = _anchors(OPERATING)
    for rule in alert_rules():
        runbook = rule["annotations"]["runbook"]
        place, _, what = runbook.partition(": ")
        document, _, anchor = place.partition("#")
        assert document == "docs/operating.md" and anchor in anchors and what, (rule["alert"], runbook)
        assert rule["labels"]["severity"] in ("page", "warn")


def test_every_service_has_a_scrape_target_on_loopback() -> None:
    job = next(j for j in yaml.safe_load(SCRAPE.read_text())["scrape_configs"] if j["job_name"] == "studroom")
    assert job["honor_labels"] is True          # the services' own service and instance labels stay
    targets = {group["labels"]["service"]: group["targets"] for group in job["static_configs"]}
    assert sorted(targets) == SERVED
    ports = [t for ts in targets.values() for t in ts]
    assert len(set(ports)) == len(ports) and all(t.startswith("127.0.0.1:") for t in ports)


def test_the_reconcile_units_pass_systemd_analyze_and_run_a_reconcile_studroom_accepts(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze (package systemd) checks the units"
    for unit in KIT.glob("studroom-reconcile.*"):
        text = unit.read_text().replace("/opt/studroom/monitoring/reconcile-textfile", str(RECONCILE_TEXTFILE))
        (tmp_path / unit.name).write_text(re.sub(r"^(User|Group)=.*$", r"\1=root", text, flags=re.MULTILINE))
    checked = subprocess.run([analyze, "verify", "--man=no", *sorted(str(p) for p in tmp_path.iterdir())],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0 and not checked.stderr.strip(), checked.stderr
    command = next(line for line in (KIT / "studroom-reconcile.service").read_text().splitlines()
                   if line.startswith("ExecStart="))
    args = shlex.split(command.replace("${STUDROOM_STORES}", "2"))[2:]       # after the script and its folder
    assert build_parser().parse_args(["ledger", "reconcile", *args]).stores == 2


def test_the_dashboard_shows_what_the_issue_asks_each_panel_on_a_data_source_the_import_asks_for() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    sources = {v["name"]: v["query"] for v in dashboard["templating"]["list"] if v["type"] == "datasource"}
    assert sources == {"prometheus": "prometheus", "postgres": "grafana-postgresql-datasource"}
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    titles = {p["title"] for p in panels}
    assert {"Actions per second", "Command latency", "Lag per projection", "Timer lateness", "Restarts",
            "Rake per hour"} <= titles
    for panel in panels:
        kind = panel["datasource"]["type"]
        assert panel["datasource"]["uid"] == "${%s}" % next(n for n, q in sources.items() if q == kind)
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"] and ("expr" in target) == (kind == "prometheus")
    assert len({(p["gridPos"]["x"], p["gridPos"]["y"]) for p in panels}) == len(panels)    # none on another


def test_the_query_reader_finds_the_metric_names() -> None:
    expr = ('histogram_quantile(0.99, sum by (le) (rate(a_bucket{code!="x",k=~"a|b"}[5m]))) > 0.25 '
            'or up{job="nats"} == 1 unless on (instance) b_total and time() - c_seconds > 26 * 3600')
    assert metric_names(expr) == {"a_bucket", "up", "b_total", "c_seconds"}


# ------------------------------------------------------------------ against a running room

def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return answer.read().decode()


async def _metrics_urls(room: Any) -> dict[str, str]:
    """Each of the room's services' metrics address, from its ``$SRV.INFO``."""
    nc = await process.connect(room.url, "studroom-test-monitoring",
                               creds=room.authority.ensure("operator", "monitoring"))
    try:
        deadline = time.monotonic() + 30
        while True:
            infos = [i for i in await ask_all(nc, "$SRV.INFO", 0.5) if i["metadata"].get("pid") in room.pids()]
            urls = {i["name"].removeprefix("studroom-"): i["metadata"].get("metrics") for i in infos}
            if all(urls.get(name) for name in SERVED) or time.monotonic() > deadline:
                return urls
            await asyncio.sleep(0.5)
    finally:
        await nc.drain()


def _reconcile_textfile(room: Any, folder: Path) -> tuple[int, str]:
    """reconcile-textfile on the live room's books (one table's: the whole room's takes
    seconds, and proves nothing more of the script): its exit code and the file it wrote."""
    schemas = [arg for s in room.schemas for arg in ("--schema", s)]
    env = os.environ | {DATABASE_URL_VAR: room.database_url, "STUDROOM": str(Path(sys.executable).parent / "studroom")}
    done = subprocess.run([str(RECONCILE_TEXTFILE), str(folder), "--table", "mon01", *schemas, "--cashier-schema",
                           f"{room.name}_pcashier", "--ledger-schema", f"{room.name}_pledger"],
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    return done.returncode, (folder / "studroom_reconcile.prom").read_text()


@pytest.mark.integration
def test_every_metric_the_alerts_and_the_dashboard_query_is_exposed(live_room: Any, tmp_path: Path) -> None:
    urls = asyncio.run(_metrics_urls(live_room))
    assert all(urls.get(name) for name in SERVED), f"metrics addresses of the live room's services: {urls}"
    code, textfile = _reconcile_textfile(live_room, tmp_path)
    assert code in (0, 1), (code, (tmp_path / "studroom_reconcile.log").read_text())
    assert f"studroom_reconcile_exit_code {code}\n" in textfile
    # A service serves /metrics from its start and hands in its own collectors as its
    # parts come up (a table service once it holds its leases): scraped until they are in.
    deadline = time.monotonic() + 60
    while True:
        exposed = {name: exposed_names(_get(url)) for name, url in urls.items()}
        ours = set().union(*exposed.values(), exposed_names(textfile))
        missing = {name: sorted(where) for name, where in queried_names().items() if name not in ours | set(FOREIGN)}
        if not missing or time.monotonic() > deadline:
            waited = time.monotonic() - (deadline - 60)
            break
        time.sleep(1)
    assert not missing, f"queried but exposed by no service: {missing}"
    assert {"studroom_up_seconds", "studroom_ready"} <= set.intersection(*exposed.values())
    print(f"{len(queried_names())} names queried; {len(ours)} exposed by {len(exposed)} services and the reconcile "
          f"({textfile.split('studroom_reconcile_duration_seconds ')[-1].strip()} s, exit {code}); "
          f"all in {waited:.1f} s after the reconcile")


@pytest.mark.integration
def test_the_dashboards_rake_per_hour_runs_on_the_books_and_sums_to_the_ledgers_rake(
        room_command: RoomCommand) -> None:
    """On the books of a ``studroom room`` run (its tables rake), stopped and started again."""
    from studroom.projections.ledger.reports import rake

    assert room_command.result.returncode == 0, room_command.result.stderr[-2000:]
    sql = next(t["rawSql"] for title, t in dashboard_targets() if title == "Rake per hour")
    now = int(time.time())          # what Grafana puts for the macros: Unix seconds (the last day here)
    query = sql.replace("$__unixEpochFrom()", str(now - 86400)).replace("$__unixEpochTo()", str(now + 60))
    with EmbeddedPostgres(room_command.data_dir) as postgres, \
            psycopg.connect(postgres.url, autocommit=True) as conn:
        hours = conn.execute(query).fetchall()
        _, rows = rake(conn, "day")
    assert hours and all(when.minute == 0 and when.second == 0 for when, _ in hours)
    raked = sum(amount for _, amount in hours)
    assert raked > 0 and raked == rows[-1][3], (hours, rows)
    print(f"rake per hour: {hours}")
