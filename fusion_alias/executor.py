"""Executor glue: the ``fusion_alias`` FusionExecutor for Thunder.

``fusion_pass`` runs the pipeline on the trace Thunder hands it::

    flatten → (drop update_aliases) → alias analysis → read substitution
            → dependency graph → partition → one fusion bsym per region

and ``fuse`` turns one region into a fusion bound symbol whose callable is a
backend wrapper (reference or nvFuser) carrying the region's alias groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
import contextlib
import gc
import time

import torch
import thunder
from thunder.core.proxies import Proxy, TensorProxy, Variable, unvariableify, variableify
from thunder.core.symbol import BoundSymbol, Symbol
from thunder.core.trace import TraceCtx, TraceProvenance, from_trace
from thunder.core.pytree import tree_flatten
from thunder.extend import FusionExecutor, register_executor
import thunder.core.prims as prims

from fusion_alias import context, ops
from fusion_alias.aliasing import AliasInfo, analyze, flattened, forget_flattened, proxy_args, proxy_outs
from fusion_alias.functionalize import substitute_reads
from fusion_alias.graph import build_graph
from fusion_alias.lowering import plan_region
from fusion_alias.overlap import shared_storage_groups
from fusion_alias.partition import partition

BACKENDS = ("auto", "nvfuser", "torch", "reference")


class AliasInputError(RuntimeError):
    """A program eager PyTorch rejects (e.g. an in-place write into an expanded tensor)."""


@contextlib.contextmanager
def _gc_paused():
    """The pass allocates many small objects and frees none: the cyclic collector only
    rescans them (a third of the pass on 100k-bsym traces). Pause it for the pass."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class Prepared:
    bsyms: list
    info: AliasInfo
    graph: object
    tensor_inputs: list
    seconds: dict
    is_fusible: object = None


@dataclass
class _RegionMeta:
    alias_groups: list[list[str]]
    view_key: object
    backend: str
    schedule: str


def _tensor_proxies(xs):
    for x in xs:
        if isinstance(x, TensorProxy):
            yield x
        elif isinstance(x, (list, tuple)):
            yield from _tensor_proxies(x)


_DTYPE_OK: dict = {}


def _fusible_dtype(x) -> bool:
    ok = _DTYPE_OK.get(x.dtype) if isinstance(x, TensorProxy) else True
    if ok is None:
        ok = _DTYPE_OK[x.dtype] = _fusible_dtype_uncached(x)
    return ok


def _fusible_dtype_uncached(x) -> bool:
    if isinstance(x, TensorProxy):
        try:
            return thunder.core.dtypes.to_torch_dtype(x.dtype) in ops.FUSIBLE_TORCH_DTYPES
        except Exception:
            return False
    return True


def nvfuser_usable() -> bool:
    from fusion_alias.backends import nvfuser as nvb

    return nvb.available()


def resolve_backend(backend: str, device_type: str | None = None) -> str:
    """``auto``: nvFuser for CUDA regions where it is installed, else the compiled torch backend."""
    if backend == "auto":
        if device_type == "cuda" and nvfuser_usable():
            return "nvfuser"
        return "torch"
    return backend


