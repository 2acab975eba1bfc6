"""models.cli: the `microtensor` command line.

It is the one place that ties microtensor, nn, models and viz together.
"""
