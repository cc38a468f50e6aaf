"""Conformance cases for TensorFlow 1's shared variables: ``get_variable`` in
``variable_scope`` (names, reuse, initializers, the errors), in a graph run by a Session and
eagerly; and a loaded SavedModel saved again (its functions, signatures and variables).
Merged into ``cases.CASES`` by ``cases.py``.

Names are compared as TensorFlow spells them (``a/w:0``): a case returns 1 where a name is
the one written in the case, so both sides are held to the same text.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

from cases import case


def _in_graph(ns: Any, build: Callable[[], Any]) -> Any:
    """``build()`` in a new graph: its result, with every variable of the graph initialized
    and every tensor in it fetched by a Session (as eager constants)."""
    graph = ns.Graph()
    with graph.as_default():
        result = build()
        init = ns.global_variables_initializer()
    with ns.Session(graph=graph) as session:  # (TensorFlow's Session makes its graph current)
        session.run(init)
        fetched = _fetch(session, result)
    return _eager(ns, fetched)


def _fetch(session: Any, value: Any) -> Any:
    if isinstance(value, list):
        return [_fetch(session, v) for v in value]
    return value if isinstance(value, int) else session.run(value)


def _eager(ns: Any, value: Any) -> Any:
    if isinstance(value, list):
        return [_eager(ns, v) for v in value]
    return value if isinstance(value, int) else ns.constant(value)


@case("tf1/get_variable/names")
def _(ns: Any) -> Any:
    def build() -> Any:
        with ns.variable_scope("a"):
            w = ns.get_variable("w", [2, 3])
            x = ns.constant(1.0)
            with ns.name_scope("n"):  # a name scope names ops, not get_variable's variables
                u = ns.get_variable("u", [1])
                y = ns.constant(2.0)
            with ns.variable_scope("b"):
                v = ns.get_variable("v", [1])
        with ns.variable_scope("a", reuse=True):  # the same variables; new op names
            z = ns.constant(3.0)
        names = [w.name, u.name, x.name, y.name, v.name, z.name]
        return [int(a == b) for a, b in zip(names, TF_NAMES, strict=True)]

    return _in_graph(ns, build)


TF_NAMES = ["a/w:0", "a/u:0", "a/Const:0", "a/n/Const:0", "a/b/v:0", "a_1/Const:0"]


@case("tf1/get_variable/reuse_shares")
def _(ns: Any) -> Any:
    def build() -> Any:
        with ns.variable_scope("layer", initializer=ns.constant_initializer(0.5)):
            w = ns.get_variable("w", [2])
        with ns.variable_scope("layer", reuse=True):
            again = ns.get_variable("w", [2])
        with ns.variable_scope("layer") as scope:
            scope.reuse_variables()
            third = ns.get_variable("w", [None])  # an unknown size fits any
        return [int(again is w), int(third is w), w, len(ns.trainable_variables())]

    return _in_graph(ns, build)


@case("tf1/get_variable/auto_reuse_inherited")
def _(ns: Any) -> Any:
    def build() -> Any:
        with ns.variable_scope("c", reuse=ns.AUTO_REUSE):
            p = ns.get_variable("p", [1], initializer=ns.constant_initializer(2.0))
            q = ns.get_variable("p", [1])
            with ns.variable_scope("d", reuse=False):  # an inner scope cannot stop reusing
                inner = ns.get_variable_scope().reuse == ns.AUTO_REUSE
                r = ns.get_variable("r", [1])
                s = ns.get_variable("r", [1])
        return [int(p is q), int(inner), int(r is s), p + q]

    return _in_graph(ns, build)


@case("tf1/get_variable/two_towers_train_one_weight")
def _(ns: Any) -> Any:
    def tower(x: Any) -> Any:
        with ns.variable_scope("tower", reuse=ns.AUTO_REUSE):
            w = ns.get_variable("w", [2], initializer=ns.constant_initializer(1.0))
            return ns.reduce_sum(x * w)

    def build() -> Any:
        loss = tower(ns.constant([1.0, 2.0])) + tower(ns.constant([3.0, 4.0]))
        (w,) = ns.trainable_variables()
        (grad,) = ns.gradients(loss, [w])
        return [loss, grad, len(ns.trainable_variables())]

    return _in_graph(ns, build)


@case("tf1/get_variable/default_initializers")
def _(ns: Any) -> Any:
    def build() -> Any:
        w = ns.get_variable("w", [40, 60])  # glorot_uniform: within ±sqrt(6 / (40 + 60))
        i = ns.get_variable("i", [3], dtype=ns.int32)  # integers start at zero
        limit = (6.0 / 100.0) ** 0.5
        inside = ns.reduce_max(ns.abs(w)) <= limit
        spread = ns.reduce_max(w) - ns.reduce_min(w) > limit  # not a constant
        return [ns.cast(inside, ns.int32), ns.cast(spread, ns.int32), i]

    return _in_graph(ns, build)


@case("tf1/get_variable/value_initializer_gives_shape")
def _(ns: Any) -> Any:
    def build() -> Any:
        v = ns.get_variable("v", initializer=ns.constant([[1.0, 2.0]]))
        n = ns.get_variable("n", [2], trainable=False)
        trained = ns.trainable_variables()
        return [v, int(any(t is n for t in trained)), len(trained)]

    return _in_graph(ns, build)


@case("tf1/get_variable/default_name_made_unique")
def _(ns: Any) -> Any:
    def build() -> Any:
        names = []
        for _ in range(2):
            with ns.variable_scope(None, default_name="lyr"):
                names.append(ns.get_variable("k", [1]).name)
        return [int(names == ["lyr/k:0", "lyr_1/k:0"])]

    return _in_graph(ns, build)


def _refused(ns: Any, second: Callable[[], Any], reuse: Any = None) -> Any:
    def build() -> Any:
        with ns.variable_scope("a"):
            ns.get_variable("w", [2, 3])
        with ns.variable_scope("a", reuse=reuse):
            second()
        return 1

    return _in_graph(ns, build)


@case("tf1/get_variable/error/already_exists")
def _(ns: Any) -> Any:
    return _refused(ns, lambda: ns.get_variable("w", [2, 3]))


@case("tf1/get_variable/error/does_not_exist")
def _(ns: Any) -> Any:
    return _refused(ns, lambda: ns.get_variable("nope", [1]), reuse=True)


@case("tf1/get_variable/error/shape_on_reuse")
def _(ns: Any) -> Any:
    return _refused(ns, lambda: ns.get_variable("w", [3]), reuse=True)


@case("tf1/get_variable/error/dtype_on_reuse")
def _(ns: Any) -> Any:
    return _refused(ns, lambda: ns.get_variable("w", [2, 3], dtype=ns.float64), reuse=True)


@case("tf1/get_variable/error/no_shape")
def _(ns: Any) -> Any:
    return _refused(ns, lambda: ns.get_variable("s"))


@case("tf1/get_variable/error/value_and_shape")
def _(ns: Any) -> Any:
    return _refused(ns, lambda: ns.get_variable("s", [2], initializer=ns.constant([1.0, 2.0])))


@case("tf1/get_variable/error/bad_name")
def _(ns: Any) -> Any:
    return _refused(ns, lambda: ns.get_variable("bad name!", [1]))


@case("tf1/get_variable/eager/no_store")
def _(ns: Any) -> Any:
    with ns.variable_scope("a"):  # eagerly (TensorFlow 2) every call makes a new variable
        first = ns.get_variable("e", [2], initializer=ns.constant_initializer(3.0))
        second = ns.get_variable("e", [2], initializer=ns.constant_initializer(4.0))
    return [int(first is second), int(first.name == "a/e:0"), first.read_value(),
            second.read_value()]  # fmt: skip


# --- a loaded SavedModel saved again -------------------------------------------------------------
@case("saved_model/resave_loaded")
def _(ns: Any) -> Any:
    with tempfile.TemporaryDirectory() as folder:
        module = ns.Module()
        module.w = ns.Variable([1.0, 2.0])
        module.f = ns.function(lambda x: ns.reduce_sum(x * module.w, axis=1),
                               input_signature=[ns.TensorSpec([None, 2])])  # fmt: skip
        ns.saved_model.save(module, os.path.join(folder, "a"), signatures=module.f)
        loaded = ns.saved_model.load(os.path.join(folder, "a"))
        ns.saved_model.save(loaded, os.path.join(folder, "b"))  # its functions and signatures
        again = ns.saved_model.load(os.path.join(folder, "b"))
        x = ns.constant([[1.0, 1.0], [2.0, 3.0]])
        served = again.signatures["serving_default"](x=x)
        return [loaded.f(x), again.f(x), sorted(served) == ["output_0"], served["output_0"],
                list(again.signatures) == ["serving_default"]]  # fmt: skip


@case("saved_model/resave_loaded_twice_keeps_variables")
def _(ns: Any) -> Any:
    with tempfile.TemporaryDirectory() as folder:
        module = ns.Module()
        module.w = ns.Variable(3.0)
        module.f = ns.function(lambda x: x * module.w, input_signature=[ns.TensorSpec([])])
        ns.saved_model.save(module, os.path.join(folder, "0"))
        for step in range(2):  # load, save elsewhere, load that: the value goes along
            loaded = ns.saved_model.load(os.path.join(folder, str(step)))
            ns.saved_model.save(loaded, os.path.join(folder, str(step + 1)))
        final = ns.saved_model.load(os.path.join(folder, "2"))  # (held: it owns the variable)
        return final.f(ns.constant(2.0))
