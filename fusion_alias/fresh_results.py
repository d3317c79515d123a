"""Torch functions whose result is always new memory, never a view of an argument."""

from __future__ import annotations

from thunder.core import dtypes
from thunder.core.proxies import TensorProxy

# Note [torch functions whose result is new memory]
# --------------------------------------------------
# Thunder 0.2.6 hands some torch functions over as leaf symbols (``t0 = ltorch.norm(x)``, no
# decomposition), which ``aliasing.output_may_alias`` reads as "cannot tell": the result joined ``x``'s memory, and
# ``x.div_(x.norm())`` was refused as an operand fusion_alias cannot relate to what its op writes.
# By the fusion pass, Thunder's torch executor has claimed them (``t4 = torch.roll(x, 1, 0)``: its
# symbol named ``roll`` in module ``torch``). These functions always allocate their result (torch
# documents no case where it is a view of or the same tensor as an argument; ``tests/test_units.py``
# checks each on eager tensors), so their results are fresh memory. Only the symbols of torch's and
# Thunder's torch modules are trusted by name (a user's own op named ``roll`` stays "cannot tell").
_FRESH_RESULTS = frozenset({
    "norm", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "roll", "diff", "tril", "triu",
    "renorm", "outer", "kron", "cross", "trace", "sort", "argsort", "topk", "kthvalue", "msort",
    "median", "nanmedian", "vector_norm",
    # elementwise and index ops Thunder hands over whole (the out-of-place halves of the in-place ops
    # fusion_alias adds: inplace_lookasides.py)
    "clamp_min", "clamp_max", "clip", "frac", "nan_to_num", "logit", "xlogy", "hypot", "deg2rad", "rad2deg",
    "sinc", "i0", "nextafter", "ldexp", "expm1", "log2", "log10", "exp2", "tan", "asin", "erfinv", "lgamma",
    "digamma", "heaviside", "logical_and", "logical_or", "bitwise_not", "true_divide", "floor_divide",
    "square", "negative", "sgn", "fix", "arctan2", "erfc", "index_fill", "masked_scatter",
    # out-of-place forms a refusal names as the workaround for the in-place methods Thunder lacks (Note
    # [in-place methods Thunder lacks], inplace_lookasides.py): Thunder's torch executor runs them whole
    "put", "addmm", "addmv", "addr", "addbmm", "baddbmm",
    # functional scatters and embeddings (``x.copy_(torch.select_scatter(x, v, 0, 0))`` was refused as an
    # operand fusion_alias cannot relate to ``x``; session 19 hand probe)
    "select_scatter", "slice_scatter", "diagonal_scatter", "diag_embed",
    # ``tile`` (a ``repeat``) allocates whatever its arguments: with gradients Thunder hands it over whole, and
    # ``y = x.tile((1, 1)); x.add_(1); return y * 1`` was refused as memory the rewrite cannot follow (session 40
    # hand probe). Not the stacks (``torch.hstack([x])``, a ``cat``, new memory too): with gradients the
    # functional rewrite does not follow a tensor inside their list argument, and read as new memory they
    # returned eager's values before the write (they stay "cannot tell", refused)
    "tile",
    # elementwise functions whose ``out=`` fusion_alias traces (out_arguments.py) that it does not claim:
    # ``torch.fmax(x, y, out=x)`` was refused as an operand it cannot relate to ``x`` (session 20)
    "fmax", "fmin", "gcd", "lcm", "logaddexp", "logaddexp2", "acos", "acosh", "asinh", "atan", "atanh",
    "cosh", "sinh", "angle", "signbit", "isneginf", "isposinf", "bitwise_left_shift", "bitwise_right_shift",
    # with gradients Thunder hands these over whole (``F.l1_loss`` and ``F.pairwise_distance`` from
    # torch.nn.functional): ``y = F.l1_loss(x, t); x.add_(1); return y`` was refused as memory the rewrite cannot
    # follow, where eager runs it (session 41 hand probe; their backward reads no input a write changes)
    "l1_loss", "pairwise_distance", "mode",
})

