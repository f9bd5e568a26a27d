"""Serves a directory on the loopback like `python3 -m http.server`, with the
Content-Security-Policy given, so that a page the policy blocks (inline script or style, a form
it does not allow) shows up as a console error in the browser test. The tests pass the policy
the server sends with a reader (`ebook::reader::CONTENT_SECURITY_POLICY`): no copy is kept here.

    python3 serve.py PORT DIRECTORY POLICY

PORT 0 takes a free port; the port served is the first line on stdout, once it listens.
"""

import functools
import http.server
import sys


class Handler(http.server.SimpleHTTPRequestHandler):
    policy = ""

    def end_headers(self):
        self.send_header("Content-Security-Policy", self.policy)
        super().end_headers()

    def log_message(self, *args):
        pass


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: serve.py PORT DIRECTORY POLICY")
    port, directory, policy = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    handler = functools.partial(type("Policed", (Handler,), {"policy": policy}), directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
