"""Chapter 6 exercises: static graphs and Sessions."""

from __future__ import annotations

import numpy as np
import numpy.polynomial.polynomial as P
import pytest
from ready_made import refuse, refusing

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import (
    Graph,
    Operation,
    Session,
    SymbolicTensor,
    global_variables_initializer,
    gradients,
    group,
    placeholder,
)
from eagerflow.graph.core import session as session_module
from eagerflow.graph.core.session import Plan
from eagerflow.graph.core.state import SessionStorage

# A Session's own machinery: its plan of what to run (pruning, order, kernel calls).
SESSIONS_PLAN = [(Plan, "__init__"), (Plan, "run"), (session_module, "_needed_operations")]

pytestmark = pytest.mark.ch06


# --- polynomial_graph -----------------------------------------------------------------------------
@pytest.mark.parametrize("coefficients", [[1.0, 2.0], [1.0, -3.0, 0.5], [0.0, 0.0, 0.0, 2.0]])
def test_polynomial_graph_builds_then_runs(chapter, coefficients: list[float]) -> None:
    graph, x, y = chapter.polynomial_graph(coefficients)
    assert isinstance(graph, Graph), f"expected a Graph first, got {graph!r}"
    assert isinstance(x, SymbolicTensor) and x.op.type == "Placeholder", (
        f"expected x to be a placeholder of the graph, got {x!r}"
    )
    assert x.dtype is ef.float32 and x.shape == (None,), (
        f"expected x: float32 of shape (None,), got {x!r}"
    )
    assert isinstance(y, SymbolicTensor) and y.graph is graph, (
        f"expected y to be a symbolic tensor of the returned graph (build, do not run), got {y!r}"
    )
    values = np.array([-2.0, -0.5, 0.0, 1.0, 3.0], np.float32)
    with Session(graph) as session:
        got = session.run(y, {x: values})
    expected = np.polynomial.polynomial.polyval(values, coefficients)
    np.testing.assert_allclose(
        got, expected, rtol=1e-5, err_msg=f"polynomial {coefficients} at {values}"
    )


def depends_on(y: SymbolicTensor, x: SymbolicTensor) -> bool:
    """Whether computing ``y`` reads ``x``: a walk back through the inputs."""
    stack, seen = [y.op], set()
    while stack:
        operation = stack.pop()
        if operation is x.op:
            return True
        if operation not in seen:
            seen.add(operation)
            stack.extend(t.op for t in operation.inputs)
    return False


def test_polynomial_graph_on_hidden_coefficients_and_feeds(chapter) -> None:
    rng = np.random.default_rng(505)
    for degree in (1, 2, 4):
        coefficients = np.round(rng.uniform(-2, 2, degree + 1), 2).tolist()
        graph, x, y = chapter.polynomial_graph(coefficients)
        assert isinstance(y, SymbolicTensor) and depends_on(y, x), (
            f"polynomial_graph({coefficients}): y should be computed from the placeholder x "
            "when the Session runs, not before"
        )
        with Session(graph) as session:
            for n in (1, 3, 8):  # feeds of other lengths than the visible test's
                values = rng.uniform(-2, 2, n).astype(np.float32)
                got = np.asarray(session.run(y, {x: values}))
                assert got.shape == (n,), f"a feed of {n} values gave the shape {got.shape}"
                np.testing.assert_allclose(
                    got, P.polyval(values.astype(np.float64), coefficients), rtol=1e-4,
                    atol=1e-5, err_msg=f"the polynomial {coefficients} at {values}",
                )  # fmt: skip


# --- accumulator_graph ----------------------------------------------------------------------------
def test_accumulator_keeps_a_running_total_per_session(chapter) -> None:
    graph, value, update, init = chapter.accumulator_graph()
    assert isinstance(init, Operation), f"expected init to be an operation, got {init!r}"
    assert value.shape == () and value.dtype is ef.float32, (
        f"expected value: a float32 scalar placeholder, got {value!r}"
    )
    variables = [o for o in graph.get_operations() if o.type == "VariableV2"]
    assert len(variables) == 1, f"expected one graph variable, found {variables}"

    first = Session(graph)
    first.run(init)
    got = [float(first.run(update, {value: v})) for v in (1.0, 2.5, -0.5, 4.0)]
    assert got == [1.0, 3.5, 3.0, 7.0], f"expected totals [1.0, 3.5, 3.0, 7.0], got {got}"

    second = Session(graph)  # a new Session: its own value of the variable
    second.run(init)
    assert float(second.run(update, {value: 10.0})) == 10.0, (
        "a second Session should start again from 0"
    )
    assert float(first.run(update, {value: 0.0})) == 7.0, (
        "running the second Session must not change the first one's total"
    )


def test_accumulator_on_hidden_values(chapter) -> None:
    rng = np.random.default_rng(515)
    graph, value, update, init = chapter.accumulator_graph()
    values = np.round(rng.uniform(-5, 5, 6), 2)
    with Session(graph) as session:
        session.run(init)
        got = [float(session.run(update, {value: v})) for v in values]
    np.testing.assert_allclose(got, np.cumsum(values), rtol=1e-5, atol=1e-5,
                               err_msg=f"the running totals of {values.tolist()}")  # fmt: skip


# --- execution_order ------------------------------------------------------------------------------
def _check_order(order: list[Operation], fed: set[SymbolicTensor]) -> None:
    names = [o.name for o in order]
    assert len(set(names)) == len(names), f"each operation once, got {names}"
    position = {o: i for i, o in enumerate(order)}
    for o in order:
        for t in o.inputs:
            if t not in fed:
                assert position.get(t.op, len(order)) < position[o], (
                    f"{o.name} needs {t.op.name} to run first; got the order {names}"
                )
        for c in o.control_inputs:
            assert position.get(c, len(order)) < position[o], (
                f"{o.name} has the control input {c.name}, which must run first; got {names}"
            )


def test_execution_order_keeps_only_what_the_fetch_needs(chapter) -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (3,), name="x")
        h = ef.multiply(x, 2.0, name="h")
        ef.exp(h, name="unused")
        out = ef.add(h, ef.square(x, name="sq"), name="out")
    order = chapter.execution_order([out])
    _check_order(order, set())
    got = sorted(o.name for o in order)
    assert got == ["Const", "h", "out", "sq", "x"], f"expected the 5 needed ops, got {got}"


def test_execution_order_stops_at_fed_tensors(chapter) -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (3,), name="x")
        h = ef.multiply(x, 2.0, name="h")
        out = ef.add(h, 1.0, name="out")
    order = chapter.execution_order([out], [h])
    _check_order(order, {h})
    got = sorted(o.name for o in order)
    assert got == ["Const_1", "out"], f"with h fed, expected only ['Const_1', 'out'], got {got}"


def test_execution_order_follows_control_inputs_and_fetched_operations(chapter) -> None:
    g = Graph()
    with g.as_default():
        a = ef.constant(1.0, name="a")
        with g.control_dependencies([a]):
            b = ef.constant(2.0, name="b")
        ef.constant(3.0, name="c")
    order = chapter.execution_order([b.op])
    _check_order(order, set())
    got = sorted(o.name for o in order)
    assert got == ["a", "b"], f"b's control input a must run too (and not c): got {got}"


def random_graph(seed: int) -> tuple[Graph, list[SymbolicTensor], list[SymbolicTensor]]:
    """A graph the reader does not see: two placeholders of shape (4,), a constant, and a
    dozen random ops on them (one that splits its input in two, some with control inputs)."""
    rng = np.random.default_rng(seed)
    unary = [ef.tanh, ef.square, ef.abs, lambda t: t * 0.5]
    binary = [ef.add, ef.multiply, ef.subtract, ef.maximum]
    g = Graph()
    with g.as_default():
        xs = [placeholder(ef.float32, (4,), name=f"x{i}") for i in range(2)]
        tensors = [*xs, ef.constant(rng.uniform(-1, 1, 4).astype(np.float32), name="c")]
        for _ in range(12):
            recent = tensors[int(rng.integers(max(0, len(tensors) - 3), len(tensors)))]
            pick = [recent, tensors[int(rng.integers(0, len(tensors)))]]  # deep, and branching
            controls = (
                [tensors[int(rng.integers(2, len(tensors)))].op] if rng.random() < 0.3 else []
            )
            with g.control_dependencies(controls):
                kind = rng.random()
                if kind < 0.15:
                    left, right = ef.split(pick[0], 2)  # a multi-output op
                    t = ef.concat([right, left], axis=0)
                elif kind < 0.5:
                    t = unary[int(rng.integers(len(unary)))](pick[0])
                else:
                    t = binary[int(rng.integers(len(binary)))](pick[0], pick[1])
            tensors.append(t)
    return g, xs, tensors


def ancestors(t: SymbolicTensor) -> list[SymbolicTensor]:
    """The computed tensors ``t`` is made from (not placeholders or constants), in graph order."""
    needed = needed_operations([t], set()) - {t.op}
    ops = [
        o
        for o in t.graph.get_operations()
        if o in needed and o.type not in ("Placeholder", "Const")
    ]
    return [u for o in ops for u in o.outputs if u.shape == (4,)]


