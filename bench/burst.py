"""A burst of POSTs sent at once, from its own process: `python -m bench.burst`.

(h) needs every request of a burst in flight together, which wrk (a request rate for a
duration) cannot send. An httpx client with 1,000 connections measured itself: its pool
spent 40 to 65 % of a core during the burst and paced the requests. This one opens every
connection first, then writes all the requests, and reads each answer's status line and
body on plain asyncio streams (HTTP/1.1, one request per connection). It prints one JSON
object: the status codes, when the writes began, and this process's CPU time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
from collections import Counter
from urllib.parse import urlsplit


def _request(host: str, path: str, key: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


async def _answer(reader: asyncio.StreamReader) -> int:
    status_line = await reader.readline()
    status = int(status_line.split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def burst(
    url: str, path: str, key: str, bodies: list[bytes]
) -> tuple[list[int], float, float]:
    """Statuses of the answers, when the writes began (epoch seconds), and the seconds from
    then to the last answer."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    streams = await asyncio.gather(*(asyncio.open_connection(host, port) for _ in bodies))
    start = asyncio.Event()

    async def one(stream: tuple[asyncio.StreamReader, asyncio.StreamWriter], body: bytes) -> int:
        reader, writer = stream
        await start.wait()
        writer.write(_request(parts.netloc, path, key, body))
        try:
            return await _answer(reader)
        finally:
            writer.close()

    tasks = [
        asyncio.create_task(one(stream, body)) for stream, body in zip(streams, bodies, strict=True)
    ]
    await asyncio.sleep(0)  # every task waits on the event: the writes go out together
    fired, began = time.time(), time.monotonic()
    start.set()
    statuses = list(await asyncio.gather(*tasks))
    return statuses, fired, time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.burst", description=__doc__)
    parser.add_argument("--url", required=True, help="the server's base URL")
    parser.add_argument("--path", required=True)
    parser.add_argument("--key", required=True, help="API key (Bearer)")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--name-prefix", default="burst-")
    options = parser.parse_args()
    bodies = [
        json.dumps({"name": f"{options.name_prefix}{index:04d}"}).encode()
        for index in range(options.count)
    ]
    statuses, fired, seconds = asyncio.run(burst(options.url, options.path, options.key, bodies))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "statuses": dict(Counter(statuses)),
                "fired": fired,
                "seconds": seconds,
                "cpu_seconds": usage.ru_utime + usage.ru_stime,
            }
        )
    )


if __name__ == "__main__":
    main()
