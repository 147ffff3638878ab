#!/usr/bin/env python3
# grafana_check.py - check a Grafana dashboard against a real /metrics text: every lockstepd_* metric its queries
# name exists there, and every exact label matcher (label="value", no $variable) names a series that exists; the
# dashboard covers what it must (ingest rate, batch latency, divergences, alerts, suspects, database errors).
# usage: grafana_check.py DASHBOARD.json METRICS.txt      (exit 0: fine; 1: what is wrong, one line each)
import json
import re
import sys

# What the dashboard must chart (docs/server.md, "Grafana"): a metric, and for the batch latency its label.
REQUIRED = {
    "ingest rate": ("lockstepd_records_ingested_total", None),
    "batch latency": ("lockstepd_http_request_seconds_bucket", ("route", "records")),
    "divergences": ("lockstepd_divergences_total", None),
    "alerts": ("lockstepd_alerts_raised_total", None),
    "open alerts": ("lockstepd_alerts_open", None),
    "suspects": ("lockstepd_suspects", None),
    "database errors": ("lockstepd_db_errors_total", None),
}

SELECTOR = re.compile(r"\b(lockstepd_[A-Za-z0-9_:]*)\s*(\{[^}]*\})?")
MATCHER = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"')
SERIES = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{([^}]*)\})?\s+\S+")


def queries(node):
    """Every PromQL string of the dashboard: panel targets' expr, and template variable queries."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "expr" and isinstance(v, str):
                yield v
            elif k in ("query", "definition") and isinstance(v, str):
                yield v
            else:
                yield from queries(v)
    elif isinstance(node, list):
        for v in node:
            yield from queries(v)


def series(text):
    """{metric name: [ {label: value} of each series ]} of a Prometheus text exposition."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SERIES.match(line)
        if not m:
            continue
        labels = dict((k, v) for k, _, v in MATCHER.findall(m.group(3) or ""))
        out.setdefault(m.group(1), []).append(labels)
    return out


def check(dash, text):
    problems = []
    have = series(text)
    used = {}
    exprs = list(queries(dash))
    if not exprs:
        problems.append("the dashboard has no query")
    for expr in exprs:
        for name, sel in SELECTOR.findall(expr):
            exact = [(k, v) for k, op, v in MATCHER.findall(sel or "") if op == "=" and "$" not in v]
            used.setdefault(name, []).append(exact)
            if name not in have:
                problems.append(f"{name} is not in /metrics (query: {expr})")
                continue
            for k, v in exact:
                if not any(s.get(k) == v for s in have[name]):
                    problems.append(f'{name} has no series with {k}="{v}" in /metrics (query: {expr})')
    for what, (name, label) in REQUIRED.items():
        if name not in used:
            problems.append(f"no panel charts {what} ({name})")
        elif label and not any(label in m for m in used[name]):
            problems.append(f'no panel charts {what} ({name}{{{label[0]}="{label[1]}"}})')
    for p in dash.get("panels", []):
        if p.get("type") != "row" and p.get("datasource", {}).get("uid") != "${DS_PROMETHEUS}":
            problems.append(f"panel {p.get('title')!r} does not use the ${{DS_PROMETHEUS}} data source input")
    if not any(i.get("name") == "DS_PROMETHEUS" for i in dash.get("__inputs", [])):
        problems.append("no __inputs entry DS_PROMETHEUS: Grafana's import would not ask for the data source")
    return problems


def main():
    if len(sys.argv) != 3:
        print("usage: grafana_check.py DASHBOARD.json METRICS.txt", file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        dash = json.load(f)
    with open(sys.argv[2], encoding="utf-8") as f:
        text = f.read()
    problems = check(dash, text)
    for p in problems:
        print(p)
    if not problems:
        names = sorted({n for e in queries(dash) for n, _ in SELECTOR.findall(e)})
        print(f"ok: {len(names)} metrics queried by the dashboard, all in /metrics: {' '.join(names)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
