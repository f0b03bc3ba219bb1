#!/bin/sh
# Hostile: prints 1 GiB (no newlines) to stdout, then more on stderr.
head -c 1073741824 /dev/zero | tr '\0' x
yes "stderr flood" >&2
