"""Session 36 (helper): an edges program's refusal of an identity test of ``contiguous()`` is a documented one
(gen_edges.py, ``IDENTITY_REFUSALS``): the identity spelling is drawn in every edges program, and ``--grad`` fuzz seed
31056 #17 (``a is not t0.real`` of ``t0 = a.contiguous(memory_format=torch.channels_last)``) was counted as a jit
error (plain ``thunder.jit`` returns a wrong value there)."""

import warnings

from fusion_alias import fuzz
from fusion_alias.fuzz import driver


def test_the_identity_refusal_is_documented_in_every_edges_class():
    detail = ("call 1 (forward) raised fusion_alias.errors.AliasInputError:\nfusion_alias.errors.AliasInputError: "
              "fusion_alias: an identity test (`is`, `id()`) of contiguous() of a tensor is not supported: eager returns "
              "the tensor itself or a new one by its layout")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = fuzz.generate_program(31056, 17, generators=fuzz.GENERATORS, grad=True)
    assert p.kind == "edges" and p.refusals is not None
    assert driver._documented_refusal(p, detail)
    assert driver._documented_refusal(p.replace(refusals=()), detail)
    assert not driver._documented_refusal(p.replace(refusals=()), detail.replace("an identity test", "a test"))


def test_seed_31056_17_is_refused_not_a_jit_error():
    report = fuzz.run_fuzz(programs=18, seed=31056, grad=True, schedules=("reads-first",), only=[17], do_shrink=False,
                           log=lambda *a: None)
    assert not report.jit_errors and not report.failures, report.summary()
