#!/bin/sh
# The tests' and benchmarks' SQL runs on MariaDB and MySQL alike (tests/lib.sh,
# ROWQ_TEST_SERVER): none of MariaDB's own that MySQL refuses, outside the
# helpers that give either family its own (lib.sh's seq_rows).  Prints each
# use, and exits 1 if there is any.
cd "$(dirname "$0")/../.." || exit 2
found=$(grep -rnE 'seq_[0-9]+_to_[0-9]+|ENGINE *= *Aria|CREATE OR REPLACE USER|SET STATEMENT [a-z_]+ *=' \
    tests bench config --include='*.sh' --include='*.sql' --include='*.yaml' \
    --include='*.py' | grep -v '^tests/lib.sh:' | grep -v '^tests/lint/portable.sh:')
[ -z "$found" ] && exit 0
echo "MariaDB-only SQL (use lib.sh's seq_rows, InnoDB or MyISAM, DROP USER IF EXISTS):"
echo "$found"
exit 1
