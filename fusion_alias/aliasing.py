"""Alias analysis: which tensor proxies of a trace may share memory.

Every tensor proxy gets

* a **family**: the proxy whose memory it is a view of (its *root*), and the
  chain of view prims from the root to it. Two proxies with the same root and
  the same chain are the *same view*: they name the same elements.
* a **memory group**: the set of families whose memory may overlap. Families of
  distinct call inputs share a group when the actual tensors overlap (or when we
  cannot tell); fresh results of compute ops are groups of their own.

Note [copy_ results keep their memory]
---------------------------------------
``t1 = prims.copy_(t0, a)`` writes ``t0`` into ``a``; its result ``t1`` *is*
``a``'s memory, not a fresh tensor. So ``t1`` joins ``a``'s family with ``a``'s
chain. Worked example (seed repro k, inputs ``(x, x[0, 0])``)::

    t2 = copy_(exp(a), a)     # t2: family a, chain ()
    t4 = copy_(tanh(b), b)    # b overlaps a: same memory group as t2
    sin(t2)                   # reads a's memory *after* the write through b

Had ``t2`` been treated as a fresh value, ``sin(t2)`` would not see the write
through ``b`` and the partitioner could fuse it with that write.

Note [unknown ops alias conservatively]
---------------------------------------
An op outside the op table may return a view of any tensor argument and may
write any of them (``ltorch.index_add_`` reaches us as one opaque symbol). Its
tensor results therefore join the memory group of all its tensor arguments,
under a fresh family (never "the same view" as anything), and the op counts as
a write of those groups.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from networkx.utils import UnionFind
from thunder.core.proxies import Proxy, TensorProxy
from thunder.core.compile_data import using_symbolic_values
from thunder.core.symbol import BoundSymbol, gather_tags
import thunder.core.prims as prims

from fusion_alias import ops
from fusion_alias.fresh_results import (always_copies, converts_dtype, indexes_with_a_tensor, is_functional_fold,
                                        returns_new_memory)
from fusion_alias.gather_views import is_gather_view
from fusion_alias.leaf_views import is_detach


def _proxies(x, out: list) -> list:
    if isinstance(x, Proxy):
        out.append(x)
    elif isinstance(x, (tuple, list)):
        for y in x:
            _proxies(y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _proxies(y, out)
    return out


# id(bsym) -> (bsym, proxy args, proxy outs, tensor args, tensor outs); the bsym is
# kept, so ids stay unique
_ARGS: dict[int, tuple] = {}


# Note [argument kinds by type]: most arguments of a prim are tensor proxies or plain numbers, so
# ``_flat`` asks the exact type first (one identity test, or one set lookup for a number, a
# string, None, a slice: never a proxy, never a container) and ``isinstance`` only for the rest
# (other proxies, containers, dtypes, subclasses of anything).
_NOT_PROXIES = frozenset({int, float, bool, complex, str, type(None), slice, type(Ellipsis)})


def _arg_proxies(xs, out: list) -> bool:
    """Append the proxies among ``xs`` to ``out`` (``_proxies``, its first level inlined: most
    arguments are proxies or numbers); whether each was a tensor proxy at the first level, so
    that the tensor arguments are the same list (Note [argument kinds by type])."""
    only_tensors = True
    for x in xs:
        t = type(x)
        if t is TensorProxy:
            out.append(x)
        elif t in _NOT_PROXIES:
            continue
        elif isinstance(x, Proxy):
            out.append(x)
            if only_tensors and not isinstance(x, TensorProxy):
                only_tensors = False
        elif isinstance(x, (tuple, list, dict)):
            only_tensors = False
            _proxies(x, out)
    return only_tensors


def _flat(bsym: BoundSymbol) -> tuple:
    args = []
    only_tensors = _arg_proxies(bsym.args, args)
    kwargs = bsym.kwargs
    if kwargs:
        for x in kwargs.values():  # (_proxies of the dict, its first level inlined: copy_'s is a flag)
            if type(x) in _NOT_PROXIES:
                continue
            if isinstance(x, Proxy):
                args.append(x)
                only_tensors = False
            elif isinstance(x, (tuple, list, dict)):
                only_tensors = False
                _proxies(x, args)
    out = bsym.output
    t = type(out)
    if t is TensorProxy:
        outs = t_outs = [out]
    else:
        outs = [out] if isinstance(out, Proxy) else _proxies(out, [])
        t_outs = outs if len(outs) == 1 and isinstance(out, TensorProxy) else [o for o in outs if isinstance(o, TensorProxy)]
    t_args = args if only_tensors else [a for a in args if isinstance(a, TensorProxy)]
    entry = _ARGS[id(bsym)] = (bsym, args, outs, t_args, t_outs)
    return entry


# Note [flattened once per pass]: the getters below are the passes' innermost
# calls (about ten per bsym), so each does its own cache lookup inline rather
# than through a helper.


def flattened(bsym: BoundSymbol) -> tuple:
    """``(bsym, proxy args, proxy outs, tensor args, tensor outs)`` in one lookup (do not mutate)."""
    entry = _ARGS.get(id(bsym))
    if entry is None or entry[0] is not bsym:
        entry = _flat(bsym)
    return entry


def proxy_args(bsym: BoundSymbol) -> list[Proxy]:
    """The proxies among a bsym's arguments (do not mutate the list).

    Like ``bsym.flat_args`` for the tuples, lists and dicts prims take, without
    the cost of Thunder's general pytree flattening (which dominated the pass
    on large traces), and remembered until :func:`forget_flattened`.
    """
    entry = _ARGS.get(id(bsym))
    if entry is None or entry[0] is not bsym:
        entry = _flat(bsym)
    return entry[1]


def proxy_outs(bsym: BoundSymbol) -> list[Proxy]:
    entry = _ARGS.get(id(bsym))
    if entry is None or entry[0] is not bsym:
        entry = _flat(bsym)
    return entry[2]


def shape_reader():
    """A function from a tensor proxy to its shape, as a tuple, for the stage that asks now.

    Note [shapes read directly]: ``TensorProxy.shape`` asks Thunder's compile data
    whether values are symbolic on every read (three Python calls; the pass reads a
    shape or two per bound symbol). Unless they are, it returns the proxy's ``_shape``
    tuple, which the function returned here then reads directly; the answer is the
    one ``tuple(p.shape)`` gives.
    """
    if using_symbolic_values():
        return lambda p: tuple(p.shape)
    return _read_shape


_read_shape = operator.attrgetter("_shape")


# Note [proxy names read directly]
# --------------------------------
# ``Proxy.name`` is a Python property that returns ``Proxy._name``: a function call per
# read, about twice the cost of the attribute. The pass reads a few dozen names per bound
# symbol (about three million reads at 100k bsyms), so the loops that run once per symbol
# of the trace read ``_name`` itself; elsewhere ``name`` is read as usual.


# id(bsym) -> (bsym, the copy_ prims of its decomposition): asked by two checks of every
# in-place op of the trace (refusals.inplace_ops, dtype_rules), for the same bsyms
_COPIES: dict[int, tuple] = {}


def copies_in(bsym: BoundSymbol) -> list[BoundSymbol]:
    """The ``copy_`` prims in ``bsym``'s decomposition, in program order (do not mutate the list)."""
    entry = _COPIES.get(id(bsym))
    if entry is None or entry[0] is not bsym:
        entry = _COPIES[id(bsym)] = (bsym, _copies_below(bsym, []))
    return entry[1]


