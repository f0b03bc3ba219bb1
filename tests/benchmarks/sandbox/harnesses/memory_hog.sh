#!/bin/sh
# Hostile: touches far more memory than allowed.
exec python3 -c '
import os, time
print("allocating", flush=True)
block = bytearray(1 << 30)
for i in range(0, len(block), 4096):
    block[i] = 1
print("allocated", flush=True)
time.sleep(float(os.environ["MARK"]))
'
