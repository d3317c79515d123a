"""Executor glue: the ``fusion_alias`` FusionExecutor for Thunder.

``fusion_pass`` hands the trace to ``fusion_alias.pipeline``, whose stages run
in the order the data flows::

    flatten → drop update_aliases → input groups → alias analysis → refusals
            → read substitution → dce → dependency graph → partition → regions

and ``fused`` (``fuse``, for a region Thunder hands back) turns one region into a
fusion bound symbol whose callable is a backend wrapper (compiled torch, reference
or nvFuser) carrying the region's alias groups.
See docs/architecture.md for the path of one call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import time

import thunder
from thunder.core.proxies import Proxy, TensorProxy, Variable, unvariableify
from thunder.core.symbol import BoundSymbol, Symbol
from thunder.core.trace import TraceCtx, TraceProvenance
from thunder.extend import FusionExecutor, register_executor
import thunder.core.prims as prims

from fusion_alias import (stack_family, bool_reductions, reduction_dtypes, unbiased_spellings, eager_keywords, context, data_attribute, outside_reads, process_state, tensor_identity, dropped_attributes, foreach_lookasides, inplace_lookasides, ops, out_arguments, pipeline,
                          untraceable_calls, item_branches, return_types, clamp_ties, zero_norms, saturated_sigmoid, trace_time_queries, identity_results,
                          loss_defaults, lerp_shapes, pool_ties, nan_relu, safe_elu)
from fusion_alias import einsum_views, flip_gradient, ravel_spelling, round_decimals, same_tensor_results, step_gradients  # (flip: registers a rule)
from fusion_alias.refusals import bool_keys
from fusion_alias.refusals.bool_keys import refuse_bool_key
from fusion_alias.aliasing import forget_flattened
from fusion_alias.eager_gradients import GRAD_TRANSFORMS
from fusion_alias.backends import compiled as _compiled_backend, reference as _reference_backend
from fusion_alias.errors import AliasInputError  # noqa: F401  (re-exported: fusion_alias.executor.AliasInputError)
from fusion_alias.region_plan import planned_later
from fusion_alias.pipeline import Prepared
from fusion_alias.regions import _RegionMeta, registered_meta


BACKENDS = ("auto", "nvfuser", "torch", "reference")


@contextlib.contextmanager
def _gc_paused():
    """The pass allocates many small objects and frees none: the cyclic collector only
    rescans them (a third of the pass on 100k-bsym traces). Pause it for the pass, and
    hand what it made to the oldest generation (Note [the pass's objects are old at once])."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()  # (Note [the pass's objects are old at once])
                gc.unfreeze()
            gc.enable()


# Note [the pass's objects are old at once]
# -----------------------------------------
# With the collector paused, every container the pass makes (about 900k on the bench's 100k-bsym
# ``views`` trace: new bound symbols, proxies, lists, the regions) stays in the youngest
# generation, and its allocation count far past the threshold. The first allocation after
# ``gc.enable()`` then runs a young-generation collection that walks all of them (0.15 s there,
# 5% of the pass) and frees almost nothing: they are the new trace, which lives as long as the
# compiled program. ``gc.freeze()`` followed by ``gc.unfreeze()`` moves every tracked object to
# the oldest generation without walking it and sets the young count to zero: the objects are
# then scanned at the next full collection only, which would scan them anyway, and a cycle the
# pass left behind is freed there. Skipped when someone froze objects before (``gc.freeze()`` in a
# server that forks): unfreezing would undo theirs.


def _tensor_list(xs, out: list) -> list:
    """The tensor proxies in ``xs`` (nested tuples and lists), appended to ``out`` in order."""
    for x in xs:
        if isinstance(x, TensorProxy):
            out.append(x)
        elif isinstance(x, (list, tuple)):
            _tensor_list(x, out)
    return out


# id(thunder dtype) -> (the dtype, fusible): looked up by identity, as Note [prim lookups by
# identity] (ops.py) does for prims (a thunder dtype's ``__hash__`` is Python code); the dtype is
# kept, so its id stays its own
_DTYPE_OK: dict[int, tuple] = {}


