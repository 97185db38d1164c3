"""DP-SGD: the Rényi DP of the subsampled Gaussian and the accountants built on it."""
