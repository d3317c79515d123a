"""Public entry points: ``jit``, ``explain`` and ``regions``."""

from __future__ import annotations

import functools

import thunder
import torch
from thunder.core.pytree import tree_flatten
from thunder.core.trace import is_tracing

from fusion_alias import context, grad_mode_exit, keyword_fn, tensor_identity
from fusion_alias.autograd_functionalize import FunctionalizeForAutograd, WrittenInputs, write_back
from fusion_alias.backends.reference import SCHEDULES
from fusion_alias.errors import default_dtype_error, number_changed_while_tracing, refusal_inside
from fusion_alias.executor import BACKENDS, AliasInputError, executor
from fusion_alias.guard import deque_numbers, flat_sequences, guard_key
from fusion_alias.leaked_proxies import proxy_left_in, refuse_leak
from fusion_alias.module_state import follow_rebound_state, trains_parameters
from fusion_alias.mutable_defaults import default_filler, own_parts, own_parts_changed
from fusion_alias.refusals.inplace_ops import _traced_program
from fusion_alias.view_outputs import argument_views_outside_function

# Note [the guard covers every tensor the program reads]
# -----------------------------------------------------
# Thunder's cache does not know how inputs overlap once
# ``skip_inplace_alias_updates=True`` is set, so each call first computes the
# guard key of its arguments (overlap components, strides of non-contiguous
# tensors, offsets inside components: Note [what the guard key holds] in
# overlap.py) and runs the Thunder function compiled for that key.
#
# The program also reads tensors that are not arguments: globals, closure
# variables, module parameters and buffers, attributes of argument objects.
# Thunder's prologue unpacks them all and hands them to the computation, so
#
#     G = {"buf": torch.arange(4.)}
#     def f(a): G["buf"].mul_(2); return a + 1
#
# has the computation ``computation(a, t___globals___G_buf)``. Compiled for an
# unrelated ``a``, it must not run for ``a = G["buf"][1:3]`` (eager gives
# [3, 5]; the program for independent inputs reads ``a`` before the write
# lands and gives [2, 3]). Hence:
#
# * compiling: the fusion pass runs the prologue on the actual call and reports
#   the computation's inputs (``CompileContext.saw_inputs``); their guard key is
#   what the program was compiled for. (A hidden tensor that requires grad while
#   the arguments do not stops that compilation: it must keep Thunder's alias
#   pass, Note [autograd keeps Thunder's alias pass].)
# * caching: when a new cache entry's prologue reads any tensor that the
#   arguments' key does not cover (its unpacking path is not subscripts of
#   plain lists, tuples and dicts from the arguments), its prologue is
#   wrapped in ``_GuardedPrologue``, which recomputes the key over the
#   computation's inputs (which Thunder's prologue has just unpacked, at no
#   extra cost) and, before anything runs, raises ``_ReadsAliasDifferently``
#   if it differs: Thunder's cache then tries its next entry, or compiles one
#   for the key the call has (Note [a guard Thunder's cache falls through]).
#   Programs that read only their arguments pay nothing.


class _ReadsAliasDifferently(Exception):
    """A program was about to run on tensors whose aliasing differs from its compilation (internal)."""

    def __init__(self, key, needs_grad: bool):
        super().__init__("fusion_alias: inputs alias differently from the compiled program (internal signal)")
        self.key = key
        self.needs_grad = needs_grad


# Note [enable_grad inside a call made under no_grad]
# ---------------------------------------------------
# A call made under ``torch.no_grad()`` compiles without autodiff (Note [no autodiff for a call
# that computes no gradient]). A program that turns gradients back on inside::
#
#     def f(x, w):
#         with torch.enable_grad():
#             return (x * w).sum()
#
# computes a gradient in eager even so: ``f(x, w).backward()`` under ``no_grad`` fills ``w.grad``.
# Compiled without autodiff its result did not require grad (backward raised "does not require
# grad"). When the traced program turns gradients on (``_set_grad_enabled_with_warning(True)``)
# and an input requires grad, the compilation stops before anything runs and the call compiles the
# program as one that computes gradients (functionalized before Thunder's autodiff), as a call
# made with gradients on does.


