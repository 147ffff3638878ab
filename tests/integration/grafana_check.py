#!/usr/bin/env python3
# grafana_check.py - check a Grafana dashboard against a real lockstepd: every lockstep(d)_* metric its queries name
# exists in the /metrics text, and every exact label matcher (label="value", no $variable) names a series that exists;
# the dashboard covers what it must (REQUIRED, by its uid); with --prometheus, every query, run by a real Prometheus
# that scrapes that lockstepd (its variables set as Grafana sets them), returns data: at least one sample, not all
# NaN, and every variable query at least one value.
# usage: grafana_check.py DASHBOARD.json METRICS.txt [--prometheus URL]   (exit 0: fine; 1: what is wrong, one line each)
import json
import math
import re
import sys
import urllib.parse
import urllib.request

# What each dashboard must chart (docs/server.md, "Grafana"): a metric, and for the batch latency its label.
REQUIRED = {
    "lockstep-overview": {
        "ingest rate": ("lockstepd_records_ingested_total", None),
        "batch latency": ("lockstepd_http_request_seconds_bucket", ("route", "records")),
        "divergences": ("lockstepd_divergences_total", None),
        "alerts": ("lockstepd_alerts_raised_total", None),
        "open alerts": ("lockstepd_alerts_open", None),
        "suspects": ("lockstepd_suspects", None),
        "database errors": ("lockstepd_db_errors_total", None),
    },
    "lockstep-fleet": {
        "per-node suspect score": ("lockstep_node_score", None),
        "per-node state": ("lockstep_node_state", None),
        "divergences by class": ("lockstep_diverged_groups", None),
        "verdicts": ("lockstep_replay_verdicts", None),
        "alerts by kind": ("lockstepd_alerts_raised_total", None),
        "open alerts by kind": ("lockstepd_alerts_open", None),
        "suspects": ("lockstepd_suspects", None),
    },
}

# What Grafana puts for a dashboard's variables when the queries run ("All" instances; a window long enough for
# the test's few scrapes).
VARIABLES = {"$instance": ".*", "$__rate_interval": "5m", "$__range": "5m", "$__interval": "15s"}
LABEL_VALUES = re.compile(r"^label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)$")

SELECTOR = re.compile(r"\b(lockstepd?_[A-Za-z0-9_:]*)\s*(\{[^}]*\})?")
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
    required = REQUIRED.get(dash.get("uid"))
    if required is None:
        problems.append(f"unknown dashboard uid {dash.get('uid')!r} (grafana_check.py's REQUIRED names what each must chart)")
    for what, (name, label) in (required or {}).items():
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


def prom_get(base, path, params):
    """GET Prometheus's API `path` with `params`; its data, or raise with its error."""
    url = base.rstrip("/") + path + "?" + urllib.parse.urlencode(params, doseq=True)
    with urllib.request.urlopen(url, timeout=30) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(body.get("error", "no error given"))
    return body["data"]


def panel_queries(dash):
    """(panel title, expr) of every panel target, rows' nested panels included."""
    for p in dash.get("panels", []):
        for t in p.get("targets", []):
            if isinstance(t.get("expr"), str):
                yield p.get("title"), t["expr"]
        for q in panel_queries(p):
            yield q


def check_prometheus(dash, base):
    """Every panel query and variable query of `dash`, run by the Prometheus at `base`, returns data."""
    problems = []
    for title, expr in panel_queries(dash):
        q = expr
        for k in sorted(VARIABLES, key=len, reverse=True):
            q = q.replace(k, VARIABLES[k])
        try:
            data = prom_get(base, "/api/v1/query", {"query": q})
        except Exception as e:  # the query does not run: a PromQL error, or Prometheus did not answer
            problems.append(f"panel {title!r}: {q} does not run: {e}")
            continue
        values = []
        for r in data.get("result", []):
            v = r.get("value") or [None, "NaN"]
            values.append(float(v[1]))
        if not values:
            problems.append(f"panel {title!r}: {q} returns no data")
        elif all(math.isnan(v) for v in values):
            problems.append(f"panel {title!r}: {q} returns only NaN")
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        m = LABEL_VALUES.match(v.get("definition", ""))
        if not m:
            problems.append(f"variable {v.get('name')!r}: {v.get('definition')!r} is not label_values(METRIC, LABEL)")
            continue
        try:
            vals = prom_get(base, f"/api/v1/label/{m.group(2)}/values", {"match[]": m.group(1)})
        except Exception as e:
            problems.append(f"variable {v.get('name')!r}: {v.get('definition')} does not run: {e}")
            continue
        if not vals:
            problems.append(f"variable {v.get('name')!r}: {v.get('definition')} has no value")
    return problems


def main():
    args = sys.argv[1:]
    prom = None
    if "--prometheus" in args:
        i = args.index("--prometheus")
        if i + 1 >= len(args):
            args = []
        else:
            prom = args[i + 1]
            del args[i : i + 2]
    if len(args) != 2:
        print("usage: grafana_check.py DASHBOARD.json METRICS.txt [--prometheus URL]", file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as f:
        dash = json.load(f)
    with open(args[1], encoding="utf-8") as f:
        text = f.read()
    problems = check(dash, text)
    if prom:
        problems += check_prometheus(dash, prom)
    for p in problems:
        print(p)
    if not problems:
        names = sorted({n for e in queries(dash) for n, _ in SELECTOR.findall(e)})
        n = sum(1 for _ in panel_queries(dash))
        ran = f"; its {n} queries return data from Prometheus" if prom else ""
        print(f"ok: {dash.get('uid')}: {len(names)} metrics queried, all in /metrics{ran}: {' '.join(names)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