def _fusible_dtype(x) -> bool:
    if not isinstance(x, TensorProxy):
        return True
    dtype = x.dtype
    entry = _DTYPE_OK.get(id(dtype))
    if entry is None or entry[0] is not dtype:
        entry = _DTYPE_OK[id(dtype)] = (dtype, _fusible_dtype_uncached(x))
    return entry[1]


_ThunderDtype = thunder.core.dtypes.dtype


def _fusible_result_dtype(dtype) -> bool:
    """Whether a dtype an op is asked to make (``full(..., dtype=int8)``: ``zero_`` of an int8 tensor,
    or a cast's target) is one we fuse: an int8 zero_ was claimed and failed in the lowering
    ("has no nvFuser DataType"; hostile probe 12)."""
    try:
        return thunder.core.dtypes.to_torch_dtype(dtype) in ops.FUSIBLE_TORCH_DTYPES
    except Exception:
        return False


def _claims_all(tensors, cuda_only: bool) -> bool:
    """Whether every tensor in ``tensors`` has a dtype we fuse (and, if ``cuda_only``, is on CUDA)."""
    return all(_fusible_dtype(t) and not (cuda_only and t.device.type != "cuda") for t in tensors)


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


_PAD = ops.PrimIDs.PAD


def _plain_pad(bsym: BoundSymbol) -> bool:
    """A ``prims.pad`` that only adds elements (no negative, no interior padding): nvFuser's ``pad``."""
    config = bsym.args[2] if len(bsym.args) > 2 else bsym.kwargs.get("padding_config", ())
    return all(isinstance(x, int) and x >= 0 and interior == 0 for lo, hi, interior in config for x in (lo, hi))


