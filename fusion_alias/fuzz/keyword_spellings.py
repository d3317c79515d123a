"""``--keyword-spellings``: the program's calls respelled with eager's keyword names for their operands.

Note [keyword spellings respell the rendered program]
-----------------------------------------------------
Session 38 made eager's keyword names for operands run (``x.mul_(other=y)``, ``torch.add(input=x,
other=y)``, ``x.pow(exponent=2)``: eager_keywords.py; ``x.var(0, unbiased=False)``: unbiased_spellings.py),
which raised a TypeError before. No generator writes them: each writes its calls positionally, and a new
spelling drawn in a generator would change the programs of every seed that the tests pin. With
``--keyword-spellings`` the rendered program (its function, ``oracle._prog_source``) is parsed and about
half of the eligible calls, drawn from a stream of the program's name, are respelled before eager and
fusion_alias run it; without the flag nothing changes. Example::

    t2 = a.sub_(t1, alpha=2.0)          ->  t2 = a.sub_(other=t1, alpha=2.0)
    t3 = torch.where(t0 > 0, a, b)      ->  t3 = torch.where(condition=t0 > 0, input=a, other=b)

Eligible: a method call of an op of ``_OPERANDS`` with its operands positional (respelled as eager's names
after ``self``), the same op called as ``torch.<op>`` (``input`` first), a ``torch.<op>`` of ``_FUNCTION_ONLY``
(``torch.sigmoid(input=a)``: session 39), and ``x.var(d)``/``x.std(d)`` with one positional dim (respelled
``x.var(d, unbiased=True)``, the same correction). ``modules`` programs render
their own way and are not respelled.
"""

from __future__ import annotations

import ast
import random

ENABLED = False  # set by the command line's --keyword-spellings

# op -> eager's names of its operands after ``self`` (torch.<op> calls ``self`` ``input``)
_OPERANDS = {
    **dict.fromkeys(("add", "sub", "mul", "div", "true_divide", "remainder", "fmod", "maximum", "minimum", "eq", "ne",
                     "lt", "le", "gt", "ge", "atan2", "copysign", "logical_and", "logical_or", "logical_xor"),
                    ("other",)),
    "pow": ("exponent",),
    "addcmul": ("tensor1", "tensor2"),
    "addcdiv": ("tensor1", "tensor2"),
    # session 39 (eager_keywords.py's second list): ``torch.matmul(input=a, other=b)``, ``a.bmm(mat2=b)``
    "matmul": ("other",), "ldexp": ("other",), "bmm": ("mat2",), "outer": ("vec2",),
}
_FUNCTION_ONLY = {
    "where": ("condition", "input", "other"),
    # session 39: ``torch.sigmoid(input=a)``, ``torch.softmax(input=a, dim=-1)``, ``torch.sum(input=a, dim=0)``
    **dict.fromkeys(("sigmoid", "tanh", "relu", "trunc", "exp", "neg", "abs", "sin", "cos", "log", "sqrt", "rsqrt",
                     "sign", "erf", "square", "floor", "ceil", "reciprocal", "expm1", "log1p", "clone"), ("input",)),
    "softmax": ("input", "dim"), "log_softmax": ("input", "dim"),
    "sum": ("input", "dim", "keepdim"), "mean": ("input", "dim", "keepdim"),
}


# Note [shape keywords, from a stream of their own]: session 41 respells a shape method's varargs as eager's one
# keyword (``x.reshape(2, 8)`` -> ``x.reshape(shape=(2, 8))``, ``x.view(-1)`` -> ``x.view(size=(-1,))``,
# ``x.permute(1, 0)`` -> ``x.permute(dims=(1, 0))``, ``x.expand(3, 4)``, ``x.repeat(1, 2)``), about half of them,
# drawn from a stream named apart (``keyword-shapes:``): these calls drew nothing before, so every respelling
# above keeps its draws and seeds run before keep their programs but for these calls. A dtype view
# (``x.view(torch.int8)``) or a shape held in a name is left as it is.
_SHAPE_KEYWORDS = {"reshape": "shape", "view": "size", "permute": "dims", "expand": "size", "repeat": "repeats"}


def _shape_tuple(args):
    """The one tuple eager's keyword takes for a shape method's positional ``args``, or None (a dtype, a name)."""
    def is_int(a):
        return (isinstance(a, ast.Constant) and type(a.value) is int) or (
            isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub) and is_int(a.operand))

    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)) and all(is_int(a) for a in args[0].elts):
        return ast.Tuple(list(args[0].elts), ast.Load())
    return ast.Tuple(list(args), ast.Load()) if args and all(is_int(a) for a in args) else None


class _Respeller(ast.NodeTransformer):
    def __init__(self, rng: random.Random, shapes: random.Random | None = None):
        self.rng = rng
        self.shapes = shapes  # Note [shape keywords, from a stream of their own]
        self.respelled = 0

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        f = node.func
        if not isinstance(f, ast.Attribute) or any(isinstance(a, ast.Starred) for a in node.args):
            return node
        is_torch = isinstance(f.value, ast.Name) and f.value.id == "torch"
        if not is_torch and f.attr in _SHAPE_KEYWORDS and self.shapes is not None:
            shape = None if node.keywords else _shape_tuple(node.args)
            if shape is not None and self.shapes.random() < 0.5:
                node.args, node.keywords = [], [ast.keyword(_SHAPE_KEYWORDS[f.attr], shape)]
                self.respelled += 1
            return node
        op = f.attr[:-1] if f.attr.endswith("_") and not is_torch else f.attr
        if is_torch:
            names = _FUNCTION_ONLY.get(op) or (("input", *_OPERANDS[op]) if op in _OPERANDS else None)
        else:
            names = _OPERANDS.get(op)
        if names is None and not is_torch and f.attr in ("var", "std") and len(node.args) == 1 and not node.keywords:
            if self.rng.random() < 0.5:  # Note [unbiased is a correction]: the default correction, spelled so
                node.keywords.append(ast.keyword("unbiased", ast.Constant(True)))
                self.respelled += 1
            return node
        if names is None or not node.args or len(node.args) > len(names) or self.rng.random() >= 0.5:
            return node
        node.keywords = [ast.keyword(n, a) for n, a in zip(names, node.args)] + node.keywords
        node.args = []
        self.respelled += 1
        return node


def respelled(source: str, label: str) -> str:
    """``source`` with about half its eligible calls respelled (module Note), drawn from a stream of ``label``."""
    tree = ast.parse(source)
    respeller = _Respeller(random.Random("keyword-spellings:" + label), random.Random("keyword-shapes:" + label))
    tree = respeller.visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n" if respeller.respelled else source
