"""Threads for tests: run callables side by side, join them with a hang guard, and re-raise what any of them raised
in the test's own thread (a failed assertion in a worker fails the test)."""
import threading

JOIN_TIMEOUT_S = 300.0  # a hang guard, not a timing assertion: no healthy run comes near it


def run_threads(*targets) -> None:
    """Run each callable in its own thread, join them all, and re-raise the first exception any of them raised."""
    errors: list = []

    def guarded(fn):
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread below
            errors.append(exc)
    threads = [threading.Thread(target=guarded, args=(fn,), daemon=True) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_TIMEOUT_S)
    assert not any(t.is_alive() for t in threads), f"a thread still runs after {JOIN_TIMEOUT_S} s (a deadlock?)"
    if errors:
        raise errors[0]
