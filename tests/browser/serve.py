"""Serves a directory on the loopback like `python3 -m http.server`, adding the
Content-Security-Policy that Bindery sends with the reader, so that a page needing inline
script or style shows up as a console error in the browser test.

    python3 serve.py PORT DIRECTORY

PORT 0 takes a free port; the port served is the first line on stdout, once it listens.
"""

import functools
import http.server
import sys

CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:"


class Handler(http.server.SimpleHTTPRequestHandler):
    def end_headers(self):
        self.send_header("Content-Security-Policy", CSP)
        super().end_headers()

    def log_message(self, *args):
        pass


def main():
    port, directory = int(sys.argv[1]), sys.argv[2]
    handler = functools.partial(Handler, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
