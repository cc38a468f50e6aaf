"""Templates: converters write generated code as Python text with placeholders."""

from __future__ import annotations

import ast

from eagerflow.graph.autograph import templates


def test_names_expressions_blocks_and_declarations_are_replaced() -> None:
    body = [ast.parse("y = x").body[0]]
    statements = templates.replace(
        "def name(parameter):\n    nonlocal names\n    body\n    return value",
        name="if_body",
        parameter="itr",
        names=["a", "b"],
        body=body,
        value=ast.parse("a + 1", mode="eval").body,
    )
    templates.locate(statements, body[0])
    assert ast.unparse(statements[0]) == (
        "def if_body(itr):\n    nonlocal a, b\n    y = x\n    return a + 1"
    )
    empty = templates.replace("def f():\n    nonlocal names\n    pass", names=[])
    templates.locate(empty, body[0])
    assert ast.unparse(empty[0]) == "def f():\n    pass"  # nonlocal of nothing: dropped


def test_generated_nodes_get_the_first_line_of_the_users_statement() -> None:
    (original,) = ast.parse("\n\nwhile x:\n    x -= 1\n").body
    (user_test,) = [original.test]
    (generated,) = templates.replace("ag__.while_stmt(lambda: test)", test=user_test)
    templates.locate([generated], original)
    assert (generated.lineno, generated.end_lineno) == (3, 3)  # not the block's last line
    assert (generated.col_offset, generated.end_col_offset) == (0, 5)  # `while`
    assert user_test.lineno == 3 and user_test.col_offset == 6  # the user's keeps its own
