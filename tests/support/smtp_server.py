"""A real SMTP server on loopback for the tests (aiosmtpd, pinned in scripts/lib/tools.sh):
every message it takes goes to the maildir named on the command line. It listens on a free
port, prints `PORT N` once it does, and stops when its stdin closes (the test ends).

    python3 tests/support/smtp_server.py MAILDIR
"""

import asyncio
import sys

from aiosmtpd.handlers import Mailbox
from aiosmtpd.smtp import SMTP


async def main() -> None:
    loop = asyncio.get_running_loop()
    handler = Mailbox(sys.argv[1])
    server = await loop.create_server(lambda: SMTP(handler), "127.0.0.1", 0)
    print("PORT", server.sockets[0].getsockname()[1], flush=True)
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


asyncio.run(main())
