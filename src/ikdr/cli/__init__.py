"""The ``ikdr`` command line: ``ikdr reduce|altcluster|ksvd|knet|info``.

The estimators are imported by the subcommand that runs them, so that
``ikdr --help`` and ``ikdr info`` start without loading them.
"""
from .commands import main

__all__ = ["main"]
