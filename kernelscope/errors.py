"""The one error type kernelscope raises for input it cannot read."""

import re

# Control characters (C0 but tab and newline, DEL, C1): a kernel or file name carrying a terminal
# escape (ESC ] title, ESC [2J) would otherwise act on the terminal that prints the report.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    r"""``text`` with control characters shown as U+FFFD, so that printing it cannot drive the terminal.

    >>> printable("k\x1b]0;pwned\x07 ok\n")
    'k\ufffd]0;pwned\ufffd ok\n'
    """
    return _CONTROL.sub("\ufffd", text)


class TraceError(ValueError):
    """A trace, export or report file that cannot be read.

    The message names the file and what was wrong with it, e.g.::

        >>> import kernelscope as ks
        >>> ks.load("missing.json")
        Traceback (most recent call last):
            ...
        kernelscope.errors.TraceError: missing.json: no such file
    """

    def __init__(self, source, problem):
        # Names come from the input (file names, kernel names): an escape in one must not drive
        # the terminal that prints the error.
        self.source = printable(str(source))
        self.problem = printable(str(problem))
        super().__init__(f"{self.source}: {self.problem}")

    def __reduce__(self):
        # Rebuilt from (source, problem), so that an error raised in a worker process (the
        # worker process or a Dask cluster of ks.load_ranks) reaches the caller intact.
        return (type(self), (self.source, self.problem))