def _copies_below(bsym: BoundSymbol, out: list) -> list:
    copy_id = ops.COPY_ID
    for sub in bsym.subsymbols:
        if sub.sym.id is copy_id:
            out.append(sub)
        elif sub.subsymbols:
            _copies_below(sub, out)
    return out


def forget_flattened() -> None:
    """Drop what proxy_args/proxy_outs and copies_in remembered (end of a pass)."""
    _ARGS.clear()
    _COPIES.clear()


def tensor_args(bsym: BoundSymbol) -> list[TensorProxy]:
    """The tensor proxies among a bsym's arguments (do not mutate the list)."""
    entry = _ARGS.get(id(bsym))
    if entry is None or entry[0] is not bsym:
        entry = _flat(bsym)
    return entry[3]


def tensor_outs(bsym: BoundSymbol) -> list[TensorProxy]:
    """The tensor proxies among a bsym's outputs (do not mutate the list)."""
    entry = _ARGS.get(id(bsym))
    if entry is None or entry[0] is not bsym:
        entry = _flat(bsym)
    return entry[4]


def _view_step(bsym: BoundSymbol) -> tuple:
    """A hashable description of one view prim, without its tensor argument."""
    rest = tuple([_freeze(a) for a in bsym.args[1:]])
    kwargs = bsym.kwargs
    return (bsym.sym.id, rest, tuple(sorted((k, _freeze(v)) for k, v in kwargs.items())) if kwargs else ())


