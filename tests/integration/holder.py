# SPDX-License-Identifier: BSD-2-Clause
# A verbs process that keeps a device open: through pyverbs it opens a
# context on DEVICE and allocates a PD, prints "ready GID" (GID index 0 of
# port 1, as inet_ntop writes it) and sleeps SECONDS, or until killed.
# Fed to /usr/bin/python3 on stdin by the tests: `python3 - DEVICE SECONDS`.
import socket
import sys
import time

import pyverbs.device as d
import pyverbs.pd as p

ctx = d.Context(name=sys.argv[1])
pd = p.PD(ctx)
raw = bytes.fromhex(str(ctx.query_gid(1, 0)).replace(":", ""))
print("ready", socket.inet_ntop(socket.AF_INET6, raw), flush=True)
time.sleep(float(sys.argv[2]))
pd.close()
ctx.close()
