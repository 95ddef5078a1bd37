#!/usr/bin/env python3
"""An OCR inference service: Tesseract behind a small HTTP server, one replica of examples/ocr-service.

    python3 ocr_server.py [--tessdata-dir DIR] [--lang eng] [--engines N] [--port P]

Listens on 127.0.0.1 only, on --port, else $IDLEPOOL_PORT (what the idlepool worker gives a
replica). The model is loaded once, at the start, into N Tesseract engines (libtesseract through
ctypes: the model stays in memory between requests, as an inference server's does); each engine
serves one request at a time, so the service spec's max_concurrent should be N.

  GET  /health  503 {"status": "loading"} until every engine has loaded the model, then 200
  POST /ocr     the body is one image (PNG, PGM/PNM, TIFF, JPEG: what Leptonica reads); answers
                200 {"text", "confidence", "width", "height", "seconds"}; 400 for a body that
                is not an image, 413 over --max-body-bytes
  anything else 404

The model is DIR/LANG.traineddata (default DIR: $IDLEPOOL_TASK_DIR, else the current
directory), where the pool stages the job's inputs; the server refuses to start without it and
never falls back on a model installed on the machine. SIGTERM stops accepting and lets the
requests in flight finish. Python 3 standard library only; needs libtesseract (Debian
tesseract-ocr) on the machine.
"""
import argparse
import ctypes
import ctypes.util
import json
import os
import queue
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def log(msg):
    print(f"ocr-server: {msg}", file=sys.stderr, flush=True)


def load_libraries():
    # One thread per engine: OpenMP threads inside each would only fight over the cores the
    # engines already share. Read by the OpenMP runtime when libtesseract loads.
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")
    libs = []
    for name, soname in (("tesseract", "libtesseract.so.5"), ("lept", "liblept.so.5")):
        path = ctypes.util.find_library(name) or soname
        try:
            libs.append(ctypes.CDLL(path))
        except OSError as e:
            sys.exit(f"ocr-server: cannot load {path} ({e}): install tesseract-ocr")
    tess, lept = libs
    p, c, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    tess.TessBaseAPICreate.restype = p
    tess.TessBaseAPIInit3.argtypes = [p, c, c]
    tess.TessBaseAPIInit3.restype = i
    tess.TessBaseAPISetImage2.argtypes = [p, p]
    tess.TessBaseAPIGetUTF8Text.argtypes = [p]
    tess.TessBaseAPIGetUTF8Text.restype = p  # freed with TessDeleteText, so not c_char_p
    tess.TessDeleteText.argtypes = [p]
    tess.TessBaseAPIMeanTextConf.argtypes = [p]
    tess.TessBaseAPIMeanTextConf.restype = i
    tess.TessBaseAPIClear.argtypes = [p]
    lept.pixReadMem.argtypes = [c, ctypes.c_size_t]
    lept.pixReadMem.restype = p
    lept.pixDestroy.argtypes = [ctypes.POINTER(p)]
    lept.pixGetWidth.argtypes = [p]
    lept.pixGetHeight.argtypes = [p]
    return tess, lept


class Ocr:
    """N engines with the model loaded; recognise() borrows one. Thread-safe."""

    def __init__(self, tessdata, lang, engines):
        self.tessdata, self.lang, self.count = tessdata, lang, engines
        self.tess, self.lept = load_libraries()
        self.free = queue.Queue()
        self.ready = threading.Event()

    def load(self):
        for n in range(self.count):
            api = self.tess.TessBaseAPICreate()
            if self.tess.TessBaseAPIInit3(api, self.tessdata.encode(), self.lang.encode()) != 0:
                log(f"engine {n}: Tesseract could not load {self.lang} from {self.tessdata}")
                os._exit(1)  # a replica that cannot serve exits: the pool restarts it
            self.free.put(api)
        self.ready.set()

    def recognise(self, image):
        """The text of one image, or None when it is not an image."""
        pix = ctypes.c_void_p(self.lept.pixReadMem(image, len(image)))
        if not pix.value:
            return None
        try:
            return self._read(pix)
        finally:
            self.lept.pixDestroy(ctypes.byref(pix))

    def _read(self, pix):
        api = self.free.get()
        try:
            start = time.monotonic()
            self.tess.TessBaseAPISetImage2(api, pix)
            raw = self.tess.TessBaseAPIGetUTF8Text(api)
            text = ctypes.string_at(raw).decode("utf-8", "replace") if raw else ""
            if raw:
                self.tess.TessDeleteText(raw)
            return {
                "text": text,
                "confidence": self.tess.TessBaseAPIMeanTextConf(api),
                "width": self.lept.pixGetWidth(pix),
                "height": self.lept.pixGetHeight(pix),
                "seconds": round(time.monotonic() - start, 3),
            }
        finally:
            self.tess.TessBaseAPIClear(api)
            self.free.put(api)


