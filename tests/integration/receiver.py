#!/usr/bin/env python3
# receiver.py - a real HTTP receiver for alert tests: logs every POST (path, content type, body, and when it
# arrived: "at", epoch seconds) as one JSON line.
# usage: receiver.py PORT LOGFILE [HANGFILE]   (listens on 127.0.0.1:PORT; answers 200 {"ok": true})
# With HANGFILE, a POST to a path under /hang/ hangs while that file exists (up to 120 s): a receiver that
# stops answering, for as long as the test wants; it is logged when it answers.
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


LOCK = threading.Lock()  # one line per request, never interleaved


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("utf-8", "replace")
        if len(sys.argv) > 3 and self.path.startswith("/hang/"):
            t0 = time.time()
            while os.path.exists(sys.argv[3]) and time.time() - t0 < 120:
                time.sleep(0.05)
        with LOCK, open(sys.argv[2], "a", encoding="utf-8") as f:
            f.write(json.dumps({"path": self.path, "ctype": self.headers.get("Content-Type"), "body": body,
                                "at": time.time()}) + "\n")
        out = b'{"ok": true}'
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
        except OSError:
            pass  # the client gave up waiting (a hanging path)

    def log_message(self, fmt, *args):
        pass


ThreadingHTTPServer.allow_reuse_address = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
