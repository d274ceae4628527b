"""A recording's stop, called in another thread, handed to the main thread that started it.

torch.profiler keeps its recording state per thread (the callbacks that record ops and the
state that holds them): stopped from another thread it stays on, and what it recorded can be
collected only in the thread that started it. So a recording started in the main thread (a
notebook cell, a script) that is stopped from another thread sends the main thread a signal
(:data:`SIGNAL`); the handler (installed at the first recording started in the main thread,
where nothing else handles that signal) stops the recording there, between two bytecodes: a
sleep, a ``join()`` or a wait of the main thread is interrupted for it and then goes on. The
stopping thread waits for it and gets the report. A recording started in another thread than
the main one can only be stopped there (no signal reaches a thread of our choosing).
"""
from __future__ import annotations

import signal
import threading

# SIGUSR2: nothing in Python, Jupyter or torch handles it; left alone where something else does.
SIGNAL = getattr(signal, "SIGUSR2", None)
# How long the stopping thread waits for the main thread to take the stop (it may be inside a
# long call that does not return to Python), before it gives up and nothing is stopped.
WAIT_S = 60.0

_lock = threading.Lock()
_pending = None          # the stop the main thread is asked to run
_installed = False


class _Request:
    def __init__(self, fn):
        self.fn, self.result, self.error = fn, None, None
        self.done = threading.Event()


def install() -> bool:
    """In the main thread: handle :data:`SIGNAL` from now on, unless something else already
    does. Whether the main thread can be handed a stop (as :func:`ready` says after it).

    >>> install() == ready()
    True
    """
    global _installed
    if _installed:
        return signal.getsignal(SIGNAL) is _on_signal
    if SIGNAL is None or not hasattr(signal, "pthread_kill") or threading.current_thread() is not threading.main_thread():
        return False
    try:
        if signal.getsignal(SIGNAL) not in (signal.SIG_DFL, None):
            return False
        signal.signal(SIGNAL, _on_signal)
    except (ValueError, OSError):
        return False
    _installed = True   # kept: a stop may be handed at any time later, and a handler with nothing to do does nothing
    return True


def ready() -> bool:
    """Whether a stop can be handed to the main thread now."""
    return _installed and signal.getsignal(SIGNAL) is _on_signal


def run_in_main(fn, wait_s: float = WAIT_S):
    """``fn()`` run in the main thread (see the module docstring); its result, or its exception
    raised here. A RuntimeError, with nothing run, if the main thread does not take it within
    ``wait_s`` seconds."""
    global _pending
    req = _Request(fn)
    with _lock:
        if _pending is not None:
            raise RuntimeError("a stop is already being handed to the main thread")
        _pending = req
    signal.pthread_kill(threading.main_thread().ident, SIGNAL)
    if not req.done.wait(wait_s):
        with _lock:
            taken = _pending is not req
            if not taken:
                _pending = None
        if not taken:
            raise RuntimeError(f"the main thread, which started the recording, did not take the stop within "
                               f"{wait_s:.0f} s (it is inside a call that does not return to Python); "
                               "nothing was stopped: stop it there")
        req.done.wait()    # the main thread is running it: wait for it to end
    if req.error is not None:
        raise req.error
    return req.result


def _on_signal(signum, frame):
    global _pending
    with _lock:
        req, _pending = _pending, None
    if req is None:
        return
    try:
        req.result = req.fn()
    except BaseException as e:  # noqa: BLE001 - handed back to the thread that asked
        req.error = e
    finally:
        req.done.set()
