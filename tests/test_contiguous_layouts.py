"""``.contiguous()``: an alias or a copy as eager decides it from the call's layouts, or a clear refusal.

Note [contiguous() of an intermediate is itself where eager's layout is contiguous] (layouts.py).
Every program runs in every reference schedule on fresh inputs; it either matches eager (outputs and
inputs after the call) or, where marked, raises ``ViewLayoutError`` saying "not supported".
"""

import warnings

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from fusion_alias.errors import AliasInputError
from fusion_alias.layout_checks import ViewLayoutError

warnings.filterwarnings("ignore")


def RM():
    return torch.arange(4.0).reshape(2, 2)


def CM():
    return torch.arange(4.0).reshape(2, 2).t()


def CM3():
    return torch.ones(3, 3).t()


def CL():
    return torch.arange(8.0).reshape(1, 2, 2, 2).contiguous(memory_format=torch.channels_last)


def NC4():
    return torch.arange(8.0).reshape(1, 2, 2, 2)


# ---- the hostile12 class K repros: eager's alias exists only because of an intermediate's layout
def clone_T_contig(b):
    t0 = b.clone(); t1 = t0.t().contiguous(); t0.add_(1); return t1 * 1


def exp_mT_contig_write(b):
    t0 = b.exp(); t1 = t0.mT.contiguous(); t1.zero_(); return t0 * 1


def zeros_like_T_contig(b):
    t0 = torch.zeros_like(b); t1 = t0.t().contiguous(); t0.add_(1); return t1 * 1


def to_f64_T_contig(b):
    t0 = b.to(torch.float64); t1 = t0.t().contiguous(); t0.add_(1); return t1 * 1


def channels_last_contig_cl(x):
    y = x * 2; z = y.contiguous(memory_format=torch.channels_last); y.add_(1); return z * 1


def fuzz19407_6(b):
    t0 = b * 2; t1 = t0.t().contiguous(); t0.sub_(1.0); return t1


def empty_like_T_contig(b):  # empty_like reaches the trace as empty: its layout is unknown, refused when written
    t0 = torch.empty_like(b); t0.copy_(b); t1 = t0.t().contiguous(); t0.add_(1); return t1 * 1


REPROS = [(empty_like_T_contig, CM), (clone_T_contig, CM), (exp_mT_contig_write, CM), (zeros_like_T_contig, CM), (to_f64_T_contig, CM),
          (channels_last_contig_cl, CL), (fuzz19407_6, CM3)]


# ---- eager-valid neighbours that must run
def no_write(b):
    t0 = b * 2; return t0.t().contiguous() + 1


def no_write_returned(b):
    t0 = b * 2; return t0.t().contiguous(), t0


def input_contig_write(b):
    y = b.contiguous(); y.add_(1); return b * 1


def input_contig_write_src(b):
    y = b.contiguous(); b.add_(1); return y * 1


def input_T_contig_write(b):
    y = b.t().contiguous(); y.add_(1); return b * 1


def input_T_contig_write_src(b):
    y = b.t().contiguous(); b.add_(1); return y * 1


def input_row_contig_write(b):
    y = b[0].contiguous(); y.add_(1); return b * 1


def input_contig_returned(b):
    y = b.contiguous(); y.add_(1); return y


def clone_contig(b):  # clone keeps the input's layout: a copy for column-major b, b's clone itself for row-major
    t0 = b.clone(); t1 = t0.contiguous(); t0.add_(1); return t1 * 1


def input_cl_contig_cl(b):
    y = b.contiguous(memory_format=torch.channels_last); y.add_(1); return b * 1


def contig_then_view(b):  # a copy that eager makes contiguous: its view(-1) must not raise
    y = b.t().contiguous(); z = y.view(-1); z.add_(1); return y * 1, b * 1


def intermediate_contiguous_contig(b):  # eager and the run agree (contiguous both): an alias, written
    t0 = b * 2; t1 = t0.contiguous(); t1.add_(1); return t0 * 1


def zeros_like_no_write(b):
    t0 = torch.zeros_like(b); return t0.t().contiguous() + b


def strided_dtype_view_contig(b):  # fuzz seed 20508 #71 (layout): view(dtype) keeps b[:, ::2]'s strides, a copy
    t = b[:, ::2].view(torch.int32).contiguous(); b.mul_(2.0); return t


def detached_dtype_view_contig(b):
    t = b.detach()[:, ::2].view(torch.int32).view(torch.float32).contiguous(); b[:, 0].add_(1.0); return t * 1


def rows_u8_view_contig(b):  # another element size: (2, 16) with b[::2]'s row stride, a copy
    t = b[::2].view(torch.uint8).contiguous(); b.neg_(); return t


def T_dtype_view_contig_write(b):  # view(dtype) of a contiguous input: contiguous() is the view itself, written
    t = b.view(torch.int32).contiguous(); t.bitwise_xor_(1); return b * 1


def real_contig(c):  # c.real has strides doubled: contiguous() copies (session 17 hand probe, was the view)
    t = c.real.contiguous(); c.mul_(2); return t


def imag_contig(c):
    t = c.imag.contiguous(); c.mul_(2); return t


def view_as_real_contig(c):  # (4, 4, 2) contiguous: the view itself, refused as unknown before
    t = torch.view_as_real(c).contiguous(); c.mul_(2); return t


