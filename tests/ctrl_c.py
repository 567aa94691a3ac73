"""Pressing Ctrl-C in a test: SIGINT to the main thread, again and again, while a block runs."""
import contextlib
import signal
import threading
import time
import types


@contextlib.contextmanager
def pressing_ctrl_c(after: float, every: float = 0.05):
    """Send SIGINT to the main thread `after` seconds into the block, then every `every` seconds until the block
    ends (a press landing in a gc callback, as hypothesis installs one, is swallowed by Python, so one is not
    enough). Python's own Ctrl-C handler is in place meanwhile, whatever the test runner set; a press still on its
    way when the block ends is dropped. Yields a namespace whose `stopped_at` is the time.monotonic() at which the
    block ended."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    stop = threading.Event()
    presses = types.SimpleNamespace(stopped_at=None)

    def press():
        stop.wait(after)
        while not stop.is_set():
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            stop.wait(every)
    presser = threading.Thread(target=press)
    presser.start()
    try:
        yield presses
    finally:
        presses.stopped_at = time.monotonic()
        signal.signal(signal.SIGINT, lambda signum, frame: None)
        stop.set()
        presser.join()
        signal.signal(signal.SIGINT, previous)
