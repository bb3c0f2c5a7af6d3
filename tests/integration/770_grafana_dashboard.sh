#!/usr/bin/env bash
# contrib/grafana/rowq.json asks only for metrics that a running rowq
# serves: every rowq_ name in its queries and variables is a family (or a
# histogram's _bucket, _sum, _count) of the daemon's /metrics, and it has
# a panel for each thing an operator watches.  The reload counter the
# Reloads panel shows counts a good and a bad SIGHUP.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/email.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"
dashboard=$REPO_ROOT/contrib/grafana/rowq.json

email_table 3
port=$(free_port)
email_config rowq.yaml "[$HANDLERS/fake, exit, 0]"
sed -i "s|^queues:|status_socket: $ROWQ_TEST_TMP/rowq.sock\nmetrics: 127.0.0.1:$port\nqueues:|" rowq.yaml
rowq_start rowq.yaml rowq.log
on_exit '[ $? -eq 0 ] || cat "$ROWQ_TEST_TMP/rowq.log"'

scrape()
{
	python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode(), end="")' "$port"
}
wait_until 20 'scrape 2>/dev/null | grep -q "^rowq_rows_done_total{queue=\"email\"} 3$"' ||
	fail "rows not done: $(scrape 2>&1)"

# A reload that works, then one that cannot parse.
kill -HUP "$ROWQ_PID"
wait_until 20 'scrape | grep -q "^rowq_reloads_total{result=\"ok\"} 1$"' ||
	fail "good reload not counted: $(scrape | grep reloads)"
cp rowq.yaml good.yaml
echo "  email: [" >>rowq.yaml
kill -HUP "$ROWQ_PID"
wait_until 20 'scrape | grep -q "^rowq_reloads_total{result=\"failed\"} 1$"' ||
	fail "bad reload not counted: $(scrape | grep reloads)"
assert_match 'rowq_reloads_total\{result="ok"\} 1' "$(scrape | grep reloads)" "ok reloads after a failed one"
scrape >metrics.txt

python3 - "$dashboard" metrics.txt <<'PY' || fail "the dashboard and /metrics disagree"
import json, re, sys

dash = json.load(open(sys.argv[1]))
served = set()
for line in open(sys.argv[2]):
    m = re.match(r"# TYPE (\S+) (\S+)", line)
    if m:
        name, kind = m.groups()
        served.add(name)
        if kind == "histogram":
            served |= {name + "_bucket", name + "_sum", name + "_count"}

# Every query: the panels' targets and the variables' queries.
exprs = []
for p in dash["panels"]:
    assert p.get("targets"), "panel without a query: %s" % p["title"]
    for t in p["targets"]:
        exprs.append((p["title"], t["expr"]))
for v in dash["templating"]["list"]:
    exprs.append(("variable " + v["name"], v["definition"]))
    exprs.append(("variable " + v["name"], v["query"]["query"]))

bad = []
used = set()
for where, e in exprs:
    names = set(re.findall(r"\b(rowq_[a-z0-9_]+)\b", e))
    assert names, "%s: no rowq metric in %r" % (where, e)
    used |= names
    bad += ["%s: %s" % (where, n) for n in sorted(names - served)]
assert not bad, "not served: " + ", ".join(bad)

# What the dashboard is for.
for want in ["rowq_oldest_age_seconds", "rowq_ready_rows",
             "rowq_in_progress_rows", "rowq_rows_done_total",
             "rowq_rows_retried_total", "rowq_rows_failed_total",
             "rowq_workers", "rowq_worker_restarts_total",
             "rowq_reloads_total", "rowq_in_progress_oldest_seconds",
             "rowq_pickup_delay_seconds_bucket"]:
    assert want in used, "no panel shows " + want
print("dashboard: %d queries, %d metrics, all served" % (len(exprs), len(used)))
unused = sorted(n for n in served - used
                if not n.endswith(("_bucket", "_sum", "_count")))
print("served, not on the dashboard:", " ".join(unused) or "none")
PY

kill -TERM "$ROWQ_PID"
wait "$ROWQ_PID" || fail "rowq exited with $?"
untrack_pid "$ROWQ_PID"
