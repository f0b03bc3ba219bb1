#!/bin/sh
# Hostile: opens a TCP connection to the host (a listener the test started)
# and resolves a public name.
python3 - <<'PY'
import os, socket, sys
port = int(os.environ["TARGET_PORT"])
try:
    socket.create_connection(("127.0.0.1", port), timeout=3).sendall(b"exfiltrated")
    print("CONNECTED")
except OSError as exc:
    print(f"BLOCKED {exc}")
try:
    socket.getaddrinfo("example.com", 443)
    print("RESOLVED")
except OSError as exc:
    print(f"NO-DNS {exc}")
PY
