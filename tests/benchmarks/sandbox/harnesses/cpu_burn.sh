#!/bin/sh
# Hostile: spins on the CPU forever.
echo "spinning"
while :; do :; done
