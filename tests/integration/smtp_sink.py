#!/usr/bin/env python3
# smtp_sink.py - a mail server for tests: takes every message on 127.0.0.1:PORT (plain SMTP, no TLS, no auth) and
# appends it to OUT as one JSON line {"from", "to": [...], "data"}.
# usage: smtp_sink.py PORT OUT
import json
import socketserver
import sys


class Session(socketserver.StreamRequestHandler):
    def reply(self, line):
        self.wfile.write(line.encode() + b"\r\n")
        self.wfile.flush()

    def handle(self):
        self.reply("220 localhost smtp_sink")
        sender, rcpt = "", []
        while True:
            line = self.rfile.readline()
            if not line:
                return
            cmd = line.decode("utf-8", "replace").strip()
            verb = cmd.split(" ", 1)[0].upper()
            if verb in ("EHLO", "HELO"):
                self.reply("250 localhost")
            elif verb == "MAIL":
                sender, rcpt = cmd.split(":", 1)[1].strip().strip("<>").split(">")[0], []
                self.reply("250 ok")
            elif verb == "RCPT":
                rcpt.append(cmd.split(":", 1)[1].strip().strip("<>").split(">")[0])
                self.reply("250 ok")
            elif verb == "DATA":
                self.reply("354 go on")
                data = []
                while True:
                    d = self.rfile.readline()
                    if not d or d in (b".\r\n", b".\n"):
                        break
                    data.append(d.decode("utf-8", "replace"))
                with open(sys.argv[2], "a", encoding="utf-8") as f:
                    f.write(json.dumps({"from": sender, "to": rcpt, "data": "".join(data)}) + "\n")
                self.reply("250 queued")
            elif verb == "QUIT":
                self.reply("221 bye")
                return
            else:
                self.reply("250 ok")


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


if __name__ == "__main__":
    Server(("127.0.0.1", int(sys.argv[1])), Session).serve_forever()
