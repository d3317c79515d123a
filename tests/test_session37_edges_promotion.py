"""Session 37: an ``edges`` program of the ``int_ops`` class gets fusion_alias's refusal of a result type Thunder
0.2.6 infers otherwise than eager's promotion of the traced operands (dtype_rules.py, Note [a result type Thunder
infers from a 0-d tensor's history]; here a 0-d tensor made by a reduction, ``t0.sum()``, read by an integer
``addcmul``). The class did not list that refusal, so seed 37606 #38 counted as a jit error (fuzz/gen_edges.py,
``REFUSALS``). The refusal itself is needless there (plain ``thunder.jit`` is right: Thunder also types ``b + 0``
of a bool ``b`` int8 where eager's is int64, and the two errors cancel; docs/limits.md), never a wrong dtype."""

import pytest
import torch

import fusion_alias
from fusion_alias import fuzz


def test_the_int_ops_class_documents_the_result_type_refusal():
    report = fuzz.run_fuzz(seed=37606, programs=40, only=[38], generators=("edges",), do_shrink=False)
    assert report.runs and not report.failures, report.summary()


def test_the_refusal_names_the_traced_dtypes():
    def f(b):
        t0, t1 = b + 0, b + 0
        return torch.addcmul(t1, t0.sum(), t1, value=2)

    b = torch.tensor([[True, False, True], [False, True, True]])
    assert f(b).dtype == torch.int64
    with pytest.raises(NotImplementedError, match=r"result is torch.int8 for these dtypes \(as traced\), Thunder "
                                                  r"0.2.6's trace says torch.int64"):
        fusion_alias.jit(f)(b)