_TORCH_MODULES = frozenset({"thunder.torch", "torch", "torch.linalg", "torch.nn.functional"})

# Tensor methods Thunder registers from torch itself (module ``torch.Tensor``): ``new_*`` always
# allocate; a dtype conversion allocates unless the dtype is already the one asked for (``x.half()`` of a
# half ``x`` is ``x``), so it is new memory exactly when its result's dtype differs from its input's
# (``x[0].copy_(x[1].half())`` was refused; hostile probe 12)
_NEW_TENSOR_METHODS = frozenset({"new_empty", "new_zeros", "new_ones", "new_full", "new_tensor"})

# Note [new_* in a call that computes gradients]
# ----------------------------------------------
# In a call that computes gradients (and for some values of a setitem or a copy_ without them) Thunder 0.2.6
# hands ``x.new_ones(3)`` to the fusion pass as a leaf symbol of module ``thunder.torch``, with no
# subsymbols, not as the ``Tensor`` method: ``new_*`` was read as new memory only from ``Tensor`` or
# ``torch``, so, ``x`` a tensor the program made::
#
#     x = w * 2
#     x.mul_(x.new_ones(3))      # refused: "an op whose result fusion_alias cannot relate to its input"
#     x[1:] = x.new_zeros(2)     # refused likewise, with or without gradients
#
# where eager runs both (session 40 hand probe). Thunder's own ``new_*`` allocate as torch's do, so the
# names are new memory from the modules a dtype conversion is trusted from (``_CONVERSION_MODULES``).
_DTYPE_CONVERSIONS = frozenset({"half", "float", "double", "bfloat16", "int", "long", "short", "bool", "byte",
                                "char", "cfloat", "cdouble", "to", "type"})


def returns_new_memory(bsym) -> bool:
    """Whether ``bsym`` (a leaf symbol of Thunder's trace) returns new memory: one of ``_FRESH_RESULTS``
    from torch's or Thunder's torch modules (Note [torch functions whose result is new memory]), a
    ``Tensor.new_*``, or a dtype conversion that changes the dtype."""
    sym = bsym.sym
    module = getattr(getattr(sym, "module", None), "__name__", None)
    if sym.name in _FRESH_RESULTS:
        return module in _TORCH_MODULES
    if sym.name in _NEW_TENSOR_METHODS:
        # (Note [new_* in a call that computes gradients])
        return module in _CONVERSION_MODULES
    if module not in ("Tensor", "torch"):
        return False
    return converts_dtype(bsym)


# Note [a repeat is a copy whatever its decomposition]: ``x.repeat(1, 1)`` allocates in eager, but Thunder
# decomposes it into ``broadcast_in_dim`` and ``reshape``, views of ``x`` (an identity view for repeats of
# 1), so kept whole with gradients its result read as one that may share ``x``'s memory, and
# ``t = a[:, ::2].repeat(2, 1); t.tanh_(); return a.sum() + t.sum()`` was refused (session 42 hand probe).
# Kept whole it runs as torch's own function (``Tensor.repeat``), which copies; flattened (the fusion
# pass), its reshape is decided a copy by name (layouts.py, ``_ALWAYS_COPY``).
_ALWAYS_COPIES = frozenset({"repeat", "tile", "repeat_interleave"})


def always_copies(bsym) -> bool:
    """Whether ``bsym`` is one of torch's functions that always allocate their result, whatever the views
    Thunder decomposes it into (Note [a repeat is a copy whatever its decomposition])."""
    return (bsym.sym.name in _ALWAYS_COPIES
            and getattr(getattr(bsym.sym, "module", None), "__name__", None) in _TORCH_MODULES)


