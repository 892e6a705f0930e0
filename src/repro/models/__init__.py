"""Classifiers for every profile.  See :mod:`repro.models.base` for the interface."""

from repro.models.base import Classifier, layer_index, module_type
from repro.models.sentence import SentenceEmbeddingClassifier, ZeroShotHead, build_minilm, build_tiny_bert

__all__ = [
    "Classifier",
    "SentenceEmbeddingClassifier",
    "ZeroShotHead",
    "build_minilm",
    "build_tiny_bert",
    "layer_index",
    "module_type",
]
