"""The rest of tf.function: input_signature and TensorSpec, get_concrete_function, the trace
count, run_functions_eagerly, and the retracing warning."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable, check_gradients
from eagerflow.graph import (
    ConcreteFunction,
    Graph,
    RetracingWarning,
    Session,
    SymbolicTensor,
    TensorSpec,
    function,
    functions_run_eagerly,
    placeholder,
    run_functions_eagerly,
)


@pytest.fixture
def eagerly():  # type: ignore[no-untyped-def]
    """run_functions_eagerly(True) for one test, switched off again even if it fails."""
    run_functions_eagerly(True)
    try:
        yield
    finally:
        run_functions_eagerly(False)


# --- TensorSpec ----------------------------------------------------------------------------------
def test_tensor_spec_holds_a_shape_a_dtype_and_a_name() -> None:
    spec = TensorSpec([None, 3], ef.float64, name="x")
    assert spec.shape == (None, 3) and spec.shape.as_list() == [None, 3]
    assert spec.dtype is ef.float64 and spec.name == "x"
    assert TensorSpec((2,)).dtype is ef.float32  # TensorFlow's default dtype
    assert TensorSpec(None).shape.rank is None  # any shape at all
    assert repr(spec) == "TensorSpec(shape=(None, 3), dtype=float64, name='x')"


def test_tensor_specs_are_equal_and_hash_alike_by_value() -> None:
    assert TensorSpec((None, 3), "float32") == TensorSpec([None, 3])
    assert hash(TensorSpec((None, 3), "float32")) == hash(TensorSpec([None, 3]))
    assert len({TensorSpec((2,)), TensorSpec((2,)), TensorSpec((2,), ef.int32)}) == 2
    assert TensorSpec((2,)) != TensorSpec((2,), name="x")  # the name counts, as in TensorFlow
    assert TensorSpec((2,)) != TensorSpec((3,))
    assert TensorSpec(None) == TensorSpec(None) != TensorSpec(())  # unknown rank is no scalar


def test_tensor_spec_from_tensor_and_is_compatible_with() -> None:
    assert TensorSpec.from_tensor(ef.ones((2, 3), ef.int32)) == TensorSpec((2, 3), ef.int32)
    assert TensorSpec.from_tensor(ef.ones((2,)), name="w").name == "w"
    with Graph().as_default():
        x = placeholder(ef.float32, (None, 4), name="images")
    assert TensorSpec.from_tensor(x) == TensorSpec((None, 4), name="images")

    spec = TensorSpec((None, 3))
    assert spec.is_compatible_with(ef.ones((5, 3)))
    assert spec.is_compatible_with(TensorSpec((7, 3), name="other"))  # names do not matter
    assert spec.is_compatible_with(TensorSpec((None, None)))
    assert not spec.is_compatible_with(ef.ones((5, 4)))
    assert not spec.is_compatible_with(ef.ones((3,)))
    assert not spec.is_compatible_with(ef.ones((5, 3), ef.float64))
    assert spec.is_compatible_with([[1.0, 2.0, 3.0]])  # a value converts first
    assert TensorSpec(None).is_compatible_with(ef.ones((2, 2, 2)))


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: TensorSpec("ab"), TypeError, "list of sizes"),
        (lambda: TensorSpec(3), TypeError, "list of sizes"),
        (lambda: TensorSpec((2.5,)), TypeError, "an int or None, got 2.5"),
        (lambda: TensorSpec((True,)), TypeError, "an int or None, got True"),
        (lambda: TensorSpec((2, -1)), ValueError, "cannot be negative, got -1"),
        (lambda: TensorSpec((2,), "float8"), TypeError, "no dtype for 'float8'"),
        (lambda: TensorSpec((2,), name=3), TypeError, "name must be a string"),
        (lambda: TensorSpec.from_tensor([1.0]), TypeError, "takes a tensor, got list"),
    ],
)
def test_bad_tensor_specs_are_clear_errors(make, error, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=match):
        make()


# --- input_signature ------------------------------------------------------------------------------
def test_an_input_signature_traces_once_for_every_matching_shape(capsys) -> None:  # type: ignore[no-untyped-def]
    @function(input_signature=[TensorSpec((None, 3)), TensorSpec((3,))])
    def affine(x, b):  # type: ignore[no-untyped-def]
        print("tracing with", x.shape)
        return ef.matmul(x, ef.reshape(b, (3, 1))) + 1.0

    b = ef.constant([1.0, 2.0, 3.0])
    for rows in (1, 2, 5):
        out = affine(ef.ones((rows, 3)), b)
        assert out.shape == (rows, 1) and out.numpy().tolist() == [[7.0]] * rows
    assert affine(np.ones((4, 3), np.float32), [1, 2, 3]).shape == (4, 1)  # converted
    assert affine(x=ef.ones((2, 3)), b=b).shape == (2, 1)  # by name too
    assert affine.trace_count == affine.experimental_get_tracing_count() == 1
    assert capsys.readouterr().out == "tracing with (None, 3)\n"  # the graph's shape is open
    assert affine.input_signature == (TensorSpec((None, 3)), TensorSpec((3,)))


def test_python_numbers_become_tensors_of_the_specs_dtype() -> None:
    @function(input_signature=[TensorSpec((), ef.float64)])
    def twice(x):  # type: ignore[no-untyped-def]
        return x * 2.0

    for value in (1, 2.5, np.float64(3.0)):
        result = twice(value)
        assert result.dtype is ef.float64 and float(result) == 2 * float(value)
    assert twice.trace_count == 1  # unlike a Python value without a signature


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((ef.ones((2, 4)), [1.0, 2.0, 3.0]), {}, ValueError,
         r"affine\(\) argument 'x': expected TensorSpec\(shape=\(None, 3\), dtype=float32, "
         r"name=None\), got a float32 tensor of shape \(2, 4\)"),
        ((ef.ones((2, 3)), [1.0, 2.0]), {}, ValueError,
         r"argument 'b': expected TensorSpec\(shape=\(3,\).*got list \[1.0, 2.0\]"),
        ((ef.ones((2, 3), ef.float64), [1.0, 2.0, 3.0]), {}, TypeError,
         r"argument 'x': expected TensorSpec\(shape=\(None, 3\), dtype=float32.*"
         r"got a float64 tensor of shape \(2, 3\)"),
        ((ef.ones((2, 3)), [True, False, True]), {}, TypeError, r"argument 'b'.*got list"),
        ((ef.ones((2, 3)), "abc"), {}, TypeError, r"argument 'b'.*strings are not tensors"),
        ((ef.ones((2, 3)),), {}, TypeError, r"missing the argument 'b'.*TensorSpec\(shape=\(3,\)"),
        ((ef.ones((2, 3)), [1.0, 2.0, 3.0], 4.0), {}, TypeError,
         r"takes 2 argument\(s\) described by its input_signature \(x, b\), got 3"),
        ((ef.ones((2, 3)),), {"c": 1.0}, TypeError, "'c', which its input_signature does not"),
        ((ef.ones((2, 3)),), {"x": 1.0}, TypeError, "multiple values for argument 'x'"),
    ],
)  # fmt: skip
def test_inputs_that_do_not_fit_the_signature_are_clear_errors(args, kwargs, error, match):  # type: ignore[no-untyped-def]
    @function(input_signature=[TensorSpec((None, 3)), TensorSpec((3,))])
    def affine(x, b):  # type: ignore[no-untyped-def]
        return ef.matmul(x, ef.reshape(b, (3, 1)))

    with pytest.raises(error, match=match):
        affine(*args, **kwargs)
    assert affine.trace_count == 0  # checked before anything was traced


def test_shape_and_dtype_errors_are_eagerflows_own_kinds() -> None:
    @function(input_signature=[TensorSpec((2,))])
    def f(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(ef.ShapeError):
        f(ef.ones((3,)))
    with pytest.raises(ef.DTypeError):
        f(ef.ones((2,), ef.int32))


def test_nested_input_signatures_check_each_part() -> None:
    @function(input_signature=[{"scale": TensorSpec(()), "points": [TensorSpec((None, 2))]}])
    def scaled(batch):  # type: ignore[no-untyped-def]
        return batch["points"][0] * batch["scale"]

    out = scaled({"points": [[[1.0, 2.0]]], "scale": 3.0})
    assert out.numpy().tolist() == [[3.0, 6.0]]
    with pytest.raises(ValueError, match=r"argument 'batch\['points'\]\[0\]'.*shape \(1, 3\)"):
        scaled({"points": [[[1.0, 2.0, 3.0]]], "scale": 3.0})
    with pytest.raises(ValueError, match=r"argument 'batch'.*not nested the same way"):
        scaled({"scale": 3.0})
    with pytest.raises(ValueError, match=r"argument 'batch\['points'\]'.*not nested the same"):
        scaled({"points": [1.0, 2.0], "scale": 3.0})


@pytest.mark.parametrize(
    ("signature", "match"),
    [
        (TensorSpec(()), "must be a list or tuple with one TensorSpec per argument"),
        ([(2,)], r"its entry 0 is \(2,\), which holds 2"),
        ([TensorSpec(()), ef.float32], "its entry 1 is float32"),
    ],
)
def test_a_bad_input_signature_is_refused_at_once(signature, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError, match=match):
        function(lambda x: x, input_signature=signature)


def test_more_specs_than_parameters_is_an_error_naming_them() -> None:
    @function(input_signature=[TensorSpec(()), TensorSpec(())])
    def one(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(TypeError, match=r"has 2 specs, but the function takes only 1 .*\(x\)"):
        one(1.0, 2.0)

    @function(input_signature=[TensorSpec(()), TensorSpec(())])
    def star(*xs):  # type: ignore[no-untyped-def]
        return xs[0] + xs[1]

    assert float(star(1.0, 2.0)) == 3.0
    with pytest.raises(ValueError, match=r"argument 'xs\[1\]'"):
        star(1.0, [2.0])


def test_a_tape_through_a_function_with_an_input_signature_gives_gradients() -> None:
    @function(input_signature=[TensorSpec((None, 3)), TensorSpec((3, 1))])
    def loss(x, w):  # type: ignore[no-untyped-def]
        return ef.reduce_mean(ef.tanh(ef.matmul(x, w)) ** 2)

    def eager_loss(x, w):  # type: ignore[no-untyped-def]
        return ef.reduce_mean(ef.tanh(ef.matmul(x, w)) ** 2)

    rng = np.random.default_rng(1)
    w = ef.constant(rng.standard_normal((3, 1)).astype(np.float32))
    for rows in (2, 7):  # one trace serves both batch sizes, and so does its gradient
        x = ef.constant(rng.standard_normal((rows, 3)).astype(np.float32))
        with GradientTape(persistent=True) as tape:
            tape.watch([x, w])
            traced, eager = loss(x, w), eager_loss(x, w)
        for wrt in (x, w):
            np.testing.assert_allclose(
                tape.gradient(traced, wrt).numpy(), tape.gradient(eager, wrt).numpy(), rtol=1e-5
            )
    assert loss.trace_count == 1

    # against finite differences, to second order (check_gradients works in float64)
    signature = [TensorSpec((None, 3), ef.float64), TensorSpec((3, 1), ef.float64)]
    loss64 = function(eager_loss, input_signature=signature)
    check_gradients(loss64, [rng.standard_normal((4, 3)), rng.standard_normal((3, 1))], order=2)
    assert loss64.trace_count == 1


def test_a_variable_under_a_tape_through_a_signature_function() -> None:
    w = Variable([[2.0], [1.0]])

    @function(input_signature=[TensorSpec((None, 2))])
    def predict(x):  # type: ignore[no-untyped-def]
        return ef.reduce_sum(ef.matmul(x, w))

    with GradientTape() as tape:
        y = predict([[1.0, 3.0], [2.0, 5.0]])
    assert float(y) == 14.0  # (1*2 + 3*1) + (2*2 + 5*1)
    assert tape.gradient(y, w).numpy().tolist() == [[3.0], [8.0]]


def test_a_signature_function_called_while_building_a_graph() -> None:
    @function(input_signature=[TensorSpec((None,))])
    def total(x):  # type: ignore[no-untyped-def]
        return ef.reduce_sum(x * x)

    g = Graph()
    with g.as_default():
        p = placeholder(ef.float32, (None,))
        y = total(p)
        with pytest.raises(ValueError, match=r"argument 'x'.*shape \(None, 2\)"):
            total(placeholder(ef.float32, (None, 2)))
    with Session(g) as session:
        assert session.run(y, {p: [1.0, 2.0]}) == 5.0
        assert session.run(y, {p: [3.0]}) == 9.0
    assert total.trace_count == 1


def test_a_method_with_an_input_signature_describes_the_arguments_after_self() -> None:
    class Scaler:
        def __init__(self, factor: float) -> None:
            self.factor = Variable(factor)

        @function(input_signature=[TensorSpec((None,))])
        def apply(self, x):  # type: ignore[no-untyped-def]
            return self.factor * x

    small = Scaler(2.0)
    assert small.apply([1.0, 2.0]).numpy().tolist() == [2.0, 4.0]
    assert small.apply([1.0, 2.0, 3.0]).numpy().tolist() == [2.0, 4.0, 6.0]
    assert Scaler.apply(small, [5.0]).numpy().tolist() == [10.0]
    assert small.apply.trace_count == 1
    with pytest.raises(ValueError, match=r"Scaler.apply\(\) argument 'x'"):
        small.apply([[1.0]])


# --- get_concrete_function ------------------------------------------------------------------------
def test_get_concrete_function_of_a_signature_is_its_one_trace() -> None:
    @function(input_signature=[TensorSpec((None, 2), name="points")])
    def norms(points):  # type: ignore[no-untyped-def]
        return ef.reduce_sum(points * points, axis=1)

    concrete = norms.get_concrete_function()
    assert isinstance(concrete, ConcreteFunction)
    assert norms.get_concrete_function(TensorSpec((None, 2))) is concrete
    assert norms.get_concrete_function(ef.ones((5, 2))) is concrete
    assert norms.trace_count == 1
    types = [o.type for o in concrete.graph.get_operations()]
    assert types[0] == "Placeholder" and "Mul" in types and "Sum" in types
    placeholder_op = concrete.graph.get_operation_by_name("points")  # the spec's name
    assert placeholder_op.outputs[0].shape == (None, 2)
    assert "points" in concrete.graph.to_mermaid()
    assert concrete(ef.constant([[3.0, 4.0], [1.0, 0.0]])).numpy().tolist() == [25.0, 1.0]
    with pytest.raises(ValueError, match=r"argument 'points'.*got TensorSpec\(shape=\(3,\)"):
        norms.get_concrete_function(TensorSpec((3,)))


def test_get_concrete_function_from_specs_serves_later_calls() -> None:
    @function
    def square(x):  # type: ignore[no-untyped-def]
        return x * x

    concrete = square.get_concrete_function(TensorSpec((None,)))
    assert square.trace_count == 1
    assert square(ef.constant([1.0, 2.0])).numpy().tolist() == [1.0, 4.0]
    assert square(ef.constant([3.0])).numpy().tolist() == [9.0]
    assert square.trace_count == 1  # the open shape's trace runs both calls
    assert square.get_concrete_function(ef.constant([5.0, 6.0, 7.0])) is concrete
    square(ef.constant([[1.0]]))  # another rank: not described by (None,)
    square(ef.constant([1.0], ef.float64))  # another dtype
    assert square.trace_count == 3


def test_get_concrete_function_from_example_values() -> None:
    @function
    def power(x, n):  # type: ignore[no-untyped-def]
        return x**n

    cube = power.get_concrete_function(ef.constant(2.0), 3)  # n is part of the graph
    assert float(cube(ef.constant(2.0))) == 8.0 and float(cube(3.0)) == 27.0
    assert "Pow" in {o.type for o in cube.graph.get_operations()}
    assert power.get_concrete_function(ef.constant(5.0), 3) is cube
    assert power.get_concrete_function(ef.constant(5.0), 2) is not cube


def test_a_concrete_function_checks_what_it_is_called_with() -> None:
    @function
    def double(x):  # type: ignore[no-untyped-def]
        return 2.0 * x

    concrete = double.get_concrete_function(TensorSpec((None, 2)))
    assert concrete([[1, 2]]).numpy().tolist() == [[2.0, 4.0]]  # a list takes float32
    with pytest.raises(ValueError, match=r"input arg0 was traced for a float32 tensor of "
                                         r"shape \(None, 2\), got shape \(1, 3\)"):  # fmt: skip
        concrete([[1.0, 2.0, 3.0]])
    with pytest.raises(TypeError, match="input arg0 was traced for a float32 tensor"):
        concrete(ef.ones((1, 2), ef.float64))
    with pytest.raises(TypeError, match=r"takes 1 tensor\(s\) \(arg0\), got 2"):
        concrete(ef.ones((1, 2)), ef.ones((1, 2)))


def test_calling_a_function_with_a_spec_is_an_error() -> None:
    @function
    def identity(x):  # type: ignore[no-untyped-def]
        return x

    identity.get_concrete_function(TensorSpec((2,)))
    with pytest.raises(TypeError, match=r"a TensorSpec describes an input.*call the function with"):
        identity(TensorSpec((2,)))


# --- run_functions_eagerly ------------------------------------------------------------------------
def test_run_functions_eagerly_runs_the_python_at_every_call(eagerly, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    seen = []  # what a debugger stopped at breakpoint() would show: the frame's own values

    def debugger(*args, **kwargs):  # type: ignore[no-untyped-def]
        frame = sys._getframe(1)  # the function's frame (while tracing, AutoGraph's call first)
        while "total" not in frame.f_locals:
            frame = frame.f_back
        seen.append(frame.f_locals["total"])

    monkeypatch.setattr(sys, "breakpointhook", debugger)

    @function
    def clipped_sum(x):  # type: ignore[no-untyped-def]
        total = ef.reduce_sum(x)
        breakpoint()
        if total > 10.0:  # a Python if on an eager tensor: no AutoGraph, no cond
            total = ef.constant(10.0)
        return total

    assert functions_run_eagerly()
    results = [float(clipped_sum(ef.constant(v))) for v in ([1.0, 2.0], [20.0], [3.0])]
    assert results == [3.0, 10.0, 3.0]
    assert [float(t.numpy()) for t in seen] == [3.0, 20.0, 3.0]  # values, at every call
    assert clipped_sum.trace_count == 0

    run_functions_eagerly(False)  # tracing again: the Python runs once, with symbolic tensors
    seen.clear()
    assert [float(clipped_sum(ef.constant(v))) for v in ([1.0, 2.0], [20.0], [3.0])] == [
        3.0, 10.0, 3.0,
    ]  # fmt: skip
    assert len(seen) == 2  # the traces of shapes (2,) and (1,), then none
    assert all(isinstance(t, SymbolicTensor) for t in seen)  # no values to look at
    assert clipped_sum.trace_count == 2 and not functions_run_eagerly()


def test_run_functions_eagerly_gives_the_traced_values(eagerly) -> None:  # type: ignore[no-untyped-def]
    w = Variable([1.0, -1.0])

    @function
    def step(x, lr=0.1):  # type: ignore[no-untyped-def]
        with GradientTape() as tape:
            loss = ef.reduce_sum((w * x) ** 2)
        w.assign_sub(lr * tape.gradient(loss, w))
        return loss

    x = ef.constant([2.0, 3.0])
    eager_losses = [float(step(x)) for _ in range(3)]
    eager_w = w.numpy().copy()
    run_functions_eagerly(False)
    w.assign([1.0, -1.0])
    traced_losses = [float(step(x)) for _ in range(3)]
    np.testing.assert_allclose(traced_losses, eager_losses, rtol=1e-6)
    np.testing.assert_allclose(w.numpy(), eager_w, rtol=1e-6)
    assert step.trace_count == 1


def test_run_functions_eagerly_still_checks_an_input_signature(eagerly) -> None:  # type: ignore[no-untyped-def]
    received = []

    @function(input_signature=[TensorSpec((None,))])
    def f(x):  # type: ignore[no-untyped-def]
        received.append(x)
        return x + 1.0

    assert f([1, 2]).numpy().tolist() == [2.0, 3.0]
    assert isinstance(received[0], ef.Tensor) and received[0].dtype is ef.float32
    with pytest.raises(ValueError, match="argument 'x'"):
        f([[1.0]])
    assert f.trace_count == 0


def test_run_functions_eagerly_takes_a_bool() -> None:
    with pytest.raises(TypeError, match="True or False, got 1"):
        run_functions_eagerly(1)  # type: ignore[arg-type]
    assert not functions_run_eagerly()


# --- the retracing warning ------------------------------------------------------------------------
def _calls_warned(f, calls):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for args in calls:
            f(*args)
    return [w for w in caught if issubclass(w.category, RetracingWarning)]


def test_a_python_number_that_changes_warns_once_after_five_traces() -> None:
    @function
    def shift(x, offset):  # type: ignore[no-untyped-def]
        return x + offset

    x = ef.constant([1.0, 2.0])
    assert not _calls_warned(shift, [(x, float(i)) for i in range(5)])  # 5: not yet
    (warning,) = _calls_warned(shift, [(x, float(i)) for i in range(5, 12)])  # once only
    assert shift.trace_count == 12
    message = str(warning.message)
    assert issubclass(RetracingWarning, UserWarning)
    assert message.startswith("shift has been traced 6 times (more than 5)")
    assert "The argument 'offset' is a Python float with a new value at each trace" in message
    assert "(0.0, 1.0, 2.0, 3.0, ...)" in message and "pass it as a tensor" in message
    assert "'x'" not in message  # x kept its signature
    assert warning.filename == __file__  # it points at the call in this file


def test_a_changing_shape_warns_with_the_spec_that_fits_all() -> None:
    @function
    def total(x, axis):  # type: ignore[no-untyped-def]
        return ef.reduce_sum(x, axis=axis)

    (warning,) = _calls_warned(total, [(ef.ones((n, 2)), 0) for n in range(1, 8)])
    message = str(warning.message)
    assert "The argument 'x' is a tensor whose shape changes ((1, 2), (2, 2), (3, 2), (4, 2), " \
           "...)" in message  # fmt: skip
    assert "TensorSpec((None, 2), float32)" in message and "'axis'" not in message


def test_a_changing_dtype_and_a_keyword_argument_are_named() -> None:
    @function
    def scale(x, factor=1):  # type: ignore[no-untyped-def]
        return x * ef.cast(factor, x.dtype)

    calls = [(ef.ones((2,), dtype),) for dtype in (ef.float16, ef.float32, ef.float64)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for args in calls:
            scale(*args)
        for factor in (2, 3, 4):
            scale(ef.ones((2,)), factor=factor)
    (warning,) = [w for w in caught if issubclass(w.category, RetracingWarning)]
    message = str(warning.message)
    assert "'x' is a tensor whose dtype changes (float16, float32, float64)" in message
    assert "'factor' is a Python int with a new value at each trace (1, 2, 3, 4)" in message


def test_new_variables_and_changing_structures_are_named_too() -> None:
    @function
    def read(v, parts):  # type: ignore[no-untyped-def]
        return v * len(parts)

    calls = [(Variable(1.0), [1.0] * n) for n in range(1, 7)]
    (warning,) = _calls_warned(read, calls)
    message = str(warning.message)
    assert "The argument 'v' is a different Variable at each trace" in message
    assert "The argument 'parts' changed its signature: [1.0], [1.0, 1.0], [1.0, 1.0, 1.0], " \
           "[1.0, 1.0, 1.0, 1.0], ..." in message  # fmt: skip


def test_a_function_with_an_input_signature_never_warns() -> None:
    @function(input_signature=[TensorSpec((None,))])
    def total(x):  # type: ignore[no-untyped-def]
        return ef.reduce_sum(x)

    assert not _calls_warned(total, [(ef.ones((n,)),) for n in range(1, 10)])
    assert total.trace_count == 1