def _freeze(x):
    """``x`` with its lists and tuples, nested, as tuples (a view's shape or indices: flat, mostly,
    a tuple of the same items made at once)."""
    if isinstance(x, (list, tuple)):
        for i in x:
            if isinstance(i, (list, tuple)):
                return tuple([_freeze(i) for i in x])
        return tuple(x)
    return x


def may_write(bsym: BoundSymbol) -> bool:
    """True when an opaque (unsupported) symbol may write one of its arguments."""
    if ops.is_copy(bsym):
        return True
    if prims.OpTags.IN_PLACE in gather_tags(bsym):
        return True
    return any(may_write(s) for s in bsym.subsymbols)


@dataclass
class AliasInfo:
    """Families and memory groups of every tensor proxy name in a trace."""

    root: dict[str, str] = field(default_factory=dict)
    chain: dict[str, tuple[BoundSymbol, ...]] = field(default_factory=dict)
    view_key: dict[str, tuple] = field(default_factory=dict)
    groups: UnionFind = field(default_factory=UnionFind)
    # name -> group, as ``group`` answered it: groups only merge while ``analyze`` runs, before any
    # question (``UnionFind.__getitem__`` is Python code, asked several times per name and stage)
    # Note [singleton groups are not registered]: a root no union named (``t3`` of ``t3 = exp(a)``) is
    # its own group, as ``UnionFind`` would answer; ``group`` says so without asking it (Python code),
    # and ``add_root`` does not register one: ``groups.parents`` has no ``t3`` until a union names it.
    _group_of: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    # the names ``copy_`` writes into, in trace order (placed_symbols.py: the views written through)
    destinations: list[str] = field(default_factory=list, repr=False, compare=False)

    def group(self, name: str) -> str:
        """Canonical name of the memory group of ``name``."""
        g = self._group_of.get(name)
        if g is None:
            r = self.root[name]
            groups = self.groups  # (Note [singleton groups are not registered])
            g = self._group_of[name] = groups[r] if r in groups.parents else r
        return g

    def groups_asked(self) -> dict[str, str]:
        """name -> group, for the names ``group`` has answered so far (read-only; a loop that asks
        ``group`` for most names of a trace reads this first, and calls ``group`` on a miss)."""
        return self._group_of

    def forget_groups(self) -> None:
        """Drop what ``group`` remembered (after merging groups)."""
        self._group_of.clear()

    def same_view(self, a: str, b: str) -> bool:
        return self.view_key[a] == self.view_key[b]

    def is_whole(self, name: str) -> bool:
        """True when ``name`` covers all of its family's memory (the root itself)."""
        return self.view_key[name] == (self.root[name], ())

    def members(self) -> dict[str, list[str]]:
        """Memory group → proxy names, for printing."""
        out: dict[str, list[str]] = {}
        for name in self.root:
            out.setdefault(self.group(name), []).append(name)
        return out

    # -- building ---------------------------------------------------------
    def add_root(self, name: str) -> None:
        self._group_of.pop(name, None)
        self.root[name] = name
        self.chain[name] = ()
        self.view_key[name] = (name, ())

    def add_alias(self, name: str, of: str, step: BoundSymbol | None, step_key: tuple | None = None) -> None:
        """``name`` is a view of ``of`` (``step`` None: the very same view); ``step_key``, when
        given, is ``step``'s view step (that of a step it replays), not computed again."""
        self._group_of.pop(name, None)
        self.root[name] = self.root[of]
        if step is None or id(step.sym.id) in ops._IDENTITY_VIEW_ADDRS:  # (ops' Note [prim lookups by identity])
            self.chain[name] = self.chain[of]
            self.view_key[name] = self.view_key[of]
        else:
            self.chain[name] = self.chain[of] + (step,)
            root, steps = self.view_key[of]
            self.view_key[name] = (root, steps + (step_key if step_key is not None else _view_step(step),))


