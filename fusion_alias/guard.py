"""The guard key: what a compiled program was compiled for, computed on every call.

``guard_key(items)`` -> (key, any tensor requires grad). See Note [what the guard key holds].
"""

from __future__ import annotations

import functools
from operator import itemgetter
import types
from typing import Sequence

import torch

from fusion_alias.components import _file, _root, _unite
from fusion_alias.object_shapes import BY_IDENTITY, Same, is_opaque_value, shape_of
from fusion_alias.overlap import (
    DEFAULT_MAX_WORK, _EMPTY, _UNKNOWN, _Parameter, _Tensor, _describe, _strided, _strided_description, _view_bits,
)

_first = itemgetter(0)

# Note [what the guard key holds]
# -------------------------------
# A compiled program is reused only for calls whose key equals the key of the
# call it was compiled for. Thunder's own prologue already checks each
# tensor's shape, dtype, device and requires_grad, so the key adds only what
# the fusion pass decided from the actual memory and Thunder does not check:
#
# * joins: which tensors may share a byte (components of ``may_overlap``);
# * layouts: the strides of every non-contiguous tensor. A reshape of a
#   transposed input is a copy where the same reshape of a contiguous one is a
#   view, and a write into an expanded (stride-0) input is refused, so
#   ``x`` and ``x.t()`` (same shape when square) or ``x`` and
#   ``y.expand(3, 3)`` must not share a program;
# * offsets: within a component of two or more, each member's byte offset
#   from the component's first member. With the shapes and strides this is
#   the exact relation: ``(x, x)`` and ``(x, x.t())`` are one component each,
#   but ``a.add_(b)`` is a partial overlap (eager raises) only in the second.
#
# * same (a component of two or more only): each member that is the very tensor object of an
#   earlier one. ``a is b`` in the program is answered from the call (tensor_identity.py, Note
#   [tensor identity in a trace]): ``f(x, x)`` (the pairs ``((1, 0),)``) and ``f(x, x.view(3, 3))``
#   (none) are one memory, one layout and one offset, but eager answers ``x is y`` apart.
#
# Worked example: ``f(x, x)`` with ``x`` 3x3 contiguous gives
# ``joins ((1, 0),)``, ``layouts ()``, ``offsets ((1, 0),)``, ``same ((1, 0),)``; ``f(x, x.t())``
# gives the same joins but ``layouts ((1, (1, 3)),)``: another program.
# Independent contiguous inputs, the common case, give ``((), (), ())``.

# Note [views with a gradient of their own]
# ----------------------------------------
# A tensor that requires grad, has a ``_base`` and no ``grad_fn`` is a view whose gradient does not enter its
# base's history: one made under ``torch.no_grad()`` (``with no_grad(): x = w[0]``), a leaf that is itself a
# view (``arange(12.).view(3, 4).requires_grad_()``), or a view of such a leaf (its ``_base`` requires no grad). The functionalization before Thunder's autodiff decides
# from that (gradient_paths.py: ``autograd_base``, Note [a view of a leaf read after a no_grad write]), and
# Thunder's prologue checks ``requires_grad`` only: ``f(w, w[0])`` compiled a program that joins both into one
# base, and ``f(w, x)`` with ``x`` taken under no_grad reused it, returning a value where eager raises (session
# 25 probe). Each such tensor's index is in ``layouts`` with the mark below.
_OWN_GRADIENT = "own gradient"

# Note [a leaf's .grad, None or not]
# ----------------------------------
# ``if p.grad is not None: p.sub_(p.grad, alpha=lr)``, or ``p.grad if p.grad is not None else ...``, the custom
# optimizer's guard, is a Python decision Thunder 0.2.6 takes while tracing and does not check again: its
# prologue checks a tensor's shape, dtype and requires_grad, not whether its ``.grad`` is None. Compiled on a
# first call with no gradient yet, every later call skipped the update, silently (fuzz seed 26001 #8, modules
# --grad; plain ``thunder.jit`` too). Each leaf that requires grad and has a ``.grad`` is in ``layouts`` with the
# mark below, so a call where that changes runs another program (one more compile where a loop keeps zeroed
# gradients instead of None ones: ``zero_grad(set_to_none=False)``).
# A tensor that does not require grad and has a ``.grad`` (a plain tensor given one by hand, a frozen parameter
# with a stale gradient; all such tensors are leaves) carries the mark too: Thunder 0.2.6 traces its ``.grad`` as
# None, and a program that reads it is refused while compiling (trace_time_queries.py, Note [.grad of a tensor
# that requires no grad]). Keyed, a call where such a tensor gains a ``.grad`` compiles again, and is refused,
# instead of reusing the program that read None; one where it loses it runs. (One attribute read per tensor
# that requires no grad, about 75 ns.)
_HAS_GRAD = "has .grad"