class FusionAliasExecutor(FusionExecutor):
    """Fuses in-place programs on aliased tensors without alias hazards inside a region."""

    def __init__(self, name: str = "fusion_alias"):
        super().__init__(name, version="0.1.0")
        for pid in ops.OP_TABLE:
            self.register_supported(pid, checker=self._checker)
        self._regions: dict[tuple, _RegionMeta] = {}
        self.last_pass_seconds: float = 0.0

    # -- what we claim ------------------------------------------------------
    def _checker(self, *args, **kwargs) -> bool:
        tensors = list(_tensor_proxies(args)) + list(_tensor_proxies(kwargs.values()))
        if not all(_fusible_dtype(t) for t in tensors):
            return False
        if context.current().backend == "nvfuser":
            return all(t.device.type == "cuda" for t in tensors)
        return True

    def flatten(self, bsym: BoundSymbol) -> list[BoundSymbol]:
        """``bsym`` as the pass sees it: the symbols we claim, or itself when it is not all ours."""
        return self._flatten(bsym, {})[0]

    def _flatten(self, bsym: BoundSymbol, verdicts: dict) -> tuple[list[BoundSymbol], bool]:
        """``bsym`` down to the symbols we claim, if all of it is ours; else ``[bsym]``.

        One recursion (``can_fuse`` would re-walk every level), recording each
        leaf's fusibility in ``verdicts``.
        """
        if self.can_execute(bsym):
            verdicts[id(bsym)] = (bsym, ops.op_info(bsym) is not None)
            return [bsym], True
        if bsym.sym.is_fusion or not bsym.subsymbols:
            return [bsym], False
        out = []
        for sub in bsym.subsymbols:
            part, ok = self._flatten(sub, verdicts)
            if not ok:
                return [bsym], False
            out.extend(part)
        return out, True

    def is_fusible(self, bsym: BoundSymbol) -> bool:
        return ops.op_info(bsym) is not None and self.can_execute(bsym)

    # -- the pass -----------------------------------------------------------
    def prepare(self, trace: TraceCtx, input_groups=None) -> Prepared:
        """Everything before partitioning: flattened, substituted bsyms, alias info, graph.

        ``input_groups`` (lists of input names that may overlap) overrides
        what the compile context says; benchmarks pass it for synthetic traces.
        """
        with _gc_paused():
            return self._prepare(trace, input_groups)

    def _prepare(self, trace: TraceCtx, input_groups=None) -> Prepared:
        ctx = context.current()
        forget_flattened()
        verdicts: dict[int, tuple] = {}  # id -> (bsym, fusible), for this pass: the checker is not free
        flat: list[BoundSymbol] = []
        for b in trace.bound_symbols:
            flat.extend(self._flatten(b, verdicts)[0])
        flat, alias_facts, renamed = _drop_update_aliases(flat)
        inplace_ops = _inplace_ops_by_write(trace.bound_symbols, renamed)
        tensor_inputs = [a for a in trace.args if isinstance(a, TensorProxy)]
        actual: dict = {}
        if input_groups is None:
            input_groups, actual = _input_groups(trace, ctx, tensor_inputs)
        t0 = time.perf_counter()
        info = analyze(flat, tensor_inputs, list(input_groups) + alias_facts)
        proxies = {o.name: o for b in flat for o in proxy_outs(b) if isinstance(o, TensorProxy)}
        proxies.update((p.name, p) for p in tensor_inputs)
        if _has_lost_its_inplace_ops(trace):
            self._check_original_operands(ctx, actual)
        grad_inputs = {p.name for p in tensor_inputs if p.requires_grad} if torch.is_grad_enabled() else set()
        _check_writes(flat, info, actual, proxies, inplace_ops, grad_inputs)
        if grad_inputs:
            _check_aliased_inputs_with_gradients(flat, shared_storage_groups(actual.items()) or input_groups)
            _check_no_read_of_overwritten_values(flat)
        def fusible(b: BoundSymbol) -> bool:
            entry = verdicts.get(id(b))
            if entry is None or entry[0] is not b:  # (the bsym is kept: its id stays its own)
                entry = verdicts[id(b)] = (b, self.is_fusible(b))
            return entry[1]

        if any(p.requires_grad for p in tensor_inputs):
            # Note [writes stay visible to autograd's split]: Thunder's
            # split_into_forward_and_backward keeps a forward bsym only if its outputs
            # are needed, or if it is named copy_. A fusion that only writes back would
            # be moved to the backward and lost, so with grad inputs the copy_ prims
            # stay outside regions (Thunder's torch executor runs them).
            fusible_any = fusible
            fusible = lambda b: fusible_any(b) and not ops.is_copy(b)  # noqa: E731
        bsyms = substitute_reads(trace, flat, info, fusible)
        bsyms = _dce(bsyms, trace)
        t1 = time.perf_counter()
        graph = build_graph(bsyms, info, fusible)
        t2 = time.perf_counter()
        return Prepared(bsyms, info, graph, tensor_inputs, {"analysis": t1 - t0, "graph": t2 - t1}, fusible)

    def _check_original_operands(self, ctx, actual: dict) -> None:
        """Check operand overlaps on the trace as traced, before autodiff decomposed its in-place ops.

        Note [operands as the user wrote them]: Thunder's grad transform hands us
        ``add_(a, b, alpha=2)`` as ``mul(b, 2); add(a, _); copy_(_, a)``, which looks
        exactly like ``a.copy_(a + b * 2)``: eager rejects the first for ``b = a[0]``
        and accepts the second. Only the traced program still tells them apart.
        """
        original = _traced_program()
        if original is None:
            return
        flat = [p for b in original.bound_symbols for p in _leaf_symbols(b)]
        tensor_inputs = [a for a in original.args if isinstance(a, TensorProxy)]
        groups, actual = _input_groups(original, ctx, tensor_inputs)
        info = analyze(flat, tensor_inputs, groups)
        proxies = {o.name: o for b in flat for o in proxy_outs(b) if isinstance(o, TensorProxy)}
        proxies.update((p.name, p) for p in tensor_inputs)
        metas: dict = {}
        for op in _inplace_ops_by_write(original.bound_symbols, {}).values():
            _check_operand_overlap(op, info, actual, proxies, metas)

    def fusion_pass(self, trace: TraceCtx) -> TraceCtx:
        with _gc_paused():
            try:
                return self._fusion_pass(trace)
            finally:
                forget_flattened()

    def _fusion_pass(self, trace: TraceCtx) -> TraceCtx:
        start = time.perf_counter()
        ctx = context.current()
        # Region facts live for one pass: fuse() may be called again for these regions
        # by a later fusion pass of the same compilation, never by another compilation.
        self._regions = {}
        prep = self.prepare(trace)
        bsyms, info, graph, tensor_inputs = prep.bsyms, prep.info, prep.graph, prep.tensor_inputs
        part = partition(bsyms, graph, prep.is_fusible, ignore_hazards=ctx.ignore_hazards)

        new_trace = from_trace(trace)
        consumers: dict[str, int] = {}  # name -> last item index that consumes it
        for pos, (kind, idx) in enumerate(part.items):
            for i in idx:
                for a in proxy_args(bsyms[i]):
                    if isinstance(a, Proxy):
                        consumers[a.name] = max(consumers.get(a.name, -1), pos)
        device = tensor_inputs[0].device.type if tensor_inputs else None
        out_bsyms: list[BoundSymbol] = []
        counter = 0
        for pos, (kind, idx) in enumerate(part.items):
            if kind == "node":
                out_bsyms.append(bsyms[idx[0]])
                continue
            region_bsyms = [bsyms[i] for i in idx]
            inputs, outputs = _region_io(region_bsyms, pos, consumers)
            groups = _region_alias_groups(inputs, info)
            self._regions[_region_key(region_bsyms)] = _RegionMeta(
                alias_groups=groups,
                view_key=lambda n, keys=info.view_key: keys.get(n, ("unknown", n)),
                backend=resolve_backend(ctx.backend, device),
                schedule=ctx.schedule,
            )
            region = _Region(inputs=inputs, outputs=outputs, bound_symbols=region_bsyms)
            out_bsyms.append(self.fuse(region, counter))
            counter += 1
        new_trace.bound_symbols = out_bsyms
        self.last_pass_seconds = time.perf_counter() - start
        new_trace.set_provenance(
            TraceProvenance(f"fusion_alias ({counter} regions, {self.last_pass_seconds * 1e3:.1f} ms)")
        )
        return new_trace

    def fuse(self, region, fusion_counter: int) -> BoundSymbol:
        inputs = [unvariableify(x) if isinstance(x, Variable) else x for x in region.inputs]
        outputs = [unvariableify(x) if isinstance(x, Variable) else x for x in region.outputs]
        bsyms = list(region.bound_symbols)
        meta = self._regions.get(_region_key(bsyms))
        if meta is None:  # rebuilt by someone else: assume every input may alias every other
            names = [p.name for p in inputs if isinstance(p, TensorProxy)]
            ctx = context.current()
            meta = _RegionMeta([names] if len(names) > 1 else [], None, resolve_backend(ctx.backend), ctx.schedule)
        name = f"FusionAlias{fusion_counter}"
        spec = plan_region(name, bsyms, inputs, outputs, meta.alias_groups, meta.view_key)
        fn = make_callable(spec, meta.backend, meta.schedule)
        # A region that only writes returns nothing anyone reads: keep it from DCE.
        tags = (prims.OpTags.DONT_DCE,) if spec.writebacks else ()
        sym = Symbol(name, meta=None, is_fusion=True, executor=self, tags=tags)
        return BoundSymbol(sym, tuple(inputs), {}, list(outputs), bsyms, _call_ctx={name: fn})


def make_callable(spec, backend: str, schedule: str):
    if backend == "nvfuser":
        from fusion_alias.backends.nvfuser import NvFuserFusion

        return NvFuserFusion(spec)
    if backend == "torch" and schedule == "reads-first":  # other schedules are the reference's
        from fusion_alias.backends.compiled import CompiledFusion

        return CompiledFusion(spec)
    from fusion_alias.backends.reference import ReferenceFusion

    return ReferenceFusion(spec, schedule)


@dataclass
class _Region:
    inputs: list
    outputs: list
    bound_symbols: list


def _region_key(bsyms: Sequence[BoundSymbol]) -> tuple:
    return tuple((b.sym.name, tuple(o.name for o in proxy_outs(b) if isinstance(o, Proxy))) for b in bsyms)


def _region_io(region_bsyms, pos, consumers):
    produced: set[str] = set()
    inputs: list[Proxy] = []
    seen: set[str] = set()
    outputs: list[Proxy] = []
    for b in region_bsyms:
        for a in proxy_args(b):
            if isinstance(a, Proxy) and a.name not in produced and a.name not in seen:
                seen.add(a.name)
                inputs.append(a)
        for o in proxy_outs(b):
            if isinstance(o, Proxy):
                produced.add(o.name)
                if consumers.get(o.name, -1) > pos:
                    outputs.append(o)
    return inputs, outputs


def _region_alias_groups(inputs, info: AliasInfo) -> list[list[str]]:
    by_group: dict[str, list[str]] = {}
    for p in inputs:
        if isinstance(p, TensorProxy) and p.name in info.root:
            by_group.setdefault(info.group(p.name), []).append(p.name)
    return [names for names in by_group.values() if len(names) > 1]


def _drop_update_aliases(bsyms: list[BoundSymbol]) -> tuple[list[BoundSymbol], list[list[str]], dict]:
    """Remove ``update_aliases`` (identity at run time), renaming its outputs to its inputs.

    Its argument tuple is Thunder's view group: kept as an alias fact. Also returns
    the renaming (variableified output -> input proxy).
    """
    swap: dict = {}
    facts: list[list[str]] = []
    out = []
    for b in bsyms:
        if swap:
            b = b.from_bsym_swap_proxies(swap, skip_output=True)
        if ops.is_update_aliases(b):
            ins = [x for x in b.args[0]]
            facts.append([x.name for x in ins if isinstance(x, TensorProxy)])
            for o, i in zip(proxy_outs(b), ins):
                swap[variableify(o)] = i
            continue
        out.append(b)
    return out, facts, swap


