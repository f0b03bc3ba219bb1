#!/bin/sh
# Hostile: leaves links to host files among its outputs.
ln -s /etc/shadow "$REPROGATE_OUTPUT_DIR/fio.json"
ln -s / "$REPROGATE_OUTPUT_DIR/root"
mkfifo "$REPROGATE_OUTPUT_DIR/pipe"
echo '{"metrics": []}' >"$REPROGATE_OUTPUT_DIR/metrics.json"