# Note [an argument's tensor type]
# --------------------------------
# ``isinstance(x, nn.Parameter)`` (or any branch on a tensor's class) is decided while tracing, and Thunder
# 0.2.6's prologue does not check the class again: compiled for a parameter, the program was reused for a
# plain tensor that requires grad, silently (plain ``thunder.jit`` too; session 27 hand probe). A parameter
# carries the mark below, and any other tensor subclass its class, so a call where that changes runs another
# program.
_PARAMETER = "nn.Parameter"

# Note [an argument that is None]
# -------------------------------
# ``if g is None: continue`` (an optimizer step over parameters some of which got no gradient this step) is
# decided while tracing, and Thunder 0.2.6's prologue checks nothing for a None argument: compiled for ``(x,
# 0.5)`` and then for ``(None, 0.5)``, a third call ``(x, 0.5)`` matched the second entry first and skipped
# the write, silently (session 31 probe; plain ``thunder.jit`` too)::
#
#     def step(g, lr):                 # step(x, .5); step(None, .5); step(x, .5)
#         if g is None: return         # eager: x + 2;  was: x + 1
#         g.add_(1)
#
# Each None leaf of the call (an argument, or an entry of a list or dict argument) is in ``layouts`` with the
# mark below, so a call that has None where another had a value runs another program.
_NONE = "None"
_LEAF_TYPES = frozenset({int, float, bool, complex, str, type(None), torch.dtype, torch.device})

# Note [a function or a dtype given as an argument]
# --------------------------------------------------
# Thunder 0.2.6's prologue checks the numbers and strings of the call (``int``, ``float``, ``bool``, ``complex``,
# ``str`` and their subclasses), not a function, a builtin, a class, a dtype, a layout or a value of another type it
# was given: the program traced with the first one ran for every later one, silently (session 35 probe; plain
# ``thunder.jit`` too)::
#
#     def f(x, act, dt): return act(x).to(dt) * 2    # f(x, torch.relu, torch.float64); f(x, torch.tanh, torch.float16)
#                                                     # eager: tanh in float16;  was: relu in float64
#
# (and ``numpy.int64``, ``range``, ``bytes``, ``torch.layout``, ``...``). So each such leaf of the call (an
# argument, or an entry of a list or dict argument) is in ``layouts`` as itself under the mark below: a function,
# builtin, class, dtype, device, enum member or ``functools.partial`` compared by identity, a bound method as its
# function and its object, by identity (its object may not be hashable), another value as ``object_shapes.shape_of``
# takes it (its value, a set's elements; by identity where it cannot be hashed). Not keyed: a plain object and a
# module, whose attributes the program reads through paths Thunder's prologue and outside_reads.py check (keying
# them by identity would compile again for each new object passed).
#
# A Python function is the same object after its code or defaults are replaced or its default dict is changed in
# place, and Thunder's interpreter read them while tracing: ``f(x, helper)``, then ``helper.__defaults__[0]["k"] =
# 3.0``, then ``f(x, helper)`` ran the first ``k`` again, silently (session 37 probe; plain ``thunder.jit`` too; a
# function read from a global was right: object_shapes.py, Note [a function's code and defaults]). So a function
# leaf is keyed as ``shape_of`` takes it there: itself, its code and defaults, and its defaults' contents
# (default_contents.py, Note [a default container of a function the program calls]).
_SAME_OBJECT = "is"
_NUMBERS = frozenset({int, float, bool, complex, str})
_BY_IDENTITY = (*BY_IDENTITY, torch.device, functools.partial)  # (object_shapes's, a device and a partial too)


