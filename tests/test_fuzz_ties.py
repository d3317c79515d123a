"""Session 27's fuzz class: gradient-sensitive ops on tie-heavy, zero-heavy tensors written through views
(gen_ties.py, Note [ties and zeros in the fuzzer]). The class is generated (its op families and tie-valued
bases counted), drawn only when asked for, and a few fixed programs run through fusion_alias without a failure."""

import collections
import re

import pytest
import torch

import fusion_alias
from fusion_alias import fuzz
from fusion_alias.fuzz.gen_ties import FAMILIES
from fusion_alias.fuzz.hazard import _build_inputs

needs_jit = pytest.mark.skipif(not hasattr(fusion_alias, "jit"), reason="fusion_alias.jit does not exist yet")

SEED = 50001
TIE_PREP = re.compile(r"^\(x\d+\.data\.(mul_\([124]\)\.round_\(\)\.div_\([124]\)|round_\(\)|zero_\(\))")


def _ties(n=100, grad=False):
    return [fuzz.generate_program(SEED, i, generators=("ties",), grad=grad) for i in range(n)]


def _failures(report):
    return "\n\n".join(f"{f.status} [{f.schedule}]\n{f.shrunk_repro or f.repro}\n{f.detail}" for f in report.failures)


def test_ties_generator_draws_every_family():
    ps = _ties()
    assert all(p.kind == "ties" and p.refusals == () for p in ps)
    code = "\n".join(s.code for p in ps for s in p.stmts)
    counts = {k: len(re.findall(v, code)) for k, v in FAMILIES.items()}
    assert all(n >= 1 for n in counts.values()), counts
    for k in ("max_dim", "min_dim", "prod", "normalize", "clamp", "pow", "lerp", "minimum_maximum"):
        assert counts[k] >= 3, counts
    assert sum(counts.values()) >= 150, counts
    # in-place writes, some through views the body made, then reads of memory they share
    writes = [s for p in ps for s in p.stmts if s.writes]
    assert len(writes) >= 60
    assert sum(any(t.view_of == s.writes for t in p.stmts) for p in ps for s in p.stmts if s.writes) >= 10
    assert sum(p.dtypes != () for p in ps) >= 5  # some float64 programs


def test_ties_bases_hold_ties_and_zeros():
    ps = _ties(30)
    zero_rows = repeated = 0
    for p in ps:
        assert all(TIE_PREP.match(e) for _, e in p.args), p.args
        bases, _ = _build_inputs(p)
        for b in bases:
            assert b.dtype in (torch.float32, torch.float64)
            assert bool(((b * 4).round() == b * 4).all()), b  # multiples of 1/4 (or 1/2, 1)
            assert b.abs().max() <= 1
            assert not bool(torch.signbit(b[b == 0]).any())  # no -0.0
            flat = b.flatten()
            repeated += flat.numel() - flat.unique().numel()
            zero_rows += int((b.reshape(b.shape[0], -1) == 0).all(1).any())
    assert zero_rows >= 8 and repeated >= 200, (zero_rows, repeated)


def test_ties_generator_is_drawn_only_when_asked_for():
    assert all(fuzz.generate_program(SEED, i).kind != "ties" for i in range(40))
    assert all(fuzz.generate_program(SEED, i, grad=True).kind != "ties" for i in range(40))


def test_ties_programs_agree_with_themselves_eagerly():
    report = fuzz.run_fuzz(programs=20, seed=SEED, system="eager", generators=("ties",), grad=True)
    assert not report.failures and not report.jit_errors, _failures(report)
    assert report.ok >= 15, report.summary()  # (--grad: writes that break eager's backward are dropped)


# fixed programs of seed 50001 that hold max/min(dim), prod, normalize, clamp, pow and lerp on tie values
# (#18: a.pow(0) as the only use of a, which raised NameError in the backward until fixed in session 27)
BOUNDED = [0, 1, 5, 7, 18]


@needs_jit
@pytest.mark.parametrize("grad", (False, True))
def test_ties_generator_bounded(grad):
    report = fuzz.run_fuzz(seed=SEED, only=BOUNDED, generators=("ties",), grad=grad, schedules=("reads-first",),
                           log=print, do_shrink=False)
    print(report.summary())
    assert not report.failures and not report.jit_errors, _failures(report)
    assert report.ok >= 3, report.summary()
