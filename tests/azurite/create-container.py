#!/usr/bin/env python3
"""Creates a blob container in Azurite (Bindery expects its container to exist, as on Azure).

    create-container.py ENDPOINT CONTAINER     # ENDPOINT: http://127.0.0.1:PORT/devstoreaccount1

Signs the request with Azurite's well-known development account key (Shared Key), using only
the standard library.
"""
import base64
import hashlib
import hmac
import sys
import urllib.error
import urllib.request
from email.utils import formatdate
from urllib.parse import urlparse

ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
VERSION = "2021-08-06"


def main() -> int:
    endpoint, container = sys.argv[1].rstrip("/"), sys.argv[2]
    url = f"{endpoint}/{container}?restype=container"
    date = formatdate(usegmt=True)
    path = urlparse(url).path
    string_to_sign = "\n".join(
        # Verb, Content-Encoding, -Language, -Length (empty for 0), -MD5, -Type, Date, and the
        # five conditional/range headers.
        ["PUT", "", "", "", "", "application/octet-stream", "", "", "", "", "", ""]
        + [f"x-ms-date:{date}", f"x-ms-version:{VERSION}", f"/{ACCOUNT}{path}\nrestype:container"]
    )
    signature = base64.b64encode(
        hmac.new(base64.b64decode(KEY), string_to_sign.encode(), hashlib.sha256).digest()
    ).decode()
    request = urllib.request.Request(
        url,
        method="PUT",
        data=b"",
        headers={
            "x-ms-date": date,
            "x-ms-version": VERSION,
            "Authorization": f"SharedKey {ACCOUNT}:{signature}",
            "Content-Length": "0",
            # urllib would add a form type to a request with a body; this one is signed.
            "Content-Type": "application/octet-stream",
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return 0 if response.status == 201 else 1
    except urllib.error.HTTPError as error:
        if error.code == 409:  # already there
            return 0
        print(f"creating container {container}: HTTP {error.code}: {error.read()[:300]!r}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
