#!/usr/bin/env python3
"""Holds N streamed chat completions open against a fake engine (tests/tools/fake_engine.cc).

Usage: hold_streams.py PORT N. Opens N connections, sends a streamed request on each, reads
until every one has its first token, prints "held N" and flushes, then waits for stdin to close
and closes every connection at once (the engine must count them all as cancelled). Exits 1 when
a connection fails or an answer is not an event stream.
"""
import resource
import selectors
import socket
import sys

port, n = int(sys.argv[1]), int(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < n + 64:
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))

body = b'{"model":"m","stream":true,"messages":[{"role":"user","content":"hold"}]}'
request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
sel = selectors.DefaultSelector()
got = {}
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(request)
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
    got[s] = b""
waiting = set(got)
while waiting:
    for key, _ in sel.select(timeout=60):
        s = key.fileobj
        data = s.recv(65536)
        if not data:
            print("a connection closed before its first token", flush=True)
            sys.exit(1)
        got[s] += data
        if b"replica=" in got[s]:
            if b"text/event-stream" not in got[s]:
                print("not an event stream: %r" % got[s][:200], flush=True)
                sys.exit(1)
            waiting.discard(s)
            sel.unregister(s)
print("held %d" % n, flush=True)
sys.stdin.read()
for s in got:
    s.close()
print("closed %d" % n, flush=True)
