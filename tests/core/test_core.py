"""Masks, artifacts, metrics, the evaluation loop and the training loop."""

from __future__ import annotations

import pytest
import torch

from repro.artifacts import ArtifactStore, config_hash, load_tensors, save_tensors
from repro.core.evaluation import Predictions, evaluate, predict
from repro.core.finetune import lr_at, train
from repro.core.masks import TYPE_ORDER, Mask, placement_rows
from repro.core.metrics import accuracy, agreement, expected_calibration_error, f1_binary
from repro.profiles import FinetuneRecipe, get_profile


def test_ece_hand_made_case():
    # 4 examples: confidences 0.9 (correct), 0.9 (wrong), 0.6 (correct), 1.0 (correct)
    probs = torch.tensor([[0.9, 0.1], [0.9, 0.1], [0.4, 0.6], [0.0, 1.0]])
    labels = torch.tensor([0, 1, 1, 1])
    # bins (M=10): 0.9 -> bin 8 (0.8,0.9]; 0.6 -> bin 5; 1.0 -> last bin 9
    # bin 8: acc 0.5, conf 0.9 -> 2/4 * 0.4 = 0.2 ; bin 5: acc 1, conf 0.6 -> 1/4*0.4 = 0.1 ; bin 9: 1/4*0 = 0
    assert abs(expected_calibration_error(probs, labels, n_bins=10) - 0.3) < 1e-6
    # perfectly calibrated and confident
    assert expected_calibration_error(torch.eye(3), torch.arange(3)) == 0.0


def test_accuracy_f1_agreement():
    p, y = torch.tensor([1, 1, 0, 0]), torch.tensor([1, 0, 0, 1])
    assert accuracy(p, y) == 0.5
    assert abs(f1_binary(p, y) - 0.5) < 1e-9
    assert agreement(p, torch.tensor([1, 1, 1, 1])) == 0.5


def test_mask_topk_random_algebra_and_storage(tmp_path):
    scores = {"a": torch.arange(6.0).reshape(2, 3), "b": torch.tensor([10.0, -1.0])}
    m = Mask.top_k(scores, 3)
    assert m.count() == 3 and m.tensors["b"].tolist() == [True, False]
    assert m.tensors["a"].reshape(-1).tolist() == [False, False, False, False, True, True]
    low = Mask.top_k(scores, 2, largest=False)
    assert low.tensors["b"].tolist() == [False, True] and bool(low.tensors["a"].reshape(-1)[0])
    assert abs(m.density() - 3 / 8) < 1e-12
    r = Mask.random(Mask.shapes_of(scores), 5, seed=1)
    assert r.count() == 5 and r == Mask.random(Mask.shapes_of(scores), 5, seed=1)
    assert (m | low).count() == 5 and (m & low).count() == 0
    assert m.overlap(m) == 1.0 and m.iou(low) == 0.0
    assert abs((m | r).count() - (m.count() + r.count() - (m & r).count())) == 0
    m.save(tmp_path / "mask", meta={"note": "x"})
    assert Mask.load(tmp_path / "mask") == m


def test_mask_overlap_is_asymmetric():
    shapes = {"w": (10,)}
    a = Mask({"w": torch.tensor([1, 1, 0, 0, 0, 0, 0, 0, 0, 0], dtype=torch.bool)}, shapes)
    b = Mask({"w": torch.tensor([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], dtype=torch.bool)}, shapes)
    assert a.overlap(b) == 0.5 and b.overlap(a) == 1.0
    assert abs(a.iou(b) - 0.5) < 1e-12


def test_mask_placement(tiny_model):
    names = tiny_model.graftable_names()
    full = Mask.full(Mask.shapes_of(tiny_model.param_dict(names)))
    rows = full.placement(run="full")
    assert {r["layer"] for r in rows} == {0, 1} and abs(sum(r["share_of_region"] for r in rows) - 1) < 1e-9
    assert {"Q", "K", "V", "O", "FFN-in", "FFN-out", "LayerNorm"} <= {r["type"] for r in rows}
    assert all(r["run"] == "full" and r["share_of_group"] == 1.0 for r in rows)
    order = [(r["layer"], TYPE_ORDER.index(r["type"])) for r in rows]
    assert order == sorted(order)  # by layer, then P1 Fig. 10 type order
    assert placement_rows(full, run="full") == rows  # the function form is the same function


