"""What tests/deploy/test_monitoring.py reads of deploy/monitoring/: the kit's files, the
metric names its PromQL queries name, the names a running service exposes, promtool.

The names come from the queries themselves (:func:`metric_names`: a small reading of
PromQL that drops strings, label matchers, ranges, grouping clauses, functions and
keywords) and, for what the services expose, from their own ``/metrics`` as a running
room serves it (:func:`exposed_names`): no list kept by hand but the exporters' few.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

REPOSITORY = Path(__file__).resolve().parents[2]
KIT = REPOSITORY / "deploy" / "monitoring"
ALERTS = KIT / "alerts.yml"
ALERTS_TEST = KIT / "alerts-test.yml"
SCRAPE = KIT / "prometheus.yml"
DASHBOARD = KIT / "grafana-dashboard.json"
GET_PROMTOOL = KIT / "get-promtool"
RECONCILE_TEXTFILE = KIT / "reconcile-textfile"
TOOLS = REPOSITORY / ".venv" / "tools"

# Not ours: what Prometheus itself and the two exporters the kit deploys expose, and
# only the names the kit queries (checked against the exporters' sources:
# nats-io/prometheus-nats-exporter collector/{varz,healthz,jsz}.go,
# prometheus-community/postgres_exporter's pg_up).
FOREIGN = {
    "up": "Prometheus: 1 when the target's scrape worked",
    "gnatsd_varz_connections": "prometheus-nats-exporter -varz",
    "gnatsd_healthz_status": "prometheus-nats-exporter -healthz (0: ok)",
    "jetstream_stream_last_seq": "prometheus-nats-exporter -jsz=streams",
    "jetstream_stream_total_messages": "prometheus-nats-exporter -jsz=streams",
    "pg_up": "postgres_exporter: 1 when it reached the server",
}

KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan", "by", "without", "on", "ignoring",
            "group_left", "group_right", "atan2"}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGE = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIER = re.compile(r"(?<![\w:.])([A-Za-z_:][\w:]*)(\s*\()?")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (``sum by (le) (rate(x_bucket[5m]))``
    -> ``{"x_bucket"}``)."""
    bare = _GROUPING.sub(" ", _RANGE.sub(" ", _MATCHERS.sub(" ", _STRING.sub('""', expr))))
    names = set()
    for name, call in _IDENTIFIER.findall(bare):
        if not call and name.lower() not in KEYWORDS and not re.fullmatch(r"\d+[smhdwy]", name):
            names.add(name)
    return names


def alert_rules() -> Iterator[dict[str, Any]]:
    for group in yaml.safe_load(ALERTS.read_text())["groups"]:
        yield from group["rules"]


def dashboard_targets() -> Iterator[tuple[str, dict[str, Any]]]:
    """(panel title, target) of every panel's queries."""
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel["targets"]:
            yield panel["title"], target


def queried_names() -> dict[str, set[str]]:
    """Each metric name the alert rules and the dashboard query -> where."""
    where: dict[str, set[str]] = {}
    queries = [(f"alert {rule['alert']}", rule["expr"]) for rule in alert_rules()]
    queries += [(f"panel {title!r}", target["expr"]) for title, target in dashboard_targets() if "expr" in target]
    for place, expr in queries:
        for name in metric_names(expr):
            where.setdefault(name, set()).add(place)
    return where


def exposed_names(exposition: str) -> set[str]:
    """The sample names a Prometheus text exposition offers: every sample's, and those of
    every declared family (a family with no sample yet still says its name and type)."""
    names = set()
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            _, _, family, kind = line.split()
            names.add(family)
            if kind == "histogram":
                names |= {f"{family}_bucket", f"{family}_sum", f"{family}_count"}
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{\s]", line, maxsplit=1)[0])
    return names


def promtool() -> str:
    """A promtool's path (deploy/monitoring/get-promtool finds or fetches one), or a
    failure that says how to get one."""
    got = subprocess.run([str(GET_PROMTOOL), str(TOOLS)], capture_output=True, text=True, timeout=300,
                         check=False)
    if got.returncode != 0:
        raise AssertionError(f"no promtool to check the monitoring kit with:\n{got.stderr}")
    return got.stdout.strip()


def run_promtool(tool: str, *args: str, cwd: Path = KIT) -> str:
    done = subprocess.run([tool, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"promtool {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout
