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

Note [a value the tracer would fix at the first call]
-----------------------------------------------------
Python's own random numbers and clocks are plain Python values to the interpreter: it calls them once
while tracing and the trace keeps the value, so ``if random.random() < p: x = x * 0`` (stochastic
depth, a random augmentation) took the first call's branch at every later call, silently (session 32
probe; plain ``thunder.jit`` too). ``random``'s functions (and methods of any ``random.Random``),
``numpy.random``'s, ``time.time`` and the other clocks, ``os.urandom`` are refused as they are met:
draw the value outside and pass it as an argument, or use torch's random ops, which Thunder traces.

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


def _python_values() -> list[tuple[str, object]]:
    """``(name, function)`` of the Python calls whose value the trace would keep (Note [a value the tracer would
    fix at the first call]); a name may come twice (a module's function and the method it calls)."""
    import os
    import random
    import time

    calls = []
    for name in ("random", "uniform", "randint", "randrange", "choice", "choices", "sample", "shuffle", "gauss",
                 "normalvariate", "lognormvariate", "expovariate", "betavariate", "gammavariate", "triangular",
                 "vonmisesvariate", "paretovariate", "weibullvariate", "getrandbits", "randbytes", "seed",
                 "getstate", "setstate"):
        if hasattr(random.Random, name):  # (the interpreter calls ``random.random()`` as the method of its instance)
            calls.append((f"random.{name}", getattr(random.Random, name)))
    for name in ("time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns",
                 "process_time", "process_time_ns"):
        calls.append((f"time.{name}", getattr(time, name)))
    calls.append(("os.urandom", os.urandom))
    try:
        import numpy.random as npr
    except ImportError:
        return calls
    for name in ("rand", "randn", "randint", "random", "random_sample", "uniform", "normal", "choice", "permutation",
                 "shuffle", "binomial", "poisson", "beta", "seed", "default_rng"):
        if hasattr(npr, name):
            calls.append((f"numpy.random.{name}", getattr(npr, name)))
        if hasattr(npr.RandomState, name):  # (``np.random.rand`` is a method of numpy's global RandomState)
            calls.append((f"numpy.random.{name}", getattr(npr.RandomState, name)))
    return calls


def _refuse_value(name: str, *args, **kwargs):
    raise UntraceableCallError(
        f"fusion_alias: {name}(...) inside a compiled function is not supported: Thunder 0.2.6's tracer calls it "
        "once, while tracing, and every later call would reuse that first value (Note [a value the tracer would "
        "fix at the first call], untraceable_calls.py). Draw the value outside and pass it as an argument, or use "
        "torch's random ops (torch.rand, torch.bernoulli, ...), which are traced."
    )


def _refuse(name: str, *args, **kwargs):
    raise UntraceableCallError(
        f"fusion_alias: {name}(...) inside a compiled function is not supported: Thunder 0.2.6's tracer "
        "does not finish tracing it, and a trace would set the random state at the first call only. "
        f"Call {name} before calling the compiled function."
    )


def register(executor) -> None:
    """Lend ``executor`` a lookaside per call of ``_SEEDING`` and of ``_python_values()`` that raises
    :class:`UntraceableCallError`."""
    for name, fn in _SEEDING.items():
        if fn not in executor._lookasides:  # (where two names are one function, the first names it)
            executor._lookasides[fn] = partial(_refuse, name)
    for name, fn in _python_values():
        if fn not in executor._lookasides:
            executor._lookasides[fn] = partial(_refuse_value, name)