def analyze(
    bsyms: Sequence[BoundSymbol],
    inputs: Iterable[TensorProxy],
    input_groups: Iterable[Iterable[str]] = (),
    same_inputs: Iterable[tuple[str, str]] = (),
    detach_is_view: bool = False,
    gather_views: bool = False,
) -> AliasInfo:
    """Families and memory groups for ``bsyms``.

    ``inputs`` are the trace's tensor inputs; ``input_groups`` lists sets of
    input names that may overlap at run time (from the actual call arguments);
    ``same_inputs`` pairs ``(name, of)`` of inputs that are the very same memory
    (``input_groups.identical_inputs``): ``name`` becomes a view of ``of`` with no steps.
    ``detach_is_view``: ``x.detach()`` is ``x`` (Note [detach is the same view]); only for a trace
    that computes no gradient. ``gather_views``: a ``diagonal`` is a view step (gather_views.py, Note [a
    diagonal is a view the rewrite replays by its own function]); only for the functional rewrite.

    >>> # a = input, b = squeeze(slice(a)), t1 = copy_(t0, b)
    >>> # root[b] == root[t1] == "a"; group(b) == group(a)
    """
    info = AliasInfo()
    for p in inputs:
        info.add_root(p.name)
    for names in input_groups:
        names = [n for n in names if n in info.root]
        if len(names) > 1:
            info.groups.union(*names)
    for name, of in same_inputs:
        if name in info.root and of in info.root:
            info.add_alias(name, of, None)
            info.groups.union(name, of)

    root, chain, view_key = info.root, info.chain, info.view_key
    op_by_addr = ops._OP_BY_ADDR
    for bsym in bsyms:
        _, _, _, args, outs = flattened(bsym)
        for a in args:  # proxies we have not seen (e.g. produced by a prologue)
            if a._name not in root:  # (Note [proxy names read directly])
                info.add_root(a._name)
        op = op_by_addr.get(id(bsym.sym.id))  # (ops.op_info) one lookup: its kind tells copy_, views and update_aliases apart
        kind = op.kind if op is not None else None
        if kind == "elementwise" or kind == "reduction" or kind == "creation":
            for o in outs:  # (info.add_root, inlined: the most common case; no group asked yet to forget)
                name = o._name  # (a singleton group: Note [singleton groups are not registered])
                root[name] = name
                chain[name] = ()
                view_key[name] = (name, ())
        elif kind == "write":  # copy_
            of = bsym.args[1]._name
            info.destinations.append(of)
            for o in outs:  # (info.add_alias(o.name, of, None), inlined)
                name = o._name
                root[name] = root[of]
                chain[name] = chain[of]
                view_key[name] = view_key[of]
        elif kind == "view":
            for o in outs:
                info.add_alias(o._name, args[0]._name, bsym)
        elif kind == "alias":  # update_aliases
            for o, a in zip(outs, bsym.args[0]):
                info.add_alias(o.name, a.name, None)
        elif op is not None:
            for o in outs:
                info.add_root(o.name)
        elif gather_views and is_gather_view(bsym) and bsym.output._name not in root:  # (gather_views.py)
            info.add_alias(bsym.output._name, bsym.args[0]._name, bsym)
        elif detach_is_view and is_detach(bsym) and bsym.output._name not in root:  # Note [detach is the same view]
            info.add_alias(bsym.output._name, bsym.args[0]._name, None)
        else:
            # Note [unknown ops alias conservatively]
            for o in outs:
                if o.name in info.root:  # e.g. unpack_trivial re-binding an input
                    continue
                info.add_root(o.name)
                if args and output_may_alias(bsym, o.name):
                    info.groups.union(o.name, *(info.root[a.name] for a in args))
    info.forget_groups()
    return info


_OPAQUE_VIEW_PRIMS = frozenset(
    {prims.PrimIDs.VIEW, prims.PrimIDs.UNFOLD, prims.PrimIDs.BITCAST, prims.PrimIDs.UPDATE_ALIASES}
)


