"""What eager's autograd saves for the backward, op by op: the table refusals/saved_versions.py checks writes against
(Note [tensors saved for the backward, then written] there). Data, derived in eager: tests/test_saved_versions.py
re-derives every entry (modify each argument and the result after the op, run the backward, see whether it raises,
for every set of arguments that require grad, in contiguous and transposed layouts)."""

# (name, tensor argument positions, their ranks or None for any rank) -> ((saved, needs), ...):
# ``saved`` is an argument position or "out" (the result, "out1" the second of several; for an in-place op, self after
# the write), ``needs`` the positions of which one must require grad for the save.
# ``einsum`` is named with its equation. Derived with torch 2.9.1 (see the test).
_ANY = None
SAVED_FOR_BACKWARD: dict[tuple, tuple] = {}


def _entries(names, positions, ranks, saves):
    for name in names.split():
        SAVED_FOR_BACKWARD[(name, positions, ranks)] = saves


_OUT = (("out", (0,)),)
_IN = ((0, (0,)),)
_entries("exp tanh sigmoid relu sqrt rsqrt reciprocal expm1 _softmax log_softmax", (0,), _ANY, _OUT)
_entries("exp_ tanh_ relu_ sqrt_ rsqrt_ reciprocal_ sigmoid_", (0,), _ANY, _OUT)  # (sigmoid_: inplace_lookasides.py)
_entries("log sin cos abs erf log1p square gelu silu pow clamp var softplus", (0,), _ANY, _IN)
_entries("neg sum mean mul div add sub log_ sin_ cos_ abs_ neg_", (0,), _ANY, ())
_entries("amax amin sgn pinverse copysign", (0,), _ANY, (("out", (0,)), (0, (0,))))
_entries("add sub add_ sub_", (0, 1), _ANY, ())
_entries("mul", (0, 1), _ANY, ((0, (1,)), (1, (0,))))
_entries("div", (0, 1), _ANY, ((0, (1,)), (1, (0, 1))))
_entries("maximum minimum", (0, 1), _ANY, ((0, (0, 1)), (1, (0, 1))))
_entries("pow", (0, 1), _ANY, (("out", (0, 1)), (0, (0, 1)), (1, (0, 1))))
_entries("mul_", (0, 1), _ANY, ((1, (0,)),))
# ``x.addcmul_(t1, t2)`` (Adam's second moment; ``a.addcmul_(a, a)`` wrote what it saved: fuzz, session 16)
_entries("addcmul addcmul_", (0, 1, 2), _ANY, ((1, (2,)), (2, (1,))))
_entries("addcdiv addcdiv_", (0, 1, 2), _ANY, ((1, (2,)), (2, (0, 1, 2))))
_entries("div_", (0, 1), _ANY, ((1, (0, 1)),))
_MATMUL = ((0, (1,)), (1, (0,)))
for _ranks in ((2, 2), (3, 3), (4, 4)):
    _entries("matmul", (0, 1), _ranks, _MATMUL)
_entries("bmm", (0, 1), (3, 3), _MATMUL)
_entries("matmul", (0, 1), (3, 2), ((1, (0,)),))  # the 3-d operand is folded: a copy when transposed
_entries("linear", (0, 1), (2, 2), _MATMUL)
_entries("linear", (0, 1, 2), (2, 2, 1), _MATMUL)
_entries("linear", (0, 1, 2), (3, 2, 1), ((1, (0,)),))
for _eq, _ranks in (("ij,jk->ik", (2, 2)), ("btd,bd->bt", (3, 2)), ("bt,btd->bd", (2, 3))):
    _entries(f"einsum:{_eq}", (1, 2), _ranks, ((1, (2,)), (2, (1,))))
