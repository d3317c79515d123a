"""The error fusion_alias raises for a program it refuses (see ``fusion_alias.refusals``)."""

import re


class AliasInputError(RuntimeError):
    """A program eager PyTorch rejects (e.g. an in-place write into an expanded tensor)."""


def default_dtype_error(dtype) -> NotImplementedError:
    """Note [a default dtype other than float32]: Thunder 0.2.6 traces with float32 as the default dtype whatever
    ``torch.set_default_dtype`` says, so under float64 ``int_x * 1.5`` (float64 in eager) and ``torch.zeros(3)``
    came back float32, silently (plain ``thunder.jit`` too; session 27 hand probe). ``fusion_alias.jit`` refuses a
    call made with another default, at every call (the default may change between calls of one compiled
    function)."""
    return NotImplementedError(
        f"fusion_alias.jit: the default dtype is {dtype} (torch.set_default_dtype): not supported, Thunder 0.2.6 "
        "computes with float32 as the default and would return other dtypes than eager. Call with the default "
        "float32, or give dtypes explicitly and reset the default around the call")


class OutArgumentError(NotImplementedError):
    """An ``out=`` argument fusion_alias cannot trace as eager runs it (out_arguments.py)."""


class TracingRefusal(NotImplementedError):
    """A refusal raised where Thunder's interpreter wraps what it raises (a wrap callback: outside_reads.py):
    ``fusion_alias.jit`` raises it as itself, not as the ``InterpreterError`` around it (api.py)."""


def refusal_inside(error: Exception) -> TracingRefusal | None:
    """The :class:`TracingRefusal` Thunder's interpreter wrapped in ``error``, or None."""
    cause = error.__cause__
    return cause if isinstance(cause, TracingRefusal) else None


def out_refusal(name: str) -> OutArgumentError:
    """The refusal of ``torch.<name>(..., out=o)`` for a function whose ``out`` fusion_alias does not trace
    (out_arguments.py, Note [out= of other functions])."""
    return OutArgumentError(
        f"fusion_alias: torch.{name}(..., out=o) is not supported: Thunder 0.2.6 traces torch.{name} without "
        f"out=, and eager's rules for an out that overlaps an input differ by function. "
        f"Workaround: o.copy_(torch.{name}(...))")


# Note [a number the function changes and reads]
# ----------------------------------------------
# ``COUNT[0] += 1`` of a global list, ``state["step"] += 1`` of an argument dict, ``nonlocal i; i += 1``: Thunder
# 0.2.6's interpreter makes the store while tracing, and the prologue it compiled then finds the number it read
# changed and raises its own check's words, at every call (plain ``thunder.jit`` too; its test
# ``test_failing_prologue_in_last_prologue_traces`` expects it)::
#
#     RuntimeError: Expected 1 to be equal to and have the type of 0
#
# ``fusion_alias.jit`` raises that as a refusal that names the problem and the ways around it.
_PROLOGUE_NUMBER_CHECK = re.compile(r"Expected (.*) to be equal to and have the type of (.*)", re.S)


def number_changed_while_tracing(error: Exception) -> NotImplementedError | None:
    """The refusal for Thunder's prologue check of a number the traced function changed (Note [a number the
    function changes and reads]); None for any other error."""
    found = _PROLOGUE_NUMBER_CHECK.fullmatch(str(error)) if type(error) is RuntimeError else None
    if found is None:
        return None
    return NotImplementedError(
        f"fusion_alias: the function changes a Python number it reads from an object that outlives the call (an "
        f"entry of a list or dict of an argument or a global, a closure's variable: `COUNT[0] += 1`, "
        f"`state['step'] += 1`): not supported. Thunder 0.2.6 makes the change while tracing, then finds the number "
        f"changed ({found.group(2)} when traced, {found.group(1)} now) and runs nothing; the change was made once "
        f"for each compile. Keep the number in a tensor changed in place (`state['step'].add_(1)`), or change it "
        f"outside the jitted function")
