"""Public entry points: ``jit`` and ``explain``."""

from __future__ import annotations

import functools

import thunder
import torch
from thunder.core.pytree import tree_flatten

from fusion_alias import context, grad_inputs
from fusion_alias.backends.reference import SCHEDULES
from fusion_alias.executor import BACKENDS, executor
from fusion_alias.refusals.autograd import WriteIntoGradInput


class AliasSpecializedFunction:
    """What ``fusion_alias.jit`` returns: one Thunder-jitted function per input alias structure.

    Thunder's own cache does not know how the inputs overlap once
    ``skip_inplace_alias_updates=True`` is set, so each call first computes the
    overlap components of its tensor arguments (the guard) and runs the
    program compiled for exactly that structure, compiling a new one when it
    has not been seen. ``thunder.last_traces(f)`` and friends see the
    Thunder function used by the most recent call.
    """

    def __init__(self, fn, backend, schedule, unsafe_ignore_hazards, thunder_options):
        self._fn = fn
        self._backend = backend
        self._schedule = schedule
        self._ignore = unsafe_ignore_hazards
        self._options = thunder_options
        self._by_structure: dict[tuple, object] = {}
        self._last = None
        self._cloned: dict[tuple, dict] = {}  # (structure, needs grad) -> inputs cloned (grad_inputs.py)
        functools.update_wrapper(self, fn)

    def _jitted_for(self, structure: tuple, needs_grad: bool):
        key = (structure, needs_grad)
        jfn = self._by_structure.get(key)
        if jfn is None:
            # Note [autograd keeps Thunder's alias pass]: Thunder's autodiff relies on its own
            # in-place functionalization (insert_alias_updates); with it skipped, the
            # gradients of in-place programs come out wrong (checked on Thunder 0.2.6:
            # y = x * w; y.tanh_(); (y * w).sum()). So a call that needs gradients keeps
            # Thunder's pass and we read its update_aliases as alias facts.
            cloned = self._cloned.get(key)
            jfn = thunder.jit(
                grad_inputs.cloning(self._fn, cloned) if cloned else self._fn,
                executors=[executor],
                skip_inplace_alias_updates=not needs_grad,
                **self._options,
            )
            self._by_structure[key] = jfn
        return jfn

    def __call__(self, *args, **kwargs):
        from fusion_alias.overlap import overlap_components

        flat, _ = tree_flatten((args, kwargs))
        structure = overlap_components(flat)
        needs_grad = torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in flat)
        jfn = self._jitted_for(structure, needs_grad)
        self._last = jfn
        ctx = context.CompileContext(
            backend=self._backend,
            schedule=self._schedule,
            ignore_hazards=self._ignore,
            args=args,
            kwargs=kwargs,
            has_call=True,
        )
        token = context.using(ctx)
        try:
            result = jfn(*args, **kwargs)
            cloned = self._cloned.get((structure, needs_grad)) if needs_grad else None
            return grad_inputs.write_back(result, args, cloned) if cloned else result
        except WriteIntoGradInput as err:  # Note [cloned inputs, written back in eager]
            cloned = self._cloned.setdefault((structure, needs_grad), {})
            # a write under the program's no_grad is not: Thunder drops the gradient through it, clone or not
            pos = grad_inputs.position_of(err.tensor, args, flat) if needs_grad and err.grad_enabled else None
            if pos is None or pos in cloned:
                raise
            cloned[pos] = err.grad_enabled
            del self._by_structure[(structure, needs_grad)]
            return self(*args, **kwargs)
        except Exception as err:
            if needs_grad and _raised_in_thunder_alias_pass(err):
                _raise_if_thunder_alias_pass_failed(err, flat)
            raise
        finally:
            context.reset(token)

    # thunder.last_traces / compile_stats / compile_data look these up
    @property
    def _lc_cs(self):
        return None if self._last is None else _SummedStats(self._last._lc_cs, list(self._by_structure.values()))

    @property
    def _lc_cd(self):
        return None if self._last is None else self._last._lc_cd

    @property
    def _lc_transforms(self):
        return [] if self._last is None else self._last._lc_transforms

    @property
    def compiled_structures(self) -> int:
        """How many input alias structures have been compiled for."""
        return len(self._by_structure)


def _raised_in_thunder_alias_pass(err: BaseException) -> bool:
    """Whether ``err`` came out of Thunder's ``insert_alias_updates`` (by its traceback)."""
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "insert_alias_updates":
            return True
        tb = tb.tb_next
    return False


def _raise_if_thunder_alias_pass_failed(err: Exception, flat: list) -> None:
    """Name the problem when Thunder's alias pass (kept for autograd) fails on aliased inputs.

    Thunder 0.2.6's ``insert_alias_updates`` reshapes one aliased input into
    another's shape, which fails when their sizes differ (``x`` and ``x[0, 0]``),
    and indexes the trace's arguments by the user's argument positions, which
    fails (IndexError) when an argument is unused. Its messages name no input.
    """
    from fusion_alias.executor import AliasInputError
    from fusion_alias.overlap import shared_storage_groups

    # by storage, overlapping or not (Thunder's notion of aliases); groups of different sizes first
    groups = shared_storage_groups(
        ((i, t) for i, t in enumerate(flat) if isinstance(t, torch.Tensor)), uninspectable_share=False
    )
    shared = sorted(groups, key=lambda p: len({flat[i].numel() for i in p}) == 1)
    if not shared:
        return
    shapes = ", ".join(f"#{i} {tuple(flat[i].shape)}" for i in shared[0])
    raise AliasInputError(
        f"fusion_alias: this call computes gradients and its tensor arguments {shapes} (positions among the "
        "flattened arguments) share a storage: not supported. With gradients, Thunder 0.2.6's own alias pass "
        "runs (its autograd needs it), and it fails on these aliased inputs once the program has an in-place "
        f"op (it raised {type(err).__name__}: {err}). Workarounds: pass a clone "
        "of one of them so that they do not share memory, or run under torch.no_grad() when no gradient is needed"
    ) from err


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


def regions(jitted) -> list:
    """The fusion bound symbols of the last compiled program."""
    trace = thunder.last_traces(jitted)[-1]
    return [b for b in trace.bound_symbols if b.sym.is_fusion]


def explain(jitted) -> str:
    """The last compiled program: its final trace, then each region's fusion definition with alias groups."""
    trace = thunder.last_traces(jitted)[-1]
    parts = ["# ---- final trace ----", str(trace)]
    for b in regions(jitted):
        fn = b._call_ctx[b.sym.name]
        parts.append(f"# ---- {b.sym.name} ----")
        parts.append(repr(fn))
    return "\n".join(parts)
