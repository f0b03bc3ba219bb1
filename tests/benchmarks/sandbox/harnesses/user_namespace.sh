#!/bin/sh
# Hostile: tries to become root in a user namespace of its own (where it would
# hold every capability again), with unshare(1) and with the system call.
if unshare -U -r id -u 2>/dev/null; then echo "CLI-ROOT"; else echo "CLI-REFUSED"; fi
python3 - <<'PY'
import ctypes, os
CLONE_NEWUSER = 0x10000000
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(CLONE_NEWUSER) == 0:
    print("CALL-NEW-NAMESPACE")
else:
    print(f"CALL-REFUSED {os.strerror(ctypes.get_errno())}")
PY
