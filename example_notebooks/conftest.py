"""nbval settings for the tutorial notebooks: use the sanitize file beside them wherever pytest runs."""
from pathlib import Path


def pytest_configure(config):
    # nbval opens --nbval-sanitize-with relative to the working directory; an absolute path makes
    # `python -m pytest` work from any directory. A path given on the command line wins.
    if getattr(config.option, "nbval_sanitize_with", "") is None:
        config.option.nbval_sanitize_with = str(Path(__file__).with_name("sanitize.cfg"))
