#!/usr/bin/env python3
"""`llmsize serve` latency: how long the API takes to answer, as a client sees it.

Usage: bench/serve.py path/to/release/llmsize [--requests N]

Starts `llmsize serve --port 0`, reads the port from its stderr, warms up, then sends N
requests (default 1000) per endpoint one after another, each timed from the request's first
byte to the answer's last, and prints p50, p90, p99 and the maximum in milliseconds:

  keep-alive  one HTTP/1.1 connection for all requests (what a page's fetches reuse)
  new conn.   a new TCP connection per request (connect + request + close)

Checks each answer is 200 with the expected JSON (Llama-2-7b: 6,738,415,616 parameters).
Exits 1 when /api/params?model=llama-2-7b has a p99 of 5 ms or more (issue 12's bound).

Python 3 standard library only.
"""

import http.client
import json
import os
import subprocess
import sys
import time

BOUND_MS = 5.0
PATHS = [
    "/api/params?model=llama-2-7b",
    "/api/memory?model=llama-2-7b&gpu=h100&seq=8192",
    "/api/flops?model=llama-2-7b&gpu=h100",
    "/api/gpus",
]


def percentile(sorted_ms, p):
    i = min(len(sorted_ms) - 1, max(0, round(p / 100 * (len(sorted_ms) - 1))))
    return sorted_ms[i]


def timed(conn, path):
    start = time.perf_counter()
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    ms = (time.perf_counter() - start) * 1000
    if r.status != 200:
        sys.exit(f"{path}: HTTP {r.status}: {body[:200]!r}")
    return ms, body


def run(port, path, n, fresh):
    times = []
    conn = None
    for _ in range(n):
        if fresh or conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        if fresh:
            start = time.perf_counter()
            conn.connect()
            connect_ms = (time.perf_counter() - start) * 1000
        else:
            connect_ms = 0.0
        ms, body = timed(conn, path)
        times.append(ms + connect_ms)
        if fresh:
            conn.close()
    if not fresh:
        conn.close()
    return sorted(times), body


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    binary = args[0]
    n = int(args[args.index("--requests") + 1]) if "--requests" in args else 1000
    server = subprocess.Popen(
        [binary, "serve", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stderr.readline().strip()
        prefix = "llmsize serve: http://127.0.0.1:"
        if not line.startswith(prefix):
            sys.exit(f"unexpected first line on stderr: {line!r}")
        port = int(line[len(prefix):].rstrip("/"))
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"{binary} serve on port {port}; {n} requests per row, sequential; "
              f"load average {load} on {os.cpu_count()} CPUs")
        print(f"{'endpoint':50} {'connection':11} {'p50':>7} {'p90':>7} {'p99':>7} {'max':>7}  (ms)")
        failed = False
        for path in PATHS:
            run(port, path, 50, fresh=False)  # warm-up
            for fresh in (False, True):
                times, body = run(port, path, n, fresh)
                if path == PATHS[0]:
                    total = json.loads(body)["total"]
                    if total != 6_738_415_616:
                        sys.exit(f"{path}: total {total}, expected 6738415616")
                    if percentile(times, 99) >= BOUND_MS:
                        failed = True
                kind = "new conn." if fresh else "keep-alive"
                print(
                    f"{path:50} {kind:11} {percentile(times, 50):7.3f} {percentile(times, 90):7.3f} "
                    f"{percentile(times, 99):7.3f} {times[-1]:7.3f}"
                )
        if failed:
            print(f"FAIL: /api/params p99 is {BOUND_MS} ms or more")
            sys.exit(1)
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
