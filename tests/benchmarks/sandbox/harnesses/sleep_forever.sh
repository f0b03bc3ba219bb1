#!/bin/sh
# Hostile: sleeps forever and leaves daemons behind (own session, nohup).
setsid sleep "$MARK" </dev/null >/dev/null 2>&1 &
nohup sleep "$MARK" </dev/null >/dev/null 2>&1 &
(trap '' TERM HUP; sleep "$MARK") &
echo "::progress:: 0.25"
echo "sleeping"
sleep "$MARK"
