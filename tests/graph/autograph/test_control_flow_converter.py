"""The control-flow converter: if/while/for become helper calls with their blocks as functions,
and only the variables that must flow through a cond or a loop are its state."""

from __future__ import annotations

import ast

from autograph_snippets import code, parse, same_code

from eagerflow.graph.autograph import analysis
from eagerflow.graph.autograph.converters import control_flow
from eagerflow.graph.autograph.naming import Namer


def converted(source: str) -> ast.FunctionDef:
    definition = parse(source)
    analysis.analyze(definition)
    return control_flow.transform(definition, Namer(definition))


def helper_calls(node: ast.AST) -> list[str]:
    """The ag__ helper calls in ``node``, as code, outermost last."""
    return [
        code(n)
        for n in ast.walk(node)
        if isinstance(n, ast.Call) and code(n.func).endswith("_stmt")
    ]


def test_an_if_without_outputs_needs_no_state() -> None:
    result = converted(
        """
        def f(x):
            if x > 0:
                ef.print(x)
        """
    )
    assert same_code(
        result,
        """
        def f(x):
            def if_body():
                ef.print(x)
            ag__.if_stmt(x > 0, if_body, None)
        """,
    )


def test_the_state_of_an_if_is_its_outputs_then_what_it_only_reads_and_changes() -> None:
    result = converted(
        """
        def f(x, a, b):
            if x > 0:
                scratch = x * 2
                b = b + scratch
                y = b
            else:
                y = a
            return y
        """
    )
    # y is used after the if (an output); b is read in it before being assigned (each
    # branch must start from its value); scratch is the branch's own: not state at all
    (call,) = helper_calls(result)
    assert call.endswith("get_state, set_state, ('y', 'b'), 1)")
    assert "y = ag__.Undefined('y')" in code(result)
    assert "Undefined('b')" not in code(result)  # b has a value: an argument


def test_loop_variables_are_what_an_iteration_leaves_for_the_next_or_for_after() -> None:
    result = converted(
        """
        def f(n):
            i = 0
            total = 0
            while i < n:
                step = i * 2
                total = total + step
                i += 1
            return total
        """
    )
    (call,) = helper_calls(result)
    assert call.startswith("ag__.while_stmt(lambda: i < n, loop_body,")
    assert call.endswith("('i', 'total'))")  # not step: assigned before it is read


def test_a_for_target_used_after_the_loop_is_assigned_from_the_item() -> None:
    result = converted(
        """
        def f(xs):
            for x in xs:
                pass
            return x
        """
    )
    functions = [n for n in ast.walk(result) if isinstance(n, ast.FunctionDef)]
    body = next(f for f in functions if f.name == "loop_body")
    assert code(body).startswith("def loop_body(itr):\n    nonlocal x\n    x = itr")
    simple = converted("def f(xs):\n    for x in xs:\n        print(x)\n")
    assert "def loop_body(x):" in code(simple)  # a target not used after: the parameter


def test_names_go_from_the_outer_statement_to_the_inner() -> None:
    result = converted(
        """
        def f(x):
            if x > 0:
                if x > 1:
                    ef.print(x)
        """
    )
    assert [c.split(",")[1].strip() for c in helper_calls(result)] == ["if_body", "if_body_1"]


def test_global_variables_are_declared_global_in_the_blocks() -> None:
    result = converted(
        """
        def f(x):
            global counter
            if x > 0:
                counter = counter + 1
            return counter
        """
    )
    assert "global counter" in code(result) and "nonlocal counter" not in code(result)
    assert "Undefined('counter')" not in code(result)


def test_a_generated_name_never_takes_a_users_name() -> None:
    result = converted(
        """
        def f(x, if_body):
            if x > 0:
                if_body(x)
        """
    )
    assert helper_calls(result)[-1].startswith("ag__.if_stmt(x > 0, if_body_1, None")


def test_an_attribute_assigned_in_a_block_is_state_read_with_a_default() -> None:
    result = converted(
        """
        def f(self, x):
            if x > 0:
                self.count += 1
        """
    )
    assert same_code(
        result,
        """
        def f(self, x):
            def get_state():
                return (getattr(self, 'count', ag__.Undefined('self.count')),)
            def set_state(vars_):
                (self.count,) = vars_
            def if_body():
                self.count += 1
            ag__.if_stmt(x > 0, if_body, None, get_state, set_state, ('self.count',), 1)
        """,
    )