# Note [a call found to compute gradients stays so]
# -------------------------------------------------
# A miss (``_ReadsAliasDifferently``) says whether the call computes gradients as far as its raiser
# can tell: a compilation that meets hidden tensors that require grad, or a program that turns them on
# inside (Note [enable_grad inside a call made under no_grad]), says True; a guarded cache entry asks
# only ``torch.is_grad_enabled()``, False under ``no_grad``. A call under ``no_grad`` whose program turns
# gradients on went: program A (no autodiff) -> compilation says True -> program B (autodiff), compiled
# earlier for hidden tensors that aliased otherwise -> its guard says False -> a program without autodiff
# again -> ... until the tries ran out ("changed their aliasing during the call"; fuzz seed 20001 #5,
# modules, --grad). What one try learnt about the call holds for the next: once True, each later
# variant is looked up and compiled with autodiff.


class _GuardedPrologue:
    """A cache entry's prologue that also checks the key of everything the computation reads, and the
    identity pattern of the tensors its ``is``/``id()`` answers were read from (``identity``: the records,
    or None; tensor_identity.py, Note [identity answers are guarded]).

    Note [a guard Thunder's cache falls through]
    --------------------------------------------
    Thunder's cache tries its entries newest first and takes the first whose prologue returns. The guard
    raised from the *computation* instead (``_GuardedComputation`` until session 33), after Thunder had
    taken the entry: a newer entry whose prologue accepts the call hid an older one compiled for it. A
    global alternating between None and a tensor (``x + G if G is not None else x * 2``) compiled a new
    program every second call, without end (session 33 probe; sessions 18-32 too). Raised from the
    prologue, a mismatch makes Thunder try the next entry, and compile a new one only when none takes the
    call; a call that needs gradients the entries were not compiled for is stopped while compiling
    (``_compiled_inputs``) and goes to a program with gradients.
    """

    __slots__ = ("fn", "key", "needs_grad", "identity", "__weakref__")

    def __init__(self, fn, key, needs_grad: bool, identity=None):
        self.fn = fn
        self.key = key
        self.needs_grad = needs_grad
        self.identity = identity

    def __call__(self, /, *args, **kwargs):  # (positional-only: a keyword argument may be named self)
        inps, pro_to_epi = self.fn(*args, **kwargs)
        key, grad = guard_key(inps)
        if self.identity is not None:
            key = (key, tensor_identity.identity_pattern(self.identity, context.current()))
        needs_grad = grad and torch.is_grad_enabled()
        if key != self.key or (needs_grad and not self.needs_grad):
            raise _ReadsAliasDifferently(key, needs_grad)
        return inps, pro_to_epi


# Note [nothing made per call for a compile that may not happen]: each call sets a CompileContext for the compile
# a cache miss would run; most calls compile nothing. So the function the pass reports its inputs to reads the
# call's entry grad mode from the context, where a closure made per call held it, and a cached call that computes
# no gradient and writes nothing back skips the after-call step (the bench's 2-tensor step: 0.4 µs of 37, about the noise).
def _seen_without_grad(inputs, ctx):
    """The compiled inputs' guard key, for a compile without gradients; raises where the compile needs them."""
    key, grad = guard_key(inputs)
    if grad and ctx.grad_at_entry:
        # a parameter, buffer or global requires grad: Thunder's alias pass must stay
        raise _ReadsAliasDifferently(key, True)
    if grad and grad_mode_exit.enables_grad(_traced_program()):
        raise _ReadsAliasDifferently(key, True)  # Note [enable_grad inside a call made under no_grad]
    return key


def _seen_with_grad(inputs, ctx):
    """The compiled inputs' guard key, for a compile with gradients."""
    return guard_key(inputs)[0]


_PLAIN_CONTAINERS = (tuple, list, dict)
_SEQUENCES = (list, tuple)  # (a call whose first argument is one: flattened at once, no flat-only try; __call__)


