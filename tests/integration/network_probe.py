"""What a hostile job tries on the network from inside its sandbox; it prints one `NETPROBE {json}` line.

Run as a job's own code (the test puts this file in the bundle). `argv[1]` is a JSON object:
  tcp     [[host, port], ...]   addresses of the machine's services it tries to connect to (each must fail)
  bind    [[host, port], ...]   addresses it listens on; the test then tries them from the machine (each must fail)
  remote  [host, port] of an HTTP server outside the machine (egress must reach it), or null
  hold    seconds to keep listening (the test connects meanwhile; it ends the wait by creating `release` in out/)
It also tries its channel for anything but ingest, reports a metric through `starforge.runner.report`, and prints a log line.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

targets = json.loads(sys.argv[1])
report: dict[str, object] = {}

# the job's own ingest relay (forge-launch's, on its own loopback): a machine's service on the same port number is
# another socket, in another namespace; connecting to the relay reaches nothing of the machine
endpoint_port = urllib.parse.urlsplit(os.environ.get("STARFORGE_ENDPOINT", "")).port
reached = []
for host, port in targets.get("tcp", []):
    if host in ("127.0.0.1", "::1") and port == endpoint_port:
        continue
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    probe = socket.socket(family, socket.SOCK_STREAM)
    probe.settimeout(3)
    try:
        probe.connect((host, port))
        reached.append(f"{host}:{port}")
    except OSError:
        pass
    finally:
        probe.close()
report["reached"] = reached

remote = targets.get("remote")  # a host of the outside world: reachable with egress, not without
if remote:
    try:
        with urllib.request.urlopen(f"http://{remote[0]}:{remote[1]}/", timeout=10) as answer:
            report["remote"] = answer.status
    except (OSError, urllib.error.URLError) as exc:
        report["remote"] = str(exc)

# the channel: the console's ingest answers; nothing else of the console does
endpoint = os.environ.get("STARFORGE_ENDPOINT", "")
origin = endpoint.rsplit("/api/ingest", 1)[0]
leaks = []
for method, path in (("GET", "/api/version"), ("GET", "/api/admin/users"), ("GET", "/ui/"), ("POST", "/api/jobs"),
                     ("GET", "/api/ingest/logs"), ("POST", "/api/ingest/../admin/users")):
    request = urllib.request.Request(origin + path, method=method, data=b"{}" if method == "POST" else None,
                                     headers={"X-StarForge-Token": os.environ.get("STARFORGE_TOKEN", "")})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            leaks.append(f"{method} {path}: {answer.status}")
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            leaks.append(f"{method} {path}: {exc.code}")
    except OSError as exc:
        leaks.append(f"{method} {path}: {exc}")
report["channel_leaks"] = leaks
report["endpoint_is_loopback"] = endpoint.startswith("http://127.0.0.1:")

listeners = []
bound = []
for host, port in targets.get("bind", []):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server = socket.socket(family, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        server.bind((host, port))
        server.listen(8)
        listeners.append(server)
        bound.append(f"{host}:{port}")
    except OSError:
        server.close()
report["bound"] = bound

from starforge.runner import report as metrics  # noqa: E402  (the job's own reporting, through its channel)

metrics.log({"probe/reached": float(len(reached))}, step=1)
metrics.finish()
print("NETPROBE " + json.dumps(report), flush=True)

release = os.path.join(os.environ["FORGE_OUT_DIR"], "release")
deadline = time.monotonic() + float(targets.get("hold", 0))
while time.monotonic() < deadline and not os.path.exists(release):
    time.sleep(0.1)