def needed_operations(fetches: list, fed: set) -> set[Operation]:
    stack = [f.op if isinstance(f, SymbolicTensor) else f for f in fetches]
    seen: set[Operation] = set()
    while stack:
        operation = stack.pop()
        if operation not in seen:
            seen.add(operation)
            stack += [t.op for t in operation.inputs if t not in fed]
            stack += list(operation.control_inputs)
    return seen


@pytest.mark.parametrize("seed", range(6))
def test_execution_order_on_hidden_graphs(chapter, seed: int) -> None:
    _, _, tensors = random_graph(seed)
    rng = np.random.default_rng(seed + 50)
    fetches = [tensors[-1], tensors[int(rng.integers(len(tensors) // 2, len(tensors)))]]
    on_the_way = ancestors(tensors[-1])
    fed = {on_the_way[int(rng.integers(len(on_the_way)))]}  # the walk stops there
    with refusing("execution_order", "the walk back from the fetches", *SESSIONS_PLAN):
        order = chapter.execution_order(fetches, fed)
    _check_order(order, fed)
    got = sorted(o.name for o in order)
    expected = sorted(o.name for o in needed_operations(fetches, fed))
    assert got == expected, (
        f"a hidden graph, fetching {[f.name for f in fetches]} with {[t.name for t in fed]} fed: "
        f"expected the operations {expected}, got {got}"
    )


# --- run_graph ------------------------------------------------------------------------------------
def test_run_graph_matches_a_session(chapter) -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None, 2), name="x")
        w = ef.constant([[1.0], [-1.0]])
        y = ef.tanh(ef.matmul(x, w) + 0.5)
        z = ef.reduce_sum(y * y)
    feed = np.array([[0.1, 0.2], [1.0, -1.0], [2.0, 0.0]], np.float32)
    got = chapter.run_graph([y, z], {x: feed})
    with Session(g) as session:
        expected = session.run([y, z], {x: feed})
    assert len(got) == 2, f"expected one value per fetch, got {got!r}"
    for g_value, e_value, name in zip(got, expected, ["y", "z"], strict=True):
        np.testing.assert_allclose(g_value, e_value, rtol=1e-6, err_msg=f"value of {name}")


def test_run_graph_handles_multi_output_ops_and_fed_intermediates(chapter) -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (4,), name="x")
        scaled = x * 10.0
        left, right = ef.split(scaled, 2)
        out = left - right
    feed = np.array([1.0, 2.0, 3.0, 5.0], np.float32)
    (got,) = chapter.run_graph([out], {x: feed})
    np.testing.assert_allclose(got, [-20.0, -30.0], err_msg="split (a multi-output op)")
    (got,) = chapter.run_graph([out], {scaled: np.array([1.0, 2.0, 4.0, 8.0], np.float32)})
    np.testing.assert_allclose(
        got, [-3.0, -6.0], err_msg="with the tensor `scaled` (= x * 10) fed instead of x"
    )


def test_run_graph_does_not_use_a_session(chapter, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("run_graph should run the kernels itself, not call Session.run")

    monkeypatch.setattr(Session, "run", refuse)
    g = Graph()
    with g.as_default():
        v = Variable(1.0)  # only to check that unneeded variable ops are left alone
        x = placeholder(ef.float64, (2,), name="x")
        y = x * x
    assert v.initializer is not None
    (got,) = chapter.run_graph([y], {x: np.array([3.0, 4.0])})
    np.testing.assert_allclose(got, [9.0, 16.0])


@pytest.mark.parametrize("seed", range(4))
def test_run_graph_on_hidden_graphs(chapter, seed: int) -> None:
    g, xs, tensors = random_graph(seed)
    rng = np.random.default_rng(seed + 60)
    fetches = [tensors[-1], tensors[int(rng.integers(3, len(tensors) - 1))]]
    feed = {x: rng.uniform(-1, 1, 4).astype(np.float32) for x in xs}
    on_the_way = ancestors(tensors[-1])
    middle = on_the_way[int(rng.integers(len(on_the_way)))]  # a fed intermediate value too
    feed[middle] = rng.uniform(-1, 1, 4).astype(np.float32)
    with Session(g) as session:
        expected = session.run(fetches, feed)
    with refusing("run_graph", "a tiny Session", *SESSIONS_PLAN):
        got = chapter.run_graph(fetches, feed)
    assert len(got) == len(fetches), f"expected one value per fetch, got {got!r}"
    for g_value, e_value, t in zip(got, expected, fetches, strict=True):
        np.testing.assert_allclose(g_value, e_value, rtol=1e-6,
                                   err_msg=f"the value of {t.name} in a hidden graph")  # fmt: skip


# --- MiniSession (stretch) ------------------------------------------------------------------------
def refuse_real_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    """No real Session runs, and the variable kernels cannot reach a Session's store."""

    def refuse_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("MiniSession should run the graph itself, not call Session.run")

    def refuse_store(*args: object, **kwargs: object) -> None:
        raise AssertionError(
            "a variable kernel asked for a real Session's store: run the variable ops "
            "(VariableV2, ReadVariableOp, Assign...VariableOp) yourself, with self.values"
        )

    monkeypatch.setattr(Session, "run", refuse_run)
    monkeypatch.setattr(SessionStorage, "read", refuse_store)
    monkeypatch.setattr(SessionStorage, "write", refuse_store)
    refuse(monkeypatch, "MiniSession", "a Session", *SESSIONS_PLAN)


def running_total() -> tuple[Graph, Variable, SymbolicTensor, SymbolicTensor, Operation]:
    g = Graph()
    with g.as_default():
        total = Variable(0.0, name="total")
        value = placeholder(ef.float32, (), name="value")
        update = total.assign_add(value)
        init = global_variables_initializer()
    assert init is not None
    return g, total, value, update, init


def test_mini_session_keeps_a_running_total_per_session(chapter, monkeypatch) -> None:
    g, total, value, update, init = running_total()
    refuse_real_sessions(monkeypatch)
    first = chapter.MiniSession(g)
    assert first.run([init]) == [None], "fetching an operation gives None"
    got = [float(first.run([update], {value: np.float32(v)})[0]) for v in (1.0, 2.5, -0.5)]
    assert got == [1.0, 3.5, 3.0], f"expected the totals [1.0, 3.5, 3.0], got {got}"
    assert set(first.values) == {total} and float(first.values[total]) == 3.0, (
        f"self.values should hold the total, 3.0, under its Variable; it holds {first.values}"
    )
    second = chapter.MiniSession(g)
    assert second.values == {}, "a new MiniSession starts with no values"
    second.run([init])
    assert float(second.run([update], {value: np.float32(10.0)})[0]) == 10.0, (
        "a second MiniSession should start again from 0"
    )
    assert float(first.run([update], {value: np.float32(0.0)})[0]) == 3.0, (
        "running the second MiniSession must not change the first one's total"
    )


def test_mini_session_refuses_an_uninitialized_variable(chapter, monkeypatch) -> None:
    g, _, value, update, init = running_total()
    with g.as_default():
        read = ef.identity(g.get_tensor_by_name("total:0"))
    refuse_real_sessions(monkeypatch)
    session = chapter.MiniSession(g)
    for fetch, feed in [(read, {}), (update, {value: np.float32(1.0)})]:
        with pytest.raises(ef.FailedPreconditionError):
            session.run([fetch], feed)
    session.run([init])
    assert float(session.run([read])[0]) == 0.0, "after init, the total reads 0"


def test_mini_session_values_are_its_own(chapter, monkeypatch) -> None:
    g = Graph()
    with g.as_default():
        v = Variable(np.zeros(3, np.float32), name="v")
        new = placeholder(ef.float32, (3,), name="new")
        store = v.assign(new)
        grow = v.assign_add(ef.ones_like(new))
        read = ef.identity(v)
        init = global_variables_initializer()
    refuse_real_sessions(monkeypatch)
    session = chapter.MiniSession(g)
    session.run([init])
    fed = np.array([1.0, 2.0, 3.0], np.float32)
    session.run([store], {new: fed})
    fed[:] = -7.0  # the caller reuses its array
    (before,) = session.run([read])
    np.testing.assert_array_equal(
        before, [1.0, 2.0, 3.0], err_msg="changing a fed array afterwards changed the variable"
    )
    session.run([grow], {new: fed})
    np.testing.assert_array_equal(
        before, [1.0, 2.0, 3.0], err_msg="an array run returned changed when the variable grew"
    )
    (after,) = session.run([read])
    after[:] = 100.0  # the caller writes into a fetched array
    (again,) = session.run([read])
    np.testing.assert_array_equal(
        again, [2.0, 3.0, 4.0], err_msg="changing a fetched array changed the variable"
    )


def regression_graph(rng: np.random.Generator) -> dict[str, object]:
    """A linear regression trained in a graph, on data the reader does not see."""
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None,), name="x")
        y = placeholder(ef.float32, (None,), name="y")
        w = Variable(float(rng.uniform(-1, 1)), name="w")
        b = Variable(float(rng.uniform(-1, 1)), name="b")
        loss = ef.reduce_mean(ef.square(w * x + b - y))
        dw, db = gradients(loss, [w, b])
        train = group(w.assign_sub(0.1 * dw), b.assign_sub(0.1 * db))
        init = global_variables_initializer()
    xs = rng.uniform(-2, 2, 40).astype(np.float32)
    ys = (rng.uniform(-3, 3) * xs + rng.uniform(-1, 1) + rng.normal(0, 0.1, 40)).astype(np.float32)
    return {"graph": g, "x": x, "y": y, "w": w, "b": b, "loss": loss, "train": train,
            "init": init, "xs": xs, "ys": ys}  # fmt: skip


