"""Outputs that are, in eager, the memory of an input the call writes, in a call that computes gradients
(Note [an output that is a written input, functionalized], input_outputs.py): the caller's tensor, or its
view, so a later write into the output reaches the input, and gradients match eager's."""

import pytest
import torch

import fusion_alias
from fusion_alias.errors import AliasInputError
from fusion_alias.input_outputs import as_caller_view, outputs_as_the_callers
from helpers import as_tuple


def _returned_mul(c):
    return c.mul_(0.5)


def _returned_self(c):
    c.mul_(0.5)
    return c


def _returned_transpose(c):
    return c.mul_(0.5).t()


def _one_tensor_twice(c):  # fuzz seed 20737 #3: eager's two outputs are one tensor
    return [c.add_(1), c]


def _self_and_a_view(c):  # fuzz seed 20739 #3: the input itself and a view of it
    c.clip_(-0.3, 0.3)
    return [c, c.view(-1)[1::2]]


def _a_row_then_self(c):
    r = c[1]
    c.mul_(2)
    return [r, c * 3, c]  # (not c.sin(): it saves c, and eager's backward then raises on the later write)


def _detached(c):
    return c.mul_(0.5).detach()


def _diagonal_after_write(c):  # diagonal stays whole (a gather in Thunder): replayed by torch's own
    return c.mul_(2).diagonal()


def _contiguous_after_write(c):  # eager: c itself
    return c.mul_(2).contiguous()


def _narrowed_after_write(c):
    return c.add_(1).narrow(0, 1, 2)


def _swapaxes_after_write(c):
    return c.mul_(2).swapaxes(0, 1)


def _view_as_after_write(c):  # eager: a new view of c, not c
    return c.mul_(2).view_as(c)


def _same_dtype_after_write(c):  # eager: c itself
    return [c.mul_(2).to(torch.float32), c.real]


def _conversions_after_write(c):  # eager: c itself, each (tensor_identity.py, Note [conversions that return
    c.mul_(2)  # their own tensor]); session 21: the first three came back as new views
    return [c.sum_to_size(c.shape), c.conj(), c.flatten(0, 0), c.cpu(), c.type_as(c)]


def _other_input_untouched(a, c):
    return [c.mul_(a), a * 2]


PROGRAMS = [_returned_mul, _returned_self, _returned_transpose, _one_tensor_twice, _self_and_a_view,
            _a_row_then_self, _detached, _diagonal_after_write, _contiguous_after_write, _narrowed_after_write,
            _swapaxes_after_write, _view_as_after_write, _same_dtype_after_write, _conversions_after_write]


def _inputs(n, seed):
    g = torch.Generator().manual_seed(seed)
    leaves = [torch.randn(4, 4, generator=g).requires_grad_() for _ in range(n)]
    return leaves, [leaf * 1 for leaf in leaves]


def _call(fn, n, seed, write=True):
    """(identity pattern of the outputs with the last argument, outputs, that argument, leaf gradients) of a
    call whose caller then writes through the first output and takes a loss over the outputs and the input."""
    leaves, args = _inputs(n, seed)
    c = args[-1]
    result = fn(*args)
    outs = list(result) if isinstance(result, (tuple, list)) else [result]
    identity = [o is c for o in outs]
    views = [o._base is c or (o._base is not None and o._base is c._base and c._base is not None) for o in outs]
    if write:
        outs[0].detach().exp_()  # eager: a write into c's memory when outs[0] is c or a view of it
    loss = sum(((o * (i + 2)).sum() for i, o in enumerate(outs) if o.requires_grad), (c * c).sum())
    loss.backward()
    return identity, views, [o.detach().clone() for o in outs], c.detach().clone(), [leaf.grad for leaf in leaves]


def _assert_same(got, want):
    assert got[0] == want[0], f"identity with the input: {got[0]} (eager {want[0]})"
    assert got[1] == want[1], f"views of the input: {got[1]} (eager {want[1]})"
    for g, w in zip(got[2:], want[2:]):
        if isinstance(w, list):
            for x, y in zip(g, w):
                torch.testing.assert_close(x, y)
        else:
            torch.testing.assert_close(g, w)


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_written_input_returned_is_the_callers_tensor(fn):
    """First and cached call: the same tensor (or view) as eager, a write into it reaches ``c``, and the
    gradients through the output and through ``c`` are eager's."""
    jitted = fusion_alias.jit(fn, backend="reference")
    for seed in (0, 1):
        _assert_same(_call(jitted, 1, seed), _call(fn, 1, seed))


def test_only_the_written_inputs_memory_is_the_callers():
    jitted = fusion_alias.jit(_other_input_untouched, backend="reference")
    for seed in (0, 1):
        _assert_same(_call(jitted, 2, seed), _call(_other_input_untouched, 2, seed))