def converts_dtype(bsym) -> bool:
    """Whether ``bsym`` is torch's dtype conversion (``x.to(torch.int16)``, ``x.half()``) to another dtype
    than its input's: new memory. With gradients the pass meets ``to`` whole, as Thunder's symbol of
    module ``thunder.torch`` (a view function by name: it may return its input), where fusion_alias does
    not claim the result's dtype (int16): ``b.copy_(b.to(torch.int16))`` was refused as an operand it
    cannot relate to ``b`` (fuzz seed 19911 #11)."""
    sym = bsym.sym
    if sym.name not in _DTYPE_CONVERSIONS or not bsym.args or not isinstance(bsym.args[0], TensorProxy):
        return False
    if getattr(getattr(sym, "module", None), "__name__", None) not in _CONVERSION_MODULES:
        return False
    out = bsym.output
    return isinstance(out, TensorProxy) and out.dtype is not bsym.args[0].dtype


_CONVERSION_MODULES = frozenset({"Tensor", "torch", "thunder.torch"})

# ``F.unfold`` (im2col) and ``F.fold`` (col2im) always write a new contiguous tensor. Their symbols are
# named ``unfold``/``fold``, and ``unfold`` is also the name of a view (``Tensor.unfold``, which
# fusion_alias refuses before it reaches a trace: inplace_lookasides.py), so the name alone read
# ``F.unfold``'s result as a possible view of its input: a reshape of it in a program that writes was
# refused as of a layout fusion_alias cannot tell (fuzz seeds 19919 #23, 19902 #12).
_FUNCTIONAL_FRESH = frozenset({"unfold", "fold"})


def is_functional_fold(bsym) -> bool:
    """Whether ``bsym`` is ``torch.nn.functional.unfold``/``fold``, met whole: new, contiguous memory."""
    sym = bsym.sym
    if sym.id in ("torch.nn.functional.unfold", "torch.nn.functional.fold"):
        return True
    module = getattr(getattr(sym, "module", None), "__name__", None)
    return sym.name in _FUNCTIONAL_FRESH and module == "torch.nn.functional"


# Note [indexing with a tensor copies]
# ------------------------------------
# ``x[idx]`` with a tensor ``idx`` of one or more dims, or a bool tensor, is advanced indexing:
# eager gathers the elements into new memory, whatever else the key holds (``x[:, idx]``,
# ``x[0, idx]``). A 0-dim integer tensor is read as an int (``x[torch.tensor(1)]`` is ``x[1]``, a
# view). Thunder's torch executor runs ``getitem`` whole, a leaf symbol named as the torch view
# function it also is, so ``x.add_(x[idx])`` was refused as an operand fusion_alias cannot relate
# to what the op writes, and ``h[idx] += v`` in a training call likewise.
_GETITEM_NAMES = frozenset({"getitem", "__getitem__"})


def indexes_with_a_tensor(sym, args) -> bool:
    """Whether ``sym(*args)`` is a ``getitem`` whose key gathers (Note [indexing with a tensor copies],
    Note [indexing with a list copies])."""
    if sym.name not in _GETITEM_NAMES or len(args) < 2:
        return False
    key = args[1]
    if isinstance(key, list) and key and all(type(k) in (int, bool) for k in key):
        return True  # ``x[[0, 1]]``: one index of a list of ints
    key = tuple(key) if isinstance(key, (tuple, list)) else (key,)
    return any(isinstance(k, (list, tuple)) or (
        isinstance(k, TensorProxy) and (k.ndim > 0 or dtypes.is_boolean_dtype(k.dtype))) for k in key)


# Note [indexing with a list copies]
# ----------------------------------
# A Python list in a key is advanced indexing too, as a tensor is: ``x[[0, 1]]``, ``x[[True, False,
# True]]``, ``x[:, [0, 1]]``, ``x[0, [1, 2]]`` and ``x[[[0], [1]]]`` gather into new memory (checked in
# eager: none shares ``x``'s storage). A list that holds a slice, ``None`` or ``...`` is read by torch
# as a tuple (``x[[slice(None), 0]]`` is ``x[:, 0]``, a view); so is one that holds a list or a tensor,
# whose items then decide. ``x[[0, 1]].copy_(x[[1, 0]])`` (a write into a copy: eager's ``x`` does
# not change) was refused as operands fusion_alias cannot relate (session 17 hand probe).
