#!/usr/bin/python3
"""Writes tests/unit/cron_table.tsv, the expected next slots of cron
expressions in time zones, for check_cron.c; run by hand after a change
to the expressions below, not by make check:

    /usr/bin/python3 tests/unit/cron_table.py >tests/unit/cron_table.tsv

It needs Debian's python3-croniter (1.3.5) and Python's zoneinfo over the
system's tz database: a reading of cron and of time zones that shares
nothing with rowq's.

Every row's expected slots follow the rule rowq documents (rowq.yaml(5),
SCHEDULES), computed here without rowq's code: croniter reads the
expression (its sets of minutes, hours, days, months and weekdays),
wall-clock times are matched against those sets here, day by day with
Python's calendar and Vixie cron's rule for the day fields, and Python's
zoneinfo maps each wall time to its instant: its first occurrence, or in
a gap the first instant after it.  rowq's cron.c and tz.c (glibc) are
checked against that.

croniter's own answer in the row's zone (an aware datetime) is compared
too: in unmarked rows it is the same.  Marked rows are where it is not,
and the row keeps it in its last column; the marks:

  gap     a slot is a wall time that a spring-forward skips: croniter
          gives it at the old offset, an hour late (02:30 CET on
          2026-03-29 comes out as 03:30 CEST), or not at all, where rowq
          runs it at the end of the gap (03:00 CEST).
  fold    the hour a fall-back repeats: croniter runs a time of it in the
          second pass, or both, or neither, where rowq runs each once, in
          the first pass.
  offset  croniter 1.3.5 gives a time the expression does not match: a
          slot past a change computed at the offset in effect at the
          start (@daily from 2026-03-07 23:00 EST comes out as 03-08
          23:00 EDT), a known defect of that version, not a difference
          of rule.
  search  croniter 1.3.5 misses a slot with no DST involved, in UTC too:
          from the 28th of a month or later it skips the 1st of the next
          (`0 0 */10 * *` from 2028-02-28 gives 03-11, not 03-01).
  day-or  a day field that begins with `*` but is not `*` alone (`*/2`):
          croniter takes it for restricted, and with the other day field
          restricted too matches a day when either does; Vixie cron, and
          rowq, take a field that begins with `*` for unrestricted, so
          that only the other one decides.

Columns: expression, zone, after (seconds since 1970), the next three
slots after it (seconds since 1970), the mark ("-": none), and for a
marked row croniter's three slots.
"""
import calendar
import sys
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter

ZONES = [
    "UTC", "Europe/Paris", "America/New_York", "Europe/London",
    "Australia/Sydney", "America/St_Johns", "Pacific/Chatham",
    "Asia/Kolkata",
]

# Expressions whose slots move with the clock: run in every zone, from
# just before each of its changes in 2026.
DST_EXPRS = [
    "30 2 * * *", "0 2 * * *", "30 1 * * *", "0 1 * * *", "59 1 * * *",
    "0 3 * * *", "15 2,3 * * *", "*/15 * * * *", "*/30 0-4 * * *",
    "0 * * * *", "@hourly", "@daily", "45 2 * * sun", "0 0-6 * * *",
]

# Expressions of every shape: run in three zones, from a few instants.
GENERAL_EXPRS = [
    "* * * * *", "*/5 * * * *", "5/15 * * * *", "0,30 * * * *",
    "10-20/5 8 * * *", "0 9 * * mon-fri", "*/5 9-17 * * MON-FRI",
    "0 0 1,15 * *", "0 0 1 jan,jul *", "0 12 * * sun", "0 0 * * 7",
    "0 0 13 * fri", "0 0 1-7 * sun", "0 0 */2 * mon", "0 0 1 * */2",
    "0 0 29 2 *", "0 0 31 * *", "23 0-23/2 * * *", "0 4 8-14 * *",
    "0 22 * * 1-5", "0 0 * 2 *", "@weekly", "@monthly", "@yearly",
    "@annually", "@midnight", "30 4 1 1 *", "0 0 * * 1/2",
    "0 6,18 * jun-aug sat,sun", "59 23 31 12 *", "0 0 */10 * *",
    "17 */7 * * *", "0 12 1-31/3 feb *",
]

GENERAL_AFTER = [
    "2026-06-15 10:17:30", "2026-12-31 23:59:59", "2028-02-28 12:00:00",
]


def unix(text):
    return calendar.timegm(datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
                           .timetuple())