class FusionAliasExecutor(FusionExecutor):
    """Fuses in-place programs on aliased tensors without alias hazards inside a region."""

    def __init__(self, name: str = "fusion_alias"):
        super().__init__(name, version="0.1.0")
        for pid in ops.OP_TABLE:  # (the gradients Thunder lacks: eager_gradients.py)
            self.register_supported(pid, checker=self._checker, grad_transform=GRAD_TRANSFORMS.get(pid))
        self._own_ids = frozenset(id(pid) for pid in ops.OP_TABLE)  # see can_execute
        self._regions: dict = {}  # the pass's regions' specs (regions.py, Note [the pass's regions, found again])
        self._fusion_symbol = _fusion_symbol_maker(self)  # (Note [fusion symbols copied from one])
        self.last_pass_seconds: float = 0.0

    # -- what we claim ------------------------------------------------------
    def _checker(self, *args, **kwargs) -> bool:
        return self._claims(args, kwargs)

    def _claims(self, args, kwargs, cuda_only: bool | None = None) -> bool:
        """``_checker(*args, **kwargs)``, without packing the arguments again: every tensor
        argument has a dtype we fuse, and, on the nvFuser backend (``cuda_only``; the compile
        context is asked if None), is on a CUDA device. Note [claims without a list]: asked of
        every symbol of the trace, so the first level of the arguments is read inline, and
        ``_flatten_into`` passes ``cuda_only``, asked once per pass."""
        if cuda_only is None:
            cuda_only = context.current().backend == "nvfuser"
        for x in args:
            if isinstance(x, TensorProxy):
                dtype = x._dtype  # (the ``dtype`` property's field: aliasing.py, Note [proxy names read directly])
                entry = _DTYPE_OK.get(id(dtype))  # (_fusible_dtype, its cache read inline)
                if entry is None or entry[0] is not dtype:
                    entry = (None, _fusible_dtype(x))
                if not entry[1] or (cuda_only and x.device.type != "cuda"):
                    return False
            elif isinstance(x, (list, tuple)) and not _claims_all(_tensor_list(x, []), cuda_only):
                return False
            elif isinstance(x, _ThunderDtype) and not _fusible_result_dtype(x):  # convert_element_type's target
                return False
        if kwargs:  # (most are flags: copy_'s grad_enabled)
            for x in kwargs.values():
                if isinstance(x, (TensorProxy, list, tuple)) and not _claims_all(_tensor_list((x,), []), cuda_only):
                    return False
                if isinstance(x, _ThunderDtype) and not _fusible_result_dtype(x):  # full's, iota's dtype=
                    return False
        return True

    def can_execute(self, bsym: BoundSymbol) -> bool:
        """Thunder's ``Executor.can_execute``, with the registry looked up by identity.

        Note [prim lookups by identity] (ops.py): every symbol of the trace is asked,
        some twice, and ``PrimIDs.__hash__`` is Python code. The registry holds the op
        table's prims, each with ``_checker``, so the answer is the same; anything
        registered otherwise goes the general way.
        """
        if id(bsym.sym.id) in self._own_ids:
            return self._claims(bsym.args, bsym.kwargs) and (bsym.sym.id is not _PAD or _plain_pad(bsym))
        return super().can_execute(bsym) and (bsym.sym.id is not _PAD or _plain_pad(bsym))

    def claims_alike(self, new: BoundSymbol, old: BoundSymbol) -> bool:
        """Whether ``can_execute(new)`` answers as ``can_execute(old)``, for a rewritten symbol.

        Note [a rewritten symbol claimed as the one it rewrites]: read substitution makes tens
        of thousands of symbols (rewritten reads, replayed views, pushed-down ops: 57k on the
        bench's 100k ``views`` trace), each asked ``is_fusible`` once more by the graph (a third
        of its time). For one of the op table's prims (other than ``pad``, whose check reads its
        config), ``can_execute`` reads the kwargs and, of each argument, a tensor's dtype and
        device or a list's tensors: so ``new``, made of ``old``'s symbol and kwargs with each
        argument the same object or a tensor in place of a tensor of the same dtype and device,
        gets ``old``'s answer. Registered otherwise, Thunder's checkers may read anything: False.
        """
        sym_id = old.sym.id
        if new.sym is not old.sym or new.kwargs is not old.kwargs or id(sym_id) not in self._own_ids or sym_id is _PAD:
            return False
        args, old_args = new.args, old.args
        if len(args) != len(old_args):
            return False
        for a, o in zip(args, old_args):
            if a is not o and (type(a) is not TensorProxy or type(o) is not TensorProxy
                               or a._dtype is not o._dtype or a._device is not o._device):
                return False
        return True

    def register_supported(self, sym_or_id, checker=None, **transforms):
        self._own_ids = frozenset()  # (a registration after ours: can_execute asks Thunder's way)
        return super().register_supported(sym_or_id, checker, **transforms)

    def flatten(self, bsym: BoundSymbol) -> list[BoundSymbol]:
        """``bsym`` as the pass sees it: the symbols we claim, or itself when it is not all ours."""
        return self._flatten(bsym, {})[0]

    def _flatten(self, bsym: BoundSymbol, verdicts: dict) -> tuple[list[BoundSymbol], bool]:
        """``bsym`` down to the symbols we claim, if all of it is ours; else ``[bsym]``.

        One recursion (``can_fuse`` would re-walk every level), recording each
        leaf's fusibility in ``verdicts``.
        """
        out: list[BoundSymbol] = []
        if self._flatten_into(bsym, verdicts, out):
            return out, True
        return [bsym], False

    def _flatten_into(self, bsym: BoundSymbol, verdicts: dict, out: list, cuda_only: bool | None = None) -> bool:
        """Append ``bsym``'s symbols that we claim to ``out`` and say True, if all of it is ours;
        else leave ``out`` as it was and say False (``_flatten``, without a list per level).
        ``cuda_only``: ``_claims``'s, asked of the compile context if None."""
        own = self._own_ids
        if cuda_only is None:
            cuda_only = context.current().backend == "nvfuser"
        if own:  # can_execute, inlined: nothing but the op table registered (see can_execute)
            sym_id = bsym.sym.id
            ok = id(sym_id) in own and self._claims(bsym.args, bsym.kwargs, cuda_only) and (
                sym_id is not _PAD or _plain_pad(bsym))
        else:
            ok = self.can_execute(bsym)
        if ok:  # (an op table prim: ``op_info`` has it)
            if type(bsym.output) is not TensorProxy and _constant_only(bsym):
                return True  # (Note [a constant the trace already inlined])
            verdicts[id(bsym)] = (bsym, True if own else ops.op_info(bsym) is not None)
            out.append(bsym)
            return True
        sym = bsym.sym
        if sym.name == "getitem":
            refuse_bool_key(bsym)
        subs = bsym.subsymbols
        if sym.is_fusion or not subs:
            return False
        start = len(out)
        claims = self._claims
        for sub in subs:
            sub_id = sub.sym.id
            # (the call below for a prim of the op table, inlined: most subsymbols are one)
            if own and id(sub_id) in own and sub_id is not _PAD and claims(sub.args, sub.kwargs, cuda_only):
                if type(sub.output) is not TensorProxy and _constant_only(sub):
                    continue  # (Note [a constant the trace already inlined])
                verdicts[id(sub)] = (sub, True)
                out.append(sub)
            elif not self._flatten_into(sub, verdicts, out, cuda_only):
                del out[start:]
                return False
        return True

    def is_fusible(self, bsym: BoundSymbol) -> bool:
        return ops.op_info(bsym) is not None and self.can_execute(bsym)

    # -- the pass (its stages: fusion_alias.pipeline) -----------------------
    def prepare(self, trace: TraceCtx, input_groups=None) -> Prepared:
        """Everything before partitioning: flattened, substituted bsyms, alias info, graph.

        ``input_groups`` (lists of input names that may overlap) overrides
        what the compile context says; benchmarks pass it for synthetic traces.
        """
        with _gc_paused():
            return pipeline.prepare(self, trace, input_groups)

    def fusion_pass(self, trace: TraceCtx) -> TraceCtx:
        with _gc_paused():
            try:
                return self._fusion_pass(trace)
            finally:
                forget_flattened()

    def _fusion_pass(self, trace: TraceCtx) -> TraceCtx:
        start = time.perf_counter()
        # Region facts live for one pass: fuse() may be called again for these regions
        # by a later fusion pass of the same compilation, never by another compilation.
        self._regions = {}
        new_trace, counter = pipeline.fusion_pass(self, trace, resolve_backend)
        self.last_pass_seconds = time.perf_counter() - start
        new_trace.set_provenance(
            TraceProvenance(f"fusion_alias ({counter} regions, {self.last_pass_seconds * 1e3:.1f} ms)")
        )
        return new_trace

    def fuse(self, region, fusion_counter: int) -> BoundSymbol:
        """Thunder's: a fusion bound symbol for ``region``, here one that Thunder hands back
        (``update_fusion_call_ctx``), with the facts the pass had about it where it was ours
        (regions.py, Note [the pass's regions, found again])."""
        inputs = tuple([unvariableify(x) if isinstance(x, Variable) else x for x in region.inputs])
        outputs = [unvariableify(x) if isinstance(x, Variable) else x for x in region.outputs]
        meta = registered_meta(self._regions, region.bound_symbols)
        if meta is None:  # rebuilt by someone else: assume every input may alias every other
            names = [p.name for p in inputs if isinstance(p, TensorProxy)]
            ctx = context.current()
            meta = _RegionMeta([names] if len(names) > 1 else [], None, resolve_backend(ctx.backend), ctx.schedule)
        return self.fused(list(region.bound_symbols), inputs, outputs, meta, fusion_counter)[0]

    def fused(self, bsyms: list, inputs: tuple, outputs: list, meta, fusion_counter: int, sym_ids=None) -> tuple:
        """``fuse`` for the region of ``bsyms`` with the facts ``meta`` (``regions._RegionMeta``),
        in a tuple with its spec; ``fuse_regions`` calls it for the pass's own regions, with their
        symbols' ``sym_ids``. The fusion bound symbol and its spec keep ``bsyms``, ``inputs`` and ``outputs``."""
        name = f"FusionAlias{fusion_counter}"
        # (Note [regions planned at first use], region_plan.py)
        spec, keep = planned_later(name, bsyms, inputs, outputs, meta, sym_ids)
        fn = make_callable(spec, meta.backend, meta.schedule)
        # A region that only writes returns nothing anyone reads: keep it from DCE.
        sym = self._fusion_symbol(name, _KEEP_TAGS if keep else ())
        fused = BoundSymbol(sym, inputs, {}, outputs, bsyms)
        fused._call_ctx = {name: fn}  # (set here, not passed: a keyword argument costs a dict per region)
        return fused, spec