class InFlight:
    """Requests in progress, so that SIGTERM lets them finish. A connection counts from its
    accept (its first request may already be on the way) and then from each request line to the
    end of its answer; an idle keep-alive connection does not count. Thread-safe."""

    def __init__(self):
        self.n = 0
        self.cv = threading.Condition()

    def add(self, d):
        with self.cv:
            self.n += d
            self.cv.notify_all()

    def wait_zero(self):
        with self.cv:
            self.cv.wait_for(lambda: self.n == 0)


class Server(ThreadingHTTPServer):
    daemon_threads = True  # idle keep-alive connections do not hold up the exit

    def __init__(self, address, handler_class, inflight):
        self.inflight = inflight
        super().__init__(address, handler_class)

    def process_request(self, request, client_address):
        self.inflight.add(1)  # in the accepting thread: counted before shutdown() can return
        super().process_request(request, client_address)


def handler(ocr, body_max):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the gateway reuses its connections
        timeout = 60  # seconds a connection may sit without a request before it is closed

        def setup(self):
            super().setup()
            self.counted = True  # Server.process_request counted this connection's first request

        def parse_request(self):
            if not self.counted:
                self.server.inflight.add(1)
                self.counted = True
            return super().parse_request()

        def handle_one_request(self):
            try:
                super().handle_one_request()
            finally:
                if self.counted:
                    self.server.inflight.add(-1)
                    self.counted = False

        def answer(self, status, obj):
            body = (json.dumps(obj) + "\n").encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path != "/health":
                return self.answer(404, {"error": f"no route GET {self.path}"})
            if not ocr.ready.is_set():
                return self.answer(503, {"status": "loading", "model": ocr.lang})
            self.answer(200, {"status": "ready", "model": ocr.lang, "engines": ocr.count})

        def do_POST(self):
            length = self.headers.get("Content-Length")
            if length is None or not length.isdigit():
                self.close_connection = True
                return self.answer(411, {"error": "a body with Content-Length is required"})
            if int(length) > body_max:
                self.close_connection = True  # the body is not read: the connection cannot go on
                return self.answer(413, {"error": f"the image is over {body_max} bytes"})
            image = self.rfile.read(int(length))
            if self.path != "/ocr":
                return self.answer(404, {"error": f"no route POST {self.path}"})
            if not ocr.ready.is_set():
                return self.answer(503, {"error": "the model is still loading"})
            result = ocr.recognise(image)
            if result is None:
                return self.answer(400, {"error": "the body is not an image Leptonica can read"})
            log(f"{len(image)} bytes, {result['width']}x{result['height']}: "
                f"{len(result['text'].split())} words in {result['seconds']} s")
            self.answer(200, result)

        def log_message(self, fmt, *args):
            pass  # one line per OCR above; health checks are not worth a line each

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tessdata-dir", default=os.environ.get("IDLEPOOL_TASK_DIR", "."))
    ap.add_argument("--lang", default="eng")
    ap.add_argument("--engines", type=int, default=2, help="requests served at once")
    ap.add_argument("--port", type=int, default=int(os.environ.get("IDLEPOOL_PORT", "0") or 0))
    ap.add_argument("--max-body-bytes", type=int, default=20 << 20)
    args = ap.parse_args()
    if not 1 <= args.engines <= 64:
        ap.error("--engines must be 1 to 64")
    if args.port == 0:
        ap.error("no port: give --port or set IDLEPOOL_PORT")
    model = os.path.join(args.tessdata_dir, args.lang + ".traineddata")
    if not os.path.isfile(model):
        sys.exit(f"ocr-server: no model {model} (ship it as an input of the job)")
    ocr = Ocr(args.tessdata_dir, args.lang, args.engines)
    inflight = InFlight()
    server = Server(("127.0.0.1", args.port), handler(ocr, args.max_body_bytes), inflight)
    # The port answers at once (503 on /health) while the engines load.
    threading.Thread(target=ocr.load, daemon=True).start()
    signal.signal(signal.SIGTERM,
                  lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    log(f"listening on 127.0.0.1:{server.server_address[1]}, model {model} "
        f"({os.path.getsize(model)} bytes), {args.engines} engines")
    server.serve_forever()
    server.server_close()  # no new connection; those accepted finish their request
    inflight.wait_zero()
    log("stopped: no request in flight")
    os._exit(0)  # at once: the engines' memory goes with the process


if __name__ == "__main__":
    main()