def _input_groups(trace, ctx, tensor_inputs):
    """Groups of trace-input names that may overlap, and name -> actual tensor (if known)."""
    names = [p.name for p in tensor_inputs]
    if ctx.has_call:
        from thunder.core.compile_data import _compile_data
        from fusion_alias.overlap import overlap_groups

        cd, cs = _compile_data.get()
        inps, _ = cs.last_prologue(*ctx.args, **ctx.kwargs)
        actual = {}
        for p, x in zip(trace.args, inps):
            if isinstance(p, TensorProxy) and isinstance(x, torch.Tensor):
                actual[p.name] = x
        tensors = [actual[n] for n in names if n in actual]
        known = [n for n in names if n in actual]
        groups = [[known[i] for i in g] for g in overlap_groups(tensors)]
        missing = [n for n in names if n not in actual]
        if missing:  # could not match an input: it may alias anything
            groups.append(names)
        return groups, actual
    try:
        alias_indices = thunder._get_cache_info().get("alias_tensor_indices")
    except LookupError:  # not inside a thunder.jit compilation
        alias_indices = None
    if alias_indices == "":
        return [], {}
    # Thunder saw aliased arguments (or did not tell): any two inputs may overlap.
    return ([names] if len(names) > 1 else []), {}


# Note [writes into inputs that require grad]
# -------------------------------------------
# A call that needs gradients goes through Thunder's autodiff, which splits the
# program into a forward and a backward. Thunder 0.2.6 gets in-place writes into
# inputs that require grad wrong there, with no error (checked on CPU, x = w * 1):
#
#     def f(a, b): a.add_(1); return a * b      # w.grad comes back None
#     def f(x): x[0:2].add_(1); return x * 1    # the write is lost: wrong values
#
# and fails outright on others (a.add_(1); return a * a). Plain thunder.jit
# gives the same. Writes into tensors the program makes (c = a * 2; c.add_(1))
# and a.clone() before writing are right. So such writes are refused.
# The leaf case is refused by eager PyTorch itself.


def _is_differentiable(x, info: AliasInfo, differentiable: set) -> bool:
    """Whether tensor ``x`` requires grad: it, or the memory it names (its root), is in ``differentiable``."""
    return isinstance(x, TensorProxy) and (x.name in differentiable or info.root.get(x.name) in differentiable)


def _propagate_differentiable(b, info: AliasInfo, differentiable: set) -> None:
    """Add ``b``'s outputs to ``differentiable`` when one of its tensor arguments requires grad."""
    if ops.is_copy(b):  # its result names the destination's memory: decided at the write
        return
    if any(_is_differentiable(a, info, differentiable) for a in proxy_args(b)):
        differentiable.update(o.name for o in proxy_outs(b) if isinstance(o, TensorProxy))


def _check_write_into_differentiable_view(dst: str, root: str, info: AliasInfo, members: dict) -> None:
    """Refuse, in a call that computes gradients, a write into memory that requires grad (the caller
    checks that) and has views.

    Note [writes into tensors with views, with gradients]: Thunder 0.2.6's autodiff
    gets the gradient wrong, without an error, when the program writes into a
    tensor that requires grad and also has a view (taken before or after the
    write, written through or read), also with plain thunder.jit (checked):

        c = a * 2; v = c[0]; c.add_(b); return v     # b's gradient is wrong
        c = a * 2; c[0].mul_(b[0]); return c         # a's and b's are wrong

    A write into a view of memory that does not require grad before the write
    (``cache[:, 0] = k``) is differentiated right, and so is a write into a tensor
    with no views (``c = a * b; c.tanh_()``): those run. A second write into
    ``cache`` (its memory requires grad after the first) is refused: Thunder gets
    ``cache[:, 0] = k; cache[:, 1] = k * 2`` right, but not the same writes into
    ``c = a * 2``, and the trace does not tell the two apart well enough.
    """
    key = info.view_key.get(dst)
    others = [n for n in members.get(info.group(dst), ()) if info.root.get(n) == root and info.view_key.get(n) != key]
    if not others:
        return
    raise AliasInputError(
        f"fusion_alias: in-place write into {dst}, which requires grad and shares memory with "
        f"{', '.join(sorted(others)[:3])}{' ...' if len(others) > 3 else ''} (views of {root}), in a call that "
        "computes gradients: not supported. Thunder 0.2.6's autograd computes wrong gradients through "
        "writes into tensors that have views, without an error, so fusion_alias refuses instead. "
        "Workarounds: an out-of-place op (c = c + b; c = torch.cat(...)), or torch.no_grad() when no "
        "gradient is needed"
    )


def _check_no_read_of_overwritten_values(bsyms) -> None:
    """Refuse, in a call that computes gradients, a read of a tensor's old name after a write into it.

    Note [values saved for the backward]: with gradients, Thunder's alias pass
    renames every later read of written memory to the write's result (through
    ``update_aliases``), so a read of the *old* name after the write comes from
    the autodiff: a value saved for the backward, meant as it was before the
    write. But the write lands in that very buffer, so the backward reads the new
    values, and the gradient is wrong without an error (checked, plain
    thunder.jit too)::

        t = a * 0.5; t.sin_(); return t * 0.5     # d sin(t)/dt is cos(t) of the old t

    Eager saves what it needs before an in-place op (or raises). ``tanh_`` and
    ``add_``, whose gradients need no old value, are not affected and run. The
    trace's return reads old names too (the mutated inputs, ``flat_args``, and a
    module's running statistics): that is the buffer itself, and it is fine.
    """
    written: dict[str, int] = {}
    for i, b in enumerate(bsyms):
        if written and b.sym.id is not prims.PrimIDs.RETURN:  # returning the buffer itself is the write's point
            for a in proxy_args(b):
                if isinstance(a, TensorProxy) and a.name in written:
                    raise AliasInputError(
                        f"fusion_alias: {a.name} is written in place and its value from before the write is "
                        f"read afterwards (by {b.sym.name}), in a call that computes gradients: not supported. "
                        "Thunder 0.2.6's autodiff saves the old value for the backward, but the write "
                        "overwrites that very buffer, so the gradient would be wrong without an error. "
                        "Workarounds: an out-of-place op (t = t.sin() instead of t.sin_()), or "
                        "torch.no_grad() when no gradient is needed"
                    )
        if ops.is_copy(b):
            written.setdefault(b.args[1].name, i)


