"""Chapter 17 exercises — run `.venv/bin/pytest -m ch17`.

Linear regression, the line ``y ≈ w·x + b`` fitted to noisy points: its gradient by
calculus, its exact answer in closed form, and two training loops, one eager with an
optimizer and a global step, one in a graph with placeholders and a Session; then (a stretch) a
polynomial that overfits, and early stopping.

Replace each ``raise NotImplementedError`` with your code, then run `.venv/bin/pytest -m ch17`:
an exercise you have not started is reported as skipped (not attempted yet), a wrong answer
as a failure that shows what was expected. Reference solutions are in
`exercises/solutions/ch17.py`; try on your own first.

Each exercise's docstring starts with its difficulty, from ★ to ★★★, and ends with its
hints: read Hint 1 first, and the next only if you need it; the last is nearly the answer.
"""

# ruff: noqa: F401  (the imports are the ones you will want)
from __future__ import annotations

import numpy as np

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import Graph, Session, global_variables_initializer, placeholder


def mse_gradients(w: float, b: float, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """★ The gradient of the mean squared error, by calculus instead of by a tape.

    For the loss ``L(w, b) = mean((w·x + b − y)²)`` over the n points, with the error
    ``e = w·x + b − y`` of each point:

        ∂L/∂w = 2 · mean(e · x)        ∂L/∂b = 2 · mean(e)

    Compute both with NumPy. The test compares your numbers with a GradientTape's: when
    they agree, you have checked the tape against the chain rule.

    Args:
        w: The slope.
        b: The intercept.
        x: The inputs, shape (n,).
        y: The targets, shape (n,).

    Returns:
        ``(∂L/∂w, ∂L/∂b)`` as Python floats.

    Hint 1:
        The formulas are given; NumPy computes them for all the points at once.

    Hint 2:
        ``error = w * x + b - y`` is an array with one error per point; ``np.mean`` of the right
        products gives each partial derivative. Return Python floats.
    """
    raise NotImplementedError


def least_squares(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """★ The exact minimizer of ``mean((w·x + b − y)²)``: no training needed.

    Setting both partial derivatives of the loss to zero gives two linear equations in w
    and b, whose solution is

        w* = cov(x, y) / var(x)        b* = mean(y) − w* · mean(x)

    with ``cov(x, y) = mean((x − mean(x)) · (y − mean(y)))`` and ``var(x) = cov(x, x)``.
    This is what gradient descent converges to, and what the chapter compares it with.
    Compute it in float64 whatever the inputs' dtype: the tests compare to 1e-9, on data
    that float32 cannot hold.

    Args:
        x: The inputs, shape (n,), not all equal.
        y: The targets, shape (n,).

    Returns:
        ``(w*, b*)`` as Python floats.

    Hint 1:
        Work in float64 (``np.asarray(x, np.float64)``): sums of many float32 numbers lose
        digits.

    Hint 2:
        Center first: with ``xc = x - x.mean()`` and ``yc = y - y.mean()``,
        ``cov = mean(xc·yc)`` and ``var = mean(xc·xc)``.
    """
    raise NotImplementedError


def train_with_optimizer(
    model: nn.Model, x: np.ndarray, y: np.ndarray, steps: int, learning_rate: float
) -> list[float]:
    """★★ Train ``model`` eagerly with ``GradientDescentOptimizer`` and the global step.

    ``model(x)`` predicts y (the chapter's ``Linear`` model, with variables ``W`` and
    ``B``). For each of ``steps`` steps, on the whole data set:

    1. compute ``loss = mean((model(x) − y)²)`` under a GradientTape;
    2. take its gradients for ``model.trainable_variables``;
    3. ``apply_gradients`` with ``global_step=nn.get_or_create_global_step()``, which adds
       1 to the step counter after each update.

    Args:
        model: The model to train; its variables change in place.
        x: The inputs, float32, shape (n,).
        y: The targets, float32, shape (n,).
        steps: How many updates.
        learning_rate: The optimizer's learning rate.

    Returns:
        The loss *before* each update, as Python floats (``steps`` of them).

    Hint 1:
        One optimizer for all the steps; each step is a tape, its gradients and
        ``apply_gradients``.

    Hint 2:
        Keep the loss before the update. Pass ``global_step=nn.get_or_create_global_step()`` to
        ``apply_gradients``, and do not reset it.

    Hint 3:
        In the loop: the loss under ``with GradientTape() as tape:``,
        ``grads = tape.gradient(loss, model.trainable_variables)``,
        ``optimizer.apply_gradients(zip(grads, model.trainable_variables), global_step=step)``,
        ``losses.append(float(loss))``.
    """
    raise NotImplementedError


def train_in_graph(
    x: np.ndarray, y: np.ndarray, steps: int, learning_rate: float
) -> tuple[float, float, list[float]]:
    """★★ Fit ``y ≈ w·x + b`` in graph mode: build once, then run the train op ``steps`` times.

    Build a new ``Graph`` holding

    - two placeholders, for x and y (float32, shape ``(None,)``);
    - two variables, ``w`` starting at 5.0 and ``b`` at 10.0;
    - the loss ``mean((w·x + b − y)²)``;
    - ``train = nn.GradientDescentOptimizer(learning_rate).minimize(loss)``;
    - ``global_variables_initializer()``.

    Then, in a ``Session`` of that graph, run the initializer once and the train op
    ``steps`` times, feeding the data each time. Building happens once: running a step adds
    no node and executes no op through the seam, which is what the test checks.

    Args:
        x: The inputs, float32, shape (n,).
        y: The targets, float32, shape (n,).
        steps: How many updates.
        learning_rate: The step size.

    Returns:
        w: The final slope, a Python float.
        b: The final intercept, a Python float.
        losses: The loss before each update, ``steps`` Python floats.

    Hint 1:
        Build everything once inside ``with graph.as_default():``, then run it many times in a
        ``Session``.

    Hint 2:
        ``minimize(loss)`` returns the train op. ``session.run([train, loss], feed)`` runs one
        step, and the loss it returns is the one before the update: the update needs the
        gradient, which is computed from the same values as the loss.

    Hint 3:
        Placeholders for x and y, ``w = Variable(5.0)`` and ``b = Variable(10.0)``, the loss,
        ``train`` and ``init``; then ``session.run(init)`` once,
        ``session.run([train, loss], {x_ph: x, y_ph: y})`` per step, and ``session.run([w, b])``
        at the end.
    """
    raise NotImplementedError


def early_stopping(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_val: np.ndarray,
    y_val: np.ndarray,
    degree: int,
    learning_rate: float,
    max_steps: int,
    patience: int,
) -> tuple[np.ndarray, int, int]:
    """★★★ Stretch: a polynomial that overfits, and gradient descent that stops in time.

    A line has two weights; a polynomial ``w₀ + w₁·x + … + w_d·x^d`` of degree 9 fitted to 10
    noisy points has as many weights as points, and the longer it trains the better it fits
    the noise: the loss on points it never trains on (the *validation* set) falls, then
    rises. Early stopping watches that loss and keeps the weights from its best step.

    Train with these rules (the tests replay them and compare every number):

    - the features of ``x`` are its powers ``[1, x, x², …, x^degree]``, in float64;
    - the weights start at zeros; step 0 is "before training", with its validation loss;
    - each step ``t = 1, 2, …, max_steps`` is one full-batch gradient-descent step on the
      training mean squared error, its gradient from a ``GradientTape`` (one per step);
    - after step ``t``, the validation mean squared error: lower than the best so far (strictly)
      makes ``t`` the best step, with its weights; else, once ``t − best_step ≥ patience``,
      training stops after step ``t``.

    Args:
        x_train: The training points' x, shape (n,).
        y_train: Their y, shape (n,).
        x_val: The validation points' x, shape (m,).
        y_val: Their y, shape (m,).
        degree: The polynomial's degree.
        learning_rate: Gradient descent's step size.
        max_steps: The most steps to take.
        patience: How many steps without a better validation loss to wait.

    Returns:
        ``(weights, best_step, steps)``: the best step's ``degree + 1`` weights (a NumPy
            array, ``w₀`` first), that step's number, and the number of steps taken.

    Hint 1:
        ``x[:, None] ** np.arange(degree + 1)`` is the (n, degree + 1) matrix of features; the
        predictions are that matrix times the weights, ``ef.matmul`` or by broadcasting.

    Hint 2:
        Keep a copy of the best weights (``w.numpy()``): the variable goes on changing. The
        test ``t − best_step ≥ patience`` comes only when step ``t`` did not improve.
    """
    raise NotImplementedError