def test_returned_input_has_eagers_history():
    """Eager's ``c.mul_(0.5)`` returns ``c`` with a new ``grad_fn``; here it is the write-back's, whose
    backward reaches ``c``'s old history through Thunder's Function."""
    leaf = torch.randn(3, requires_grad=True)
    c = leaf * 1
    out = fusion_alias.jit(_returned_mul, backend="reference")(c)
    assert out is c and c.requires_grad and c.grad_fn is not None
    out.sum().backward()
    torch.testing.assert_close(leaf.grad, torch.full((3,), 0.5))


def test_without_gradients_unchanged():
    for grad_leaf in (False, True):
        leaf = torch.randn(4, 4, requires_grad=grad_leaf)
        c = leaf * 1
        want_c = c.detach().clone().mul_(0.5).t()
        with torch.no_grad():
            out = fusion_alias.jit(_returned_transpose, backend="reference")(c)
        torch.testing.assert_close(out, want_c)
        torch.testing.assert_close(c.t(), want_c)


def test_view_that_cannot_be_made_on_the_callers_layout_is_refused():
    c = torch.randn(4, 4).t()  # a view step that copies on this layout would be a copy, not c's memory
    with pytest.raises(AliasInputError, match="could not be made on the caller's tensor"):
        as_caller_view(c, ((lambda t, shape: t.reshape(shape), ((16,),), {}, False),), False, 0)


def _bitcast_after_write(a, c):  # eager: views of c's memory, requiring no grad (test_autograd_functionalize)
    c.mul_(a)
    return [c.view(torch.int32).view(torch.float32), c.view(torch.int32), a * 1]


def test_bitcast_views_of_a_written_input():
    jitted = fusion_alias.jit(_bitcast_after_write, backend="reference")
    for seed in (0, 1):
        got, want = _call(jitted, 2, seed), _call(_bitcast_after_write, 2, seed)
        _assert_same(got, want)


def test_output_view_fusion_alias_cannot_remake_is_refused():
    """An output of a view with no replay here that ``view_outputs`` did not remake on the caller's memory (a
    copy) raises, naming it, instead of being returned."""
    caller, copy = torch.randn(4), torch.randn(4)
    with pytest.raises(AliasInputError, match="cannot remake on the caller's tensor"):
        outputs_as_the_callers([copy], [copy], [(caller, None, False, 0)], [], lambda t, sources: t)


# under torch.compile: ThunderFX cuts the graph at ``roll`` (Thunder 0.2.6 does not trace it), so the
# first fusion_alias piece returns the written input and the next piece writes into it


def _written_then_written_in_the_next_piece(a, c):  # fuzz seed 20739 #11's class
    t0 = c.mul_(0.5)
    t0.add_(t0.roll(1, -2))
    return a * c


def _written_then_detached_write_in_the_next_piece(a, c):
    t0 = c.mul_(0.5)
    r = t0.roll(1, -2)
    t0.detach().exp_()
    return a * r, c * 3


def _one_tensor_twice_across_pieces(a, c):  # fuzz seed 20737 #3's class
    t = [c.add_(1), c]
    r = t[0].roll(1, 0)
    t[1].mul_(2)
    return r + t[0] * a


def _transposed_written_in_the_next_piece(a, c):
    t0 = c.mul_(0.5).t()
    t0.add_(t0.roll(1, -2))
    return a * c


@pytest.fixture
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _compile_run(fn, seed):
    leaves, (a, c) = _inputs(2, seed)
    outs = as_tuple(fn(a, c))
    (sum((o * (i + 1)).sum() for i, o in enumerate(outs)) + (c * c).sum()).backward()
    return [o.detach() for o in outs] + [c.detach()] + [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("fn", [_written_then_written_in_the_next_piece, _one_tensor_twice_across_pieces,
                                _transposed_written_in_the_next_piece],
                         ids=lambda f: f.__name__)
def test_written_input_written_again_by_the_next_piece(fn, fresh_dynamo):
    compiled = torch.compile(fn, backend=fusion_alias.dynamo_backend(backend="reference"))
    for seed in (0, 1):
        for g, w in zip(_compile_run(compiled, seed), _compile_run(fn, seed)):
            torch.testing.assert_close(g, w)


def test_detached_write_in_the_next_piece_matches_eager(fresh_dynamo):
    """The Inductor piece makes ``t0.detach()`` (``roll`` cut the graph there), so the next fusion_alias piece
    gets ``c`` and a detached alias of it, two inputs that overlap without one autograd base. Before, ``t0``
    was a copy of ``c`` and the write into it was lost, with no error; then refused; since session 42 the
    detached alias joins ``c``'s memory (leaf_views.py, Note [an input that is a detached alias of one that
    requires grad])."""
    fn = _written_then_detached_write_in_the_next_piece
    compiled = torch.compile(fn, backend=fusion_alias.dynamo_backend(backend="reference"))
    for seed in (0, 1):
        for g, w in zip(_compile_run(compiled, seed), _compile_run(fn, seed)):
            torch.testing.assert_close(g, w)
