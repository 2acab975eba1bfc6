"""Built-in tasks that need no download: `dates`, the encoder-decoder's dates in words -> ISO."""