# Note [a constant the trace already inlined]
# -------------------------------------------
# ``ltorch.mul(t1, 2)`` on a float tensor decomposes to ``_ = prims.convert_element_type(2, float)``
# and ``t8 = prims.mul(t1, 2.0)``: Thunder computed the conversion while tracing and wrote its value,
# ``2.0``, into the ``mul``. The conversion's result is a number, not a proxy, so no symbol can read
# it: it is dead code that flattening exposed (Thunder's own DCE drops such a symbol at the top level,
# never inside a composite). Kept, it was a node of every stage of the pass (14k of the bench's 100k
# ``views`` symbols) and an op that each call of its region ran for nothing. Flattening leaves out a
# claimed prim whose arguments hold no proxy and whose result is a plain value (not None: a symbol
# that returns nothing may be there for what it checks), as DCE would.


def _constant_only(bsym: BoundSymbol) -> bool:
    """Whether ``bsym`` (one of the op table's prims) computes a plain value from constants: no proxy
    in its arguments or its result, and a result (Note [a constant the trace already inlined])."""
    out = bsym.output
    if out is None or isinstance(out, (Proxy, tuple, list, dict)) or bsym.sym.id is ops.COPY_ID:
        return False
    return not any(isinstance(x, (Proxy, tuple, list, dict)) for x in (*bsym.args, *bsym.kwargs.values()))