def test_artifact_store_atomic_roundtrip(tmp_path):
    store = ArtifactStore(tmp_path)
    cfg = {"task": "sent", "seed": 1}
    path = store.path("vec", cfg)
    save_tensors(path, {"x": torch.ones(3)}, {"note": "hi"})
    t, meta = load_tensors(path)
    assert torch.equal(t["x"], torch.ones(3)) and meta["note"] == "hi" and len(meta["_store"]["sha256"]) == 64
    assert config_hash(cfg) == config_hash({"seed": 1, "task": "sent"})
    assert not list(tmp_path.rglob("*.tmp"))


def test_predict_overrides_change_logits(tiny_model, sent_examples):
    base = predict(tiny_model, sent_examples, "sent")
    name = tiny_model.graftable_names()[0]
    zero = {name: torch.zeros_like(dict(tiny_model.named_parameters())[name])}
    other = predict(tiny_model, sent_examples, "sent", overrides=zero)
    assert base.logits.shape == (8, 2) and not torch.equal(base.logits, other.logits)
    again = predict(tiny_model, sent_examples, "sent")
    assert torch.equal(base.logits, again.logits)  # overrides leave the model untouched
    out = evaluate(tiny_model, sent_examples, "sent")
    assert 0 <= out["ece"] <= 1 and 0 <= out["acc"] <= 1


def test_predict_sorts_by_length_but_returns_input_order(tiny_model, sent_examples):
    from repro.core.evaluation import length_order

    order = length_order(sent_examples)
    lengths = [len(sent_examples[i].text_a) for i in order]
    assert sorted(order) == list(range(8)) and lengths == sorted(lengths)
    batched = predict(tiny_model, sent_examples, "sent", batch_size=3)  # sorted, then padded per batch of 3
    one_by_one = torch.cat([predict(tiny_model, [e], "sent").logits for e in sent_examples])
    assert torch.allclose(batched.logits, one_by_one, atol=1e-5)  # row i is still example i
    assert batched.labels.tolist() == [e.label for e in sent_examples]


def test_an_eval_set_is_collated_once_and_predicts_the_same(tiny_model, sent_examples):
    """An EvalSet (a set scored many times, e.g. over an α grid) gives the logits of plain examples, and builds its
    batches once."""
    from repro.core.evaluation import eval_set

    calls = []
    collate = tiny_model.collate
    tiny_model.collate = lambda task, chunk, train=False: calls.append(len(chunk)) or collate(task, chunk, train=train)
    try:
        prepared = eval_set(tiny_model, sent_examples, "sent", batch_size=3)
        assert calls == [3, 3, 2] and len(prepared) == 8
        name = tiny_model.graftable_names()[0]
        zero = {name: torch.zeros_like(dict(tiny_model.named_parameters())[name])}
        for overrides in (None, zero):
            calls.clear()
            plain = predict(tiny_model, sent_examples, "sent", overrides=overrides, batch_size=3)
            assert calls == [3, 3, 2]  # plain examples are collated on every call ...
            calls.clear()
            once = predict(tiny_model, prepared, "sent", overrides=overrides)
            assert calls == []  # ... a prepared set never again
            assert torch.equal(plain.logits, once.logits) and torch.equal(plain.labels, once.labels)
        with pytest.raises(ValueError, match="prepared for task 'sent'"):
            predict(tiny_model, prepared, "other")
    finally:
        del tiny_model.collate


