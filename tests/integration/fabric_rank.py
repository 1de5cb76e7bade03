"""One rank of the fabric test, run inside its sandbox; argv[1] is a JSON object, it prints one `FABRIC {json}` line.

  rank     0 or 1
  fabric   [address of rank 0, address of rank 1]
  targets  [[host, port], ...] of the machine (rank 1 tries each: each must fail)
Rank 0 serves one TCP echo and receives UDP datagrams on its fabric address until `last` arrives; rank 1 echoes
through it, sends a datagram from a forged source (its tap address), then `last` from its own.
"""

from __future__ import annotations

import json
import socket
import sys
import time

plan = json.loads(sys.argv[1])
zero, one = plan["fabric"]
report: dict[str, object] = {"rank": plan["rank"]}
if plan["rank"] == 0:
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("0.0.0.0", 7001))
    server = socket.create_server((zero, 7000))
    server.settimeout(60)
    peer, address = server.accept()
    peer.settimeout(30)
    peer.sendall(peer.recv(100))
    report["echo_from"] = address[0]
    udp.settimeout(30)
    got = []
    while b"last" not in got:
        data, source = udp.recvfrom(100)
        got.append(data)
        report.setdefault("sources", []).append(source[0])  # type: ignore[union-attr]
    report["datagrams"] = [d.decode() for d in got]
else:
    deadline = time.monotonic() + 60
    while True:  # rank 0's job may not listen yet: its port refuses until it does
        try:
            link = socket.create_connection((zero, 7000), timeout=10)
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    link.sendall(b"over the fabric")
    report["echo"] = link.recv(100).decode()
    forged = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        forged.bind(("10.0.2.100", 0))  # the job's other address: the kernel sends it out of the fabric as is
        forged.sendto(b"forged", (zero, 7001))
        report["forged_sent"] = True
    except OSError as exc:
        report["forged_sent"] = str(exc)
    honest = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    honest.bind((one, 0))
    honest.sendto(b"last", (zero, 7001))
    reached = []
    for host, port in plan["targets"]:
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        probe.settimeout(3)
        try:
            probe.connect((host, port))
            reached.append(f"{host}:{port}")
        except OSError:
            pass
        finally:
            probe.close()
    report["reached"] = reached
print("FABRIC " + json.dumps(report), flush=True)
