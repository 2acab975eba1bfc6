"""models.cli: the `microtensor` command line, the one place that ties microtensor, nn, models and viz together."""