_KEEP_TAGS = (prims.OpTags.DONT_DCE,)  # (one tuple for every region that only writes)


# Note [fusion symbols copied from one]
# -------------------------------------
# Thunder's ``Symbol`` is a frozen dataclass with slots: its ``__init__`` takes thirteen
# fields, most by default, and stores each through ``object.__setattr__`` (3.3 µs, and
# every region of a pass makes one: 40k on the aliased 100k-bsym bench). The fusion
# symbols of one executor differ only in their name and tags, so each is made as a copy
# of one that ``Symbol(...)`` made, ``Symbol("", meta=None, is_fusion=True,
# executor=executor, tags=())``: every other field is stored through its slot's own
# setter, with the value that one has (1.1 µs). The result equals, field for field, what
# ``Symbol(name, meta=None, is_fusion=True, executor=executor, tags=tags)`` makes
# (tests/test_units.py), whatever fields Thunder's ``Symbol`` has.


def _fusion_symbol_maker(executor):
    """A function ``(name, tags) -> Symbol``, equal to ``Symbol(name, meta=None, is_fusion=True,
    executor=executor, tags=tags)`` (Note [fusion symbols copied from one])."""
    model = Symbol("", meta=None, is_fusion=True, executor=executor, tags=())
    slots = {f.name: Symbol.__dict__[f.name].__set__ for f in dataclasses.fields(Symbol)}
    set_name, set_tags = slots.pop("name"), slots.pop("tags")
    others = tuple((set_field, getattr(model, field)) for field, set_field in slots.items())

    def fusion_symbol(name: str, tags, new=Symbol.__new__) -> Symbol:
        sym = new(Symbol)
        set_name(sym, name)
        set_tags(sym, tags)
        for set_field, value in others:
            set_field(sym, value)
        return sym

    return fusion_symbol


def make_callable(spec, backend: str, schedule: str):
    if backend == "nvfuser":
        from fusion_alias.backends.nvfuser import NvFuserFusion

        return NvFuserFusion(spec)
    if backend == "torch" and schedule == "reads-first":  # other schedules are the reference's
        return _compiled_backend.CompiledFusion(spec)
    return _reference_backend.ReferenceFusion(spec, schedule)