def _check_aliased_inputs_with_gradients(bsyms, input_groups) -> None:
    """Refuse a call that computes gradients, has inputs that share memory, and writes in place.

    Note [aliased inputs with gradients]: such calls go through Thunder's alias
    pass (Note [autograd keeps Thunder's alias pass]), which treats inputs that
    share a *storage* as aliases, overlapping or not. With inputs of different
    sizes it fails (api.py names them); with inputs of the same size it replaces
    one by a reshape of the other, and values or gradients come out wrong without
    an error (checked, plain thunder.jit too): inputs ``x, x.view(-1)`` with
    ``t = torch.where(b[1::2] > 0, b[1::2], 0); t.tanh_(); return b, a`` give
    wrong gradients; the disjoint ``x[0, 0], x[2, 5]`` with a write into a fresh
    tensor return ``a``'s value for ``b``.
    """
    shared = [g for g in input_groups if len(g) > 1]
    if not shared or not any(ops.is_copy(b) for b in bsyms):
        return
    raise AliasInputError(
        f"fusion_alias: this call computes gradients, its inputs {', '.join(shared[0])} share a storage "
        "(overlapping or not), and "
        "the program writes in place: not supported. Such calls go through Thunder 0.2.6's alias pass "
        "and autograd, which compute wrong gradients for them without an error. Workarounds: pass clones "
        "so that the inputs do not share memory, or run under torch.no_grad() when no gradient is needed"
    )


class _ProducerLookup:
    """name -> the bsym producing it, built only if a check needs one (most programs never do)."""

    def __init__(self, bsyms):
        self._bsyms = bsyms
        self._map: dict | None = None

    def get(self, name, default=None):
        if self._map is None:
            self._map = {o.name: b for b in self._bsyms for o in proxy_outs(b) if isinstance(o, TensorProxy)}
        return self._map.get(name, default)


def _check_writes(bsyms, info: AliasInfo, actual: dict, proxies: dict, inplace_ops=None, grad_inputs=()) -> None:
    """Reject in-place writes eager PyTorch rejects, with an error that names the problem.

    In program order: an in-place op whose operand overlaps what it writes
    (``inplace_ops``: the user's in-place ops by the name of the value they write,
    see ``_check_operand_overlap``), then for each ``copy_``: a value that does not
    broadcast to its destination, a write into a leaf that requires grad, a write
    into an input in ``grad_inputs`` (Note [writes into inputs that require grad];
    eager accepts these, fusion_alias refuses them), and a
    destination whose elements overlap each other (an ``expand()``ed view, or
    an input with zero strides). The last is found exactly by replaying its view chain
    on the real input (or on a meta tensor of a fresh root's shape) and asking
    torch for internal overlap: ``a.expand(2, 6, 4).select(0, 1)`` is fine,
    ``a.expand(2, 6, 4)`` is not.
    """
    from fusion_alias.backends.reference import replay_view

    producers = _ProducerLookup(bsyms)
    grad_members = info.members() if grad_inputs else {}
    grad_groups = {info.group(n) for n in grad_inputs if n in info.root}
    # what requires grad, in program order: data flow from the inputs that do, and
    # memory that a write of such a value made so (the forward trace's proxies do not say)
    differentiable = set(grad_inputs)
    ops_by_write = inplace_ops or {}
    pending = dict(ops_by_write)
    metas: dict = {}
    for b in bsyms:
        for o in proxy_outs(b) if pending else ():
            if (op := pending.pop(o.name, None)) is not None:
                _check_operand_overlap(op, info, actual, proxies, metas)
        if grad_inputs:
            _propagate_differentiable(b, info, differentiable)
        if not ops.is_copy(b):
            continue
        dst = b.args[1]
        src_shape = tuple(b.args[0].shape) if isinstance(b.args[0], TensorProxy) else ()
        fits = src_shape == tuple(dst.shape) or _broadcasts_to(src_shape, tuple(dst.shape))
        if not fits:
            raise AliasInputError(
                f"fusion_alias: output with shape {list(dst.shape)} doesn't match the broadcast shape "
                f"{list(src_shape)} of the value written into {dst.name} (eager PyTorch rejects this too)"
            )
        root = info.root.get(dst.name)
        t = actual.get(root)
        if t is not None and t.is_leaf and t.requires_grad and torch.is_grad_enabled():
            raise AliasInputError(
                f"fusion_alias: in-place write into input {root}: a leaf Variable that requires grad "
                "is being used in an in-place operation (eager PyTorch rejects this too)"
            )
        if grad_inputs and root not in grad_inputs:
            if info.group(dst.name) in grad_groups:
                # a view of an input that requires grad made by an op we cannot see through (torch.narrow)
                raise AliasInputError(
                    f"fusion_alias: in-place write into {dst.name}, which may be a view of an input that requires "
                    "grad (it shares memory with one through an op fusion_alias cannot see through), in a call "
                    "that computes gradients: not supported. Thunder 0.2.6's autograd loses such writes or the "
                    "gradient through them without an error. Workarounds: write into a copy (a = a.clone()), or "
                    "run the call under torch.no_grad() when no gradient is needed"
                )
            if dst.name in differentiable or root in differentiable:
                _check_write_into_differentiable_view(dst.name, root, info, grad_members)
            if _is_differentiable(b.args[0], info, differentiable):
                differentiable.add(root)  # the memory now holds values that require grad
        if root in grad_inputs:
            what = f"input {root}" if dst.name == root else f"{dst.name} (a view of input {root})"
            raise AliasInputError(
                f"fusion_alias: in-place write into {what}, which requires grad, in a call that computes "
                "gradients: not supported. Eager PyTorch accepts it, but Thunder 0.2.6's autograd loses such "
                "writes or the gradient through them without an error, so fusion_alias refuses instead of "
                "returning a wrong value or gradient. Workarounds: write into a copy (a = a.clone()), or run "
                "the call under torch.no_grad() when no gradient is needed"
            )
        chain = info.chain.get(dst.name, ())
        if not chain and t is None:
            continue  # a fresh tensor the program made: contiguous, nothing overlaps
        base = t
        if base is None and root in proxies and isinstance(proxies[root], TensorProxy):
            base = torch.empty(tuple(proxies[root].shape), device="meta")
        if base is None:
            continue
        try:
            view = replay_view(base, chain)
        except Exception:  # a chain torch cannot replay as views: nothing to say
            continue
        if torch._debug_has_internal_overlap(view) != 1:
            continue
        src = producers.get(getattr(b.args[0], "name", None))
        what = f"input {root}" if t is not None and view is t else f"{dst.name} (a view of {root})"
        where = f"strides {tuple(view.stride())} on shape {tuple(view.shape)}"
        kind = _accepted_on_expanded(src, ops_by_write.get(_out_name(b)), info, actual, proxies, metas)
        if kind is not None:
            raise AliasInputError(
                f"fusion_alias: {kind} into {what}, whose elements overlap each other ({where}, "
                "an expand()ed tensor) is not supported by fusion_alias. Eager PyTorch accepts it (it writes "
                "each memory location once), but Thunder writes the whole expanded tensor back. Workaround: "
                "write into the tensor before expand() (e.g. base.zero_(), base[idx] = v), or clone() the "
                "expanded tensor if the write need not reach its base"
            )
        raise AliasInputError(
            f"fusion_alias: in-place write into {what}, whose elements overlap each other ({where}, "
            "an expand()ed tensor): more than one element of the written-to tensor refers to a single "
            "memory location (eager PyTorch rejects this too); clone() it first"
        )


