"""Conformance cases for graph loops: ``TensorArray`` as a loop variable (``while_loop`` and
AutoGraph loops over tensors, with gradients through them), and AutoGraph's lists, lambdas,
item assignment, chained comparisons and shape invariants. Imported by ``cases.py``, whose
``CASES`` these join through its ``add``.

Each function is converted by AutoGraph on both sides, so it is written at module level
(AutoGraph reads a function's source).
"""

from __future__ import annotations

from typing import Any

from cases import case

X64 = [1.0, 2.0, 3.0]

# The loop cases call ``set_loop_options`` by a module-level name: TensorFlow's converter finds
# the call by resolving the name when it converts (``ns.set_loop_options``, an attribute of
# an argument, it cannot resolve). Set by each case from its namespace.
set_loop_options: Any = None


def _gradient(ns: Any, f: Any, x: Any) -> Any:
    """``f(x)`` and the gradient of its sum, for a float64 ``x``."""
    x = ns.constant(x, ns.float64)
    with ns.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
        total = ns.reduce_sum(y)
    return [y, tape.gradient(total, x)]


# --- TensorArray as a loop variable ---------------------------------------------------------
@case("loops/tensor_array/for_range_dynamic_size")
def _(ns: Any) -> Any:
    def f(n: Any) -> Any:
        ta = ns.TensorArray(ns.float32, size=0, dynamic_size=True)
        for i in ns.range(n):
            ta = ta.write(i, ns.cast(i, ns.float32) * 2.0)
        return [ta.stack(), ta.size()]

    return ns.function(f)(ns.constant(4))


@case("loops/tensor_array/for_range_no_iteration")
def _(ns: Any) -> Any:
    def f(n: Any) -> Any:
        ta = ns.TensorArray(ns.float32, size=0, dynamic_size=True, element_shape=[2])
        for i in ns.range(n):
            ta = ta.write(i, ns.ones([2]))
        return ta.stack()

    return ns.function(f)(ns.constant(0))


@case("loops/tensor_array/size_as_index")
def _(ns: Any) -> Any:
    def f(n: Any) -> Any:
        ta = ns.TensorArray(ns.int32, size=0, dynamic_size=True)
        for i in ns.range(n):
            ta = ta.write(ta.size(), i * i)
        return [ta.stack(), ta.size()]

    return ns.function(f)(ns.constant(4))


@case("loops/tensor_array/while_fixed_size/gradient")
def _(ns: Any) -> Any:
    def f(x: Any) -> Any:
        ta = ns.TensorArray(ns.float64, size=3)
        i = ns.constant(0)
        while i < 3:
            ta = ta.write(i, x * ns.cast(i + 1, ns.float64))
            i += 1
        return ta.stack() ** 2

    return _gradient(ns, ns.function(f), [1.0, 2.0])


@case("loops/tensor_array/read_in_loop/gradient")
def _(ns: Any) -> Any:
    def f(x: Any) -> Any:
        ta = ns.TensorArray(ns.float64, size=3).unstack(x)
        total = ns.constant(0.0, ns.float64)
        for i in ns.range(ta.size()):
            total += ta.read(i) ** 2
        return total

    return _gradient(ns, ns.function(f), X64)


@case("loops/tensor_array/read_and_write/gradient")
def _(ns: Any) -> Any:
    def f(x: Any) -> Any:  # running products: slot i is slot i-1 times x[i]
        ta = ns.TensorArray(ns.float64, size=3, element_shape=[])
        ta = ta.write(0, x[0])
        for i in ns.range(1, 3):
            ta = ta.write(i, ta.read(i - 1) * x[i])
        return ta.stack()

    return _gradient(ns, ns.function(f), X64)


@case("loops/tensor_array/dynamic_size/gradient")
def _(ns: Any) -> Any:
    def f(x: Any) -> Any:
        ta = ns.TensorArray(ns.float64, size=0, dynamic_size=True)
        for i in ns.range(ns.constant(3)):
            ta = ta.write(i, x * ns.cast(i + 1, ns.float64))
        return ta.stack() ** 2

    return _gradient(ns, ns.function(f), [1.0, 2.0])


