"""SavedModel: traced functions and the values of their variables, in a directory that another
program loads without the Python code that built them. TensorFlow 2's ``tf.saved_model``.

A GraphDef (``graph_def.py``) is a graph without values; a checkpoint is values without a
graph. A SavedModel is both, for *functions*: ``save(obj, export_dir)`` traces each function
once, from its ``input_signature``, writes the traces as a GraphDef library and the variables
they read with their current values. ``load(export_dir)`` rebuilds the traces over new eager
variables holding those values. The loading program needs eagerflow's tensor, autodiff and
graph packages, nothing else: not the model's classes, not ``eagerflow.nn``, not the script
that saved it. (This is why a function must have a signature: without the Python code, only
the traces saved can run, so they must be traced for every call the loaded model will get.)

What is saved::

    save(serve, "export")        # serve = function(f, input_signature=[TensorSpec(...)])
    save(model, "export")        # its attributes that are such functions, each by name
    save(model, "export", signatures={"serving_default": model.serve})

``obj`` is a ``function`` with an ``input_signature``, or any object: then its attributes (and
its class's: ``@function`` methods) that are functions with an ``input_signature`` are saved
under their attribute names (functions without one are skipped, with a warning: they cannot
be traced without example arguments). Only the object's own attributes are looked at, not
those of objects it holds.

``signatures`` (TensorFlow's serving signatures) name functions that take and return *named*
tensors: the inputs are named after the parameters (or their ``TensorSpec``'s name), the
outputs are ``output_0``, ``output_1``, ... unless the function returns a dict of tensors,
whose keys name them. When ``obj`` is a function, it is ``{"serving_default": obj}`` unless
given; for an object it is empty unless given. A signature's function that is not among the
functions saved is saved too (as ``signature_<name>``), for the signature alone.

The directory::

    export/
      saved_model.json          the format, the functions, the signatures, the GraphDef
      variables/variables.npz   each variable's value, keyed by its name in the GraphDef

and ``saved_model.json``, abridged::

    {"format": "eagerflow.SavedModel", "version": 1,
     "call": "serve",                       # what loaded(x) calls, if anything
     "functions": {"serve": {"library": "serve", "attribute": true, "parameters": ["x"],
                             "input_signature": [{"spec": {"shape": [null, 4],
                                                           "dtype": "float32", "name": null}}],
                             "outputs": {"output": 0}}},
     "signatures": {"serving_default": {"function": "serve",
                                        "inputs": [["x", {"shape": [null, 4], ...}]],
                                        "outputs": [["output_0", {"shape": [null, 1], ...}]]}},
     "variables": "variables/variables.npz",
     "graph_def": {"format": "eagerflow.GraphDef", "version": 1, "node": [],
                   "variables": {"dense/kernel:0": {"shape": [4, 8], "dtype": "float32", ...}},
                   "library": {"functions": {"serve": ...}, "graphs": {...}}}}

A structure (the arguments a signature describes, what a function returns) is written as
JSON: ``{"list": [...]}``, ``{"tuple": [...]}``, ``{"dict": [[key, value], ...]}``, ``null``
for ``None``, and the leaves ``{"spec": ...}`` or ``{"output": i}`` (the function's i-th
output tensor). A named tuple comes back as a plain tuple.

Safety. The directory is data: JSON, and ``.npz`` arrays read with
``np.load(..., allow_pickle=False)``, so loading never runs code from the files (an object
array is refused; Python functions in the graph, such as a ``custom_gradient``'s, do not
travel, see ``graph_def``). Everything read is checked, and a problem is an error naming the
file: ``FileNotFoundError`` for a missing directory, ``saved_model.json`` or variables file;
``SavedModelError`` (an ``InvalidArgumentError``, so a ``ValueError``) for a file that is not
JSON or cut short, another format or version, a malformed entry, a variable missing from the
values file or of the wrong shape or dtype; ``UnknownOpError`` for an op type that no
registered op has.

Writing is atomic: everything is written into a temporary directory next to ``export_dir``,
then renamed to it. An existing SavedModel at ``export_dir`` is replaced only once the new one
is complete (it is renamed aside, the new one renamed in, the old one deleted); a crash at
any step leaves the old one or the new one, never half of either and never neither: after a
crash between the two renames, ``load`` reads the old one from where it was set aside, and
the next ``save`` puts it back before replacing it (``eagerflow.graph.core.files``). A
directory that is not a SavedModel (nor empty) is never replaced: that is a
``FileExistsError``.

What ``load`` returns (a ``LoadedModel``): one ``LoadedFunction`` attribute per saved
function, called as the original (positionally or by parameter name; arrays and numbers are
converted, as an ``input_signature`` converts them), giving bit-identical results, since it
runs the very same graph with the very same values; ``signatures["serving_default"](x=...)``,
a dict of tensors; ``variables`` and ``trainable_variables``. The loaded functions are traces
over the loaded (eager) variables, so a ``GradientTape`` through them gives those variables'
gradients, and they train further like any variables.
"""

from eagerflow.graph.export.saved_model.format import (
    DEFAULT_SERVING_SIGNATURE,
    FORMAT,
    SAVED_MODEL_FILENAME,
    VARIABLES_FILENAME,
    VERSION,
    SavedModelError,
)
from eagerflow.graph.export.saved_model.loading import (
    LoadedFunction,
    LoadedModel,
    LoadedSignature,
    load,
)
from eagerflow.graph.export.saved_model.saving import save

__all__ = [
    "DEFAULT_SERVING_SIGNATURE",
    "FORMAT",
    "SAVED_MODEL_FILENAME",
    "VARIABLES_FILENAME",
    "VERSION",
    "LoadedFunction",
    "LoadedModel",
    "LoadedSignature",
    "SavedModelError",
    "load",
    "save",
]
