"""The P2 method zoo (repro.p2.methods), the task-arithmetic protocol (repro.p2.arithmetic) and the §4.1 sensitivity
drivers (repro.p2.sensitivity.runs) on the smoke profile: tiny random-init BERT, generated tasks, seconds."""

from __future__ import annotations

import pytest
import torch

from repro.p2 import arithmetic as ar
from repro.p2 import methods
from repro.core.masks import Mask
from repro.profiles import get_profile
from repro.core.taskvec import TaskVector

TASKS = ("SST-2", "AGNews")


@pytest.fixture(scope="module")
def wb(tmp_path_factory):
    from repro.workbench import Workbench

    prof = get_profile("smoke", p2_tasks=TASKS)
    return Workbench(prof, artifacts_dir=tmp_path_factory.mktemp("artifacts"))


def _nnz(vec) -> int:
    return sum(int((v != 0).sum()) for v in vec.values())


def test_method_registry_names_choices():
    assert set(methods.P2_METHODS) == {"ft", "linearized", "l-lora", "lota", "talos"}
    with pytest.raises(ValueError, match="choose one of"):
        methods.method_spec("full")
    with pytest.raises(ValueError, match="choose one of"):
        ar.arithmetic_method("magic")
    # L-LoRA linearizes its LoRA branches only (the official code): evaluated as the network itself
    assert methods.METHODS["linearized"].linear and not methods.METHODS["l-lora"].linear
    assert methods.METHODS["talos"].sparse and methods.METHODS["lota"].sparse


def test_dense_methods_change_maskable_tensors_only(wb):
    maskable = set(wb.names("maskable"))
    for m in ("ft", "linearized"):
        tau = methods.finetune_method(wb, "SST-2", m)
        assert tau and set(tau) <= maskable
        assert _nnz(tau) > 0.5 * sum(wb.pre[n].numel() for n in maskable)
    lora = methods.finetune_method(wb, "SST-2", "l-lora")
    assert lora and all(".query." in n or ".value." in n for n in lora)
    # the model itself never leaves θ_pre
    for n, p in wb.model.named_parameters():
        if n in wb.pre:
            assert torch.equal(p, wb.pre[n])


def test_talos_and_lota_are_sparse_within_their_masks(wb):
    total = sum(wb.pre[n].numel() for n in wb.names("maskable"))
    mask, meta = methods.talos_mask(wb, "SST-2")
    assert abs(mask.density() - (1 - wb.profile.talos.sparsity)) < 0.01
    assert meta["report"]["rounds"] == wb.profile.talos.rounds
    tau = methods.finetune_method(wb, "SST-2", "talos")
    for n, v in tau.items():
        assert not bool((v != 0)[~mask.tensors[n]].any()), f"{n} changed outside the TaLoS mask"
    assert 0 < _nnz(tau) <= mask.count()
    lota = methods.lota_mask_from(wb, methods.finetune_method(wb, "SST-2", "ft"))
    official = total - int((1.0 - methods.LOTA_DENSITY) * total)  # entries above the official threshold
    assert 0.99 * official <= lota.count() <= official  # fewer only where |τ| ties the threshold
    tau_l = methods.finetune_method(wb, "SST-2", "lota")
    for n, v in tau_l.items():
        assert not bool((v != 0)[~lota.tensors[n]].any())
    assert methods.method_sparsity(wb, "talos") == pytest.approx(wb.profile.talos.sparsity)
    assert methods.method_sparsity(wb, "ft") == 0.0


def test_runs_are_cached(wb):
    a = methods.finetune_method(wb, "SST-2", "talos")
    files = sorted(p.name for p in wb.store.root.rglob("*.json"))
    b = methods.finetune_method(wb, "SST-2", "talos")
    assert sorted(p.name for p in wb.store.root.rglob("*.json")) == files
    assert all(torch.equal(a[n], b[n]) for n in a)


