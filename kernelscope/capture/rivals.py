"""Other torch.profilers started while a recording runs, and which thread started them.

Kineto records one session per process: a torch.profiler started meanwhile (in another thread,
or a library's own) takes the session over, and the recording comes back empty. torch calls
``torch.autograd.profiler._run_on_profiler_start`` whenever one of its profilers starts, so a
recording wraps that function while it runs and notes who called it; the report then says
plainly which thread took the recording over, instead of only that nothing was recorded.
"""
from __future__ import annotations

import threading


class RivalStarts:
    """Notes the torch.profilers started between :meth:`watch` and :meth:`stop`.

    ``starts`` holds ``(thread name, thread id)`` of each.

    >>> import torch, threading
    >>> w = RivalStarts(torch); w.watch()
    >>> t = threading.Thread(target=lambda: torch.profiler.profile().__enter__().__exit__(None, None, None), name="rival")
    >>> t.start(); t.join(); w.stop(); w.starts[0][0]
    'rival'
    """

    def __init__(self, torch):
        self._module = torch.autograd.profiler
        self._original = getattr(self._module, "_run_on_profiler_start", None)
        self._hook = None
        self.starts: list = []
        self.ours = False    # our own profiler starting a cycle of its schedule (capture/schedule.py)

    def watch(self) -> None:
        if self._original is None or self._hook is not None:
            return    # a torch without the hook: nothing is noted (the report's note says less)
        original = self._original

        def started(*args, **kwargs):
            if not self.ours:
                self.starts.append((threading.current_thread().name, threading.get_ident()))
            return original(*args, **kwargs)
        self._hook = started
        self._module._run_on_profiler_start = started

    def stop(self) -> None:
        """Put torch's function back (unless something else has replaced it since)."""
        if self._hook is not None and getattr(self._module, "_run_on_profiler_start", None) is self._hook:
            self._module._run_on_profiler_start = self._original
        self._hook = None

    def note(self, own_thread, empty: bool) -> str | None:
        """What the report should say about them, or None when none started."""
        if not self.starts:
            return None
        name, ident = self.starts[0]
        where = "in this recording's own thread" if ident == own_thread else f"in thread {name!r}"
        more = f" (and {len(self.starts) - 1} more)" if len(self.starts) > 1 else ""
        if empty:
            return (f"nothing was recorded: another torch.profiler was started {where}{more} while this "
                    "recording ran and took it over (Kineto records one session per process); record "
                    "again without it")
        return (f"another torch.profiler was started {where}{more} while this recording ran: what ran "
                "after it started may be missing here (Kineto records one session per process)")
