"""What a compilation needs to know about the call that triggered it.

``fusion_alias.jit`` sets this around each call of the Thunder-jitted function,
so the fusion pass (which only sees a trace) can find the actual arguments,
and so which trace inputs overlap, plus the backend options of that jit.
Used directly (``thunder.jit(fn, executors=[fusion_alias.executor])``) there
is no context, and the pass falls back to what Thunder tells it.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class CompileContext:
    backend: str = "auto"
    schedule: str = "reads-first"
    ignore_hazards: bool = False
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    has_call: bool = False


_current: ContextVar[CompileContext | None] = ContextVar("fusion_alias_compile_context", default=None)


def current() -> CompileContext:
    ctx = _current.get()
    return ctx if ctx is not None else CompileContext()


def using(ctx: CompileContext):
    return _current.set(ctx)


def reset(token) -> None:
    _current.reset(token)