def test_linear_base_at_zero_is_the_pretrained_model(wb):
    tau = methods.finetune_method(wb, "SST-2", "linearized")
    ex = wb.task("SST-2").test[:8]
    zero = wb.predict("SST-2", "test", None, examples=ex).logits
    lin0 = wb.predict("SST-2", "test", wb.overrides(tau, 0.0), examples=ex,
                      linear_base=methods.linear_base(wb, tau)).logits
    assert torch.allclose(zero, lin0, atol=1e-5)


def test_posthoc_single_and_merged_vectors(wb):
    vecs = {t: TaskVector(methods.finetune_method(wb, t, "ft")) for t in TASKS}
    for key in ("ties", "tall", "dare", "breadcrumbs"):
        m = ar.arithmetic_method(key)
        single = m.single(vecs, "SST-2")
        merged = m.merged(vecs)
        assert single.count_nonzero() < vecs["SST-2"].count_nonzero()
        assert set(merged.names) == set(vecs["SST-2"].names)
    ties = ar.arithmetic_method("ties").single(vecs, "SST-2")
    assert ties.count_nonzero() == pytest.approx(ar.MERGERS["ties"].keep * vecs["SST-2"].numel(), rel=0.01)
    plain = ar.arithmetic_method("ft").merged(vecs)
    assert torch.allclose(plain[next(iter(plain.names))],
                          sum(v[next(iter(plain.names))] for v in vecs.values()))


def test_alpha_grid_and_settings(wb):
    talos = ar.arithmetic_method("talos")
    grid = ar.method_alphas(wb, talos, [0.0, 0.5, 1.0])
    assert grid == pytest.approx([0.0, 5.0, 10.0])  # × 1/(1 − 0.9)
    assert ar.method_alphas(wb, ar.arithmetic_method("ties"), [0.0, 1.0]) == [0.0, 1.0]
    s = ar.protocol_settings(get_profile("smoke", p2_protocol_alpha_stride=4, p2_protocol_n_val=8))
    assert s["alphas"][0] == 0.0 and s["alphas"][-1] == 1.0 and len(s["alphas"]) == 6 and s["n_val"] == 8


def test_addition_and_negation_protocol(wb):
    ev = ar.Evaluator(wb, TASKS, "RTE", n_val=8, n_test=8)
    grid = [0.0, 0.5, 1.0]
    res = ar.run_method(wb, ev, "ft", grid)
    add, neg = res["addition"], res["negation"]
    assert add["alpha"] in grid and 0 <= add["abs"] <= 1 and set(add["test"]) == set(TASKS)
    assert len(add["sweep"]) == len(grid)
    for t, r in neg["per_task"].items():
        assert r["alpha"] in grid
        # the chosen α keeps the control at >= 95 % of zero-shot on validation
        assert r["val_control"][r["alpha"]] >= 0.95 * neg["control_zero_shot_val"] - 1e-9
    again = ar.run_method(wb, ev, "ft", grid)  # cached JSON
    assert again["addition"]["abs"] == add["abs"]
    zero = ar.zero_shot_summary(ev)
    rows = ar.table1_rows({"ft": res}, zero)
    assert {r["method"] for r in rows} == {"Pre-trained (Zero-shot)", "Non-linear FT"}
    assert any(r["paper"] is not None for r in rows)  # T5-Small column of the printed table
    rows2 = ar.table2_rows({"ft": res}, zero)
    assert {r["metric"] for r in rows2} == {"targ_acc", "cont_acc"}


def test_merging_scheme_ties_without_trim_for_talos(wb):
    ev = ar.Evaluator(wb, TASKS, None, n_val=8, n_test=8)
    r = ar.merging_scheme(wb, ev, "talos", "adamerging-task", [0.0, 1.0], adamerging_steps=2)
    assert set(r["lambda_mean"]) == set(TASKS) and 0 <= r["abs"] <= 1
    with pytest.raises(ValueError, match="choose one of"):
        ar.merging_scheme(wb, ev, "talos", "median", [0.0, 1.0])


