#!/usr/bin/env python3
"""`llmsize serve` latency: how long the API takes to answer, as a client sees it.

Usage: bench/serve.py path/to/release/llmsize [--requests N] [--hostile]

Starts `llmsize serve --port 0`, reads the port from its stderr, warms up, then sends N
requests (default 1000) per endpoint one after another, each timed from the request's first
byte to the answer's last, and prints p50, p90, p99 and the maximum in milliseconds:

  keep-alive  one HTTP/1.1 connection for all requests (what a page's fetches reuse)
  new conn.   a new TCP connection per request (connect + request + close)

Checks each answer is 200 with the expected JSON (Llama-2-7b: 6,738,415,616 parameters).
Exits 1 when /api/params?model=llama-2-7b has a p99 of 5 ms or more (issue 12's bound).

With `--hostile`, the same rows for /api/params?model=llama-2-7b alone, measured while one
client holds the server under the load of `tests/serve_hostile.rs`, kept up for the whole run:
500 idle connections, 20 slow-loris connections (half a header) and 20 bodies trickled a byte
every 2 s, each reopened a second after the server closes it, and the
expensive requests (sent once: their computations outlive their 2 s deadline); it prints the
server's open descriptors (Linux) and exits 1 when the p99 is 100 ms or more (issue 21's bound).

Python 3 standard library only.
"""

import http.client
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import threading
import time

BOUND_MS = 5.0
HOSTILE_BOUND_MS = 100.0
RECONNECTS = [0]
EXPENSIVE = [
    "/api/memory?model=llama-2-7b&gpu=h100x4294967296",
    # 2^64 - 1 GPUs: endless in the engine until issue 21's bound on GPU counts lands.
    "/api/memory?model=llama-2-7b&gpu=h100x18446744073709551615",
    "/api/flops?model=llama-2-7b&gpu=h100x18446744073709551615",
]
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
        try:
            ms, body = timed(conn, path)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            if fresh:
                raise
            # The server closed the idle keep-alive connection (its connection limit makes
            # room for newcomers): as a browser does, send the request again on a new one,
            # the time lost counted.
            start = time.perf_counter()
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            ms, body = timed(conn, path)
            connect_ms = (time.perf_counter() - start) * 1000 - ms
            RECONNECTS[0] += 1
        times.append(ms + connect_ms)
        if fresh:
            conn.close()
    if not fresh:
        conn.close()
    return sorted(times), body


def hostile(port):
    """Hold the server under the hostile load, from a process of its own (so that its 540
    threads do not share the measuring client's interpreter lock), until it is terminated."""
    stop = threading.Event()
    host = f"Host: 127.0.0.1:{port}\r\n"

    def keep(count, opening, pause):
        # `count` connections, each reopened `pause` seconds after the server closes it
        # (at once, the 500 would be a flood of new connections, a contest for the CPU).
        def one():
            while not stop.is_set():
                try:
                    s = socket.create_connection(("127.0.0.1", port))
                    s.sendall(opening.encode())
                    s.settimeout(pause)
                    while not stop.is_set():
                        try:
                            if not s.recv(4096):
                                break
                        except socket.timeout:
                            if opening.startswith("POST"):
                                s.sendall(b" ")
                    s.close()
                    time.sleep(pause)
                except OSError:
                    time.sleep(0.1)
        return [threading.Thread(target=one, daemon=True) for _ in range(count)]

    def expensive(path):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(f"GET {path} HTTP/1.1\r\n{host}Connection: close\r\n\r\n".encode())
        s.settimeout(60)
        s.recv(4096)
        s.close()

    threads = keep(500, "", 1.0)
    threads += keep(20, f"GET /api/gpus HTTP/1.1\r\n{host}X-Slow: ", 1.0)
    threads += keep(20, f"POST /api/params HTTP/1.1\r\n{host}Content-Length: 100\r\n\r\n", 2.0)
    threads += [threading.Thread(target=expensive, args=(p,), daemon=True) for p in EXPENSIVE]
    for t in threads:
        t.start()
    while True:
        time.sleep(60)


def descriptors(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return None


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
        if "--hostile" in args:
            load = multiprocessing.Process(target=hostile, args=(port,), daemon=True)
            load.start()
            time.sleep(2.0)
            print(f"under hostile load: {descriptors(server.pid)} descriptors open")
            path = PATHS[0]
            for fresh in (False, True):
                times, body = run(port, path, n, fresh)
                if json.loads(body)["total"] != 6_738_415_616:
                    sys.exit(f"{path}: wrong total")
                if percentile(times, 99) >= HOSTILE_BOUND_MS:
                    failed = True
                kind = "new conn." if fresh else "keep-alive"
                print(
                    f"{path:50} {kind:11} {percentile(times, 50):7.3f} {percentile(times, 90):7.3f} "
                    f"{percentile(times, 99):7.3f} {times[-1]:7.3f}"
                )
            print(f"after: {descriptors(server.pid)} descriptors open; "
                  f"{RECONNECTS[0]} keep-alive requests sent again on a new connection")
            load.terminate()
            if failed:
                print(f"FAIL: /api/params p99 is {HOSTILE_BOUND_MS} ms or more under hostile load")
                sys.exit(1)
            return
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
