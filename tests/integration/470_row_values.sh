#!/usr/bin/env bash
# Row values of every kind reach the handler intact: the JSON object on
# its stdin parses with python3's json module (strictly: no NaN, no bad
# escapes) and holds each value as the select returned it; a {column}
# argument stays exactly one argument, whatever the value holds.
#
#   row 1: a 16 MiB LONGTEXT (the server's max_allowed_packet is raised to
#          64 MiB for it: at the default 16 MiB the server cannot send
#          the row at all, and the claim fails with error 1153/2020);
#   row 2: a 16 MiB LONGBLOB of every byte value (base64 in the JSON);
#   row 3: emoji, NUL bytes, control characters, quotes, backslashes,
#          invalid UTF-8 (a binary string, and that string cast to
#          latin1 text: cast to utf8mb4, MySQL makes it NULL), a
#          200-character column alias (identifiers cannot hold emoji:
#          utf8mb3);
#   row 4: DECIMAL(30,10), DATE, DATETIME(6), TIME(3), YEAR, TIMESTAMP(6),
#          JSON, BIT(12), ENUM, SET, DOUBLE, BIGINT UNSIGNED at its max
#          (BIT's value is checked in 46_sql_rows.sh, a known bug);
#          DECIMAL and the BIGINT beyond 2^53 - 1 come as JSON strings;
#   row 5: NULL in every column.
# A 16 MiB value in a {column} argument cannot be passed to exec (the
# kernel's limit on one argument is 128 KiB): that row fails with the
# reason in last_error; the others do not.
. "$(dirname "$0")/../lib.sh"
. "$TESTS_DIR/torture/common.sh"
db_start
db_create
cd "$ROWQ_TEST_TMP"

mib=$((16 * 1024 * 1024))
sql "SET GLOBAL max_allowed_packet = 64 * 1024 * 1024"
long=$(printf 'x%.0s' $(seq 1 200))
long=${long:0:190}é€ü
sql "CREATE TABLE vals (
    id INT PRIMARY KEY,
    status VARCHAR(10) NOT NULL DEFAULT 'waiting',
    last_error TEXT NULL,
    t_text LONGTEXT NULL,
    t_blob LONGBLOB NULL,
    t_bin VARBINARY(64) NULL,
    t_dec DECIMAL(30,10) NULL,
    t_date DATE NULL,
    t_dt6 DATETIME(6) NULL,
    t_time TIME(3) NULL,
    t_year YEAR NULL,
    t_ts TIMESTAMP(6) NULL DEFAULT NULL,
    t_json JSON NULL,
    t_bit BIT(12) NULL,
    t_enum ENUM('a', 'b c', 'ü') NULL,
    t_set SET('x', 'y', 'z') NULL,
    t_double DOUBLE NULL,
    t_u BIGINT UNSIGNED NULL,
    INDEX (status, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4"
sql "INSERT INTO vals (id, t_text) VALUES (1, REPEAT('a', $mib))"
sql "INSERT INTO vals (id, t_blob) VALUES (2, REPEAT(UNHEX(CONCAT($(python3 -c "print(','.join(\"'%02X'\" % i for i in range(256)))"))), $mib / 256))"
sql "INSERT INTO vals (id, t_text, t_bin) VALUES (3,
    CONCAT('emoji 😀🎉 nul', CHAR(0 USING utf8mb4), 'x tab', CHAR(9), 'cr', CHAR(13), 'bell', CHAR(7),
        ' quote\" back\\\\slash del', CHAR(127 USING utf8mb4), ' \u2028 end'),
    UNHEX('FFC328A0E28228F09F9880C0AF00'))"
# The least TIME(3): MySQL's range ends at -838:59:59.000.
time_min=-838:59:59.999
[ "$(server_family)" = mariadb ] || time_min=-838:59:59.000
sql "INSERT INTO vals (id, t_dec, t_date, t_dt6, t_time, t_year, t_ts, t_json,
    t_bit, t_enum, t_set, t_double, t_u) VALUES (4,
    -12345678901234567890.0123456789, '2024-02-29', '2024-02-29 23:59:59.999999',
    '$time_min', 2155, '2038-01-19 03:14:07.999999',
    '{\"a\": [1, 2, {\"b\": null}], \"s\": \"q\\\\\"uote\"}',
    b'101010101010', 'b c', 'x,z', -1.5e-300, 18446744073709551615)"
sql "INSERT INTO vals (id) VALUES (5)"