def test_mini_session_trains_like_a_session_on_hidden_data(chapter, monkeypatch) -> None:
    m = regression_graph(np.random.default_rng(525))
    g, x, y, loss, train = m["graph"], m["x"], m["y"], m["loss"], m["train"]
    feed = {x: m["xs"], y: m["ys"]}
    with Session(g) as session:
        session.run(m["init"])
        expected = [session.run([loss, train], feed)[0] for _ in range(30)]
        final = session.run([m["w"], m["b"]])
    refuse_real_sessions(monkeypatch)
    mine = chapter.MiniSession(g)
    mine.run([m["init"]])
    for step, e in enumerate(expected):
        got = mine.run([loss, train], feed)
        assert len(got) == 2 and got[1] is None, (
            f"fetching [loss, train] should give [a value, None], got {got!r}"
        )
        np.testing.assert_allclose(
            got[0], e, rtol=1e-6, err_msg=f"the loss at step {step}, as a Session gives it"
        )
    for variable, value in zip((m["w"], m["b"]), final, strict=True):
        np.testing.assert_allclose(
            mine.values.get(variable), value, rtol=1e-6,
            err_msg=f"the trained value of {variable.name}",
        )  # fmt: skip


def stateful_graph(rng: np.random.Generator) -> tuple[Graph, SymbolicTensor, dict[str, object]]:
    """Two variables, reads and updates of both: fetched in any combination."""
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (3,), name="x")
        a = Variable(rng.uniform(-1, 1, 3).astype(np.float32), name="a")
        b = Variable(float(rng.uniform(0.5, 1.5)), name="b")
        fetchable: dict[str, object] = {"init": global_variables_initializer()}
        fetchable["grow"] = a.assign_add(x * b)
        fetchable["shrink"] = b.assign_sub(ef.reduce_mean(a) * 0.1)
        fetchable["squash"] = a.assign(ef.tanh(a))
        fetchable["y"] = ef.reduce_sum(a * x) + b
        fetchable["reset"] = b.assign(ef.reduce_max(x))
        fetchable["both"] = group(a.assign_sub(x * 0.5), b.assign_add(ef.reduce_min(x)))
        fetchable["read_a"] = ef.identity(a)
    return g, x, fetchable