def test_the_prediction_memo_runs_only_unseen_examples_of_a_model_state(tiny_model, sent_examples):
    """A model state scored again on the same examples, or on a subset, runs nothing; another state (overrides, an
    in-place parameter change, a linearization point) runs again; the logits equal a direct call's."""
    from repro.core.evaluation import PredictionMemo, eval_set

    memo = PredictionMemo()
    calls = []
    collate = tiny_model.collate
    tiny_model.collate = lambda task, chunk, train=False: calls.append(len(chunk)) or collate(task, chunk, train=train)
    try:
        direct = predict(tiny_model, sent_examples, "sent", batch_size=3)
        calls.clear()
        first = memo.predict(tiny_model, sent_examples, "sent", batch_size=3)
        assert sum(calls) == 8
        assert torch.allclose(first.logits, direct.logits, atol=1e-6) and torch.equal(first.labels, direct.labels)
        calls.clear()
        subset = memo.predict(tiny_model, sent_examples[5:] + sent_examples[:2], "sent", batch_size=3)
        assert calls == [] and (memo.reused, memo.run) == (5, 8)
        assert torch.equal(subset.logits, torch.cat([first.logits[5:], first.logits[:2]]))
        assert subset.labels.tolist() == [e.label for e in sent_examples[5:] + sent_examples[:2]]

        own = dict(tiny_model.named_parameters())
        gen = torch.Generator().manual_seed(0)
        shift = {n: torch.randn(own[n].shape, generator=gen) for n in tiny_model.graftable_names()}
        moved = {n: own[n] + d for n, d in shift.items()}
        calls.clear()
        other = memo.predict(tiny_model, sent_examples, "sent", overrides=moved, batch_size=3)
        assert sum(calls) == 8 and not torch.allclose(other.logits, first.logits, atol=1e-3)
        assert torch.allclose(other.logits, predict(tiny_model, sent_examples, "sent", moved).logits, atol=1e-5)
        calls.clear()
        memo.predict(tiny_model, sent_examples, "sent", linear_base={n: own[n].detach() for n in shift}, batch_size=3)
        assert sum(calls) == 8  # linearized around a point: another state
        with torch.no_grad():
            for n, d in shift.items():
                own[n].add_(d)  # the model changed in place to the overridden state: the same state, by content
        try:
            calls.clear()
            again = memo.predict(tiny_model, sent_examples, "sent", batch_size=3)
            assert calls == [] and torch.equal(again.logits, other.logits)
            with torch.no_grad():
                for n, d in shift.items():
                    own[n].add_(d)  # and once more: another state
            calls.clear()
            memo.predict(tiny_model, sent_examples, "sent", batch_size=3)
            assert sum(calls) == 8
        finally:
            with torch.no_grad():
                for n, d in shift.items():
                    own[n].sub_(2 * d)
    finally:
        del tiny_model.collate
    assert PredictionMemo.applies(sent_examples) and not PredictionMemo.applies([])
    assert not PredictionMemo.applies(eval_set(tiny_model, sent_examples, "sent"))


def test_predictions_correct_is_per_example_argmax_equals_label():
    pred = Predictions(logits=torch.tensor([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0]]), labels=torch.tensor([0, 0, 1]))
    c = pred.correct()
    assert c.dtype.name == "uint8" and c.tolist() == [1, 0, 0]


def test_lr_schedule():
    r = FinetuneRecipe(lr=1.0, steps=10, warmup_steps=2, schedule="cosine")
    assert lr_at(0, r) == 0.5 and lr_at(1, r) == 1.0 and lr_at(2, r) == 1.0 and lr_at(10, r) < 1e-9


def _snapshot(model):
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def test_masked_finetune_leaves_outside_entries_bitwise_equal(tiny_model, sent_examples):
    names = tiny_model.graftable_names()
    shapes = Mask.shapes_of(tiny_model.param_dict(names))
    mask = Mask.random(shapes, 300, seed=0)
    for opt in ("sgd", "adamw"):
        before = _snapshot(tiny_model)
        recipe = FinetuneRecipe(optimizer=opt, lr=1e-2, batch_size=4, steps=6, weight_decay=0.1, eval_every=3)
        res = train(tiny_model, {"sent": sent_examples}, recipe, mask, dev_data={"sent": sent_examples}, progress=False)
        assert res.trainable_count == 300
        changed = 0
        for n, p in tiny_model.named_parameters():
            diff = p.detach() != before[n]
            if n in mask.tensors:
                assert not bool((diff & ~mask.tensors[n]).any()), f"{opt}: {n} changed outside the mask"
                changed += int(diff.sum())
            else:
                assert not bool(diff.any()), f"{opt}: frozen tensor {n} changed"
        assert changed > 0