def _actual_view(name: str, info: AliasInfo, actual: dict, proxies: dict, metas: dict):
    """The tensor ``name`` is at run time (a view of a real input, or of a meta stand-in
    for a tensor the program made), or None when its view chain cannot be replayed."""
    from fusion_alias.backends.reference import replay_view

    root = info.root.get(name)
    base = actual.get(root)
    if base is None:
        p = proxies.get(root)
        if not isinstance(p, TensorProxy):
            return None
        if root not in metas:
            metas[root] = torch.empty(tuple(p.shape), device="meta", dtype=thunder.core.dtypes.to_torch_dtype(p.dtype))
        base = metas[root]
    try:
        return replay_view(base, info.chain.get(name, ()))
    except Exception:
        return None


def _byte_span(t: torch.Tensor) -> tuple[int, int]:
    begin = t.data_ptr() if t.device.type != "meta" else t.storage_offset() * t.element_size()
    return begin, begin + t.numel() * t.element_size()


def _out_name(bsym):
    outs = proxy_outs(bsym)
    return outs[0].name if outs else None


def _accepted_on_expanded(src, op, info: AliasInfo, actual: dict, proxies: dict, metas: dict) -> str | None:
    """The name of a write eager accepts into an expand()ed tensor, or None if eager rejects it.

    Note: eager's fill_/zero_ and masked_fill_ write one value per memory location, so
    ``x[0].expand(4, 4).zero_()`` runs (it zeroes ``x[0]``). ``t[key] = v`` writes the
    slice ``t[key]``: fine when that slice has no internal overlap
    (``x[0].expand(4, 4)[1] = 2.0``), rejected when it has (``...[:] = 2.0``).
    """
    if op is None and src is not None and "setitem" in src.sym.name and isinstance(src.args[0], TensorProxy):
        op = _describe_setitem(src.args[0], src.args[1], src.args[2])  # the setitem_ Thunder already split
    if op is not None and op.name == "setitem_":
        if op.key is None:
            return None  # tensor index: index_put_ into an overlapping tensor, eager rejects it
        written = _written_view(op, info, actual, proxies, metas)
        if written is None or torch._debug_has_internal_overlap(written) == 1:
            return None
        return "__setitem__"
    if op is not None and op.name == "masked_fill_":
        return "masked_fill_"
    if src is not None and src.sym.id is ops.PrimIDs.FULL:
        return "fill_/zero_"
    return None


