"""Calls Thunder 0.2.6's interpreter cannot trace, refused with an error that names them.

Note [a call the tracer never finishes]
---------------------------------------
``torch.manual_seed(0)`` inside a compiled function is Python code to Thunder's interpreter,
which steps into it (``torch.random.manual_seed`` then the default generator's and every
device's seeding code) and, in Thunder 0.2.6, had not finished after minutes: the first call of
``fusion_alias.jit(f)`` (and of plain ``thunder.jit(f)``) hung, with no error::

    def f(x):
        torch.manual_seed(0)
        return x * 2

Running it once while tracing would not be the program either: a compiled function runs its
trace on later calls, so the seed would be set at the first call only, and random ops after it
would silently differ from eager's from the second call on. Each such call is therefore refused
as it is met, with what to do instead: set the generator's state before calling the compiled
function. Like the other lookasides (``inplace_lookasides.py``), these are lent to the
interpreter only where ``fusion_alias.executor`` is in the executor list.
"""

from __future__ import annotations

from functools import partial

import torch


class UntraceableCallError(NotImplementedError):
    """A call inside the compiled function that Thunder's tracer cannot handle (module Note)."""


# the calls, by the name the error gives them
_SEEDING = {
    "torch.manual_seed": torch.manual_seed,
    "torch.seed": torch.seed,
    "torch.set_rng_state": torch.set_rng_state,
    "torch.random.manual_seed": torch.random.manual_seed,
    "torch.random.seed": torch.random.seed,
    "torch.random.set_rng_state": torch.random.set_rng_state,
    "torch.cuda.manual_seed": torch.cuda.manual_seed,  # (hang too, on a machine without CUDA as well)
    "torch.cuda.manual_seed_all": torch.cuda.manual_seed_all,
    "torch.cuda.seed": torch.cuda.seed,
    "torch.cuda.seed_all": torch.cuda.seed_all,
    "torch.cuda.set_rng_state": torch.cuda.set_rng_state,
    "torch.cuda.set_rng_state_all": torch.cuda.set_rng_state_all,
}


def _refuse(name: str, *args, **kwargs):
    raise UntraceableCallError(
        f"fusion_alias: {name}(...) inside a compiled function is not supported: Thunder 0.2.6's tracer "
        "does not finish tracing it, and a trace would set the random state at the first call only. "
        f"Call {name} before calling the compiled function."
    )


def register(executor) -> None:
    """Lend ``executor`` a lookaside per call of ``_SEEDING`` that raises :class:`UntraceableCallError`."""
    for name, fn in _SEEDING.items():
        if fn not in executor._lookasides:  # (where two names are one function, the first names it)
            executor._lookasides[fn] = partial(_refuse, name)