def test_dense_finetune_learns(tiny_model, sent_examples):
    names = tiny_model.graftable_names()
    before = evaluate(tiny_model, sent_examples, "sent")
    recipe = FinetuneRecipe(optimizer="adamw", lr=3e-3, batch_size=8, steps=40, weight_decay=0.0, eval_every=0)
    train(tiny_model, {"sent": sent_examples}, recipe, names, progress=False)
    after = evaluate(tiny_model, sent_examples, "sent")
    assert after["acc"] == 1.0 and after["acc"] >= before["acc"]


def test_multitask_and_l1_and_bitfit(tiny_model, sent_examples, topic_examples):
    names = tiny_model.bias_names(tiny_model.graftable_names())
    before = _snapshot(tiny_model)
    recipe = FinetuneRecipe(optimizer="sgd", lr=1e-2, batch_size=2, steps=6, eval_every=0)
    res = train(tiny_model, {"sent": sent_examples, "topic": topic_examples}, recipe, names, l1_lambda=1e-3,
                progress=False)
    assert {r["task"] for r in res.history} <= {"sent", "topic"}
    for n, p in tiny_model.named_parameters():
        if not n.endswith("bias"):
            assert torch.equal(p, before[n])


def test_linearized_forward_equals_model_at_init(tiny_model, sent_examples):
    names = tiny_model.graftable_names()
    theta0 = {n: p.detach().clone() for n, p in tiny_model.named_parameters() if n in names}
    a = predict(tiny_model, sent_examples, "sent").logits
    b = predict(tiny_model, sent_examples, "sent", linear_base=theta0).logits
    assert torch.allclose(a, b, atol=1e-5)
    recipe = FinetuneRecipe(optimizer="adamw", lr=1e-3, batch_size=4, steps=3, weight_decay=0.0, eval_every=0)
    res = train(tiny_model, {"sent": sent_examples}, recipe, names, linearized=True, progress=False)
    assert len(res.history) == 3


def test_profiles_reject_unknown():
    import pytest

    with pytest.raises(ValueError, match="choose one of"):
        get_profile("gpu")
    with pytest.raises(KeyError, match="valid"):
        get_profile("smoke", not_a_field=1)


def test_multitask_batches_come_from_a_uniformly_random_task(tiny_model, sent_examples, topic_examples, monkeypatch):
    """P1 App. C.1: each batch from "a randomly chosen dataset" (uniform), not in proportion to the task's size."""
    import repro.core.finetune as F

    drawn: dict[str, list] = {}

    def capture(model, plan, **kw):  # record the drawn (task, batch) plan, train no step
        drawn[kw.get("tag", "run")] = [t for t, _ in plan]
        return iter(())

    monkeypatch.setattr(F, "batches", capture)
    small, large = sent_examples[:4], (topic_examples * 40)[:160]  # a 40x size ratio
    recipe = FinetuneRecipe(optimizer="sgd", lr=1e-3, batch_size=2, steps=4000, eval_every=0)
    names = [n for n, _ in tiny_model.named_parameters()][:2]
    shares = {}
    for rule in ("uniform", "size"):
        train(tiny_model, {"sent": small, "topic": large}, recipe, names, progress=False, task_sampling=rule)
        tasks = drawn.pop("run")
        assert len(tasks) == 4000
        shares[rule] = tasks.count("sent") / len(tasks)
    assert abs(shares["uniform"] - 0.5) < 0.03  # 4000 draws: sd 0.008
    assert abs(shares["size"] - 4 / 164) < 0.01
    with pytest.raises(ValueError, match="task_sampling"):
        train(tiny_model, {"sent": small}, recipe, names, progress=False, task_sampling="round-robin")
