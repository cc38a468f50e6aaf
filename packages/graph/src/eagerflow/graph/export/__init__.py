"""Export: graphs and traced functions as data, for another program (chapter 14).

``graph_def.py`` (a graph as a JSON-ready dict, and back), ``saved_model.py`` (functions with
their variables' values, in a folder) and ``onnx.py`` (a traced function as an ONNX model).
"""

__all__: list[str] = []  # a stage: import its modules