def _reads_beyond_arguments(prologue_trace, args: tuple, kwargs: dict) -> bool:
    """Whether the prologue hands the computation a tensor the arguments' guard key does not cover.

    Covered: tensors reached from ``args``/``kwargs`` by subscripts only, through
    plain tuples, lists and dicts (``tree_flatten`` flattens exactly those, and
    the key of a flattened call includes the tree structure). Anything else
    (``unpack_attr``, globals, closures, module parameters and buffers) is not.
    """
    from thunder.core.proxies import TensorProxy

    bsyms = prologue_trace.bound_symbols
    producer = {}
    for b in bsyms:
        for o in b.flat_proxy_outs:
            producer[o.name] = b
    ret = [b for b in bsyms if b.sym.name == "python_return"]
    if not ret:
        return True
    try:
        inps, _ = ret[-1].args[0]  # return ((computation inputs...), (prologue-to-epilogue...))
    except (IndexError, TypeError, ValueError):
        return True  # a prologue we cannot read: guard its inputs
    roots = {"args": args, "kwargs": kwargs}
    for p in inps:
        if not isinstance(p, TensorProxy):
            continue
        path = []
        name = p.name
        while True:
            b = producer.get(name)
            if b is None:
                return True
            if b.sym.name == "unpack_trivial" and name in roots:
                break
            if b.sym.name != "unpack_getitem" or not b.args or not hasattr(b.args[0], "name"):
                return True
            path.append(b.args[1])
            name = b.args[0].name
        obj = roots[name]
        for k in reversed(path):
            if type(obj) not in _PLAIN_CONTAINERS:
                return True
            try:
                obj = obj[k]
            except Exception:
                return True
    return False