# Note [which operands eager checks]
#     Eager checks the operands of an in-place op *as the user passed them*, before
#     broadcasting and before any decomposition, against the tensor the op writes
#     (``self``). Which operands, and how, depends on the kernel (checked on torch 2.9.1):
#
#     * TensorIterator ops (``add_``, ``mul_``, ``addcmul_``, ``clamp_``, ``lerp_``,
#       ``copy_``, comparisons, ...): every tensor operand, ``assert_no_partial_overlap``.
#       ``x.add_(x)`` is fine (the same memory at the same index), ``x.add_(x[0])`` and
#       ``x.add_(x[0], alpha=2)`` are not (``x[0]`` is checked before it is broadcast).
#     * index ops (``index_add_``, ``index_copy_``, ``index_put_``, ``scatter_``,
#       ``scatter_add_``, and ``a[idx] = v`` with a tensor index, which is
#       ``index_put_``): ``assert_no_overlap``, so even ``x.index_add_(0, i, x)`` raises.
#     * ``a[key] = v`` with basic indexing is ``a[key].copy_(v)`` after eager has
#       stripped ``v``'s leading 1-sized dims and expanded it to ``a[key]``'s shape; an
#       expanded value is "too hard" to check, and a 0-dim value becomes ``fill_``:
#       ``x[0:2] = x[0]`` and ``x[0:2] = x[0, 0]`` are fine, ``x[0:2] = x[1:3]`` is not.
#     * ``masked_fill_`` reads its value as a number: nothing to check.
#
#     A tensor that is not non-overlapping-and-dense is "too hard" (eager does not
#     decide, neither do we): ``x.add_(x[0].expand(4, 4))`` runs in eager.
_ANY_OVERLAP_OPS = frozenset({"index_add_", "index_copy_", "index_put_", "scatter_", "scatter_add_"})
_UNCHECKED_OPS = frozenset({"masked_fill_"})


@dataclass(frozen=True)
class _InplaceOp:
    """One in-place op as the user called it (``a.add_(b, alpha=2)``, ``a[0:2] = v``)."""

    name: str  # "add_", "setitem_", ...
    written: TensorProxy  # ``self``, the tensor the op writes (for setitem_, indexed by ``key``)
    key: object  # setitem_'s basic index (ints, slices, None, Ellipsis), else None
    operands: tuple  # ((TensorProxy, rule), ...); rule: "partial" | "any" | "setitem"


def _inplace_ops_by_write(top_bsyms, renamed: dict) -> dict[str, _InplaceOp]:
    """The user's in-place ops among ``top_bsyms`` (the trace before flattening), by the
    name of each value they write (their ``copy_`` results). ``renamed`` maps
    variableified names of dropped ``update_aliases`` outputs to the proxies they stand for."""
    found: dict[str, _InplaceOp] = {}
    for b in top_bsyms:
        if b.sym.id is ops.COPY_ID or not b.subsymbols:
            continue  # a bare prim copy_ is the trace's own write, not a user's op
        writes = [o.name for c in _copies_in(b) for o in proxy_outs(c) if isinstance(o, TensorProxy)]
        if not writes:
            continue
        op = _describe_inplace_op(b, renamed)
        if op is not None:
            found.update((name, op) for name in writes)
    return found


def _copies_in(bsym) -> list:
    out = []
    for sub in bsym.subsymbols:
        out.extend([sub] if ops.is_copy(sub) else _copies_in(sub))
    return out


def _describe_inplace_op(bsym, renamed: dict) -> _InplaceOp | None:
    def actual(x):
        return renamed.get(variableify(x), x) if isinstance(x, TensorProxy) else x

    name = bsym.sym.name
    written = actual(bsym.args[0]) if bsym.args else None
    if not isinstance(written, TensorProxy):
        return None
    if name in _UNCHECKED_OPS:
        return _InplaceOp(name, written, None, ())
    rest, _ = tree_flatten((bsym.args[1:], bsym.kwargs))
    if name == "setitem_":
        return _describe_setitem(written, bsym.args[1], actual(bsym.args[2]))
    rule = "any" if name in _ANY_OVERLAP_OPS else "partial"
    operands = tuple((actual(x), rule) for x in rest if isinstance(x, TensorProxy))
    return _InplaceOp(name, written, None, operands)


def _describe_setitem(written: TensorProxy, key, value) -> _InplaceOp | None:
    key_parts, _ = tree_flatten(key)
    if not any(isinstance(k, TensorProxy) for k in key_parts):  # basic indexing: a[key].copy_(value)
        operands = ((value, "setitem"),) if isinstance(value, TensorProxy) else ()  # a number: fill_
        return _InplaceOp("setitem_", written, key, operands)
    if isinstance(key, TensorProxy) and isinstance(value, TensorProxy):  # a.index_put_((key,), value)
        return _InplaceOp("setitem_", written, None, ((value, "any"),))
    return None  # mixed basic and advanced indexing: eager's operand is not ours to rebuild


def _leaf_symbols(bsym) -> list:
    """``bsym`` down to the symbols that have no subsymbols (prims, mostly), whoever claims them."""
    if not bsym.subsymbols:
        return [bsym]
    return [leaf for sub in bsym.subsymbols for leaf in _leaf_symbols(sub)]


def _has_lost_its_inplace_ops(trace) -> bool:
    """Whether the trace writes with bare ``copy_`` prims (the grad path decomposed the user's ops)."""
    return any(b.sym.id is ops.COPY_ID for b in trace.bound_symbols)


