"""ξ (P2 Eq. 10) on the linearized network: the tangent-logit form equals evaluating every grid point with
``predict(..., linear_base=θ0)`` (the linearized network is exactly linear in its offset)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import two_task_setup

from repro.core.evaluation import predict
from repro.data import Example, TaskSpec
from repro.p2.function_localization import disentanglement_error

SENT = TaskSpec("xl_sent", ("negative", "positive"), label_prompts=("It was terrible.", "It was great."))
TOPIC = TaskSpec("xl_topic", ("sports", "business"), label_prompts=("This is about sports.", "This is about money."))


@pytest.fixture(scope="module")
def tiny():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield two_task_setup(SENT, TOPIC, 0.5)
    torch.set_num_threads(threads)


def _brute_force(model, pre, tau1, tau2, d1, d2, grid):
    u1, u2 = tau1 + tau2 * 0.0, tau1 * 0.0 + tau2
    base = {n: pre[n] for n in u1.names}

    def p(vec, data, task):
        return predict(model, data, task, vec.apply(pre, 1.0), linear_base=base).preds

    out = np.zeros((len(grid), len(grid)))
    for i, a in enumerate(grid):
        for j, b in enumerate(grid):
            both = u1 * a + u2 * b
            out[i, j] = ((p(both, d1, SENT.name) != p(u1 * a, d1, SENT.name)).float().mean().item()
                         + (p(both, d2, TOPIC.name) != p(u2 * b, d2, TOPIC.name)).float().mean().item())
    return out


def test_linear_xi_matches_jvp_at_every_point(tiny):
    model, pre, tau1, tau2, d1, d2 = tiny
    grid = [-3.0, 0.0, 1.5, 3.0]
    base = {n: pre[n] for n in set(tau1.names) | set(tau2.names)}
    xi = disentanglement_error(model, pre, tau1, tau2, d1, d2, SENT.name, TOPIC.name, grid, progress=False,
                               linear_base=base)
    assert xi.shape == (4, 4) and xi[1, 1] == 0.0
    np.testing.assert_allclose(xi, _brute_force(model, pre, tau1, tau2, d1, d2, grid))
    assert all(torch.equal(p, pre[n]) for n, p in model.param_dict(list(pre)).items())


def test_linear_xi_names_missing_base(tiny):
    model, pre, tau1, tau2, d1, d2 = tiny
    with pytest.raises(KeyError, match="linear_base"):
        disentanglement_error(model, pre, tau1, tau2, d1, d2, SENT.name, TOPIC.name, [0.0, 1.0], progress=False,
                              linear_base={})


@pytest.mark.parametrize("linear", [False, True])
def test_per_example_disagreement_averages_to_the_grid_mean(tiny, linear):
    model, pre, tau1, tau2, d1, d2 = tiny
    grid = [-3.0, 0.0, 3.0]
    kw = {"linear_base": {n: pre[n] for n in set(tau1.names) | set(tau2.names)}} if linear else {}
    xi = disentanglement_error(model, pre, tau1, tau2, d1, d2, SENT.name, TOPIC.name, grid, progress=False, **kw)
    same, e1, e2 = disentanglement_error(model, pre, tau1, tau2, d1, d2, SENT.name, TOPIC.name, grid,
                                         progress=False, per_example=True, **kw)
    np.testing.assert_allclose(same, xi)
    assert e1.shape == (len(d1),) and e2.shape == (len(d2),) and 0 <= e1.min() and e2.max() <= 1
    assert e1.mean() + e2.mean() == pytest.approx(xi.mean())
