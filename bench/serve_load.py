#!/usr/bin/env python3
"""A steady HTTPS load on the serving gateway for bench/serve.sh's pool-failover part.

  serve_load.py load --url https://127.0.0.1:PORT --ca CA.pem --key-file KEY --model M
                     --rate R --seconds S [--stream] [--timeout 10] --out FILE
  serve_load.py summary FILE [--from UNIX_MS] [--to UNIX_MS]

load: open loop, R chat completions per second for S seconds, each sent at its own time
whatever the earlier ones are doing (no coordinated omission), over keep-alive connections (an
idle one if there is one, else a new TLS connection, verified against the pool CA), the key as
`Authorization: Bearer`. One line per request in FILE, in the order they end:
  START_UNIX_MS TTFB_MS FIRST_EVENT_MS TOTAL_MS STATUS OUTCOME REPLICA WHY
TTFB: from the request's first byte written to the answer's first byte (status line) read; for
an answer that is not streamed the gateway sends it whole, so the first byte comes with the
last. FIRST_EVENT: to the first `data: {` event of a stream (-1 when not streamed). OUTCOME: ok,
status (not 200), socket (connect, reset, closed early), timeout (no end within --timeout),
broken (a stream with an error event or without its `data: [DONE]`), bad (a 200 without an
answer). REPLICA: the replica= name the fake engine puts in its first token (- if none). WHY:
the socket error, then ":new" when the request opened a new connection; "new" alone when it
did and nothing failed; - else.

summary: requests, failed (every outcome but ok) and by outcome, p50/p99/max of TTFB and of the
first event (nan when not streamed), of the requests answered 200; --from/--to keep the
requests started in [from, to). One line: key=value pairs, times in ms.
"""
import argparse
import asyncio
import json
import math
import re
import ssl
import sys
import time

REPLICA = re.compile(rb"replica=([A-Za-z0-9_.-]+)")


class Conn:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer


async def read_chunked(reader, on_piece):
    """Reads a chunked body, calling on_piece(bytes) per chunk; returns the whole body."""
    body = bytearray()
    while True:
        line = await reader.readline()
        if not line:
            raise ConnectionError("closed inside a chunked body")
        size = int(line.split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return bytes(body)
        piece = await reader.readexactly(size + 2)
        body += piece[:-2]
        on_piece(piece[:-2])


async def exchange(conn, request, stream, t0):
    """One request on conn; returns (status, ttfb, first_event, body, keep_alive)."""
    conn.writer.write(request)
    await conn.writer.drain()
    status_line = await conn.reader.readline()
    if not status_line:
        raise ConnectionError("closed before an answer")
    ttfb = time.perf_counter() - t0
    status = int(status_line.split()[1])
    headers = {}
    while True:
        line = await conn.reader.readline()
        if not line:
            raise ConnectionError("closed inside the headers")
        if line in (b"\r\n", b"\n"):
            break
        k, _, v = line.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    first = [-1.0]

    def on_piece(piece):
        if first[0] < 0 and b"data: {" in piece:
            first[0] = time.perf_counter() - t0

    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = await read_chunked(conn.reader, on_piece if stream else lambda p: None)
    elif "content-length" in headers:
        body = await conn.reader.readexactly(int(headers["content-length"]))
    else:
        body = await conn.reader.read()
        headers["connection"] = "close"
    keep = headers.get("connection", "").lower() != "close"
    return status, ttfb, first[0], body, keep


def judge(status, body, stream):
    if status != 200:
        return "status"
    if stream:
        if b'data: {"error"' in body or b"data: [DONE]" not in body:
            return "broken"
        return "ok"
    try:
        return "ok" if json.loads(body)["choices"] else "bad"
    except (ValueError, KeyError, TypeError):
        return "bad"


async def one(args, ctx, idle, request, out):
    start_ms = time.time() * 1000
    t0 = time.perf_counter()
    conn, outcome, status, ttfb, first, replica = None, "socket", 0, -1.0, -1.0, "-"
    why, body = "-", b""
    try:
        async with asyncio.timeout(args.timeout):
            while idle and conn is None:
                conn = idle.pop()
                if conn.reader.at_eof() or conn.writer.is_closing():
                    conn.writer.close()  # the gateway closed it while idle (as after a broken
                    conn = None          # stream): a client's pool drops it
            if conn is None:
                r, w = await asyncio.open_connection(args.host, args.port, ssl=ctx,
                                                     server_hostname="127.0.0.1")
                conn = Conn(r, w)
                why = "new"
            status, ttfb, first, body, keep = await exchange(conn, request, args.stream, t0)
            outcome = judge(status, body, args.stream)
            m = REPLICA.search(body)
            replica = m.group(1).decode() if m else "-"
            if keep:
                idle.append(conn)
                conn = None
    except TimeoutError:
        outcome = "timeout"
    except (OSError, ConnectionError, asyncio.IncompleteReadError, ValueError, IndexError,
            ssl.SSLError) as e:
        outcome, why = "socket", re.sub(r"\s+", "_", f"{type(e).__name__}:{e}:{why}")[:200]
    if conn is not None:
        conn.writer.close()
    total = time.perf_counter() - t0
    out.write(f"{start_ms:.3f} {ttfb * 1000:.3f} {first * 1000 if first >= 0 else -1:.3f} "
              f"{total * 1000:.3f} {status} {outcome} {replica} {why}\n")


async def load(args):
    m = re.fullmatch(r"https://([0-9.]+):([0-9]+)", args.url)
    if not m:
        sys.exit(f"serve_load.py: --url {args.url}: want https://IP:PORT")
    args.host, args.port = m.group(1), int(m.group(2))
    ctx = ssl.create_default_context(cafile=args.ca)
    key = open(args.key_file).read().strip()
    body = json.dumps({"model": args.model, "stream": args.stream, "max_tokens": 8,
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {args.host}\r\n"
               f"Authorization: Bearer {key}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    idle, tasks = [], set()
    with open(args.out, "w", buffering=1) as out:
        n = int(args.rate * args.seconds)
        begin = time.perf_counter()
        for i in range(n):
            delay = begin + i / args.rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            t = asyncio.create_task(one(args, ctx, idle, request, out))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.gather(*tasks)
    for c in idle:
        c.writer.close()


def pct(values, p):
    if not values:
        return float("nan")
    values = sorted(values)  # nearest rank
    return values[min(len(values) - 1, max(0, math.ceil(p / 100 * len(values)) - 1))]


def summary(args):
    rows = []
    for line in open(args.file):
        f = line.split()
        if len(f) < 7:
            continue
        start = float(f[0])
        if args.from_ms is not None and start < args.from_ms:
            continue
        if args.to_ms is None or start < args.to_ms:
            rows.append((start, float(f[1]), float(f[2]), float(f[3]), int(f[4]), f[5], f[6]))
    outcomes = {}
    for r in rows:
        outcomes[r[5]] = outcomes.get(r[5], 0) + 1
    ok = [r for r in rows if r[4] == 200]
    ttfb = [r[1] for r in ok]
    first = [r[2] for r in ok if r[2] >= 0]
    out = {"requests": len(rows), "failed": len(rows) - outcomes.get("ok", 0)}
    for k in ("status", "socket", "timeout", "broken", "bad"):
        out[k] = outcomes.get(k, 0)
    out["ttfb_p50"] = pct(ttfb, 50)
    out["ttfb_p99"] = pct(ttfb, 99)
    out["ttfb_max"] = max(ttfb) if ttfb else float("nan")
    out["first_p50"] = pct(first, 50)
    out["first_p99"] = pct(first, 99)
    out["first_max"] = max(first) if first else float("nan")
    print(" ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in out.items()))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("load")
    lp.add_argument("--url", required=True)
    lp.add_argument("--ca", required=True)
    lp.add_argument("--key-file", required=True)
    lp.add_argument("--model", required=True)
    lp.add_argument("--rate", type=float, required=True)
    lp.add_argument("--seconds", type=float, required=True)
    lp.add_argument("--stream", action="store_true")
    lp.add_argument("--timeout", type=float, default=10)
    lp.add_argument("--out", required=True)
    sp = sub.add_parser("summary")
    sp.add_argument("file")
    sp.add_argument("--from", dest="from_ms", type=float)
    sp.add_argument("--to", dest="to_ms", type=float)
    args = p.parse_args()
    if args.cmd == "load":
        asyncio.run(load(args))
    else:
        summary(args)


if __name__ == "__main__":
    main()