def transitions(zone, year):
    """The instants of the zone's offset changes in the year."""
    z = ZoneInfo(zone)
    out = []
    t = unix("%d-01-01 00:00:00" % year)
    end = unix("%d-01-01 00:00:00" % (year + 1))
    off = datetime.fromtimestamp(t, z).utcoffset()
    while t < end:
        t2 = t + 3600
        off2 = datetime.fromtimestamp(t2, z).utcoffset()
        if off2 != off:
            lo, hi = t, t2
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if datetime.fromtimestamp(mid, z).utcoffset() == off:
                    lo = mid
                else:
                    hi = mid
            out.append(hi)
            off = off2
        t = t2
    return out


def wall(t, z):
    return datetime.fromtimestamp(t, z).replace(tzinfo=None)


def instant(w, z):
    """The rule: a wall time's first occurrence, or in a gap the first
    instant after it."""
    t = int(w.replace(tzinfo=z, fold=0).timestamp())
    if wall(t, z) == w:
        return min(t, int(w.replace(tzinfo=z, fold=1).timestamp()))
    # In a gap: fold=0 reads it with the offset before (past the
    # change), fold=1 with the one after (before it).
    lo = int(w.replace(tzinfo=z, fold=1).timestamp())
    hi = t
    lo, hi = min(lo, hi), max(lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if wall(mid, z) >= w:
            hi = mid
        else:
            lo = mid
    return hi


MACROS = {
    "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


def walls(expr, start):
    """The wall-clock minutes after start that the expression matches,
    in order: croniter's sets, matched day by day."""
    fields = MACROS.get(expr, expr).split()
    sets = [None if v == ["*"] else set(v)
            for v in croniter(expr, datetime(2000, 1, 1)).expanded]
    star = fields[2].startswith("*") or fields[4].startswith("*")
    hours = sorted(sets[1]) if sets[1] is not None else range(24)
    minutes = sorted(sets[0]) if sets[0] is not None else range(60)
    day = datetime(start.year, start.month, start.day)
    while True:
        dom = sets[2] is None or day.day in sets[2]
        dow = sets[4] is None or (day.weekday() + 1) % 7 in sets[4]
        month = sets[3] is None or day.month in sets[3]
        if month and ((dom and dow) if star else (dom or dow)):
            for h in hours:
                for m in minutes:
                    w = day.replace(hour=h, minute=m)
                    if w > start:
                        yield w
        day += timedelta(days=1)


def rule_slots(expr, zone, after, n=3):
    z = ZoneInfo(zone)
    out = []
    t = after
    for w in walls(expr, wall(after, z)):
        s = instant(w, z)
        if s > t:
            out.append(s)
            t = s
            if len(out) == n:
                return out


def croniter_slots(expr, zone, after, n=3):
    z = ZoneInfo(zone)
    it = croniter(expr, datetime.fromtimestamp(after, z))
    return [int(it.get_next(datetime).timestamp()) for _ in range(n)]


def mark(expr, zone, after, rule, theirs):
    if rule == theirs:
        return "-"
    f = expr.split()
    if len(f) == 5 and f[2] != "*" and f[4] != "*" and \
            (f[2].startswith("*") or f[4].startswith("*")):
        return "day-or"
    z = ZoneInfo(zone)
    ours = walls(expr, wall(after, z))
    it = croniter(expr, wall(after, z))
    if [next(ours) for _ in range(3)] != \
            [it.get_next(datetime) for _ in range(3)]:
        return "search"
    for t in rule:
        if not croniter.match(expr, wall(t, z)):
            return "gap"
    for t in theirs:
        if not croniter.match(expr, wall(t, z)):
            return "offset"
    return "fold"


def row(expr, zone, after):
    rule = rule_slots(expr, zone, after)
    theirs = croniter_slots(expr, zone, after)
    m = mark(expr, zone, after, rule, theirs)
    cols = [expr, zone, str(after)] + [str(s) for s in rule] + [m]
    if m != "-":
        cols.append(",".join(str(s) for s in theirs))
    return "\t".join(cols)


def main():
    out = sys.stdout
    for line in __doc__.splitlines():
        out.write(("# " + line).rstrip() + "\n")
    rows = []
    for zone in ZONES:
        starts = []
        for t in transitions(zone, 2026):
            starts += [t - 3 * 3600, t - 60]
        if not starts:
            starts = [unix("2026-03-29 00:00:00")]
        for expr in DST_EXPRS:
            for after in starts:
                rows.append(row(expr, zone, after))
    for zone in ("UTC", "Europe/Paris", "America/New_York"):
        for expr in GENERAL_EXPRS:
            for text in GENERAL_AFTER:
                z = ZoneInfo(zone)
                local = datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
                after = int(local.replace(tzinfo=z).timestamp())
                rows.append(row(expr, zone, after))
    for r in rows:
        out.write(r + "\n")


if __name__ == "__main__":
    main()
