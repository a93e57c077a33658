"""Private utilities shared by every layer: validation, typing aliases, row
sampling, labels, progress reports and the small dense network of KNet and
the Kernel Dependence Network. Nothing here imports another ikdr module
except :mod:`ikdr._config`."""