class AliasSpecializedFunction:
    """What ``fusion_alias.jit`` returns: one Thunder-jitted function per input alias structure.

    Each call computes the guard key of its arguments and runs the Thunder
    function compiled for exactly that key, compiling a new one when it has
    not been seen; tensors the program reads besides its arguments are keyed
    too (Note [the guard covers every tensor the program reads]).
    ``thunder.last_traces(f)`` and friends see the Thunder function used by
    the most recent call.
    """

    def __init__(self, fn, backend, schedule, unsafe_ignore_hazards, thunder_options):
        self._fn = fn
        self._backend = backend
        self._schedule = schedule
        self._ignore = unsafe_ignore_hazards
        self._options = thunder_options
        self._by_key: dict[tuple, object] = {}  # (arguments' key, needs_grad) -> the Thunder function last used
        self._variants: dict[tuple, object] = {}  # (that, key of all inputs, needs_grad) -> Thunder function
        self._jitted: list = []  # every Thunder function made, in order
        self._entries_seen: dict[int, int] = {}  # id(Thunder function) -> cache entries already inspected
        self._with_grad: dict[int, bool] = {}  # id(Thunder function) -> compiled to compute gradients
        self._last = None
        self._parts = own_parts(fn)  # (mutable_defaults.py, Note [the jitted function's own keyword defaults set in place])
        self._fill = default_filler(fn)  # (mutable_defaults.py, Note [a number read from a default argument's container])
        self._move, self._unpassed = keyword_fn.mover_for(fn), keyword_fn.unpassed_shape(fn)  # (keyword_fn.py, its Note)
        functools.update_wrapper(self, fn)

    def _compile(self, needs_grad: bool):
        # Thunder's own alias pass (insert_alias_updates) never runs: without gradients the
        # regions write in place; with them, the program is functionalized before the autodiff
        options = dict(self._options)
        if needs_grad:  # Note [functionalize before the autodiff] (autograd_functionalize.py)
            options["transforms"] = [*(options.get("transforms") or ()), FunctionalizeForAutograd()]
            # ThunderFX's per-output flags: Thunder checks them against the computation's outputs,
            # which now end with the final values to write back; applied to the program's own
            # outputs after the call instead (``_mark_non_differentiable``)
            options.pop("is_differentiable_outputs", None)
        else:
            # Note [no autodiff for a call that computes no gradient]: under torch.no_grad() with an
            # input that requires grad, Thunder 0.2.6 still builds its autograd forward (it asks only
            # the inputs), and its forward/backward split of a program that writes in place lost
            # writes: ``m.mul_(2).add_(1)`` wrote back the ``mul``, ``c[0].copy_(v)`` nothing
            # (hostile probes 2026-12-02). Such a call needs no autodiff, as in eager: none is built.
            options.setdefault("disable_torch_autograd", True)
        jfn = thunder.jit(self._fn, executors=[executor], skip_inplace_alias_updates=True, **options)
        self._jitted.append(jfn)
        if hasattr(jfn, "_overrides_buffers"):  # a ThunderModule: Note [a buffer rebound on the module called]
            jfn._fusion_alias_siblings = self._jitted
        self._entries_seen[id(jfn)] = 0
        self._with_grad[id(jfn)] = needs_grad
        return jfn

    def __call__(self, /, *args, **kwargs):  # (positional-only: a keyword argument may be named self)
        if is_tracing():
            raise RuntimeError(
                f"fusion_alias.jit: {getattr(self._fn, '__name__', self._fn)!r} was called while Thunder is tracing "
                "another jitted function: a fusion_alias.jit function cannot run inside thunder.jit or "
                "fusion_alias.jit. Call the undecorated function inside, or jit only the outer function"
            )
        if torch.get_default_dtype() is not torch.float32:  # (errors.py, Note [a default dtype other than float32])
            raise default_dtype_error(torch.get_default_dtype())
        parts = self._parts
        if parts is not None and (own_parts_changed(self._fn, parts) or (  # code or defaults replaced or set in place
                self._unpassed is not None and keyword_fn.unpassed_shape(self._fn) != self._unpassed)):
            self._by_key.clear()
            self._variants.clear()
            self._parts = own_parts(self._fn)
            self._fill = default_filler(self._fn)
            self._move, self._unpassed = keyword_fn.mover_for(self._fn), keyword_fn.unpassed_shape(self._fn)
        if self._fill is not None:
            args, kwargs = self._fill(args, kwargs)
        if kwargs and self._move is not None:
            args, kwargs = self._move(args, kwargs)
        got = None if kwargs or (args and type(args[0]) in _SEQUENCES) else guard_key(args, flat_only=True)
        if got is not None:
            flat = args
            key, grad = got
        else:
            flat, spec = flat_sequences(args, kwargs)  # (guard.py, Note [a step's numbers and keywords on the fast path])
            numbers = ()
            if flat is None:
                flat, spec = tree_flatten((args, kwargs))
                numbers = deque_numbers(spec, flat)  # (guard.py, Note [numbers inside a deque argument])
            key, grad = guard_key(flat)
            key = (spec, key, numbers)
        needs_grad = grad and torch.is_grad_enabled()
        slot = (key, needs_grad)
        jfn = self._by_key.get(slot)
        if jfn is None:  # (module_state.py, Note [a module's parameters ask for gradients before compiling])
            jfn = self._by_key[slot] = self._compile(needs_grad or trains_parameters(self._fn))
        for _ in range(3 + len(flat)):
            try:
                return self._run(jfn, args, kwargs, flat)
            except _ReadsAliasDifferently as miss:
                # The tensors the program reads besides its arguments alias differently
                # from what this program was compiled for: nothing ran yet. Once a miss says
                # this call computes gradients, it does for every later try (Note [a call found
                # to compute gradients stays so]).
                needs_grad = needs_grad or miss.needs_grad
                variant = (slot, miss.key, needs_grad)
                other = self._variants.get(variant)
                if other is None or other is jfn:
                    other = self._variants[variant] = self._compile(needs_grad)
                jfn = self._by_key[slot] = other
        raise AliasInputError(
            "fusion_alias: the tensors this program reads besides its arguments (globals, closures, module "
            "parameters or buffers, attributes of argument objects) changed their aliasing during the call; "
            "cannot pick a compiled program"
        )

    def _run(self, jfn, args, kwargs, flat):
        call = jfn
        if hasattr(jfn, "_overrides_buffers"):
            follow_rebound_state(jfn)  # (module_state.py, Note [state rebound between calls])
            call = jfn.forward  # (module_tables.py, Note [torch's global hooks and the ThunderModule])
        needs_grad = self._with_grad[id(jfn)]
        ctx = context.CompileContext(
            self._backend, self._schedule, self._ignore, args, kwargs, True, self._compiled_inputs(needs_grad)
        )
        ctx.fn = self._fn
        token = context.using(ctx)
        cache = jfn._lc_cs.interpreter_cache
        compiled = len(cache)
        try:
            try:
                result = call(*args, **kwargs)
            except (RuntimeError, AssertionError) as e:  # (errors.py, Note [a number the function changes and reads];
                # keyword_fn.py, Note [a tensor parameter named args or kwargs])
                refusal = number_changed_while_tracing(e) or keyword_fn.prologue_refusal(self._fn, e)
                if refusal is not None:
                    raise refusal from e
                inside = refusal_inside(e) or keyword_fn.refusal_for(e)  # (a refusal from inside Thunder's interpreter, as itself)
                if inside is not None:
                    raise inside from None
                raise
            entry = ctx.grad_at_entry or needs_grad
            left = grad_mode_exit.mode_left(jfn, len(cache) != compiled)  # (its Note)
            if left is entry and torch.is_grad_enabled() is entry:
                if needs_grad or ctx.writebacks is not None:  # (else nothing to do: Note [nothing made per call ...])
                    result = self._after_call(result, ctx, needs_grad, flat)
            else:
                with grad_mode_exit.entered(entry, left):
                    result = self._after_call(result, ctx, needs_grad, flat)
        finally:
            context.reset(token)
            self._last = jfn
            if len(cache) != self._entries_seen[id(jfn)]:
                self._guard_new_entries(jfn, ctx, args, kwargs, needs_grad)
        if len(cache) != compiled and (leak := proxy_left_in(self._fn, args, kwargs)) is not None:
            del cache[compiled:]  # (the next call compiles, and is refused, again)
            self._entries_seen[id(jfn)] = len(cache)
            refuse_leak(*leak)
        return result

    def _after_call(self, result, ctx, needs_grad: bool, flat):
        """What runs after the Thunder function returned, under the call's entry grad mode (api's ``_run``)."""
        if ctx.writebacks is not None:
            result = write_back(result, ctx.writebacks)
        if needs_grad and self._options.get("is_differentiable_outputs") is not None:
            result = _mark_non_differentiable(result, self._options["is_differentiable_outputs"])
        return argument_views_outside_function(result, flat) if needs_grad else result  # (its Note)

    @staticmethod
    def _compiled_inputs(needs_grad: bool):
        """What the fusion pass reports, while compiling, about the inputs it compiles for (one function per
        ``needs_grad``, made once: Note [nothing made per call for a compile that may not happen])."""
        return _seen_with_grad if needs_grad else _seen_without_grad

    def _guard_new_entries(self, jfn, ctx, args, kwargs, needs_grad: bool) -> None:
        """Guard the prologue of each new cache entry that reads more than its arguments."""
        cache = jfn._lc_cs.interpreter_cache
        for pos in range(self._entries_seen[id(jfn)], len(cache)):
            entry = cache[pos]
            if isinstance(entry.prologue_fn, _GuardedPrologue) or isinstance(entry.computation_fn, WrittenInputs):
                continue
            if ctx.written_positions is not None:  # functionalized: it returns final values to write back
                entry = cache[pos] = entry._replace(computation_fn=WrittenInputs(entry.computation_fn, ctx.written_positions))
            identity = list(ctx.identity_records) or None  # Note [identity answers are guarded]
            if identity is None and not _reads_beyond_arguments(entry.prologue_traces[-1], args, kwargs):
                continue
            key = ctx.seen_inputs
            if key is None:  # the pass did not report (nothing to fuse?): ask the prologue
                inps, _ = entry.prologue_fn(*args, **kwargs)
                key = guard_key(inps)[0]
            if identity is not None:
                key = (key, tensor_identity.recorded_pattern(identity))
            guarded = _GuardedPrologue(entry.prologue_fn, key, needs_grad, identity)  # Note [a guard Thunder's cache falls through]
            grad_mode_exit.same_entry(guarded, entry.prologue_fn)
            cache[pos] = entry._replace(prologue_fn=guarded)
        self._entries_seen[id(jfn)] = len(cache)

    # thunder.last_traces / compile_stats / compile_data look these up
    @property
    def _lc_cs(self):
        return None if self._last is None else _SummedStats(self._last._lc_cs, self._jitted)

    @property
    def _lc_cd(self):
        return None if self._last is None else self._last._lc_cd

    @property
    def _lc_transforms(self):
        return [] if self._last is None else self._last._lc_transforms

    @property
    def compiled_structures(self) -> int:
        """How many input alias structures have been compiled for."""
        return len(self._jitted)