_entries("layer_norm", (0, 2, 3), (2, 1, 1), ((0, (0, 2, 3)), (2, (0, 2, 3)), (3, (0, 2, 3))))
# activations and reductions of real models (hostile13: nn.LeakyReLU/ELU(inplace=True), then a write into
# what they saved). An activation with ``inplace=True`` is named with ``_`` (its result is saved).
# ``group_norm`` saves its input only when that is contiguous (else a copy): left out.
_entries("leaky_relu elu hardtanh mish hardswish atan", (0,), _ANY, _IN)
_entries("leaky_relu_ elu_ tan", (0,), _ANY, _OUT)
_entries("logsumexp prod cumprod norm", (0,), _ANY, (("out", (0,)), (0, (0,))))
_entries("rms_norm", (0,), _ANY, _IN)
# unary functions whose eager backward reads their input (session 40 hand probe: ``y = x.sinh(); x.add_(1);
# return y`` ran, eager raises at backward)
_entries("sinh cosh asin acos log2 log10 erfc lgamma digamma sinc nan_to_num", (0,), _ANY, _IN)
_entries("logsigmoid hardsigmoid selu celu relu6 xlogy", (0,), _ANY, _IN)
_entries("atan2 arctan2 fmax fmin", (0, 1), _ANY, ((0, (0, 1)), (1, (0, 1))))
# session 41 (the rest of session 40's sweep: each ran where eager raises at backward). ``median``/``nanmedian`` over
# a dim save only their indices: saves_of gives them nothing (``torch_max`` over a dim traces as argmax & co.)
_entries("std median nanmedian logcumsumexp torch_max", (0,), _ANY, (("out", (0,)), (0, (0,))))
_entries("normalize renorm softsign cummax cummin local_response_norm", (0,), _ANY, _IN)
_entries("gather", (0, 2), _ANY, ((0, (0,)),))
_entries("pow", (1,), _ANY, (("out", (1,)), (1, (1,))))  # (``2 ** x``)
_entries("hypot", (0, 1), _ANY, (("out", (0, 1)), (0, (0,)), (1, (1,))))
_entries("copysign", (0, 1), _ANY, (("out", (0, 1)), (0, (0,))))
_entries("mse_loss torch_max", (0, 1), _ANY, ((0, (0, 1)), (1, (0, 1))))
_entries("outer ger cross", (0, 1), _ANY, ((0, (1,)), (1, (0,))))
_entries("lerp", (0, 1, 2), _ANY, ((0, (2,)), (1, (2,)), (2, (0, 1, 2))))
_entries("var_mean softshrink hardshrink logit i0 glu asinh acosh atanh erfinv angle threshold rrelu", (0,), _ANY, _IN)
_entries("exp2 inverse", (0,), _ANY, _OUT)
_entries("vector_norm", (0,), _ANY, (("out", (0,)), (0, (0,))))
_entries("polygamma", (1,), _ANY, ((1, (1,)),))
_entries("xlogy logaddexp logaddexp2 clamp prelu", (0, 1), _ANY, ((0, (0, 1)), (1, (0, 1))))
_entries("clamp", (0, 2), _ANY, ((0, (0, 2)), (2, (0, 2))))
_entries("clamp", (0, 1, 2), _ANY, tuple((p, (0, 1, 2)) for p in (0, 1, 2)))
_entries("fmod remainder ldexp", (0, 1), _ANY, ((0, (1,)), (1, (1,))))
_entries("true_divide", (0, 1), _ANY, ((0, (1,)), (1, (0, 1))))  # (``a / b``: div's saves)
_entries("addmm baddbmm", (0, 1, 2), _ANY, ((1, (2,)), (2, (1,))))
_entries("fmod_ remainder_", (0, 1), _ANY, ((1, (1,)),))  # (session 46 sweep: in-place forms saving their operand)
_entries("exp2_ tan_ expm1_ celu_ selu_ rrelu_ sgn_ copysign_", (0,), _ANY, _OUT)  # (in-place forms: session 41 sweep, session 46 probe)
_entries("hypot_", (0, 1), _ANY, (("out", (0, 1)), (1, (1,))))
_entries("pow_", (0, 1), _ANY, (("out", (0, 1)), (1, (0, 1))))
_entries("clamp_ atan2_ arctan2_ clip_ clamp_max_ clamp_min_ true_divide_ xlogy_", (0, 1), _ANY, ((1, (0, 1)),))  # (session 46: from arctan2_)
_entries("copysign_", (0, 1), _ANY, (("out", (0, 1)),))
_entries("clamp_ clip_", (0, 1, 2), _ANY, ((1, (0, 1, 2)), (2, (0, 1, 2))))
_entries("lerp_", (0, 1, 2), _ANY, ((1, (2,)), (2, (0, 1, 2))))
_entries("pairwise_distance", (0, 1), _ANY, (("out", (0, 1)),))  # (its norm's result; new memory: fresh_results.py)
# normalization layers (hostile13 M14). ``batch_norm`` saves the same in training and eval, in
# training its running stats as updated by its own write (that write bumps no version: a second
# BatchNorm call on the same stats runs; a user's write into them raises). Its Thunder
# positions: input 0, running_mean 1, running_var 2, weight 3, bias 4. ``group_norm`` saves its weight
# in every layout (its input: see above). ``instance_norm`` saves only its input, and only when that is
# contiguous: left out. ``layer_norm`` saves its input, weight and bias.
_AFFINE = (0, 3, 4)
_entries("batch_norm", (0, 1, 2, 3, 4), _ANY, tuple((p, _AFFINE) for p in (0, 1, 2, 3)))
_entries("batch_norm", (0, 1, 2), _ANY, ((0, (0,)), (1, (0,)), (2, (0,))))
_entries("batch_norm", (0, 3, 4), _ANY, ((0, _AFFINE), (3, _AFFINE)))
_entries("batch_norm", (0,), _ANY, _IN)
_entries("group_norm", (0, 2, 3), _ANY, ((2, (0, 2, 3)),))
_entries("layer_norm", (0,), _ANY, _IN)
_entries("layer_norm", (0, 2), _ANY, ((0, (0, 2)), (2, (0, 2))))
_entries("layer_norm", (0, 2, 3), _ANY, ((0, (0, 2, 3)), (2, (0, 2, 3)), (3, (0, 2, 3))))
# session 46 (a sweep of torch.nn.functional, torch.special, torch.linalg and torch's functions of one tensor, each
# returning a gradient where eager raises at backward; ``pdist`` and ``norm_except_dim`` save their input only when
# contiguous: their result only).
_entries("_softmin ndtri cholesky eigvalsh inv svdvals cholesky_inverse pdist norm_except_dim", (0,), _ANY, _OUT)
_entries("erfcx i0e i1 i1e log_ndtr det matrix_norm pinv", (0,), _ANY, (("out", (0,)), (0, (0,))))
_entries("softmax tensorinv", (0,), _ANY, _OUT)
_entries("avg_pool1d avg_pool2d max_pool1d max_pool2d", (0,), _ANY, _IN)
# functions with several results: "out1", "out2" name the second and third (session 46)
_entries("eigh qr lu_factor lu_factor_ex", (0,), _ANY, (("out", (0,)), ("out1", (0,))))
_entries("svd", (0,), _ANY, (("out", (0,)), ("out1", (0,)), ("out2", (0,))))
_entries("cholesky_ex inv_ex", (0,), _ANY, _OUT)
_entries("slogdet std_mean", (0,), _ANY, (("out", (0,)), (0, (0,))))
