"""Build the classifier a profile asks for."""

from __future__ import annotations

from repro.models.base import Classifier
from repro.profiles import Profile


def build_model(profile: Profile, seed: int = 0) -> Classifier:
    """A fresh pre-trained (or, for smoke, random-init) classifier with no task heads yet."""
    from repro.models import sentence

    if profile.model == "minilm":
        return sentence.build_minilm(max_length=profile.max_length, logit_scale=profile.logit_scale)
    if profile.model == "tiny-bert":
        return sentence.build_tiny_bert(seed=seed, max_length=profile.max_length, logit_scale=profile.logit_scale)
    raise ValueError(f"unknown model {profile.model!r}; choose minilm, tiny-bert (more are added by repro.models.hub)")