@case("loops/tensor_array/dynamic_size/read_and_write/gradient")
def _(ns: Any) -> Any:
    def f(x: Any) -> Any:
        ta = ns.TensorArray(ns.float64, size=1, dynamic_size=True, element_shape=[])
        ta = ta.write(0, x[0])
        for i in ns.range(1, 3):
            ta = ta.write(i, ta.read(i - 1) * x[i])
        return ta.stack()

    return _gradient(ns, ns.function(f), X64)


@case("loops/tensor_array/write_in_if/gradient")
def _(ns: Any) -> Any:
    def f(x: Any) -> Any:
        ta = ns.TensorArray(ns.float64, size=0, dynamic_size=True, element_shape=[])
        for i in ns.range(3):
            if x[i] > 0:  # noqa: SIM108  (an if statement is what is tested)
                ta = ta.write(i, x[i] ** 2)
            else:
                ta = ta.write(i, -x[i] * 10.0)
        return ta.stack()

    return _gradient(ns, ns.function(f), [1.0, -2.0, 3.0])


@case("loops/tensor_array/write_in_if_without_else")
def _(ns: Any) -> Any:
    def f(x: Any) -> Any:
        ta = ns.TensorArray(ns.float32, size=3, element_shape=[])
        for i in ns.range(3):
            if x[i] > 0:
                ta = ta.write(i, x[i])
        return ta.stack()

    return ns.function(f)(ns.constant([1.0, -2.0, 3.0]))


@case("loops/tensor_array/write_out_of_range")
def _(ns: Any) -> Any:
    def f(n: Any) -> Any:
        ta = ns.TensorArray(ns.float32, size=2)
        for i in ns.range(n):
            ta = ta.write(i, 1.0)
        return ta.stack()

    return ns.function(f)(ns.constant(3))


def _while_loop_writes(ns: Any, x: Any) -> Any:
    ta = ns.TensorArray(ns.float64, size=3)

    def body(i: Any, ta: Any) -> Any:
        return i + 1, ta.write(i, x * ns.cast(i, ns.float64))

    _, ta = ns.while_loop(lambda i, ta: i < 3, body, [0, ta])
    return ta.stack()


@case("loops/tensor_array/while_loop_variable/eager")
def _(ns: Any) -> Any:
    return _while_loop_writes(ns, ns.constant([1.0, 2.0], ns.float64))


@case("loops/tensor_array/while_loop_variable/function/gradient")
def _(ns: Any) -> Any:
    return _gradient(ns, ns.function(lambda x: _while_loop_writes(ns, x) ** 2), [1.0, 2.0])


@case("loops/tensor_array/while_loop_variable/graph")
def _(ns: Any) -> Any:
    graph = ns.Graph()
    with graph.as_default():
        x = ns.constant([1.0, 2.0], ns.float64)
        y = _while_loop_writes(ns, x)
        (dx,) = ns.gradients(ns.reduce_sum(y**2), [x])
    with ns.Session(graph=graph) as session:
        values = session.run([y, dx])
    return [ns.constant(v) for v in values]


def _cond_writes(ns: Any, x: Any) -> Any:
    ta = ns.TensorArray(ns.float64, size=2, element_shape=[])
    ta = ns.cond(x > 0, lambda: ta.write(0, x * x), lambda: ta.write(1, -x))
    return ta.stack()


@case("loops/tensor_array/cond_result/function/gradient")
def _(ns: Any) -> Any:
    f = ns.function(lambda x: _cond_writes(ns, x[0]))
    return [*_gradient(ns, f, [3.0]), *_gradient(ns, f, [-2.0])]


# --- AutoGraph: lists, lambdas, item assignment --------------------------------------------
@case("autograph/list_append/tensor_loop")
def _(ns: Any) -> Any:
    def f(n: Any) -> Any:
        out = []
        for i in ns.range(n):
            out.append(i)
        return out

    return ns.function(f)(ns.constant(3))


