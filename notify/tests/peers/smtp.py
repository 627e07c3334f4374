"""An SMTP server for the notification tests (aiosmtpd): every message it
accepts is written as one JSON line (envelope sender, recipients, the raw
message) to the log file named on the command line. It writes its port to
PORTFILE once it listens, and serves until killed. Loopback only, no TLS,
no authentication.
"""
import json
import os
import socket
import sys
import time

from aiosmtpd.controller import Controller

port_file, log_file = sys.argv[1], sys.argv[2]


class Handler:
    async def handle_DATA(self, server, session, envelope):
        record = {
            "from": envelope.mail_from,
            "to": envelope.rcpt_tos,
            "data": envelope.content.decode("utf-8", "replace"),
        }
        with open(log_file, "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")
        return "250 Message accepted"


with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
controller = Controller(Handler(), hostname="127.0.0.1", port=port)
controller.start()
with open(port_file + ".tmp", "w") as f:
    f.write(str(port))
os.replace(port_file + ".tmp", port_file)
while True:
    time.sleep(3600)
