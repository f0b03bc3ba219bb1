#!/bin/sh
# Hostile: stays under the per-file limit but fills the disk with many files.
i=0
while [ "$i" -lt 64 ]; do
    head -c 262144 /dev/zero >"$REPROGATE_OUTPUT_DIR/part-$i.bin"
    i=$((i + 1))
done
echo "wrote $i files"
sleep "$MARK"