@case("autograph/list_append/python_loop")
def _(ns: Any) -> Any:
    def f(x: Any) -> Any:
        out = []
        for i in range(3):
            out.append(x * i)
        return ns.stack(out)

    return ns.function(f)(ns.constant(2.0))


@case("autograph/lambda")
def _(ns: Any) -> Any:
    def f(x: Any) -> Any:
        double = lambda v: v * 2.0  # noqa: E731  (the case is a lambda)
        return double(x) + 1.0

    return ns.function(f)(ns.constant(3.0))


@case("autograph/lambda_with_conditional_expression")
def _(ns: Any) -> Any:
    def f(x: Any) -> Any:
        magnitude = lambda v: v * 2.0 if v > 0 else -v  # noqa: E731
        return [magnitude(x), magnitude(-x)]

    return ns.function(f)(ns.constant(-3.0))


@case("autograph/item_assignment")
def _(ns: Any) -> Any:
    def f(x: Any) -> Any:
        x[0] = 1.0
        return x

    return ns.function(f)(ns.constant([0.0, 2.0]))


@case("autograph/item_assignment/eager")
def _(ns: Any) -> Any:
    x = ns.constant([0.0, 2.0])
    x[0] = 1.0
    return x


# --- AutoGraph: chained comparisons --------------------------------------------------------
def _between(x: Any) -> Any:
    return 0.0 < x < 1.0


def _between_if(x: Any) -> Any:
    if 0.0 < x <= 1.0:
        return x
    return -x


@case("autograph/chained_comparison")
def _(ns: Any) -> Any:
    f = ns.function(_between)
    return [f(ns.constant(0.5)), f(ns.constant(1.5)), f(ns.constant(-1.0))]


@case("autograph/chained_comparison/in_if")
def _(ns: Any) -> Any:
    f = ns.function(_between_if)
    return [f(ns.constant(0.5)), f(ns.constant(1.0)), f(ns.constant(1.5))]


@case("autograph/chained_comparison/vector")
def _(ns: Any) -> Any:
    return ns.function(_between)(ns.constant([0.5, 2.0]))


# --- shape invariants --------------------------------------------------------------------------
@case("loops/shape_invariants/for_without")
def _(ns: Any) -> Any:
    def f(n: Any) -> Any:
        v = ns.zeros([0])
        for i in ns.range(n):
            v = ns.concat([v, [ns.cast(i, ns.float32)]], 0)
        return v

    return ns.function(f)(ns.constant(3))


@case("loops/shape_invariants/for_set_loop_options")
def _(ns: Any) -> Any:
    global set_loop_options
    set_loop_options = ns.set_loop_options

    def f(n: Any) -> Any:
        v = ns.zeros([0])
        for i in ns.range(n):
            set_loop_options(shape_invariants=[(v, ns.TensorShape([None]))])
            v = ns.concat([v, [ns.cast(i, ns.float32)]], 0)
        return v

    return ns.function(f)(ns.constant(3))


@case("loops/shape_invariants/while_set_loop_options")
def _(ns: Any) -> Any:
    global set_loop_options
    set_loop_options = ns.set_loop_options

    def f(x: Any) -> Any:
        i = ns.constant(0)
        while i < 3:
            set_loop_options(shape_invariants=[(x, ns.TensorShape([None]))])
            x = ns.concat([x, x[:1]], 0)
            i += 1
        return x

    return ns.function(f)(ns.constant([1.0, 2.0]))


def _growing(ns: Any, invariants: Any) -> Any:
    def f() -> Any:
        return ns.while_loop(
            lambda i, v: i < 3,
            lambda i, v: (i + 1, ns.concat([v, [1.0]], 0)),
            [0, ns.zeros([0])],
            shape_invariants=invariants,
        )

    return ns.function(f)()


@case("loops/shape_invariants/while_loop_without")
def _(ns: Any) -> Any:
    return _growing(ns, None)


@case("loops/shape_invariants/while_loop_with")
def _(ns: Any) -> Any:
    return _growing(ns, [ns.TensorShape([]), ns.TensorShape([None])])
