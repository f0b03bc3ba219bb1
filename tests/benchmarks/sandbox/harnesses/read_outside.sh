#!/bin/sh
# Hostile: reads and writes outside its directory. Prints READ/WROTE for every
# success, so the test can assert that none happened.
for path in "$SECRET_FILE" /work/main/config/settings.py /root/.bashrc \
    /root/.pyenv/version /proc/1/environ /etc/shadow /var/log/dpkg.log \
    ../../secret.txt; do
    if content=$(cat "$path" 2>/dev/null); then
        printf 'READ %s: %s\n' "$path" "$content"
    else
        printf 'DENIED %s\n' "$path"
    fi
done
for path in /etc/hacked /usr/hacked /sys/hacked "$(dirname "$SECRET_FILE")/hacked"; do
    if (echo pwned >"$path") 2>/dev/null; then
        printf 'WROTE %s\n' "$path"
    else
        printf 'DENIED-WRITE %s\n' "$path"
    fi
done
ls / >&2
exit 0