@pytest.mark.parametrize("seed", range(3))
def test_mini_session_on_hidden_run_sequences(chapter, monkeypatch, seed: int) -> None:
    rng = np.random.default_rng(535 + seed)
    g, x, fetchable = stateful_graph(rng)
    names = [n for n in fetchable if n != "init"]
    runs = []
    for _ in range(12):
        picked = [names[i] for i in rng.choice(len(names), int(rng.integers(1, 3)), replace=False)]
        runs.append((picked, rng.uniform(-1, 1, 3).astype(np.float32)))
    with Session(g) as session:
        session.run(fetchable["init"])
        expected = [session.run([fetchable[n] for n in picked], {x: v}) for picked, v in runs]
    refuse_real_sessions(monkeypatch)
    mine = chapter.MiniSession(g)
    mine.run([fetchable["init"]])
    for i, ((picked, v), e) in enumerate(zip(runs, expected, strict=True)):
        got = mine.run([fetchable[n] for n in picked], {x: v})
        assert len(got) == len(picked), f"run {i}: one value per fetch, got {got!r}"
        for name, g_value, e_value in zip(picked, got, e, strict=True):
            if e_value is None:
                assert g_value is None, f"run {i}: {name} is an operation: expected None"
            else:
                np.testing.assert_allclose(
                    g_value, e_value, rtol=1e-6, atol=1e-7,
                    err_msg=f"run {i} of a hidden sequence, fetching {picked}: {name}",
                )  # fmt: skip