def test_sensitivity_masks_and_matrices(wb):
    from repro.p2.sensitivity import runs as sens
    masks = {t: sens.low_sensitivity_mask(wb, t, 8, fraction=0.1)[0] for t in TASKS}
    total = sum(wb.pre[n].numel() for n in wb.names("maskable"))
    assert all(m.count() == int(0.1 * total) for m in masks.values())
    sets = sens.eval_sets(wb, TASKS, 8)
    df = sens.edit_matrix(wb, masks, sets, "prune")
    assert len(df) == len(TASKS) ** 2 and set(df.columns) >= {"source", "task", "ratio", "acc", "acc_pre"}
    iou = sens.iou_matrix(masks)
    assert all(iou[iou.a == iou.b].iou == 1.0)
    rnd = sens.random_mask(wb, 0.1)
    assert isinstance(rnd, Mask) and rnd.count() == int(0.1 * total)
    with pytest.raises(ValueError, match="prune or perturb"):
        sens.edit_matrix(wb, masks, sets, "zero")


def test_negation_search_matches_the_full_grid_rule():
    """The early-stopping control search picks the α of select_negation_alpha over the whole grid."""
    import random

    from repro.p2.arithmetic import select_negation_alpha

    grid = [0.0, 0.25, 0.5, 0.75, 1.0]
    rng = random.Random(0)
    for _ in range(50):
        targ = {a: rng.choice([0.3, 0.4, 0.5]) if a else 0.6 for a in grid}
        cont = {a: rng.choice([0.5, 0.6]) if a else 0.6 for a in grid}

        class FakeEval:
            tasks, control, seed = ["T"], "C", 0

            def zero_shot(self, task, split):
                return 0.6

            def acc(self, task, split, vector, alpha, linear=False):
                return (cont if task == "C" else targ)[abs(float(alpha))]  # negation passes −α

            def scored(self, task, split, vector, alpha, linear=False):  # test numbers with per-example 0/1
                value = self.acc(task, split, vector, alpha, linear)
                return value, [1] * round(100 * value) + [0] * (100 - round(100 * value))

        vec = {"T": TaskVector({"w": torch.ones(2)})}
        got = ar.task_negation(FakeEval(), ar.arithmetic_method("ft"), vec, grid)["per_task"]["T"]["alpha"]
        assert got == select_negation_alpha(targ, cont, 0.6, 0.95)


def test_linear_accuracy_uses_the_exact_tangent(wb):
    """f_lin(θ0 + ατ) from the cached tangent equals a direct linearized evaluation at α."""
    from repro.core.evaluation import score

    tau = TaskVector(methods.finetune_method(wb, "SST-2", "linearized"))
    ev = ar.Evaluator(wb, ["SST-2"], None, n_val=16, n_test=16)
    for alpha in (1.0, -0.7, 2.5):
        got = ev.acc("SST-2", "val", tau, alpha, linear=True)
        pred = wb.predict("SST-2", "val", tau.apply(wb.pre, alpha), examples=ev.sets["SST-2"]["val"],
                          linear_base=methods.linear_base(wb, tau.tensors))
        assert got == score(pred, "acc")["value"]
    assert ev.evaluated == 2 * 16  # θ_0 once + one jvp pass, whatever the number of α


def test_ft_trains_the_familys_scope_all_of_t5_on_the_paper_families(tmp_path):
    """Issue 32 item 2: the paper's families fine-tune every parameter the official FT trains (P2Family.ft_scope
    "all": T5's shared embedding and relative attention bias too); the sparse methods stay on the maskable set."""
    from repro.workbench import Workbench

    prof = get_profile("paper-smoke").for_p2("nlp")
    assert methods.ft_scope(prof) == "all" and methods.ft_scope(get_profile("smoke")) == "maskable"
    assert methods.ft_scope(get_profile("paper").for_p2("vision")) == "all"
    assert methods.ft_scope(get_profile("cpu").for_p2("vision")) == "maskable"
    wb = Workbench(prof, artifacts_dir=tmp_path)
    full, maskable = set(wb.names("all")), set(wb.names("maskable"))
    tau, meta = methods.finetune_method_run(wb, prof.p2_tasks[0], "ft")
    assert set(tau) <= full and set(tau) - maskable
    assert "backbone.shared.weight" in tau and any("relative_attention_bias" in n for n in tau)
    assert meta["train"]["trainable_count"] == sum(wb.pre[n].numel() for n in full)
