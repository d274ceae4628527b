"""The browser contract: one module per partner in ``js/src``: the payload codec, the vocabulary,
the report model, compare, ranks, the kernel deep dive, the widget, and the one MIME bundle the
result objects call."""
