"""nofile_flood.py — scafd out of file descriptors: CPU it burns and log it writes while idle peers wait.

The reproduction: `prlimit --nofile=1024:1024 scafd --max-clients 1024` and about 1,040 idle
connections (here 1,100). Prints the daemon's CPU time and stderr growth over 3 s, then how soon it
answers once the connections close. Usage: nofile_flood.py [SCAFD]   (default: build/bin/scafd)
"""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from scaf.lib import proto


def cpu_s(pid: int) -> float:
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def wait_status(sock: str) -> float:
    t = time.monotonic()
    while True:
        try:
            proto.status(sock)
            return time.monotonic() - t
        except proto.DaemonUnavailable:
            time.sleep(0.02)


def main() -> int:
    scafd = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "build" / "bin" / "scafd")
    resource.setrlimit(resource.RLIMIT_NOFILE, (4096, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    d = tempfile.mkdtemp(prefix="scaf-m-")
    sock, errpath = os.path.join(d, "s.sock"), os.path.join(d, "stderr")
    with open(errpath, "wb") as err:
        p = subprocess.Popen(["prlimit", "--nofile=1024:1024", "--", scafd, "--socket", sock, "--max-clients", "1024",
                              "--no-lookout"], stdout=err, stderr=err)
    wait_status(sock)
    conns = []
    for _ in range(1100):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(1)
        for _attempt in range(50):
            try:
                s.connect(sock)
                conns.append(s)
                break
            except BlockingIOError:  # the backlog is full for now
                time.sleep(0.02)
            except OSError:
                break
    time.sleep(0.5)
    c0, b0 = cpu_s(p.pid), os.path.getsize(errpath)
    time.sleep(3)
    c1, b1 = cpu_s(p.pid), os.path.getsize(errpath)
    print(f"{scafd}: {len(conns)} idle connections; CPU {c1 - c0:.2f} s in 3 s; stderr +{b1 - b0} bytes in 3 s")
    for s in conns:
        s.close()
    print(f"status answered {wait_status(sock):.2f} s after they closed")
    p.terminate()
    p.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
