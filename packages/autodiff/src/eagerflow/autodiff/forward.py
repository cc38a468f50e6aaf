"""``ForwardAccumulator``: forward-mode automatic differentiation, a second recorder on the seam.

A ``GradientTape`` remembers the ops and walks them backwards afterwards: it computes
vector-Jacobian products ``uᵀJ``, one backward pass per output direction ``u``. Forward mode
carries, next to every value, its *tangent*: how it moves when the watched primal ``x``
moves along a direction ``v``. Each op, as it runs, turns its inputs' tangents into its
outputs' tangents, so the tangent of ``y = f(x)`` is the Jacobian-vector product ``J·v``,
one forward pass per input direction ``v``, with nothing kept for later:

>>> with ForwardAccumulator(x, v) as acc:
...     y = f(x)
>>> acc.jvp(y)   # J·v, shaped like y

The accumulator is a recorder on the execution seam, like the tape: one seam, two
recorders. The ops it runs to compute tangents go through the seam too, and are heard by
the recorders *older* than it (``older_recorders``): an outer accumulator or tape then
differentiates the tangent computation itself, which is how nesting gives second order
(forward-over-forward, forward-over-reverse, reverse-over-forward).

Where do the per-op tangent rules come from? Two sources, both used:

1. **An explicit JVP rule** per op name, registered with ``register_jvp("Mul")`` and written
   with public ops, exactly like the gradient rules: ``Mul``: ``ta·b + a·tb``. Cheap (one or
   two ops) and readable; written here for the core arithmetic, matrix, activation and
   shape ops (``JVPS``).
2. **The "double VJP" fallback** for every other op that has a gradient rule. An op's
   gradient rule computes ``u ↦ Jᵀu``, a *linear* map of ``u``. The VJP of a linear map is
   its transpose, so differentiating the gradient rule with respect to ``u`` (a reverse pass
   over it, seeded with the tangents ``t``) gives ``(Jᵀ)ᵀ t = J·t``: the JVP. Transposing
   twice: reverse mode is forward mode transposed, and back again (Autodidax's point; it is
   what TensorFlow's ``forwardprop.py`` does for ops with no forward function: "use the
   backward function twice"). It serves every op with a gradient rule at once, at the price
   of a small tape and a few more ops per op.

The tests check the two agree on every explicit rule. ``acc.jvp(t)`` is None for a tensor
that does not depend on the primals (TensorFlow's ``unconnected_gradients="none"``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import eagerflow.tensor as ef
from eagerflow.autodiff.registry import GRADIENTS, OpRecord, get_gradient
from eagerflow.autodiff.tape import GradientTape, check_unconnected_gradients
from eagerflow.autodiff.variables import Variable
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import EagerflowError, format_shape
from eagerflow.tensor.execution import add_recorder, older_recorders, remove_recorder
from eagerflow.tensor.nest import flatten, pack_sequence_as
from eagerflow.tensor.registry import Attrs, OpDef

Tangents = tuple[Tensor | None, ...]
JVPRule = Callable[..., Sequence[Tensor | None]]

# op name -> rule(op: OpRecord, *input_tangents) -> one tangent per output
JVPS: dict[str, JVPRule] = {}


def register_jvp(op_name: str) -> Callable[[JVPRule], JVPRule]:
    """Decorator: ``@register_jvp("Mul") def _(op, ta, tb): return (ta * b + a * tb,)``.

    A rule gets one tangent per input: the input's tangent, zeros for a floating-point input
    that has none, None for any other (an integer input carries no tangent). It returns one
    tangent per output, using public ops only.
    """

    def register(rule: JVPRule) -> JVPRule:
        if op_name in JVPS:
            raise ValueError(f"a JVP rule for {op_name!r} is already registered")
        JVPS[op_name] = rule
        return rule

    return register


def jvp_by_double_vjp(op: OpRecord, *tangents: Tensor | None) -> Tangents:
    """The JVP of ``op`` from its gradient rule, transposed: ``J·t`` as the VJP of ``u ↦ Jᵀu``.

    The gradient rule is linear in the output gradients ``u``, so any ``u`` will do (ones: a
    rule may give 0 where ``u`` is exactly 0, as TensorFlow's sqrt gradient does);
    a tape watching ``u`` records the rule, and its reverse pass seeded with ``t`` gives, for
    each ``u``, the sum over inputs of ``tᵢᵀ ∂(Jᵢᵀu)/∂u = Jᵢ tᵢ``.
    """
    rule = get_gradient(op.op.name)  # LookupError naming the op if it has no rule
    if rule is None:  # declared not differentiable: no tangent flows through
        return (None,) * len(op.outputs)
    us = [ef.ones_like(o) for o in op.outputs]  # any u will do: the rule is linear in it
    watched = [u for u in us if u.dtype.is_floating]
    skip = frozenset(i for i, t in enumerate(tangents) if t is None)
    with GradientTape() as tape:
        tape.watch(watched)
        grads = rule(OpRecord(op.op, op.inputs, op.attrs, op.outputs, skip), *us)  # Jᵀu
    connected = [
        i
        for i, (g, t) in enumerate(zip(grads, tangents, strict=True))
        if g is not None and t is not None
    ]
    if not watched or not connected:
        return (None,) * len(op.outputs)
    jvps = iter(
        tape.gradient(  # Σᵢ tᵢ·∂(Jᵢᵀu)/∂u = Σᵢ Jᵢtᵢ, for each u
            [grads[i] for i in connected],
            watched,
            output_gradients=[tangents[i] for i in connected],
        )
    )
    return tuple(next(jvps) if u.dtype.is_floating else None for u in us)


class ForwardAccumulator:
    """Jacobian-vector products in forward mode, as ops run (TF's ``ForwardAccumulator``).

    >>> x, v = constant([1.0, 2.0]), constant([1.0, 0.0])
    >>> with ForwardAccumulator(x, v) as acc:
    ...     y = x * x
    >>> acc.jvp(y)   # d(x²)/dx · v = 2x·v
    Tensor([2. 0.], shape=(2,), dtype=float32)

    ``primals``: a tensor or variable, or a nest of them; ``tangents``: the same nest, one
    tensor per primal of its shape and dtype (the direction ``v``).
    """

    def __init__(self, primals: Any, tangents: Any) -> None:
        if isinstance(primals, (Tensor, Variable)):  # one primal: its tangent may be a list
            flat_primals, flat_tangents = [primals], [tangents]
        else:
            flat_primals, flat_tangents = flatten(primals), flatten(tangents)
        if len(flat_primals) != len(flat_tangents):
            raise ValueError(
                f"ForwardAccumulator: {len(flat_tangents)} tangents for {len(flat_primals)} "
                "primals; give one tangent per primal"
            )
        self._tangents: dict[Tensor, Tensor] = {}  # tensor -> its tangent (keys by identity)
        self._variables: dict[Variable, Tensor] = {}  # watched variable -> its tangent
        seen: set[int] = set()
        for i, (primal, tangent) in enumerate(zip(flat_primals, flat_tangents, strict=True)):
            if id(primal) in seen:
                raise ValueError(
                    f"ForwardAccumulator: primal {i} was given twice; if that is meant, give "
                    "it once with the sum of its tangents"
                )
            seen.add(id(primal))
            self._watch(i, primal, tangent)
        self._recording = False

    def _watch(self, i: int, primal: Any, tangent: Any) -> None:
        if not isinstance(primal, (Tensor, Variable)):
            raise ValueError(
                f"ForwardAccumulator: primals are tensors or variables, got "
                f"{type(primal).__name__} (primal {i})"
            )
        if not primal.dtype.is_floating:
            raise ValueError(
                f"ForwardAccumulator: primal {i} is {primal.dtype}: only floating-point "
                "tensors have tangents"
            )
        if not isinstance(tangent, Tensor):  # a list or array: made in the primal's dtype
            tangent = ef.constant(tangent, dtype=primal.dtype)
        if tangent.dtype != primal.dtype or tangent.shape != primal.shape:
            raise ValueError(
                f"ForwardAccumulator: the tangent of primal {i} is {tangent.dtype}"
                f"{format_shape(tangent.shape)}, its primal {primal.dtype}"
                f"{format_shape(primal.shape)}: a tangent has its primal's shape and dtype"
            )
        if isinstance(primal, Variable):
            self._variables[primal] = tangent
        else:
            self._tangents[primal] = tangent

    # --- recording -----------------------------------------------------------------------------
    def __enter__(self) -> ForwardAccumulator:
        if self._recording:
            raise RuntimeError("this ForwardAccumulator is already recording")
        self._recording = True
        add_recorder(self)
        return self

    def __exit__(self, *exc: object) -> None:
        remove_recorder(self)
        self._recording = False

    def record(
        self, op: OpDef, inputs: tuple[Tensor, ...], attrs: Attrs, outputs: tuple[Tensor, ...]
    ) -> None:
        """Called by the seam after every op while active: the outputs' tangents, now."""
        if op.reads_state:
            tangent = self._variables.get(attrs["variable"])
            if tangent is not None:
                self._tangents[outputs[0]] = tangent
            return
        known = self._tangents
        tangents = [known.get(t) for t in inputs]
        if all(t is None for t in tangents):
            return  # no input moves: neither do the outputs
        if GRADIENTS.get(op.name, ...) is None:
            return  # declared not differentiable (comparisons, argmax, ...)
        rule = JVPS.get(op.name, jvp_by_double_vjp)
        with older_recorders(self):  # our own ops: heard by outer recorders, not by us
            if rule is not jvp_by_double_vjp:
                tangents = [
                    ef.zeros_like(x) if t is None and x.dtype.is_floating else t
                    for x, t in zip(inputs, tangents, strict=True)
                ]
            out_tangents = rule(OpRecord(op, inputs, attrs, outputs), *tangents)
        if len(out_tangents) != len(outputs):
            raise EagerflowError(
                f"the JVP rule of {op.name} returned {len(out_tangents)} tangents for "
                f"{len(outputs)} outputs"
            )
        for out, tangent in zip(outputs, out_tangents, strict=True):
            if tangent is None:
                continue
            if tangent.dtype != out.dtype or (
                None not in out.shape and None not in tangent.shape and tangent.shape != out.shape
            ):
                raise EagerflowError(
                    f"the JVP rule of {op.name} gave a {tangent.dtype}{format_shape(tangent.shape)}"
                    f" tangent for a {out.dtype}{format_shape(out.shape)} output"
                )
            known[out] = tangent

    # --- reading tangents ------------------------------------------------------------------------
    def jvp(self, primals: Any, unconnected_gradients: str = "none") -> Any:
        """The tangents of ``primals`` (a tensor or nest): ``J·v`` for each. A tensor that does
        not depend on the watched primals gets None, or zeros with ``"zero"``."""
        check_unconnected_gradients(unconnected_gradients)
        result = []
        for t in flatten(primals):
            known: dict[Any, Tensor] = (
                self._variables if isinstance(t, Variable) else self._tangents
            )
            tangent = known.get(t)
            if tangent is None and unconnected_gradients == "zero":
                tangent = ef.zeros(t.shape, t.dtype)
            result.append(tangent)
        return pack_sequence_as(primals, result)


def forward_jacobian(f: Callable[[Tensor], Tensor], x: Any) -> Tensor:
    """The Jacobian of ``f`` at ``x`` in forward mode, shape ``f(x).shape + x.shape``.

    One forward pass (one ``ForwardAccumulator``) per element of ``x``: column ``j`` is
    ``J·eⱼ``. Cheap for tall Jacobians, few inputs and many outputs, where
    ``GradientTape.jacobian`` needs one backward pass per *output* element.
    """
    x = ef.convert_to_tensor(x)
    size = 1
    for d in x.shape:
        size *= d
    columns: list[Tensor] = []
    y: Any = None  # f(x), a Tensor once f has run
    for j in range(size):
        direction = ef.reshape(ef.one_hot(j, size, dtype=x.dtype), x.shape)
        with ForwardAccumulator(x, direction) as acc:
            y = ef.convert_to_tensor(f(x))
        columns.append(acc.jvp(y, unconnected_gradients="zero"))
    if y is None:  # x has no elements
        y = ef.convert_to_tensor(f(x))
        return ef.zeros((*y.shape, *x.shape), y.dtype)
    return ef.reshape(ef.stack(columns, axis=-1), (*y.shape, *x.shape))


# --- explicit JVP rules: d(out) from d(inputs), the forward twins of math_grad's rules -----------
@register_jvp("AddV2")
def _add_jvp(op: OpRecord, ta: Tensor, tb: Tensor) -> Tangents:
    return (ta + tb,)  # broadcasting stretches each tangent as it stretched its input


@register_jvp("Sub")
def _sub_jvp(op: OpRecord, ta: Tensor, tb: Tensor) -> Tangents:
    return (ta - tb,)


@register_jvp("Mul")
def _mul_jvp(op: OpRecord, ta: Tensor, tb: Tensor) -> Tangents:
    a, b = op.inputs
    return (ta * b + a * tb,)


@register_jvp("RealDiv")
def _div_jvp(op: OpRecord, ta: Tensor, tb: Tensor) -> Tangents:
    # d(a/b) = da/b - (a/b) db/b
    (out,) = op.outputs
    return ((ta - out * tb) / op.inputs[1],)


@register_jvp("Neg")
def _neg_jvp(op: OpRecord, ta: Tensor) -> Tangents:
    return (-ta,)


@register_jvp("Square")
def _square_jvp(op: OpRecord, ta: Tensor) -> Tangents:
    return (2.0 * op.inputs[0] * ta,)


@register_jvp("Sqrt")
def _sqrt_jvp(op: OpRecord, ta: Tensor) -> Tangents:
    return (ta / (2.0 * op.outputs[0]),)


@register_jvp("Exp")
def _exp_jvp(op: OpRecord, ta: Tensor) -> Tangents:
    return (ta * op.outputs[0],)


@register_jvp("Log")
def _log_jvp(op: OpRecord, ta: Tensor) -> Tangents:
    return (ta / op.inputs[0],)


@register_jvp("Tanh")
def _tanh_jvp(op: OpRecord, ta: Tensor) -> Tangents:
    (out,) = op.outputs
    return (ta * (1.0 - out * out),)


@register_jvp("Sigmoid")
def _sigmoid_jvp(op: OpRecord, ta: Tensor) -> Tangents:
    (out,) = op.outputs
    return (ta * out * (1.0 - out),)


@register_jvp("Relu")
def _relu_jvp(op: OpRecord, ta: Tensor) -> Tangents:
    return (ef.relu_grad(ta, op.outputs[0]),)  # ta where the output is positive, else 0


@register_jvp("MatMul")
def _matmul_jvp(op: OpRecord, ta: Tensor, tb: Tensor) -> Tangents:
    # d(A B) = dA B + A dB, with the same transposes as the product
    a, b = op.inputs
    return (ef.matmul(ta, b, **op.attrs) + ef.matmul(a, tb, **op.attrs),)


@register_jvp("Sum")
def _sum_jvp(op: OpRecord, ta: Tensor) -> Tangents:
    return (ef.reduce_sum(ta, **op.attrs),)  # linear ops: the tangent goes through the op itself


@register_jvp("Mean")
def _mean_jvp(op: OpRecord, ta: Tensor) -> Tangents:
    return (ef.reduce_mean(ta, **op.attrs),)


@register_jvp("Reshape")
def _reshape_jvp(op: OpRecord, ta: Tensor) -> Tangents:
    return (ef.reshape(ta, op.attrs["shape"]),)


@register_jvp("Transpose")
def _transpose_jvp(op: OpRecord, ta: Tensor) -> Tangents:
    return (ef.transpose(ta, op.attrs["perm"]),)


@register_jvp("Identity")
def _identity_jvp(op: OpRecord, ta: Tensor) -> Tangents:
    return (ef.identity(ta),)


__all__ = [
    "JVPS",
    "ForwardAccumulator",
    "forward_jacobian",
    "jvp_by_double_vjp",
    "register_jvp",
]