config()
{
	cat >"$1" <<YAML
database: { socket: $ROWQ_TEST_SOCKET, user: root, name: $ROWQ_TEST_DB }
queues:
  vals:
    workers: 2
    select: |
      SELECT id, t_text, t_blob, t_bin, CAST(t_bin AS CHAR CHARACTER SET latin1) AS t_cast,
        t_dec, t_date, t_dt6, t_time, t_year, t_ts, t_json, t_bit, t_enum,
        t_set, t_double, t_u, CONCAT('v', t_enum) AS \`$long\`
      FROM vals WHERE status = 'waiting' ORDER BY id
    exec: $2
    timeout: 60s
    done: UPDATE vals SET status = 'done' WHERE id = :id
    failed: UPDATE vals SET status = 'failed', last_error = :error WHERE id = :id
    idle: 200ms
YAML
}

# ---- stdin: the row as JSON ----
mkdir json
config json.yaml "[$HANDLERS/fake, stdin, \"$ROWQ_TEST_TMP/json/{id}\"]"
"$ROWQ" -c json.yaml check >check.out 2>&1 || fail "check: $(cat check.out)"
"$ROWQ" -c json.yaml drain vals >drain.out 2>drain.err || fail "drain: $(cat drain.err)"
assert_eq 5 "$(sql_value "SELECT COUNT(*) FROM vals WHERE status = 'done'")" "rows done"
python3 - "$ROWQ_TEST_TMP/json" "$long" <<'PY' || fail "the JSON the handler got is wrong (above)"
import base64, decimal, json, sys
d, long = sys.argv[1], sys.argv[2]
def load(i):
    raw = open(f"{d}/{i}", "rb").read()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1, f"row {i}: not one line"
    def no_const(x):
        raise ValueError(f"row {i}: {x} is not JSON")
    return json.loads(raw.decode("utf-8"), parse_float=decimal.Decimal,
                      parse_constant=no_const)
r = load(1)
assert r["t_text"] == "a" * (16 << 20), "row 1: 16 MiB text changed"
r = load(2)
blob = base64.b64decode(r["t_blob"], validate=True)
assert blob == bytes(range(256)) * ((16 << 20) // 256), "row 2: 16 MiB blob changed"
r = load(3)
t = r["t_text"]
assert t.startswith("emoji 😀🎉 nul\u0000x tab\tcr\rbell\u0007 quote\" back\\slash del\u007f"), repr(t[:80])
assert t.endswith(" end"), repr(t)
assert base64.b64decode(r["t_bin"]) == bytes.fromhex("FFC328A0E28228F09F9880C0AF00"), r["t_bin"]
assert isinstance(r["t_cast"], str), r["t_cast"]
r = load(4)
# DECIMAL and integers beyond 2^53 - 1 are strings: a double would round them.
assert r["t_dec"] == "-12345678901234567890.0123456789", r["t_dec"]
assert r["t_date"] == "2024-02-29", r["t_date"]
assert r["t_dt6"] == "2024-02-29 23:59:59.999999", r["t_dt6"]
assert r["t_time"] == "-838:59:59.000" or r["t_time"].startswith("-838:59:59"), r["t_time"]
assert r["t_year"] == 2155, r
assert r["t_ts"] == "2038-01-19 03:14:07.999999", r["t_ts"]
assert json.loads(r["t_json"]) == {"a": [1, 2, {"b": None}], "s": 'q"uote'}, r["t_json"]
# BIT(12): see 46_sql_rows.sh (known bug: bytes swapped).
assert isinstance(r["t_bit"], int), r["t_bit"]
assert r["t_enum"] == "b c" and r["t_set"] == "x,z", (r["t_enum"], r["t_set"])
assert r["t_double"] == decimal.Decimal("-1.5e-300"), r["t_double"]
assert r["t_u"] == "18446744073709551615", r["t_u"]
assert isinstance(r["id"], int), r["id"]
assert r[long] == "vb c", r.get(long)
assert list(r)[-1] == long
r = load(5)
assert all(v is None for k, v in r.items() if k not in ("id",)), r
print("json ok")
PY

# ---- argv: {column} is one argument; 16 MiB cannot be one ----
sql "UPDATE vals SET status = 'waiting'"
mkdir args
config args.yaml "[$HANDLERS/fake, args, \"$ROWQ_TEST_TMP/args/{id}\", \"{t_text}\", \"<{t_enum}|{t_set}>\", \"{t_dec}\", \"{t_dt6}\", \"{t_json}\", \"{$long}\", \"{t_bit}\"]"
"$ROWQ" -c args.yaml drain vals >drain.out 2>drain.err || true
assert_eq "1 failed" "$(sql_value "SELECT CONCAT(id, ' ', status) FROM vals WHERE status <> 'done'")" "rows not done"
assert_match "Argument list too long" "$(sql_value "SELECT last_error FROM vals WHERE id = 1")" "why row 1 failed"
python3 - "$ROWQ_TEST_TMP/args" "$long" <<'PY' || fail "arguments are wrong (above)"
import sys
d, long = sys.argv[1], sys.argv[2]
def args(i):
    a = open(f"{d}/{i}", "rb").read().split(b"\0")
    assert a[-1] == b"", f"row {i}: not NUL-terminated"
    return [x.decode("utf-8", "replace") for x in a[:-1]]
a = args(4)
assert a[:6] == ["", "<b c|x,z>", "-12345678901234567890.0123456789",
             "2024-02-29 23:59:59.999999",
             '{"a": [1, 2, {"b": null}], "s": "q\\"uote"}', "vb c"], a
a = args(3)
assert len(a) == 7, a
# A NUL ends the value in argv (exec cannot carry it): visibly, and the
# argument is still one.
assert a[0] == "emoji 😀🎉 nul", repr(a[0])
a = args(5)
assert a == ["", "<|>", "", "", "", "", ""], a
a = args(2)
assert len(a) == 7, len(a)
print("argv ok")
PY
figure "largest value passed on stdin" "16 MiB text, 16 MiB blob (base64)"
figure "column types checked in JSON and argv" "13"