executor = FusionAliasExecutor()
inplace_lookasides.register(executor)  # fill_, broadcasting copy_, sigmoid_, ... (Thunder 0.2.6 lacks them)
foreach_lookasides.register(executor)  # torch._foreach_* as one op per tensor
out_arguments.register(executor)  # torch.add(a, b, out=o) as the write into o it is
untraceable_calls.register(executor)  # torch.manual_seed & co.: a clear error, not a tracer that never finishes
item_branches.register(executor)  # `if x.item() > 0`: refused, not a branch fixed at the first call
return_types.register(executor)  # torch.max(x, 0).values: eager's named results (Note [named results])
bool_reductions.register(executor)  # x.sum(dtype=torch.bool): eager's any (Note [a sum in bool is any])
reduction_dtypes.register(executor)  # x.mean(dtype=torch.int64) and kin: eager's refusal (Note [a dtype= eager refuses])
clamp_ties.register(executor)  # x.clamp(max=b) at b: eager's gradient (Note [clamp's gradient at a bound])
saturated_sigmoid.register(executor)  # sigmoid(-1e4): eager's zero gradient (Note [sigmoid where exp overflows])
nan_relu.register(executor)  # relu(nan): eager's NaN (Note [relu of NaN])
safe_elu.register(executor)  # F.elu(100.0): eager's gradient (Note [elu where expm1 overflows])
loss_defaults.register(executor)  # F.nll_loss(logp, t): eager's ignore_index=-100 (Note [nll_loss's ignore_index])
lerp_shapes.register(executor)  # torch.lerp(d0, c, w): the result's shape (Note [lerp's shape from a 0-d start])
pool_ties.register(executor)  # F.max_pool1d at a tie: eager's gradient (Note [max_pool1d's gradient at a tie])
identity_results.register(executor)  # int floor/ceil/round/trunc, flip(()): a new tensor (Note [results Thunder returns as their input])
trace_time_queries.register(executor)  # x.dtype, torch.is_grad_enabled() (Note [a tensor's dtype is a torch.dtype])
zero_norms.register(executor)  # F.normalize of a zero row: eager's gradient (Note [a norm's gradient at zero])
bool_keys.register(executor)  # x[True]: refused as traced (Note [a bool key refused as it is traced])
dropped_attributes.register(executor)  # attributes set in forward, which Thunder drops: refused
outside_reads.register(executor)  # `if self.extra is None:`: guarded (Note [a None read from a global, a closure or an attribute])
process_state.register(executor)  # torch.get_num_threads(), os.getenv(k): guarded (Note [a process setting read inside the function])
data_attribute.register(executor)  # Tensor.data as detach() (Thunder 0.2.6's proxies have none)
tensor_identity.register(executor)  # `a is b`, id(a) on tensors as eager answers it (Note [tensor identity in a trace])
unbiased_spellings.register(executor)  # x.var(0, unbiased=False): Thunder's correction (Note [unbiased is a correction])
eager_keywords.register(executor)  # x.mul(other=2), torch.add(input=x, other=y) (Note [eager's keyword names for operands])
stack_family.register(executor)  # torch.hstack & co. as the cat they are, which Thunder differentiates (Note [the stacks' gradient])
step_gradients.register(executor)  # x.floor() requiring grad: eager's zero gradient; x // 2: eager's refusal (Note [floor and ceil carry a zero gradient])
same_tensor_results.register(executor)  # torch.positive(x) is x (Note [ops eager returns as their input])
ravel_spelling.register(executor)  # x.ravel() as x.contiguous().view(-1) (Note [ravel is contiguous, then a view])
einsum_views.register(executor)  # einsum("ij->ji", x) as x.permute(1, 0) (Note [an einsum that permutes is a view])
round_decimals.register(executor)  # x.round(decimals=2): eager's (Note [round with decimals])
register_executor(executor)