def _traced_program():
    """The computation trace as Thunder traced it (the user's ops intact), if compiling."""
    try:
        from thunder.core.compile_data import _compile_data

        _, cs = _compile_data.get()
        return cs.last_traces[0]
    except (LookupError, AttributeError, IndexError, TypeError):
        return None


def _non_overlapping_and_dense(t: torch.Tensor) -> bool:
    """Whether ``t``'s elements fill one block of memory exactly, in some order of its dims.

    Dims of size 1 do not count; the others, sorted by stride, must have strides
    1, n0, n0*n1, ...: ``x.t()`` is, ``x[:, ::2]`` and ``x.expand(2, 3)`` are not.
    (torch's private ``_prims_common.is_non_overlapping_and_dense``, gone in torch 2.11.)
    """
    expected = 1
    for stride, size in sorted((st, n) for n, st in zip(t.shape, t.stride()) if n != 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _overlap_status(a: torch.Tensor, b: torch.Tensor) -> str:
    """PyTorch's ``get_overlap_status`` for two views: "full" (same bytes, same strides),
    "partial", "none", or "too hard" (either is not non-overlapping and dense)."""
    if a.numel() == 0 or b.numel() == 0:
        return "none"
    if not (_non_overlapping_and_dense(a) and _non_overlapping_and_dense(b)):
        return "too hard"
    (a0, a1), (b0, b1) = _byte_span(a), _byte_span(b)
    if (a0, a1) == (b0, b1):
        return "full" if a.stride() == b.stride() else "partial"
    return "partial" if a0 < b1 and b0 < a1 else "none"


def _setitem_value(value: torch.Tensor, written: torch.Tensor):
    """The tensor eager's ``a[key] = value`` copies from, or None when it fills.

    Note: a value of the written slice's shape is copied as it is; a 0-dim value
    is a ``fill_`` (on CPU); any other value loses its leading 1-sized dims and is
    expanded to the slice. ``x[0] = x[0:1]`` copies ``x[0]`` (checked);
    ``x[0:2] = x[0]`` copies ``x[0].expand(2, 4)`` (too hard: not checked);
    ``x[0:2] = x[0, 0]`` fills.
    """
    if tuple(value.shape) == tuple(written.shape):
        return value
    if value.dim() == 0:
        return None
    while value.dim() > 0 and value.shape[0] == 1:
        value = value.squeeze(0)
    try:
        return value.expand(written.shape)
    except RuntimeError:
        return None


def _check_operand_overlap(op: _InplaceOp, info: AliasInfo, actual: dict, proxies: dict, metas: dict) -> None:
    """Reject an in-place op whose operand overlaps what it writes, as eager does
    (see Note [which operands eager checks]): ``x.add_(x.t())``, ``x.add_(x[0], alpha=2)``,
    ``x[0:3].copy_(x[1:4])``, ``x.index_add_(0, i, x)``.

    Addresses are compared on the real inputs (or on meta stand-ins of a tensor the
    program made), through each tensor's view chain.
    """
    dst = op.written
    written = None
    for x, rule in op.operands:
        if dst.name not in info.root or x.name not in info.root or info.group(x.name) != info.group(dst.name):
            continue
        if info.root[x.name] != info.root[dst.name] and (info.root[x.name] not in actual or info.root[dst.name] not in actual):
            continue  # no common ground to compare addresses on
        if written is None:
            written = _written_view(op, info, actual, proxies, metas)
            if written is None:
                return
        x_view = _actual_view(x.name, info, actual, proxies, metas)
        if x_view is None:
            continue
        if rule == "setitem":
            x_view, rule = _setitem_value(x_view, written), "partial"
            if x_view is None:
                continue
        status = "full" if op.key is None and info.same_view(x.name, dst.name) else _overlap_status(x_view, written)
        if status == "partial" or (status == "full" and rule == "any"):
            raise AliasInputError(
                f"fusion_alias: {op.name}: unsupported operation: some elements of the input tensor {x.name} and "
                f"the written-to tensor {dst.name} refer to a single memory location (eager PyTorch rejects "
                "this too); clone() the input first"
            )


def _written_view(op: _InplaceOp, info: AliasInfo, actual: dict, proxies: dict, metas: dict):
    view = _actual_view(op.written.name, info, actual, proxies, metas)
    if view is None or op.key is None:
        return view
    try:
        return view[op.key]
    except Exception:  # a key torch cannot apply to the stand-in: nothing to say
        return None


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(target)))


def _dce(bsyms: list[BoundSymbol], trace: TraceCtx) -> list[BoundSymbol]:
    """Drop fusible, side-effect-free symbols whose results nobody reads."""
    needed: set[str] = set()
    flat_out, _ = tree_flatten(trace.output)
    needed.update(x.name for x in flat_out if isinstance(x, Proxy))
    keep = []
    for b in reversed(bsyms):
        _, args, outs, _, _ = flattened(b)  # one cache lookup for both lists
        if outs and not any(o.name in needed for o in outs):
            if ops.op_info(b) is not None and not ops.is_copy(b) and not ops.is_update_aliases(b):
                continue  # fusible, side-effect free, and nobody reads it
        keep.append(b)
        needed.update(a.name for a in args)
    return list(reversed(keep))


executor = FusionAliasExecutor()
register_executor(executor)
