"""What a compilation needs to know about the call that triggered it.

``fusion_alias.jit`` sets this around each call of the Thunder-jitted function,
so the fusion pass (which only sees a trace) can find the actual arguments,
and so which trace inputs overlap, plus the backend options of that jit.
Used directly (``thunder.jit(fn, executors=[fusion_alias.executor])``) there
is no context, and the pass falls back to what Thunder tells it.

The pass reports back, through :meth:`CompileContext.saw_inputs`, the actual
tensors the compiled program reads (Thunder's prologue output: arguments, and
also globals, closures, module parameters and buffers, attributes of argument
objects). ``fusion_alias.jit`` keys the compiled program by their aliasing.
"""

from __future__ import annotations

from contextvars import ContextVar

import torch


class CompileContext:
    __slots__ = (
        "backend",
        "schedule",
        "ignore_hazards",
        "args",
        "kwargs",
        "has_call",
        "on_inputs",
        "seen_inputs",
        "writebacks",
        "written_positions",
        "foreach_writes",
        "foreach_saves",
        "fn",
        "identity_records",
        "outside_paths",
        "module_tables",
        "grad_at_entry",
    )

    def __init__(
        self,
        backend: str = "auto",
        schedule: str = "reads-first",
        ignore_hazards: bool = False,
        args: tuple = (),
        kwargs: dict | None = None,
        has_call: bool = False,
        on_inputs=None,
    ):
        self.backend = backend
        self.schedule = schedule
        self.ignore_hazards = ignore_hazards
        self.args = args
        self.kwargs = {} if kwargs is None else kwargs
        self.has_call = has_call
        # called with the computation's actual inputs and this context when the pass learns them; may raise
        # to stop a compilation made under a wrong assumption (see api.AliasSpecializedFunction)
        self.on_inputs = on_inputs
        self.seen_inputs = None  # what on_inputs returned for this call's compilation
        # a call that computes gradients, functionalized (autograd_functionalize.py): what to write
        # back after this call, and, when it compiled, which inputs its new cache entry writes
        self.writebacks = None
        self.written_positions = None
        # the in-place foreach ops traced in this call's compilation: (op name, the list's tensor names)
        # (foreach_lookasides.py, Note [a foreach op given one tensor twice])
        self.foreach_writes: list[tuple[str, tuple[str, ...]]] = []
        # the out-of-place foreach functions traced whose eager node saves every operand, by op name, in order (their
        # results are tagged: refusals/foreach_saves.py, Note [an out-of-place foreach function saves every operand])
        self.foreach_saves: list[str] = []
        # the function or module called (tensor_identity.py: where a proxy's provenance starts)
        self.fn = None
        # (provenance, tensor) of each call tensor an `is`/id() answer was read from
        # (tensor_identity.py, Note [identity answers are guarded])
        self.identity_records: list = []
        # the paths of the reads outside the arguments recorded there (outside_reads.py)
        self.outside_paths: set = set()
        # what the compilation read of the modules it called (module_tables.py)
        self.module_tables = None
        # the grad mode the call came in with (grad_mode_exit.py, Note [a grad mode the function leaves changed])
        self.grad_at_entry = torch.is_grad_enabled()

    def saw_inputs(self, inputs) -> None:
        """The fusion pass learnt the actual tensors (and other values) the program reads."""
        if self.on_inputs is not None and self.seen_inputs is None:
            self.seen_inputs = self.on_inputs(inputs, self)


_current: ContextVar[CompileContext | None] = ContextVar("fusion_alias_compile_context", default=None)
_DEFAULT = CompileContext()


def current() -> CompileContext:
    ctx = _current.get()
    return ctx if ctx is not None else _DEFAULT


def using(ctx: CompileContext):
    return _current.set(ctx)


def reset(token) -> None:
    _current.reset(token)
