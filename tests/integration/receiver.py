#!/usr/bin/env python3
# receiver.py - a real HTTP receiver for alert tests: logs every POST (path, content type, body, and when it
# arrived: "at", epoch seconds) as one JSON line.
# usage: receiver.py PORT LOGFILE   (listens on 127.0.0.1:PORT; answers 200 {"ok": true})
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


LOCK = threading.Lock()  # one line per request, never interleaved


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode("utf-8", "replace")
        with LOCK, open(sys.argv[2], "a", encoding="utf-8") as f:
            f.write(json.dumps({"path": self.path, "ctype": self.headers.get("Content-Type"), "body": body,
                                "at": time.time()}) + "\n")
        out = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, fmt, *args):
        pass


ThreadingHTTPServer.allow_reuse_address = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