def _mark_non_differentiable(result, flags):
    """``result`` (a flat tuple or list of outputs, as a ThunderFX piece returns) with the outputs
    whose ``flags`` entry is False detached, as Thunder's ``is_differentiable_outputs`` would mark them."""
    if not isinstance(result, (tuple, list)) or len(result) != len(flags) or all(flags):
        return result
    out = [r.detach() if not keep and isinstance(r, torch.Tensor) else r for r, keep in zip(result, flags)]
    return type(result)(out)


class _SummedStats:
    """The last program's compile stats, with call and cache counters summed over all programs."""

    _SUMMED = ("cache_hits", "cache_misses", "calls")

    def __init__(self, last, jitted):
        self._last = last
        self._all = [j._lc_cs for j in jitted]

    def __getattr__(self, name):
        if name in self._SUMMED:
            return sum(getattr(cs, name) for cs in self._all)
        return getattr(self._last, name)


def jit(fn, *, backend: str = "auto", schedule: str = "reads-first", unsafe_ignore_hazards: bool = False, **thunder_options):
    """Compile ``fn`` with Thunder and the fusion_alias executor.

    backend: ``"auto"`` (nvFuser for CUDA tensors where nvFuser is installed,
    else reference), ``"nvfuser"`` or ``"reference"``.
    schedule: ``"reads-first"`` or ``"writes-first"``, for the reference backend.
    unsafe_ignore_hazards: FOR TESTING ONLY. The partitioner ignores alias
    hazards, so aliasing programs give wrong results; it exists to show the
    reference backend and the fuzzer catch a wrong partition.
    """
    if backend not in BACKENDS:
        raise ValueError(f"fusion_alias.jit: unknown backend {backend!r}; expected one of {BACKENDS}")
    if schedule not in SCHEDULES:
        raise ValueError(f"fusion_alias.jit: unknown schedule {schedule!r}; expected one of {SCHEDULES}")
    if backend == "nvfuser":
        from fusion_alias.backends.nvfuser import require

        require()
    return AliasSpecializedFunction(fn, backend, schedule, unsafe_ignore_hazards, thunder_options)


