"""The one error type kernelscope raises for input it cannot read."""


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
        self.source = str(source)
        self.problem = problem
        super().__init__(f"{self.source}: {problem}")

    def __reduce__(self):
        # Rebuilt from (source, problem), so that an error raised in a worker process (the
        # worker process or a Dask cluster of ks.load_ranks) reaches the caller intact.
        return (type(self), (self.source, self.problem))
