"""The queue of plain reads waiting for one of PostgreSQL's pooled read connections.

A read that finds a connection free runs at once, in its own task. Reads that find every
connection busy wait here, in arrival order, and are answered by a task that takes the slot
of the read finishing before them: it sends the waiting reads of one statement together, in
one round trip (psycopg's pipeline), and answers each with its own rows. Under a poll's load
(many more requests than connections, most of them the same few statements) a read then
costs a share of one send, one wait and one wake-up instead of its own: about half the
CPU of each read on its own (bench/history.md, round 24).

A waiting read gives up after the pool's timeout, as it did at the pool's own queue; once
taken it is answered by its statement (the server's statement timeout bounds it).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from tenantplane.db.compiled import Prepared
from tenantplane.db.reads import Parameters, ReadRow

Answer = list[Sequence[ReadRow]]
# At most this many reads go in one round trip: a batch is answered only when its last
# read is, so a long one would hold up its first.
BATCH_LIMIT = 32


class Read:
    """One plain read: its statements and values, and the answer its caller waits for."""

    __slots__ = ("answer", "expiry", "single", "snapshot", "statements")

    def __init__(
        self, statements: list[tuple[Prepared, Parameters]], *, single: bool, snapshot: bool
    ) -> None:
        self.statements = statements
        self.single = single
        self.snapshot = snapshot
        self.answer: asyncio.Future[Answer] | None = None
        self.expiry: asyncio.TimerHandle | None = None

    @property
    def statement(self) -> Prepared | None:
        """The one statement a read can share a round trip by, if it is one."""
        if self.snapshot or len(self.statements) != 1:
            return None
        return self.statements[0][0]

    def settle(self, answer: Answer | BaseException) -> None:
        if isinstance(answer, BaseException):
            self.fail(answer)
        elif self.answer is not None and not self.answer.done():
            self.answer.set_result(answer)

    def fail(self, error: BaseException) -> None:
        if self.answer is not None and not self.answer.done():
            self.answer.set_exception(error)

    def cancel(self) -> None:
        if self.answer is not None:
            self.answer.cancel()

    def _taken(self) -> None:
        if self.expiry is not None:
            self.expiry.cancel()
            self.expiry = None


class ReadQueue:
    """``slots`` reads run at a time (the pool's connections); the others wait here."""

    def __init__(self, slots: int, timeout_seconds: float) -> None:
        self._slots = slots
        self._busy = 0
        self._timeout = timeout_seconds
        self._waiting: deque[Read] = deque()
        # The tasks answering waiting reads (the loop keeps only weak references to tasks).
        self._drainers: set[asyncio.Task[None]] = set()

    def admits(self) -> bool:
        """Whether a slot is free; if so, it is the caller's until it calls ``leave``."""
        if self._busy < self._slots:
            self._busy += 1
            return True
        return False

    def leave(self, drain: Callable[[], Coroutine[Any, Any, None]] | None) -> None:
        """A slot's holder is done: reads wait, the slot goes to a task of ``drain``
        (which leaves with ``None`` once none waits); otherwise it is free again."""
        if self._waiting and drain is not None:
            task = asyncio.get_running_loop().create_task(drain())
            self._drainers.add(task)
            task.add_done_callback(self._drainers.discard)
            return
        self._busy -= 1

    async def wait(self, read: Read, timed_out: Callable[[], BaseException]) -> Answer:
        """Queue ``read`` and wait for its answer, or for ``timed_out`` if no slot takes it
        within the timeout."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Answer] = loop.create_future()
        read.answer = answer
        self._waiting.append(read)
        read.expiry = loop.call_later(self._timeout, self._expire, read, timed_out)
        try:
            return await answer
        finally:
            read._taken()

    def take(self) -> list[Read]:
        """The next reads to answer: the first waiting, and the reads of its statement
        queued right behind it (up to BATCH_LIMIT); [] when none waits."""
        waiting = self._waiting
        while waiting:
            first = waiting.popleft()
            if first.answer is not None and first.answer.done():
                continue  # its caller went away
            first._taken()
            batch = [first]
            statement = first.statement
            while (
                statement is not None
                and waiting
                and len(batch) < BATCH_LIMIT
                and waiting[0].statement is statement
            ):
                read = waiting.popleft()
                if read.answer is None or not read.answer.done():
                    read._taken()
                    batch.append(read)
            return batch
        return []

    def _expire(self, read: Read, timed_out: Callable[[], BaseException]) -> None:
        if read.expiry is None:
            return  # taken meanwhile
        read.expiry = None
        try:
            self._waiting.remove(read)
        except ValueError:
            return
        read.fail(timed_out())