def _leaf_key(t, tp):
    """What ``layouts`` holds for a leaf that is not a tensor, a None or a number (Note [a function or a dtype
    given as an argument]); None for one whose parts are checked elsewhere."""
    if isinstance(t, (int, float, complex, str)):
        return None  # (a subclass: Thunder's prologue checks its value)
    if tp is types.FunctionType:  # (its code and defaults too: the Note's last paragraph)
        return shape_of(t)
    if isinstance(t, _BY_IDENTITY):
        return Same(t)
    if tp is types.MethodType:
        return Same(t.__func__, t.__self__)
    if is_opaque_value(t):  # (object_shapes.py, Note [a value Thunder's prologue does not check])
        return shape_of(t)
    return None


def guard_key(items: Sequence[object], *, max_work: int | None = DEFAULT_MAX_WORK, flat_only: bool = False):
    """``(key, any_requires_grad)`` for a call's flattened tensors and other leaves.

    ``key`` is ``(joins, layouts, offsets)`` (see Note [what the guard key
    holds]): equal keys mean the same overlap components, the same strides of
    non-contiguous tensors and the same relative offsets inside components.
    With ``flat_only`` it returns None as soon as an item is neither a tensor
    nor a plain scalar (so the caller knows it must flatten first).

    >>> x = torch.zeros(3, 3)
    >>> guard_key([x, torch.zeros(3)])[0]
    ((), (), ())
    >>> guard_key([x, x.t()])[0]
    (((1, 0),), ((1, (1, 3)),), ((1, 0),), ())
    """
    # The hot path (one pass, per-call): a plain contiguous CPU/CUDA tensor costs a few
    # attribute reads and one tuple; its full description is built only if its byte
    # range meets another's (see _unite).
    addr: list[tuple] = []  # CPU/CUDA: (lo, hi, idx, description or None when contiguous)
    spaces: dict[object, list[tuple]] = {None: addr}
    unknown: list[int] = []
    layouts: list[tuple] = []
    grad = False
    for i, t in enumerate(items):
        tp = type(t)
        if tp is _Tensor or tp is _Parameter:
            if tp is _Parameter:  # Note [an argument's tensor type]
                layouts.append((i, _PARAMETER))
            if t.requires_grad:
                grad = True
                if t._base is not None and (t.grad_fn is None or not t._base.requires_grad):  # Note [views with a
                    # gradient of their own] (gradient_paths.own_gradient)
                    layouts.append((i, _OWN_GRADIENT))
                if t.grad_fn is None and t.grad is not None:  # Note [a leaf's .grad, None or not]
                    layouts.append((i, _HAS_GRAD))
            elif t.grad is not None:  # (a leaf that requires no grad: Note [a leaf's .grad, None or not])
                layouts.append((i, _HAS_GRAD))
            try:
                if t.layout is _strided and (t.is_cpu or t.is_cuda):
                    p = t.data_ptr()
                    if t.is_contiguous():
                        nbytes = t.nbytes
                        if nbytes:
                            addr.append((p, p + nbytes, i, None))
                        continue
                    shape = t.shape
                    if 0 in shape:
                        continue
                    d = _strided_description(None, p, t.element_size(), shape, t.stride())
                    layouts.append((i, d[6]))
                    addr.append((d[1], d[2], i, d))
                    continue
                d = _describe(t)
            except Exception:
                d = _UNKNOWN
        elif isinstance(t, _Tensor):
            layouts.append((i, tp))  # Note [an argument's tensor type]
            try:
                grad = grad or bool(t.requires_grad)
                if t.grad_fn is None and t.grad is not None:  # Note [a leaf's .grad, None or not]
                    layouts.append((i, _HAS_GRAD))
            except Exception:
                pass
            d = _UNKNOWN
        elif flat_only and tp not in _LEAF_TYPES:
            return None
        else:
            if t is None:  # Note [an argument that is None]
                layouts.append((i, _NONE))
            elif tp not in _NUMBERS:  # Note [a function or a dtype given as an argument]
                leaf = _leaf_key(t, tp)
                if leaf is not None:
                    layouts.append((i, _SAME_OBJECT, leaf))
            continue
        if d is not _UNKNOWN and d is not _EMPTY and d[5]:
            layouts.append((i, d[6]))
        _file(i, d, spaces, unknown)
    if grad:  # Note [inputs that share a storage, in a call with gradients]
        shared = _shared_storages(items, addr)
        if shared:
            layouts.append((_SHARED_STORAGE, shared))
    if len(spaces) == 1 and not unknown:
        # the common case: CPU/CUDA tensors whose byte ranges do not meet
        addr.sort(key=_first)
        top = -1
        for lo, hi, _, _ in addr:
            if lo < top:
                break
            top = hi
        else:
            return ((), tuple(layouts), ()), grad
    parent = _unite(len(items), items, spaces, unknown, max_work)
    if parent is None:
        return ((), tuple(layouts), ()), grad
    joins = []
    offsets = []
    same = []  # (i, the first index of the same tensor object): Note [what the guard key holds]
    first_index: dict[int, int] = {}
    for i in range(len(items)):
        if isinstance(items[i], _Tensor):
            j = first_index.setdefault(id(items[i]), i)
            if j != i:
                same.append((i, j))
        r = _root(parent, i)
        if r != i:
            joins.append((i, r))
            d, dr = _describe(items[i]), _describe(items[r])
            bits = _view_bits(items[i]) + _view_bits(items[r])  # Note [conjugate and negative views in the key]
            if d is _UNKNOWN or dr is _UNKNOWN or d is _EMPTY or dr is _EMPTY:
                offsets.append((i, None) + ((bits,) if any(bits) else ()))
            else:
                offsets.append((i, d[3] - dr[3]) + ((bits,) if any(bits) else ()))
    return (tuple(joins), tuple(layouts), tuple(offsets), tuple(same)), grad


