"""A webhook receiver for the notification tests: records every POST it is
sent, as one JSON line (path, the webhook headers, the body), in the log
file named on the command line, and answers by the path:

  /ok, /slack   200
  /down         503
  /hold         records the request, then waits while the file HOLD exists
                beside the log (a receiver that has the request and has not
                answered), then 200

It writes its port to PORTFILE once it listens, and serves until killed.
Loopback only.
"""
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port_file, log_file = sys.argv[1], sys.argv[2]
hold_file = os.path.join(os.path.dirname(log_file), "HOLD")


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length).decode("utf-8", "replace")
        record = {
            "path": self.path,
            "webhook-id": self.headers.get("webhook-id"),
            "webhook-timestamp": self.headers.get("webhook-timestamp"),
            "webhook-signature": self.headers.get("webhook-signature"),
            "content-type": self.headers.get("content-type"),
            "body": body,
        }
        with open(log_file, "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")
        if self.path == "/hold":
            while os.path.exists(hold_file):
                time.sleep(0.05)
        status = 503 if self.path == "/down" else 200
        try:
            self.send_response(status)
            self.send_header("content-type", "text/plain")
            self.end_headers()
            self.wfile.write(b"ok" if status == 200 else b"down")
        except (BrokenPipeError, ConnectionResetError):
            # The sender is gone (a dispatcher killed mid-delivery).
            pass

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.replace(port_file + ".tmp", port_file)
server.serve_forever()