def _last_trace(jitted, what: str):
    if isinstance(jitted, AliasSpecializedFunction) and jitted._last is None:
        raise RuntimeError(
            f"fusion_alias.{what}: {getattr(jitted._fn, '__name__', 'the function')!r} has not been called yet: "
            "call the function once first (it is compiled for the aliasing of the inputs of its first call)"
        )
    try:
        return thunder.last_traces(jitted)[-1]
    except TypeError as err:
        raise TypeError(
            f"fusion_alias.{what} expects a function returned by fusion_alias.jit (or thunder.jit), "
            f"called at least once: {err}"
        ) from None


def regions(jitted) -> list:
    """The fusion bound symbols of the last compiled program."""
    trace = _last_trace(jitted, "regions")
    return [b for b in trace.bound_symbols if b.sym.is_fusion]


def explain(jitted, picture: str | None = None) -> str:
    """The last compiled program: its final trace, then each region's fusion definition with alias groups.

    picture: also draw the partition into this file (.svg/.png/.pdf; ``fusion_alias.show``).
    """
    trace = _last_trace(jitted, "explain")
    if picture is not None:
        from fusion_alias.show import draw_jitted

        draw_jitted(jitted, picture)
    parts = ["# ---- final trace ----", str(trace)]
    for b in (b for b in trace.bound_symbols if b.sym.is_fusion):
        fn = b._call_ctx[b.sym.name]
        parts.append(f"# ---- {b.sym.name} ----")
        parts.append(repr(fn))
    return "\n".join(parts)
