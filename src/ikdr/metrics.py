"""Evaluation metrics of ikdr."""
from ._ksvd_metrics import singular_alignment

__all__ = ["singular_alignment"]
