"""Result objects: a Report (one run), its saved-file format, a Comparison of two runs and a
RankReport of many ranks."""