def dtype_views_flatten_then_write(b):
    t0 = b.view(torch.int32).view(torch.float32).flatten(); b.view(torch.int32).bitwise_and_(2147483647); return t0


def CPLX():
    return torch.complex(torch.linspace(-1, 1, 16), torch.linspace(2, 3, 16)).reshape(4, 4)


def RAMP4():
    return torch.linspace(-2, 2, 16).reshape(4, 4)


RUN = [(strided_dtype_view_contig, RAMP4), (detached_dtype_view_contig, RAMP4), (rows_u8_view_contig, RAMP4),
       (T_dtype_view_contig_write, RAMP4), (real_contig, CPLX), (imag_contig, CPLX), (real_contig, lambda: CPLX().t()),
       (view_as_real_contig, CPLX), (dtype_views_flatten_then_write, CM), (dtype_views_flatten_then_write, RM),
       (zeros_like_no_write, CM), (no_write, CM), (no_write, RM), (no_write_returned, CM), (input_contig_write, RM), (input_contig_write, CM),
       (input_contig_write_src, RM), (input_contig_write_src, CM), (input_T_contig_write, RM),
       (input_T_contig_write, CM), (input_T_contig_write_src, RM), (input_T_contig_write_src, CM),
       (input_row_contig_write, RM), (input_row_contig_write, CM), (input_contig_returned, RM),
       (clone_contig, CM), (clone_contig, RM), (input_cl_contig_cl, CL), (input_cl_contig_cl, NC4),
       (contig_then_view, RM), (contig_then_view, CM), (intermediate_contiguous_contig, RM),
       (clone_T_contig, RM), (fuzz19407_6, lambda: torch.ones(3, 3)), (channels_last_contig_cl, NC4)]


def _tensors(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _check(fn, mk, schedule) -> str:
    b_eager = mk()
    expected = _tensors(fn(b_eager))
    b = mk()
    try:
        got = _tensors(fusion_alias.jit(fn, backend="reference", schedule=schedule)(b))
    except ViewLayoutError as e:
        assert "not supported" in str(e) and "Workaround" in str(e), str(e)
        return "refused"
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and torch.equal(g, e), (fn.__name__, g, e)
    assert torch.equal(b, b_eager), (fn.__name__, b, b_eager)
    return "ok"


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn,mk", REPROS, ids=[f.__name__ for f, _ in REPROS])
def test_repro_matches_eager_or_refuses(fn, mk, schedule):
    _check(fn, mk, schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("fn,mk", RUN, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(RUN)])
def test_neighbour_runs_and_matches_eager(fn, mk, schedule):
    assert _check(fn, mk, schedule) == "ok"


def test_refusal_is_an_alias_input_error_with_the_workaround():
    with pytest.raises(AliasInputError, match=r"contiguous\(\) returns .* itself in eager PyTorch only because"):
        fusion_alias.jit(fuzz19407_6, backend="reference")(CM3())


def test_written_through_result_is_refused_not_lost():
    # eager: t0 becomes zeros through the alias; before the fix fusion_alias left t0 unchanged
    with pytest.raises(ViewLayoutError, match="not supported"):
        fusion_alias.jit(exp_mT_contig_write, backend="reference")(CM())


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_view_as_another_dtype_is_checked_as_eager_checks_it(schedule):
    # hostile probe 14: x.view(torch.int16) of a float32 (4,) is (8,); it was refused as a shape view eager rejects
    def fn(x):
        x.view(torch.int16)[::2].bitwise_and_(0)
        return x.view(torch.int16) * 1

    jitted = fusion_alias.jit(fn, backend="reference", schedule=schedule)
    for _ in range(2):
        xe = torch.tensor([1.1, -2.3, 3.7, 4.9])
        xj = xe.clone()
        torch.testing.assert_close(jitted(xj), fn(xe))
        torch.testing.assert_close(xj, xe)
    with pytest.raises(RuntimeError, match="must be 1 to view Float as Short"):
        fn(torch.randn(3, 4).T)
    with pytest.raises(RuntimeError, match="must be 1 to view Float as Short"):
        jitted(torch.randn(3, 4).T)


def _fuzz20518_11(a, b, c):
    t0 = b.view(torch.int32).view(torch.float32).flatten()
    b.mul_(2.0)
    t1 = a.contiguous()
    t1.view(torch.int32).bitwise_and_(2147483647)
    t2 = a.sin()
    c.fill_(-0.25)
    return t0, t1, t2


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_dtype_views_as_bitcast_prims_keep_their_layout(schedule):
    # fuzz seed 20518 #11 (layout): where the pass sees the dtype views as bitcast prims, their layout was unknown
    # and the flatten of b.t()'s views was refused (the fix of seed 20508 #71 named only ``view``)
    def inputs():
        g = torch.Generator().manual_seed(0)
        x0, x1 = torch.rand(4, 4, generator=g) * 2 - 1, torch.rand(6, 4, generator=g) * 2 - 1
        return (x0, x1), (x0[1:], x1.t(), x0[:, ::2])

    (b_e, args_e), (b_j, args_j) = inputs(), inputs()
    want = _fuzz20518_11(*args_e)
    got = fusion_alias.jit(_fuzz20518_11, backend="reference", schedule=schedule)(*args_j)
    for g, w in zip(got, want):
        assert torch.equal(g, w)
    assert all(torch.equal(x, y) for x, y in zip(b_j, b_e))
