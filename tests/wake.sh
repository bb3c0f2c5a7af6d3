# shellcheck shell=bash
# HTTP for the wake tests, sourced after lib.sh:
#
#   http METHOD URL        the status code of a request (000: none)
#   metric PORT NAME QUEUE the value of NAME{queue="QUEUE"} (empty: none)

http()
{
	python3 - "$1" "$2" <<'PY'
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[2], method=sys.argv[1],
                             data=b"" if sys.argv[1] == "POST" else None)
try:
    print(urllib.request.urlopen(req, timeout=5).status)
except urllib.error.HTTPError as e:
    print(e.code)
except Exception:
    print("000")
PY
}

metric()
{
	python3 - "$1" "$2" "$3" <<'PY'
import sys, urllib.request
body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1],
                              timeout=5).read().decode()
want = '%s{queue="%s"}' % (sys.argv[2], sys.argv[3])
for line in body.splitlines():
    if line.startswith(want + " "):
        print(line.split()[1])
PY
}
