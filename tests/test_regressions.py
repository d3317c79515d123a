"""Programs the fuzzer found wrong once (python -m fusion_alias.fuzz --seed 2024), now fixed."""

import pytest
import torch

import fusion_alias
from fusion_alias.backends.reference import SCHEDULES
from tests.grad_helpers import assert_matches_eager


def _check(fn, make_inputs, schedule):
    bases_e, args_e = make_inputs()
    bases_j, args_j = make_inputs()
    want = fn(*args_e)
    got = fusion_alias.jit(fn, backend="reference", schedule=schedule)(*args_j)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(bases_j, bases_e)


def views_of_copy_result_then_write(b):
    # a view of an in-place result escapes the region; a later write must show through it
    t0 = b.mul_(0.5)
    t1 = t0.permute(1, 0)
    b.add_(0.75)
    return t1.transpose(0, 1)


def permuted_copy_result_after_setitem(a, b):
    t0 = b.add_(b)
    a[1::2, 0:1] = 2.0
    return t0.permute(2, 1, 0)


def view_of_fresh_then_write(a):
    c = a * 2
    v = c[0]
    c.add_(1)
    return v, c


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_views_of_copy_result(schedule):
    def make():
        x = torch.linspace(-1, 1, 6).reshape(1, 6)
        return [x], [x]

    _check(views_of_copy_result_then_write, make, schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_permuted_copy_result_after_setitem(schedule):
    def make():
        x = torch.linspace(-1, 1, 24).reshape(2, 3, 4)
        return [x], [x, x.transpose(0, 1)]

    _check(permuted_copy_result_after_setitem, make, schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_view_of_fresh_tensor_sees_later_write(schedule):
    def make():
        x = torch.linspace(-1, 1, 12).reshape(3, 4)
        return [x], [x]

    _check(view_of_fresh_then_write, make, schedule)
    v, c = fusion_alias.jit(view_of_fresh_then_write)(torch.randn(3, 4))
    assert v.data_ptr() == c.data_ptr()  # the view is a view of the returned tensor, as in eager


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_chained_inplace_writes_back_to_the_input(schedule):
    # peer suite test_chained_inplace; fuzz seed 1 #41, #64, #88, #100
    def fn(x):
        x.add_(1).mul_(2)
        return x

    x = torch.zeros(2, 3)
    out = fusion_alias.jit(fn, schedule=schedule)(x)
    torch.testing.assert_close(x, torch.full((2, 3), 2.0))
    assert out.data_ptr() == x.data_ptr()


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_broadcasting_copy_into_region_made_tensor(schedule):
    # fuzz seed 1 #4: t0 = -b; t0.copy_(a) with a 0-d
    def fn(a, b):
        t0 = -b
        t0.copy_(a)
        return t0

    a, b = torch.tensor(0.5), torch.randn(6)
    torch.testing.assert_close(fusion_alias.jit(fn, schedule=schedule)(a, b), fn(a, b))


def test_leaf_requiring_grad_written_in_place_is_rejected():
    def fn(x):
        x.add_(1)
        return x * 2

    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        fusion_alias.jit(fn)(torch.zeros(2, 2, requires_grad=True))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_self_copy_of_leaf_requiring_grad_is_rejected_as_eager_does(schedule):
    # hostile probe 14: x.copy_(x) writes nothing, but eager's autograd still raises the leaf error first;
    # jit dropped the copy before the check and returned 2 * x with a gradient
    def fn(x):
        return x.copy_(x) * 2

    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        fn(torch.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        fusion_alias.jit(fn, backend="reference", schedule=schedule)(torch.ones(2, requires_grad=True))
    with torch.no_grad():  # eager accepts it here: no error, the same value
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        torch.testing.assert_close(fusion_alias.jit(fn, backend="reference", schedule=schedule)(x), fn(x.detach()))

    def renamed(x):  # the grad-mode self-copy writes the no_grad one's result, a name flattening replaced
        with torch.no_grad():
            y = x.copy_(x)
        return y.copy_(y) * 2

    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        fusion_alias.jit(renamed, backend="reference", schedule=schedule)(torch.ones(2, requires_grad=True))


def test_cache_counters_sum_over_alias_structures():
    import thunder

    j = fusion_alias.jit(lambda a, b: a.exp_() + b.tanh_())
    a, b = torch.randn(2, 2), torch.randn(2, 2)
    j(a, a)
    j(a, b)
    assert (thunder.cache_hits(j), thunder.cache_misses(j)) == (0, 2)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_reshape_that_copies_reads_after_aliased_write(schedule):
    # fuzz seed 1 #331/#368: reshape of a non-viewable layout copies, i.e. reads memory
    def prog(a, d):
        t0 = d.mul_(d)
        a.sin_()
        return t0.unsqueeze(1).reshape(-1)

    x0 = torch.rand(4, 6)
    x1 = x0.clone()
    out = fusion_alias.jit(prog, schedule=schedule)(x0, x0.t())
    torch.testing.assert_close(out, prog(x1, x1.t()))
    torch.testing.assert_close(x0, x1)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_setitem_through_opaque_view_then_write_base(schedule):
    # fuzz seed 1 #110: narrow runs on torch (an opaque view); its write must order the base's read
    def prog(a, b):
        t0 = b.narrow(1, 5, 1)
        t0[::2] = 0.5
        b.mul_(a)
        return b

    x0, x1 = torch.rand(1, 6), torch.rand(4, 6)
    y0, y1 = x0.clone(), x1.clone()
    out = fusion_alias.jit(prog, schedule=schedule)(x0, x1)
    torch.testing.assert_close(out, prog(y0, y1))
    torch.testing.assert_close(x1, y1)


def test_write_only_region_survives_autograd_split():
    # peer suite (test_inplace_copy_of_leaf_requiring_grad_fails): with a grad input, a region that
    # only writes back used to be moved to the backward by Thunder's split and lost
    def g(x, w):
        x.add_(w)

    x, w = torch.zeros(2, 2), torch.ones(2, 2, requires_grad=True)
    fusion_alias.jit(g)(x, w)
    torch.testing.assert_close(x, torch.ones(2, 2))


def test_gradients_of_inplace_program():
    # Thunder's autodiff needs its own alias pass: without it this gradient is wrong
    def f(x, w):
        y = x * w
        y.tanh_()
        return (y * w).sum()

    x = torch.randn(3, 3)
    w1 = torch.randn(3, 3, requires_grad=True)
    w2 = w1.detach().clone().requires_grad_()
    out = fusion_alias.jit(f)(x.clone(), w1)
    out.backward()
    ref = f(x.clone(), w2)
    ref.backward()
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(w1.grad, w2.grad)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_read_feeding_a_coalesced_write_is_checked_against_the_next(schedule):
    # fuzz seed 2 #50: neg's read of a fed the first write, whose write-back zero_ replaced
    def prog(a):
        t1 = a.permute(0, 1)
        t2 = a.neg_()
        t3 = t2.mean(-2)
        t1.zero_()
        return t3

    x = torch.rand(4, 6) * 2 - 1
    y = x.clone()
    torch.testing.assert_close(fusion_alias.jit(prog, schedule=schedule)(x), prog(y))
    torch.testing.assert_close(x, y)


def test_write_into_one_slice_of_an_expanded_view_is_allowed():
    # fuzz seed 2 #159: select(0, 1) of an expand has no internal overlap
    def prog(a):
        t1 = a.expand(2, 6, 4).select(0, 1)
        t1.sin_()
        return a

    x = torch.rand(6, 4)
    y = x.clone()
    torch.testing.assert_close(fusion_alias.jit(prog)(x), prog(y))


def test_fill_into_expanded_view_is_a_clear_error():
    # fuzz seed 2 #91: eager allows zero_ into an expand; we refuse, by name
    def prog(a):
        a.expand(2, 4, 6).zero_()
        return a

    with pytest.raises(fusion_alias.AliasInputError, match="fill_/zero_ into .* not supported"):
        fusion_alias.jit(prog)(torch.rand(4, 6))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_weak_dtype_scalar_setitem(schedule):
    # fuzz seed 1 #172: b[...] = b traces a weak float32_ value, which has a DataType all the same
    def prog(a, b):
        b[...] = b
        return a * 2

    x = torch.rand(2, 3)
    y = x.clone()
    torch.testing.assert_close(fusion_alias.jit(prog, schedule=schedule)(x, x[1, 0]), prog(y, y[1, 0]))
    torch.testing.assert_close(x, y)


def test_setitem_into_expanded_view_is_a_clear_error():
    # fuzz seed 1 #1142: eager writes only the selected (non-overlapping) slice; Thunder's
    # setitem writes the whole expanded tensor back, which we refuse by name
    def prog(a, b):
        t0 = a.expand(2, 1, 3)
        t0[1::2] = b
        return a

    prog(torch.rand(1, 3), torch.rand(1, 3))  # eager accepts it
    with pytest.raises(fusion_alias.AliasInputError, match="__setitem__ into .* not supported"):
        fusion_alias.jit(prog)(torch.rand(1, 3), torch.rand(1, 3))


def test_write_of_a_larger_value_into_a_scalar_is_rejected_by_name():
    # bench report: b.add_(a.sin()) with b = a[0, 0] raised an IndexError inside the backend
    def f(a, b):
        b.add_(a.sin())
        return b

    x = torch.rand(5, 5)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        f(x.clone(), x.clone()[0, 0])
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        fusion_alias.jit(f)(x, x[0, 0])


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_inplace_on_unsqueezed_view_is_not_a_partial_overlap(schedule):
    # fuzz seed 1 #1297: t0 = d.unsqueeze(0); t0.sin_() - the operand is the output itself
    def prog(d):
        t0 = d.unsqueeze(0)
        t0.sin_()
        return d

    x = torch.rand(4, 6)
    y = x.clone()
    torch.testing.assert_close(fusion_alias.jit(prog, schedule=schedule)(x), prog(y))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_copy_of_a_value_computed_from_an_overlapping_tensor_is_fine(schedule):
    # fuzz seed 1 #1251: c.copy_(a.sin()) with a = c's element: copy_'s operand is the fresh sin
    def prog(a, c):
        c.copy_(a.sin())
        return c

    x = torch.rand(4, 6)
    y = x.clone()
    out = fusion_alias.jit(prog, schedule=schedule)(x[3, 2], x[3])
    torch.testing.assert_close(out, prog(y[3, 2], y[3]))
    torch.testing.assert_close(x, y)


def _setitem_of_own_detached_rows(kv):
    kv[1:3] = kv[0:2].detach()
    return kv * 1


def _index_copy_of_own_detached_row(kv):
    kv.index_copy_(0, torch.tensor([0]), kv[0].detach()[None])
    return kv * 1


@pytest.mark.parametrize("prog", [_setitem_of_own_detached_rows, _index_copy_of_own_detached_row])
def test_an_overlap_through_detach_is_rejected_as_eager_does(prog):
    # fuzz seeds 20003 #1, 20009 #6 (modules generator): .detach() hid the overlap; the call ran
    # (refusals/operands.py, Note [detach in the operand check])
    with pytest.raises(RuntimeError, match="single memory location"):
        prog(torch.rand(4, 3))
    with pytest.raises(fusion_alias.AliasInputError, match="single memory location"):
        fusion_alias.jit(prog)(torch.rand(4, 3))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_disjoint_write_from_a_detached_view_runs(schedule):
    def prog(kv):
        kv[2:4] = kv[0:2].detach()
        return kv * 1

    x = torch.rand(4, 3)
    y = x.clone()
    torch.testing.assert_close(fusion_alias.jit(prog, schedule=schedule)(x), prog(y))
    torch.testing.assert_close(x, y)


def _full_overlap_with_own_detach(x):
    x.add_(x.detach())
    return x * 2


def _write_through_detach_then_read(x):
    x.detach()[1:3].mul_(3)
    return x + 1, x.detach().sum()


def _read_of_detach_after_a_write(x):
    d = x.detach()
    x.mul_(2)
    return d + 1, d[0] * x


def _mul_by_own_detached_row(x):
    x[1].mul_(x.detach()[1])
    return x.sin()


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("prog", [_full_overlap_with_own_detach, _write_through_detach_then_read,
                                  _read_of_detach_after_a_write, _mul_by_own_detached_row])
def test_detach_is_the_same_view_without_gradients(prog, schedule):
    # aliasing.py, Note [detach is the same view]: x.add_(x.detach()) was refused ("may share memory
    # through an op whose result fusion_alias cannot relate to its input"); eager accepts it
    _check(prog, lambda: (lambda x: ([x], [x]))(torch.arange(12.0).view(4, 3) / 12 + 0.5), schedule)


def test_a_partial_overlap_through_detach_gets_eagers_message():
    def prog(x):
        x[1:3].add_(x.detach()[0:2])
        return x

    with pytest.raises(RuntimeError, match="single memory location"):
        prog(torch.rand(4))
    with pytest.raises(fusion_alias.AliasInputError, match="single memory location"):
        fusion_alias.jit(prog)(torch.rand(4))


def test_a_write_through_detach_with_gradients_keeps_the_gradient_path():
    # with gradients, the write must not reach x's gradient (eager's factor is 3, not 6): refused until
    # session 16, now a write autograd does not see (leaf_views.py, Note [reads through detach, after writes])
    def prog(w):
        x = w * 1
        x.detach().mul_(2)
        return x * 3

    def make():
        w = torch.tensor([0.5, -1.0, 2.0, 3.0], requires_grad=True)
        return [w], [w]

    assert_matches_eager(prog, make)


def _row_product_of_fresh_transposed(a):
    c = a.t() * 2  # eager: c keeps a.t()'s strides, so c[0:1] is not dense
    c.mul_(c[0:1])
    return c


def _row_product_of_clone_of_transposed(a):
    c = a.t().clone()
    c.mul_(c[0:1])
    return c


def _row_product_through_swapaxes(a):
    b = a.swapaxes(0, 1)  # a transpose since session 21 (a root of its own, not replayed, before)
    b.mul_(b[0:1])
    return a * 1


@pytest.mark.parametrize(
    "prog", [_row_product_of_fresh_transposed, _row_product_of_clone_of_transposed, _row_product_through_swapaxes]
)
def test_an_overlap_in_a_layout_the_program_made_claims_nothing_of_eager(prog):
    # session 14 hand probe: eager runs these in memory order (its overlap check says "too hard" on the
    # transposed layout); the check, on a contiguous stand-in, said "eager PyTorch rejects this too"
    # (refusals/operands.py, Note [a layout the program made])
    prog(torch.arange(16.0).reshape(4, 4))  # eager runs it
    with pytest.raises(fusion_alias.AliasInputError, match="single memory location|does not check") as e:
        fusion_alias.jit(prog, backend="reference")(torch.arange(16.0).reshape(4, 4))
    assert "rejects this too" not in str(e.value) and "not supported" in str(e.value)


def _full_and_disjoint_overlaps_of_fresh_transposed(a):
    c = a.t() * 2
    c.mul_(c)
    c[0].add_(c[1])
    b = a.swapaxes(0, 1)
    b[0:2].sub_(b[2:4])
    return c, a


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_full_and_disjoint_overlaps_in_a_layout_the_program_made_still_run(schedule):
    x = torch.linspace(-1, 1, 16).reshape(4, 4)
    y = x.clone()
    got = fusion_alias.jit(_full_and_disjoint_overlaps_of_fresh_transposed, backend="reference", schedule=schedule)(x)
    torch.testing.assert_close(got, _full_and_disjoint_overlaps_of_fresh_transposed(y))
    torch.testing.assert_close(x, y)


def _masked_scatter_from_itself(a):
    m = torch.arange(a.numel()).reshape(a.shape) > 0
    a.masked_scatter_(m, a)  # eager (CPU): a[1] = a[0], then a[2] = the new a[1], ...
    return a * 1


def _masked_scatter_from_a_shifted_window(a, b):
    a[:8].masked_scatter_(a[:8] > -2, b)  # b = a[4:12]
    return a * 1


@pytest.mark.parametrize("prog, make", [
    (_masked_scatter_from_itself, lambda: [torch.arange(6.0)]),
    (_masked_scatter_from_itself, lambda: [torch.arange(12.0).reshape(3, 4).t()]),
    (_masked_scatter_from_a_shifted_window, lambda: (lambda x: [x, x[4:12]])(torch.linspace(-1, 1, 16))),
])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_masked_scatter_from_memory_it_writes_is_refused(prog, make, schedule):
    # session 14 hand probe: eager checks no overlap for masked_scatter_ and reads its source as it writes;
    # a region read the source at entry and returned [0, 0, 1, 2, 3, 4] where eager gives zeros; the shifted
    # window was refused as "eager PyTorch rejects this too", which eager does not
    # (refusals/operands.py, Note [masked_scatter_ reads its source as it writes])
    prog(*make())  # eager runs it
    with pytest.raises(fusion_alias.AliasInputError, match="eager PyTorch does not check.*not supported"):
        fusion_alias.jit(prog, backend="reference", schedule=schedule)(*make())


def _masked_scatter_apart(a, b):
    a[0:2].masked_scatter_(a[0:2] > -0.8, a[2:4])
    a[:, 0:2].masked_scatter_(a[:, 0:2] > 0, a[:, 2:4])
    a.masked_scatter_(a > 0, b * 2)
    return a * 1


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_masked_scatter_from_memory_apart_runs(schedule):
    def make():
        x = torch.linspace(-1, 1, 16).reshape(4, 4)
        return [x], [x, x.t()]

    _check(_masked_scatter_apart, make, schedule)


def _bool_key_then_index_of_its_result(a):
    t0 = a[True, 0]  # eager: (1, 3, 4); Thunder's trace: 1-d
    return t0[:, False]


def _bool_key_then_write_into_its_result(a):
    t0 = a[True, 0]
    t0[:, 1:].mul_(2.0)
    return a * 1


@pytest.mark.parametrize("prog", [_bool_key_then_index_of_its_result, _bool_key_then_write_into_its_result])
def test_a_bool_key_is_refused_before_thunder_traces_its_wrong_shape(prog):
    # fuzz seed 20115 #73 (edges): Thunder's IndexError "too many indices for tensor of dimension 1" while
    # tracing, instead of the bool-key refusal (refusals/bool_keys.py, Note [a bool key refused as it is traced])
    prog(torch.rand(2, 3, 4))  # eager runs it
    with pytest.raises(NotImplementedError, match="indexing with a Python bool"):
        fusion_alias.jit(prog, backend="reference")(torch.rand(2, 3, 4))


def _as_strided_of_an_overlapping_argument_after_a_write(a, b):
    a.add_(0.5)
    return b.as_strided((2,), (3,))  # b's storage: x0[1], x0[4]


@pytest.mark.parametrize("make_b", [lambda x: x.as_strided((2, 3), (1, 1), 1), lambda x: x[1:4]])
def test_as_strided_after_a_write_into_its_memory_with_gradients_is_refused(make_b):
    # fuzz seed 20119 #79 (strided, --grad): the pure program replayed as_strided on b's gathered values
    # (x0[1], x0[2]: a wrong value), or on a copy too small for it (torch's "setStorage ... out of bounds")
    # (functional_rewrite.py, Note [as_strided of a value the rewrite replays])
    leaf = torch.linspace(-1, 1, 6).requires_grad_()
    x = leaf * 1
    _as_strided_of_an_overlapping_argument_after_a_write(x, make_b(x)).sum().backward()  # eager runs it
    leaf = torch.linspace(-1, 1, 6).requires_grad_()
    x = leaf * 1
    with pytest.raises(fusion_alias.AliasInputError, match="as_strided .*storage.*not supported"):
        fusion_alias.jit(_as_strided_of_an_overlapping_argument_after_a_write)(x, make_b(x))


def _as_strided_of_a_view_made_after_a_write(a, b):
    a[0] = 0.5
    t1 = b.permute(0, 1)  # made after the write: not a replayed read
    return t1, torch.tanh(a), t1.as_strided((2, 3), (3, 1))  # b's storage from its offset: x0 flat[1:7]


def _as_strided_inputs(requires_grad):
    leaf = torch.linspace(-1, 1, 12).reshape(3, 4).requires_grad_(requires_grad)
    x0 = leaf * 1
    return x0, (x0, x0.as_strided((2, 3), (1, 1), 1))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_as_strided_of_a_view_made_after_a_write_with_gradients_is_refused(schedule):
    # fuzz seed 20706 #16 (strided, --grad): t1 is made after the write, so the rewrite did not replay it
    # and the refusal above missed it; as_strided then read the storage of b's gathered copy, [[.5, .5, .5],
    # [.5, .5, x0[1, 0]]] where eager's is x0 flat[1:7] (a wrong value and gradient; refusals/storage_views.py,
    # Note [as_strided of a value the rewrite replays])
    x0, args = _as_strided_inputs(True)
    _as_strided_of_a_view_made_after_a_write(*args)[2].sum().backward()  # eager runs it
    x0, args = _as_strided_inputs(True)
    # (since session 22, where the as_strided result is returned, refusals/strided_outputs.py's refusal of a returned
    # as_strided of a view of an argument may come first: loud either way; used, not returned, the storage one comes)
    with pytest.raises(fusion_alias.AliasInputError, match="as_strided .*not supported"):
        fusion_alias.jit(_as_strided_of_a_view_made_after_a_write, backend="reference", schedule=schedule)(*args)
    want_base, want_args = _as_strided_inputs(False)  # without gradients it runs, as eager does
    want = _as_strided_of_a_view_made_after_a_write(*want_args)
    base, args = _as_strided_inputs(False)
    got = fusion_alias.jit(_as_strided_of_a_view_made_after_a_write, backend="reference", schedule=schedule)(*args)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    torch.testing.assert_close(base, want_base)


@pytest.mark.parametrize("prog", [
    lambda a: (a.t() * 2).as_strided((2,), (1,)),
    lambda a: a.t().clone().as_strided((2,), (1,)),
    lambda a: (lambda c: (c.add_(1), c.as_strided((2,), (1,)))[1])(a.t() * 2),
])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_as_strided_of_a_layout_regions_do_not_keep_is_refused(prog, schedule):
    # session 14 hand probe: eager's c = a.t() * 2 has strides (1, 4), a region's c is contiguous, and
    # as_strided addresses the storage: [0, 8] where eager gives [0, 2] (layouts.py,
    # Note [as_strided of a layout fusion regions do not keep])
    prog(torch.arange(16.0).reshape(4, 4))
    with pytest.raises(fusion_alias.AliasInputError, match="as_strided .*not supported"):
        fusion_alias.jit(prog, backend="reference", schedule=schedule)(torch.arange(16.0).reshape(4, 4))


def _as_strided_of_layouts_regions_keep(a):
    c = a * 2
    return c.as_strided((2,), (5,)), (a.t() * 2).contiguous().as_strided((2,), (1,)), a.t().as_strided((2,), (5,), 1) * 1


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_as_strided_of_layouts_regions_keep_runs(schedule):
    def make():
        x = torch.arange(16.0).reshape(4, 4)
        return [x], [x]

    _check(_as_strided_of_layouts_regions_keep, make, schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_dtype_view_eager_rejects_of_a_transposed_result_is_rejected(schedule):
    # session 14 hand probe: eager's a.t() * 2 has stride(-1) 4, so view(torch.float16) raises; a region's
    # result is contiguous and the view ran (layouts.py, _check_dtype_view_of_a_result)
    def prog(a):
        return (a.t() * 2).view(torch.float16) * 1

    with pytest.raises(RuntimeError, match="stride"):
        prog(torch.arange(16.0).reshape(4, 4))
    with pytest.raises(RuntimeError, match="stride.*eager PyTorch rejects this too"):
        fusion_alias.jit(prog, backend="reference", schedule=schedule)(torch.arange(16.0).reshape(4, 4))

    def fine(a):
        return (a * 2).view(torch.float16) * 1, (a.t() * 2).view(torch.int32) * 1

    def make():
        x = torch.arange(16.0).reshape(4, 4)
        return [x], [x]

    _check(fine, make, schedule)


@pytest.mark.parametrize("prog", [
    lambda a, d: a[5].view(1, 1) + d,
    lambda a, d: torch.where(a[5].view(1, 1) > 0, a[5].view(1, 1), d),
    lambda a, d: a.sum().view(1) * d,
    lambda a, d: a[5][None] - d,
])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_result_type_thunder_infers_from_a_0d_history_is_refused(prog, schedule):
    # fuzz seed 20126 #108 (dtype): eager's result is float64, Thunder's trace says float16 and a region
    # returned float16 (dtype_rules.py, Note [a result type Thunder infers from a 0-d tensor's history])
    def make():
        return torch.linspace(-1, 1, 6, dtype=torch.float64), torch.linspace(-1, 1, 6).to(torch.float16).reshape(1, 6)

    assert prog(*make()).dtype == torch.float64
    with pytest.raises(NotImplementedError, match="eager PyTorch's result is torch.float64.*not supported"):
        fusion_alias.jit(prog, backend="reference", schedule=schedule)(*make())


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_mixed_dtypes_thunder_types_as_eager_still_run(schedule):
    def prog(a, d):
        return a[5:6].view(1, 1) + d, a[5] * d, a * 2.5, d + a.sum()

    def make():
        a, d = torch.linspace(-1, 1, 6, dtype=torch.float64), torch.linspace(-1, 1, 6).to(torch.float16).reshape(1, 6)
        return [a, d], [a, d]

    _check(prog, make, schedule)


def _as_strided_of_a_result_of_an_opaque_view(a):
    t0 = a.swapaxes(0, 1) + 1  # eager: strides (1, 4), from swapaxes, a view the analysis does not replay
    return t0.as_strided((4, 4), (4, 1), 0)


def _dtype_view_of_a_result_of_an_opaque_view(a):
    t1 = (a * 1).swapdims(0, 1)[1::2, 1::2]
    return (t1.t() * 2).view(torch.float16)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_layout_computed_from_an_unknown_one_is_not_guessed(schedule):
    # fuzz seed 20132 #12 (a wrong value) and #42 (a missed rejection), the order generator: the layout of an
    # elementwise result of an opaque view was guessed contiguous (layouts.py, _layout_known)
    x = torch.linspace(-1, 1, 16).reshape(4, 4)
    _as_strided_of_a_result_of_an_opaque_view(x)
    with pytest.raises(fusion_alias.AliasInputError, match="as_strided .*not supported"):
        fusion_alias.jit(_as_strided_of_a_result_of_an_opaque_view, backend="reference", schedule=schedule)(x)
    y = torch.linspace(-1, 1, 24).reshape(4, 6).t()
    with pytest.raises(RuntimeError, match="stride"):
        _dtype_view_of_a_result_of_an_opaque_view(y)
    with pytest.raises(RuntimeError, match="view of .* as torch.float16"):
        fusion_alias.jit(_dtype_view_of_a_result_of_an_opaque_view, backend="reference", schedule=schedule)(y)


def _reshape_of_an_elementwise_result_of_swapaxes_then_write(a):
    t0 = a.swapaxes(0, 1) + 1  # eager: transposed, so the reshape copies
    v = t0.reshape(-1)
    t0.mul_(2)
    return v


def _reshape_of_an_elementwise_result_of_as_strided_then_write(a):
    t0 = a.as_strided((4, 4), (1, 4)) + 1  # eager: transposed, so the reshape copies
    v = t0.reshape(-1)
    t0.mul_(2)
    return v


def _flatten_of_an_elementwise_result_of_narrow_then_write(a):
    t0 = a.narrow(1, 0, 4).t() + 0
    v = t0.flatten()
    v[0] = 100.0
    return t0


def _flatten_of_an_elementwise_result_of_rot90_then_write(a):
    t0 = a.t().rot90() + 0  # rot90 of a transposed tensor: a layout fusion_alias could not tell (session-21 probe)
    v = t0.flatten()
    v[0] = 100.0
    return t0


@pytest.mark.parametrize("prog", [_reshape_of_an_elementwise_result_of_swapaxes_then_write,
                                  _reshape_of_an_elementwise_result_of_as_strided_then_write,
                                  _flatten_of_an_elementwise_result_of_narrow_then_write,
                                  _flatten_of_an_elementwise_result_of_rot90_then_write])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_reshape_of_an_elementwise_result_of_swapaxes_then_a_write_matches_eager(prog, schedule):
    # refused above until session 21; swapaxes is now the transpose it is (view_rewrites.py), whose layout
    # layouts.py knows: eager's copy, and the write does not show through it. as_strided, an opaque view, until
    # session 22: its layout is now torch's as_strided on the meta layout (opaque_layouts.py). narrow, until session 22
    # in this check's own analysis (refusals/operands.py reads it as the slice it is now, as the pass does). rot90,
    # refused as a guessed layout (session 14 hand probe after fuzz seed 20132 #12: a contiguous guess, a wrong value)
    # until session 35: its result has its torch function's layout on meta (eager_result_layouts.py)
    want = prog(torch.linspace(-1, 1, 16).reshape(4, 4))
    jitted = fusion_alias.jit(prog, backend="reference", schedule=schedule)
    torch.testing.assert_close(jitted(torch.linspace(-1, 1, 16).reshape(4, 4)), want)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_view_of_a_layout_eager_rejects_raises_eagers_error(schedule):
    def prog(a):
        return (a.adjoint() * 1).view(-1)  # eager: transposed, view raises

    with pytest.raises(RuntimeError, match="view size is not compatible"):
        prog(torch.linspace(-1, 1, 16).reshape(4, 4))
    # refused as a guessed layout ("cannot tell whether view") until session 22: the layout of adjoint(), an
    # opaque view, is now torch's adjoint on the meta layout (opaque_layouts.py), and eager's error is raised
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        fusion_alias.jit(prog, backend="reference", schedule=schedule)(torch.linspace(-1, 1, 16).reshape(4, 4))


def _view_of_a_detached_flat_input_then_a_write(a, b):
    t0 = b.detach().view(2, 12)  # b = a.view(-1): a view of a
    a.exp_()
    return t0 * 1, t0


def _reshape_of_a_detached_transpose_then_a_write(a):
    t = a.t().detach().reshape(-1)  # eager: a copy (the transpose is not viewable as one dimension)
    t.add_(1)
    return a * 1, t


def _reshape_of_a_detached_input_then_a_write(a):
    t = a.detach().detach().reshape(2, 12)  # eager: a view
    t.add_(1)
    return a * 1, t


@pytest.mark.parametrize("prog", [_view_of_a_detached_flat_input_then_a_write,
                                  _reshape_of_a_detached_transpose_then_a_write,
                                  _reshape_of_a_detached_input_then_a_write])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_reshape_of_a_detached_tensor_keeps_its_layout(prog, schedule):
    # fuzz seed 20202 #17, #27 (basic generator, the detach spellings of session 15): the layout of x.detach()
    # was unknown (an opaque op), so a reshape/view of it, then a write, was refused ("cannot tell whether
    # reshape ... is a view or a copy"); it is x's layout (layouts.py, _Layouts._compute)
    def make():
        x = torch.linspace(-1, 1, 24).reshape(4, 6)
        return (x, x.view(-1)) if prog is _view_of_a_detached_flat_input_then_a_write else (x,)

    want_args, got_args = make(), make()
    want = prog(*want_args)
    got = fusion_alias.jit(prog, backend="reference", schedule=schedule)(*got_args)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    for g, w in zip(got_args, want_args):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_view_of_a_detached_transpose_raises_as_eager_does(schedule):
    def prog(a):
        return a.t().detach().view(-1)

    with pytest.raises(RuntimeError, match="view size is not compatible"):
        prog(torch.linspace(-1, 1, 16).reshape(4, 4))
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        fusion_alias.jit(prog, backend="reference", schedule=schedule)(torch.linspace(-1, 1, 16).reshape(4, 4))


def _tanh_of_an_integer_cast_then_written(a):
    t2 = torch.tanh(a.to(torch.uint8).sign())  # computed from a, but through an integer: requires no grad
    t2.tanh_()
    return t2, a * 2


def _exp_of_an_int_round_trip_then_written(a):
    t = a.to(torch.int32).float().exp()
    t.add_(1)
    return t, a.sin()


def _sigmoid_of_a_mask_then_written(a):
    m = (a > 0).float().sigmoid()
    m.mul_(2)
    return m * a


@pytest.mark.parametrize("prog", [_tanh_of_an_integer_cast_then_written, _exp_of_an_int_round_trip_then_written,
                                  _sigmoid_of_a_mask_then_written])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_save_of_a_value_computed_through_an_integer_is_no_save(prog, schedule):
    # fuzz seed 20204 #73 (dtype generator, --grad): an integer or bool result of a tensor that requires grad
    # was read as requiring grad, so tanh/exp/sigmoid of it "saved" it and the later write was refused saying
    # eager raises at backward, which it does not (refusals/saved_versions.py)
    def run(fn):
        leaf = torch.linspace(-1, 1, 12).reshape(3, 4).requires_grad_()
        x = leaf * 1
        out = fn(x)
        sum(o.sum() for o in out if o.requires_grad).backward() if isinstance(out, tuple) else out.sum().backward()
        return out if isinstance(out, tuple) else (out,), x, leaf.grad

    want, want_x, want_grad = run(prog)
    got, got_x, got_grad = run(fusion_alias.jit(prog, backend="reference", schedule=schedule))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    torch.testing.assert_close(got_x, want_x)
    torch.testing.assert_close(got_grad, want_grad)


def test_a_save_of_a_float_result_then_written_is_still_refused():
    def prog(a):
        t = a.exp()
        t.add_(1)
        return t

    leaf = torch.linspace(-1, 1, 12).requires_grad_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        prog(leaf * 1).sum().backward()
    with pytest.raises(fusion_alias.AliasInputError, match="exp saves t for the backward"):
        fusion_alias.jit(prog, backend="reference")(leaf * 1)


def _uint8_view_of_a_slice_of_a_clone_of_a_written_input(a):
    a.abs_()
    t1 = a.clone()
    t1[1:, 1::2].view(torch.uint8).add_(100)
    return t1


def _uint8_view_of_a_guessed_layout_then_written(a):
    t1 = a.swapaxes(0, 1) + 1  # eager: transposed; fusion_alias guesses
    t1.view(torch.uint8).add_(100)
    return t1


@pytest.mark.parametrize("prog", [_uint8_view_of_a_slice_of_a_clone_of_a_written_input,
                                  _uint8_view_of_a_guessed_layout_then_written])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_dtype_view_of_the_same_element_size_runs_whatever_the_layout(prog, schedule):
    # fuzz seed 20206 #87 (edges): view(torch.uint8) of an int8 result whose layout fusion_alias does not know
    # was refused ("cannot tell whether view ... is one eager PyTorch accepts"); eager accepts a view(dtype) of
    # the same element size in any layout (layout_checks.py, _check_dtype_view_of_a_result)
    def make():
        return torch.randint(-8, 9, (4, 4), generator=torch.Generator().manual_seed(1), dtype=torch.int8)

    want_x, got_x = make(), make()
    want = prog(want_x)
    got = fusion_alias.jit(prog, backend="reference", schedule=schedule)(got_x)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_x, want_x)


def test_a_dtype_view_of_another_element_size_of_an_as_strided_result_raises_eagers_error():
    # refused as a guessed layout ("cannot tell whether view") until session 22 (as the swapaxes one below until
    # session 21): as_strided's layout is now torch's on the meta layout (opaque_layouts.py)
    def prog(a):
        return (a.as_strided((4, 4), (1, 4)) + 1).view(torch.int16)

    x = torch.zeros(4, 4, dtype=torch.int8)
    with pytest.raises(RuntimeError, match="stride"):
        prog(x)
    with pytest.raises(RuntimeError, match="must be 1 to view Char as Short"):
        fusion_alias.jit(prog, backend="reference")(x)


def test_a_dtype_view_of_another_element_size_of_a_swapaxes_result_raises_eagers_error():
    # refused as a guessed layout until session 21; swapaxes is now a transpose, whose layout is known
    def prog(a):
        return (a.swapaxes(0, 1) + 1).view(torch.int16)

    x = torch.zeros(4, 4, dtype=torch.int8)
    with pytest.raises(RuntimeError, match="must be 1 to view"):
        prog(x)
    with pytest.raises(RuntimeError, match="must be 1 to view"):
        fusion_alias.jit(prog, backend="reference")(x)


_FRESH_SCATTERS = [
    lambda x, y: (x.copy_(torch.select_scatter(x, y * 0, 0, 0)), y * 1),
    lambda x, y: (x.copy_(torch.slice_scatter(x, y[None] * 2, 0, 0, 1)), y * 1),
    lambda x, y: (x.copy_(torch.diagonal_scatter(x, y.clone(), 0)), y * 1),
    lambda x, y: (x.add_(torch.diag_embed(y)), y * 1),
]


@pytest.mark.parametrize("prog", _FRESH_SCATTERS, ids=["select_scatter", "slice_scatter", "diagonal_scatter", "diag_embed"])
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_functional_scatters_are_new_memory(prog, schedule):
    # session 19 hand probe: these were read as possible views of x, so the copy_ was refused as an
    # operand fusion_alias cannot relate to what it writes (fresh_results.py, Note [torch functions
    # whose result is new memory]); y = x[1] is written by the copy_ and read after it
    want_x = torch.arange(16.0).reshape(4, 4)
    want = prog(want_x, want_x[1])
    got_x = torch.arange(16.0).reshape(4, 4)
    got = fusion_alias.jit(prog, backend="reference", schedule=schedule)(got_x, got_x[1])
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    torch.testing.assert_close(got_x, want_x)


@pytest.mark.parametrize("prog", _FRESH_SCATTERS, ids=["select_scatter", "slice_scatter", "diagonal_scatter", "diag_embed"])
def test_functional_scatters_are_new_memory_with_gradients(prog):
    def make():
        w = torch.linspace(-1, 1, 16).reshape(4, 4).requires_grad_()
        x = w * 1
        return [w], (x, x[1])

    assert_matches_eager(prog, make)


def _an_out_result_compared_with_its_out(a, b):
    t0 = b.detach()[0:2]
    t1 = torch.sub(t0, t0, out=t0)  # eager returns t0 itself
    t1.clamp_(-0.5, 0.5)
    torch._foreach_mul_([t1, t0, t1.add_(1)], [t1, b, b])
    a.mul_(a.detach())
    b.add_((0.25 if id(t0) == id(t1) else 2.0))
    return a, t0


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_result_of_a_function_given_out_is_its_out_tensor(schedule):
    # fuzz seed 20753 #10 (basic, session 19's out= spellings with an identity test): `id(t0) == id(t1)` of
    # `t1 = torch.sub(t0, t0, out=t0)` answered False where eager's t1 is t0, so b got 2.0 added for 0.25
    # (tensor_identity.py, Note [conversions that return their own tensor]: an out= result is its out)
    def make_inputs():
        x0 = torch.linspace(-0.9, 0.8, 6).reshape(1, 6)
        return x0, (x0, x0[0, 4:])

    _check(_an_out_result_compared_with_its_out, make_inputs, schedule)


def _write_through_a_reshape_of_a_gather(c):
    t0 = c[:, [2, 0, 1]].sin()  # eager: strides (1, 4, 12), c's order
    t1 = t0.transpose(0, -1).reshape(-1)  # so a view in eager
    t1.zero_()
    return t0.sum(0)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_write_through_a_reshape_of_a_list_key_gather_is_not_lost(schedule):
    # fuzz seed 20759 #8 (layout, session 18's list-key spelling): the gather was taken for contiguous, the
    # reshape for a copy, and the write into it lost (eager returns zeros); now eager's layout is known and the
    # reshape a view fusion regions do not keep: refused, loud (layouts.py, Note [a gather keeps its operand's
    # layout]). A contiguous operand keeps a contiguous gather: the reshape is a copy and the call runs
    x = torch.linspace(-1, 1, 24).reshape(2, 3, 4)
    want = _write_through_a_reshape_of_a_gather(x.clone().transpose(0, -1))
    assert bool((want == 0).all())
    jitted = fusion_alias.jit(_write_through_a_reshape_of_a_gather, backend="reference", schedule=schedule)
    with pytest.raises(fusion_alias.AliasInputError, match="is a view in eager PyTorch only because"):
        jitted(x.clone().transpose(0, -1))
    c = x.clone().permute(2, 1, 0).contiguous()
    torch.testing.assert_close(jitted(c.clone()), _write_through_a_reshape_of_a_gather(c.clone()))


def _write_through_a_reshape_of_a_flip(x):
    t0 = x.transpose(0, 1).flip(0)  # eager: new memory with strides (1, 4), empty_like of its operand
    t0.transpose(0, 1).reshape(-1).zero_()  # so a view of t0 in eager
    return t0 * 2, x + 0


def _write_through_a_reshape_of_an_index_fill(x):
    t0 = x.transpose(0, 1).index_fill(1, torch.tensor([0]), 2.0)  # eager: strides (1, 4); its index of unknown layout
    t0.transpose(0, 1).reshape(-1).mul_(0.5)
    return t0


def _write_through_a_reshape_of_a_factory_like(x):
    t0 = torch.ones_like(x.transpose(0, 1))  # eager: strides (1, 4), preserve_format
    t0.transpose(0, 1).reshape(-1).mul_(3.0)
    return t0


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_write_through_a_reshape_of_an_opaque_ops_result_is_not_lost(schedule):
    # session-21 hand probe, the neighbour of 20759 #8: the result of an op outside the op table (torch.flip) was
    # taken for contiguous, so the reshape was decided a copy and the write into it lost (eager's t0 is zeros). Its
    # layout is now torch's on meta operands (opaque_layouts.py, Note [an opaque op's result keeps its operand's
    # layout]); the flip runs on torch at run time too, so the reshape is a view there and the call runs
    def make_inputs():
        x = torch.linspace(-1, 1, 12).reshape(3, 4)
        return x, (x,)

    _check(_write_through_a_reshape_of_a_flip, make_inputs, schedule)
    _check(_write_through_a_reshape_of_an_index_fill, make_inputs, schedule)
    # ``ones_like`` of a transposed tensor: eager's is transposed too, a fusion's contiguous; the reshape was a
    # silent copy (eager's t0 is threes): refused now, loud
    want = _write_through_a_reshape_of_a_factory_like(torch.zeros(3, 4))
    assert bool((want == 3).all())
    jitted = fusion_alias.jit(_write_through_a_reshape_of_a_factory_like, backend="reference", schedule=schedule)
    with pytest.raises(fusion_alias.AliasInputError, match="is a view in eager PyTorch only because"):
        jitted(torch.zeros(3, 4))


def _view_of_a_conj_of_a_real_scalar_then_a_write(a, b, c):
    c.add_(a)
    t1 = b.conj().view(1)  # b a 0-dim float64: conj of a real tensor is b itself, opaque to the op table
    t1.add_(1)  # eager: lands in b
    return t1, c, b * 1


def _reshape_of_a_conj_of_a_transpose_then_a_write(a):
    t0 = a.t().conj()  # eager: a itself transposed, strides (1, 4): the reshape copies
    v = t0.reshape(-1)
    v.mul_(2)
    return v, a * 1


def _flatten_of_a_conj_then_a_write(a):
    v = a.conj().reshape(-1)  # eager: a view of a, the write lands in a
    v.mul_(2)
    return v, a * 1


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_reshape_of_an_opaque_view_then_a_write_matches_eager(schedule):
    # fuzz seed 20786 #10 (dtype): `b.conj().view(1)` of a 0-dim float64 argument, in a program that writes in
    # place, was refused ("cannot tell whether reshape of t68 to (1,) is a view or a copy"): conj is an opaque
    # view whose layout was not known, but a tensor of at most one element is viewable in any shape (layout_checks,
    # Note [a reshape that only adds or drops size-1 dims is a view in every layout]). Its neighbours, reshapes of
    # an opaque view to a shape that depends on the layout, were refused too; the layout of an opaque view is now
    # torch's function on the meta layout (opaque_layouts.py): eager's view or copy, and the writes land as eager's
    def make_scalar():
        x0, x1 = torch.linspace(-1, 1, 6), torch.linspace(-1, 1, 24).reshape(4, 6).double()
        return [x0, x1], (x0, x1[0, 0], x0)

    _check(_view_of_a_conj_of_a_real_scalar_then_a_write, make_scalar, schedule)

    def make():
        x = torch.linspace(-1, 1, 16).reshape(4, 4).double()
        return x, (x,)

    _check(_reshape_of_a_conj_of_a_transpose_then_a_write, make, schedule)
    _check(_flatten_of_a_conj_then_a_write, make, schedule)
    # a reshape that only adds size-1 dims (or of one element) of a result whose layout is still unknown (rot90 of
    # a transposed tensor): a view in every layout, as eager's, where it was refused ("cannot tell")
    _check(_size_1_reshape_of_a_rot90_then_a_write, make, schedule)
    _check(_scalar_reshape_of_an_element_of_a_rot90_then_a_write, make, schedule)


def _size_1_reshape_of_a_rot90_then_a_write(a):
    t = a.t().rot90()
    v = t.reshape(1, 4, 1, 4)
    v.add_(1)  # eager: lands in t
    return t, v * 1


def _scalar_reshape_of_an_element_of_a_rot90_then_a_write(a):
    t = a.t().rot90()[1:2, 2:3]
    v = t.reshape(())
    v.add_(1)
    return t * 1, a * 1
