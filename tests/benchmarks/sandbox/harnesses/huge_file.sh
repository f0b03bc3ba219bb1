#!/bin/sh
# Hostile: writes one huge file into its working directory.
set -e
echo "writing"
head -c 1073741824 /dev/zero >huge.bin
echo "wrote it all"