# Note [inputs that share a storage, in a call with gradients]
# -----------------------------------------------------------
# Eager keeps one version counter per storage, so in a call that computes gradients two inputs that share a
# storage without sharing a byte are not independent: ``a.sigmoid_(); b.mul_(2); return a.sum()`` with ``a, b =
# x[0:2], x[2:4]`` raises at eager's backward (``sigmoid_`` saved its result, and ``b``'s write bumped the
# counter they share), and the compile refuses it (refusals/version_counters.py). The overlap components do not
# tell these from two tensors, so a program compiled for independent inputs ran for the views later and returned
# a gradient where eager raises (session 44, helper-72's finding). When any tensor requires grad, the key also
# holds the pairs ``(i, first index with the same storage)`` (storage start: the data pointer less the storage
# offset; empty tensors and tensors without strided CPU/CUDA memory are left out). Independent tensors give no
# pair and the key is as before; calls that compute no gradient do not pay for it.
_SHARED_STORAGE = "shared storage"


def _shared_storages(items, addr: list) -> tuple:
    """``(i, j)`` for each tensor of ``items`` whose storage starts where that of an earlier tensor ``j`` does (Note
    [inputs that share a storage, in a call with gradients]). ``addr``: ``guard_key``'s byte ranges of the strided
    CPU/CUDA tensors, ``(lowest address, end, index, description)`` in index order, whose lowest address is the
    data pointer."""
    first: dict = {}
    pairs = []
    for lo, _, i, _ in addr:
        t = items[i]
        try:
            offset = t.storage_offset()
            j = first.setdefault(lo - offset * t.element_size() if offset else lo, i)
        except Exception:  # (no storage to ask: it pairs with nothing here; its overlaps are the components')
            continue
        if j != i:
            pairs.append((i, j))
    return tuple(pairs)


# Note [conjugate and negative views in the key]
# ----------------------------------------------
# ``x.conj()`` of a complex ``x`` is a view with the same storage, offset, sizes and strides and the conjugate
# bit set (``x.conj().imag`` a float view with the negative bit): reads through it see ``conj(x)``. The pass
# reads two inputs of one memory and one layout as one tensor (input_groups.py, Note [the same tensor passed
# twice is one memory]) and drops a copy of memory onto itself (noop_copies.py) only where their bits agree, but
# the key held memory and layout alone: ``f(x, x)`` compiled a program reading ``b`` as ``a``, and ``f(x,
# x.conj())`` then reused it (``a.mul_(2); return b + 0`` returned ``2 x`` where eager returns ``conj(2 x)``;
# session 17 hand probe, plain ``thunder.jit`` ignores the bit too). Within a component of two or more, each
# member's offset entry carries both tensors' (conj, neg) bits where any is set; the common key is unchanged.