@functools.cache
def _view_symbols() -> frozenset:
    import thunder.torch as ltorch

    return frozenset(ltorch._syms_returning_views) | frozenset(ltorch._syms_that_may_return_views)


@functools.cache
def _view_names() -> frozenset:
    return frozenset(s.name for s in _view_symbols())


def output_may_alias(bsym: BoundSymbol, out_name: str) -> bool:
    """May the output ``out_name`` of an opaque symbol share memory with an argument?

    Follows the subsymbol that produces ``out_name`` down to a prim: a view
    prim or a torch view function means yes; a compute prim means no; a symbol
    with no decomposition is unknown, so yes.
    """
    sym = bsym.sym
    if (indexes_with_a_tensor(sym, bsym.args) or converts_dtype(bsym) or is_functional_fold(bsym)
            or always_copies(bsym)):  # (fresh_results.py)
        return False
    if sym in _view_symbols() or sym.id in ops.VIEW_IDS or sym.id in _OPAQUE_VIEW_PRIMS:
        return True
    if sym.name in _view_names():  # an executor's op for a torch view function (torch.narrow)
        return True
    if ops.is_copy(bsym):
        return True
    if bsym.subsymbols:
        outer = {a.name for a in proxy_args(bsym) if isinstance(a, TensorProxy)}
        if any(out_name in {o.name for o in proxy_outs(s) if isinstance(o, TensorProxy)} for s in bsym.subsymbols):
            return _made_from_args(bsym.subsymbols, out_name, outer)
    if isinstance(sym.id, prims.PrimIDs):  # a Thunder prim that is not a view
        return False
    if not bsym.subsymbols and (prim := _prim_implemented_by(sym.name)) is not None:
        # an executor's implementation of a prim (copy_with_setitem_impl): the prim says
        return prim in ops.VIEW_IDS or prim in _OPAQUE_VIEW_PRIMS
    if not bsym.subsymbols and returns_new_memory(bsym):
        return False  # Note [torch functions whose result is new memory] (fresh_results.py)
    return not bsym.subsymbols  # an opaque leaf: cannot tell


def _made_from_args(subs, name: str, outer: set) -> bool:
    """May ``name``, made by one of the decomposition ``subs``, share memory with an argument in ``outer``?

    Note [views of values made inside a decomposition]: a view symbol inside a
    decomposition aliases its own operand, which may be a fresh value made just
    before. ``F.embedding(idx, w)`` with a 2-d ``idx`` decomposes into
    ``t22 = take(w, reshape(idx)); t23 = reshape(t22, (2, 2, 3))``: ``t23`` is a
    view of ``t22``, which ``take`` made, so it does not share memory with ``w``
    (Thunder agrees: ``embedding`` is in neither ``_syms_returning_views`` nor
    ``_syms_that_may_return_views``). Taking every view as one of the arguments
    refused ``x = F.embedding(idx, w); x += 1`` with gradients.
    """
    if name in outer:
        return True
    for i in range(len(subs) - 1, -1, -1):
        sub = subs[i]
        if any(isinstance(o, TensorProxy) and o.name == name for o in proxy_outs(sub)):
            if not output_may_alias(sub, name):
                return False
            operands = [a.name for a in proxy_args(sub) if isinstance(a, TensorProxy)]
            return any(_made_from_args(subs[:i], a, outer) for a in operands) if operands else True
    return True  # made by none of them: cannot tell


@functools.cache
def _prim_implemented_by(sym_name: str):
    """The prim that a registered executor implements with the symbol named ``sym_name``, or None.

    Note: with gradients, Thunder hands over ``copy_with_setitem_impl`` (the torch
    executor's functional ``a[key] = v`` on a clone), a leaf with no subsymbols.
    Read as "cannot tell", it put the value ``k`` of ``cache[:, 0] = k`` in
    ``cache``'s memory group. Thunder's own registry (``implmap``) says it
    implements ``prims.copy_with_setitem``, which returns a fresh tensor.
    """
    from thunder.extend import get_all_executors

    for ex in get_all_executors():
        for key, info in getattr(ex, "implmap", {}).items():
            if isinstance(key, prims.PrimIDs) and getattr(getattr(info, "symbol", None), "name", None) == sym_name:
                return key
    return None
