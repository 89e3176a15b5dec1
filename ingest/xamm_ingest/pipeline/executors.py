"""Where sources are read: in this process (``serial``), on local processes (``processes``), or on
the workers of a Dask cluster (``dask``), each chunk's result handed back in walk order with a few
chunks in flight."""

from __future__ import annotations

import contextlib
import gc
import logging
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future

from xamm_data.cli.terminal import unfiltered
from xamm_ingest.choices import EXECUTORS
from xamm_ingest.format import get_format
from xamm_ingest.pipeline.stages import check_batch, read_chunk
from xamm_ingest.sources import Task

__all__ = ["CONNECT_TIMEOUT_S", "EXECUTORS", "in_order", "progress_bar", "submitter"]

CONNECT_TIMEOUT_S = 10


def read_checked_chunk(tasks: list[Task], fmt: str, opts: dict):
    """Hash, read and check a chunk of sources on a Dask worker (a process of its own, where
    polars is free to run; each source hashed from the bytes its reader parses), so the client
    only commits.

    Args:
        tasks: sources of one format.
        fmt: the format's name.
        opts: the format's options.

    Returns:
        What :func:`~xamm_ingest.pipeline.stages.check_batch` returns for the chunk.
    """
    return check_batch(read_chunk(tasks, opts), get_format(fmt), opts)


@contextlib.contextmanager
def submitter(executor: str, workers: int, scheduler: str | None, several: bool, fmt: str):
    """(a function that sends a chunk to the executor and returns a future, how many chunks to keep
    in flight): ``read_chunk`` on local processes (in this process for ``serial``, one worker, or
    too few sources for a pool to pay), ``read_checked_chunk`` on Dask workers.

    Args:
        executor: ``serial``, ``processes`` or ``dask``.
        workers: processes (local), or a LocalCluster's workers.
        scheduler: a running Dask scheduler's address (without it: a LocalCluster).
        several: enough sources for local processes to pay
            (:data:`~xamm_ingest.pipeline.POOL_MIN_FILES`; fewer are read in this process).
        fmt: the format's name.
    """
    if executor == "dask":
        with dask_client(scheduler, workers) as client:
            n = max(len(client.scheduler_info().get("workers", {})), 1)

            def submit(chunk, opts):
                return client.submit(read_checked_chunk, chunk, fmt, opts, pure=False)

            yield submit, 2 * n + 1
        return
    if executor == "serial" or workers <= 1 or not several:
        yield _inline, 1
        return
    # the process pool's modules (multiprocessing's queues, connections): when a pool is made
    from concurrent.futures import ProcessPoolExecutor

    # the forked workers share this process's objects; frozen, no collection in a worker writes
    # to them (a full collection touches every object it tracks, which copies its page)
    gc.freeze()
    try:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            yield lambda chunk, opts: pool.submit(read_chunk, chunk, opts), 2 * workers + 1
    finally:
        gc.unfreeze()


def _inline(chunk: list[Task], opts: dict) -> Future:
    fut: Future = Future()
    fut.set_result(read_chunk(chunk, opts))
    return fut


@contextlib.contextmanager
def dask_client(scheduler: str | None, workers: int):
    """A client of the scheduler at ``scheduler``, or of a LocalCluster of ``workers`` processes.

    Args:
        scheduler: ``tcp://host:8786``, or None for a LocalCluster.
        workers: the LocalCluster's processes.
    """
    try:
        from dask.distributed import Client, LocalCluster  # the dask extra: only with dask
    except ImportError:
        raise ValueError(
            "--executor dask needs dask.distributed: pip install 'xamm[dask]'"
        ) from None
    if not logging.getLogger("xamm_ingest").isEnabledFor(logging.DEBUG):
        # Dask's own lines (start-up, a slow event loop, a nanny's restarts) only with -vv: what
        # goes wrong reaches the user as xamm's one line
        logging.getLogger("distributed").setLevel(logging.ERROR)
    if scheduler:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError) as e:
            raise ValueError(
                f"no Dask scheduler answered at {scheduler} within {CONNECT_TIMEOUT_S} s ({e}); "
                "expected the address a running scheduler prints, e.g. tcp://head:8786"
            ) from None
        with client:
            yield client
        return
    with contextlib.ExitStack() as stack:
        try:  # a worker that dies while it starts: one line, nothing read or written yet
            # the scheduler serves HTTP whatever the dashboard setting: on a free port (":0"),
            # never 8787, which another cluster may hold (Dask then warns on stderr)
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0"
                )
            )
            client = stack.enter_context(Client(cluster))
        except (RuntimeError, OSError, TimeoutError) as e:
            first = (
                str(e).strip().splitlines()[0].rstrip(".") if str(e).strip() else type(e).__name__
            )
            raise ValueError(
                f"the local Dask cluster did not start ({first}: a worker died while it "
                "started); nothing was read or written: rerun, or use --executor processes"
            ) from None
        yield client


def in_order(submit: Callable, chunks: Iterator[list[Task]], opts: dict, window: int) -> Iterator:
    """Each chunk's result in walk order, with at most ``window`` chunks in flight."""
    pending: deque = deque()
    for chunk in chunks:
        pending.append(submit(chunk, opts))
        if len(pending) >= window:
            break
    while pending:
        result = pending.popleft().result()
        nxt = next(chunks, None)
        if nxt is not None:
            pending.append(submit(nxt, opts))
        yield result


def progress_bar(enabled: bool, total: int):
    """A rich progress bar of sources (count, rate, time left) on standard error, or a stand-in
    that shows nothing.

    Args:
        enabled: show it.
        total: the sources to read (0: unknown).
    """
    if not enabled:
        return contextlib.nullcontext(lambda n: None)
    # rich: only when a progress bar is asked for
    from rich.console import Console
    from rich.progress import (  # (as the line above)
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    @contextlib.contextmanager
    def bar():
        with Progress(
            TextColumn("reading sources"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            transient=True,
            console=_bar_console(Console),
        ) as p:
            task = p.add_task("read", total=total or None, rate="")
            t0 = time.perf_counter()

            def advance(n: int) -> None:
                done = p.tasks[0].completed + n
                rate = done / max(time.perf_counter() - t0, 1e-9)
                p.update(task, advance=n, rate=f"{rate:,.0f} files/s")

            yield advance

    return bar()


def _bar_console(console_type):
    """The console a progress bar draws on: standard error (whether to show one is asked of it;
    standard output keeps the summary, redirected or not), the stream beneath a console script's
    text filter (the bar moves the cursor on purpose).

    Args:
        console_type: rich's ``Console``.
    """
    return console_type(file=unfiltered(sys.stderr))
