#!/bin/sh
# No file of src/ passes 900 lines: a file that grows past it holds more
# than one concept, and is split along the seams its sections already
# name (src/README says which file holds what).  Prints each file over
# the limit, and exits 1 if there is any.
cd "$(dirname "$0")/../.." || exit 2
max=900
over=$(wc -l src/*.c src/*.h | awk -v max="$max" '$2 != "total" && $1 > max')
[ -z "$over" ] && exit 0
echo "files of src/ over $max lines (split them along their sections):"
echo "$over"
exit 1