# Note [numbers inside a deque argument]
# --------------------------------------
# Thunder's ``tree_flatten`` flattens a ``collections.deque`` like a list, so the guard took a number in one for a
# leaf Thunder's prologue checks; the prologue does not unpack a deque, and the number read from it was baked into
# the trace: ``f(x, deque([2.0]))`` then ``f(x, deque([3.0]))`` multiplied by 2 again, silently (session 36 probe;
# plain ``thunder.jit`` too; a tensor in a deque is checked). Where the flattened call holds a deque, the key holds
# every number of the call by type and value (a float by its hex spelling, so that a NaN equals itself).
_SPECS_WITH_DEQUE: dict = {}  # tree_flatten's spec -> whether it holds a deque


def deque_numbers(spec, flat) -> tuple:
    """The numbers among ``flat`` by type and value where ``spec`` (``tree_flatten``'s) holds a deque, else ``()``
    (Note [numbers inside a deque argument])."""
    has_deque = _SPECS_WITH_DEQUE.get(spec)
    if has_deque is None:  # (a spec's repr: ~78 µs at 256 tensors; its hash ~2: asked once per structure)
        if len(_SPECS_WITH_DEQUE) >= 256:
            _SPECS_WITH_DEQUE.clear()
        has_deque = _SPECS_WITH_DEQUE[spec] = "deque(" in repr(spec)
    if not has_deque:
        return ()
    return tuple((float, x.hex()) if type(x) is float else (type(x), x) for x in flat if type(x) in _NUMBERS)


def flat_sequences(args: tuple, kwargs: dict | None = None):
    """``(leaves, structure)`` when every argument (and keyword argument) is a tensor, a plain number, a plain
    list or tuple of tensors (an optimizer step's ``(params, grads, lr)``) or a dict of those by string keys (its
    state), in ``tree_flatten``'s order for the arguments, then the keywords by name; else ``(None, None)``.

    The per-call path of the common optimizer call: Thunder's ``tree_flatten`` costs about as much
    as the guard key itself at 256 tensors. ``structure`` tells the shapes of nesting apart
    (``([a, b],)`` from ``(a, b)``) and holds the keywords' names; it is a key, not a ``TreeSpec``.
    (Note [a step's numbers and keywords on the fast path].)
    """
    flat: list = []
    structure: list = []
    for a in args:
        if not _flat_item(a, flat, structure):
            return None, None
    if kwargs:
        for k in sorted(kwargs) if len(kwargs) > 1 else kwargs:  # (as tree_flatten: one program for either order)
            structure.append(k)
            if not _flat_item(kwargs[k], flat, structure):
                return None, None
    return flat, ("sequences", tuple(structure))


# Note [a step's numbers and keywords on the fast path]
# -----------------------------------------------------
# An optimizer step takes its learning rate beside its lists: ``step(params, grads, 0.01)`` or ``step(params,
# grads, lr=0.01)``. Such a call went through Thunder's ``tree_flatten`` and ``deque_numbers``, whose ``repr`` of
# the tree spec alone cost ~78 µs at 256 tensors (session 39: 50 µs a cached call at 2 tensors against plain
# ``thunder.jit``'s 36). A plain number or string is a leaf the guard key does not hold (Thunder's prologue checks
# its type and value), and a None one it holds by position (Note [an argument that is None]), so each flattens here
# as itself; the structure holds its type, so ``f([a], 1)`` and ``f([a], 1.0)``
# stay apart as in ``tree_flatten``, and each keyword's name, so the keywords' names key the call. A plain dict
# with string keys (``state = {"m": m, "step": 3}``) flattens its values in sorted key order, its keys in the
# structure; a dict inside it, another key type or a dict subclass go to ``tree_flatten``.
_PLAIN_LEAVES = (int, float, bool, complex, str, type(None))  # (leaves of tree_flatten's too: None is one there)


def _flat_item(a, flat: list, structure: list, top: bool = True) -> bool:
    tp = type(a)
    if tp is dict and top:  # (an optimizer's state dict: its values by key, in tree_flatten's sorted order)
        for k in a:
            if type(k) is not str:
                return False
        keys = sorted(a)
        structure.append((dict, tuple(keys)))
        for k in keys:
            if not _flat_item(a[k], flat, structure, False):
                return False
    elif tp is list or tp is tuple:
        for t in a:
            if not isinstance(t, torch.Tensor):
                return False
        flat.extend(a)
        structure.append((tp, len(a)))
    elif isinstance(a, torch.Tensor):
        flat.append(a)
        structure.append(None)
    elif tp in _PLAIN_LEAVES:
        flat.append(a)
        structure.append(tp)
    else:
        return False
    return True
