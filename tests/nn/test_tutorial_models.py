"""The models of the tutorial, trained for real: the notebook's regression (eager, and in a
graph with a Session), an MLP classifier in both modes, and the learned-FizzBuzz network."""

from __future__ import annotations

import numpy as np

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import Graph, Session, global_variables_initializer, placeholder


# --- the notebook's regression: y ≈ 3x + 2 ----------------------------------------------------
class Linear(nn.Model):
    def __init__(self) -> None:
        super().__init__()
        self.W = Variable(5.0, name="weight")
        self.B = Variable(10.0, name="bias")

    def call(self, inputs):
        return inputs * self.W + self.B


def loss(model, inputs, targets):
    return ef.reduce_mean(ef.square(model(inputs) - targets))


def grad(model, inputs, targets):
    with GradientTape() as tape:
        value = loss(model, inputs, targets)
    return tape.gradient(value, [model.W, model.B])


def test_notebook_model_trains_eagerly_with_an_optimizer_and_a_global_step():
    ef.set_seed(2018)
    inputs = ef.random_normal([2000])
    noise = ef.random_normal([2000])
    outputs = inputs * 3 + 2 + noise
    model = Linear()
    optimizer = nn.GradientDescentOptimizer(learning_rate=0.01)
    global_step = nn.get_or_create_global_step()
    global_step.assign(0)
    start_loss = float(loss(model, inputs, outputs))
    for _ in range(300):
        grads = grad(model, inputs, outputs)
        pairs = zip(grads, [model.W, model.B], strict=True)
        optimizer.apply_gradients(pairs, global_step=global_step)
    assert abs(float(model.W) - 3) < 0.1 and abs(float(model.B) - 2) < 0.1, (model.W, model.B)
    assert int(global_step) == 300
    assert float(loss(model, inputs, outputs)) < start_loss / 20
    assert model.variables == [model.W, model.B]


def test_notebook_model_trains_in_a_graph_with_placeholders_minimize_and_a_session():
    rng = np.random.default_rng(2018)
    xs = rng.normal(size=2000).astype(np.float32)
    ys = (3 * xs + 2 + rng.normal(size=2000)).astype(np.float32)
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (None,), name="x")
        y = placeholder(ef.float32, (None,), name="y")
        model = Linear()
        cost = ef.reduce_mean(ef.square(model(x) - y))
        global_step = nn.get_or_create_global_step()
        train = nn.GradientDescentOptimizer(0.01).minimize(cost, global_step=global_step)
        init = global_variables_initializer()
    assert model.W.name == "weight:0" and str(cost).startswith('Tensor("')
    with Session(graph) as session:
        session.run(init)
        for _ in range(300):
            session.run(train, {x: xs, y: ys})
        w, b, step = session.run([model.W, model.B, global_step])
    assert abs(w - 3) < 0.1 and abs(b - 2) < 0.1, (w, b)
    assert step == 300


# --- an MLP on a task no line can separate ----------------------------------------------------
def quadrants(n, seed):
    """Points in the plane; the class is whether x·y > 0 (an XOR of signs)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=(n, 2)).astype(np.float32)
    return x, (x[:, 0] * x[:, 1] > 0).astype(np.int64)


def test_mlp_reaches_95_percent_eagerly_and_fit_shows_progress():
    ef.set_seed(0)
    x, y = quadrants(1000, seed=0)
    x_test, y_test = quadrants(500, seed=1)
    model = nn.Sequential([nn.Dense(32, "relu"), nn.Dense(32, "relu"), nn.Dense(2)])
    lines = []
    history = nn.fit(model, x, y, loss="sparse_softmax_cross_entropy",
                     optimizer=nn.AdamOptimizer(0.01), epochs=20, batch_size=64,
                     metrics=["accuracy"], seed=0, print_fn=lines.append)  # fmt: skip
    assert len(lines) == 40 and lines[0] == "Epoch 1/20" and " - loss: " in lines[1]
    assert "accuracy" in lines[-1]
    assert history["loss"][-1] < history["loss"][0]
    assert float(nn.accuracy(y_test, model(x_test))) >= 0.95


def test_mlp_reaches_95_percent_in_a_graph():
    x_train, y_train = quadrants(1000, seed=0)
    x_test, y_test = quadrants(500, seed=1)
    graph = Graph()
    with graph.as_default():
        ef.set_seed(0)
        x = placeholder(ef.float32, (None, 2))
        y = placeholder(ef.int64, (None,))
        model = nn.Sequential([nn.Dense(32, "relu"), nn.Dense(32, "relu"), nn.Dense(2)])
        logits = model(x)
        cost = ef.reduce_mean(nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        accuracy = nn.accuracy(y, logits)
        train = nn.AdamOptimizer(0.01).minimize(cost)
        init = global_variables_initializer()
    with Session(graph) as session:
        session.run(init)
        for epoch in range(20):
            for xb, yb in nn.batches(x_train, y_train, batch_size=64, seed=epoch):
                session.run(train, {x: xb, y: yb})
        assert session.run(accuracy, {x: x_test, y: y_test}) >= 0.95


# --- learned FizzBuzz: the tutorial's closing twist -----------------------------------------
def encode(n, bits=10):
    """n as its `bits` binary digits, least significant first."""
    return np.array([(n >> i) & 1 for i in range(bits)], np.float32)


def fizzbuzz_class(n):
    """0: the number itself, 1: fizz, 2: buzz, 3: fizzbuzz."""
    return 3 if n % 15 == 0 else 2 if n % 5 == 0 else 1 if n % 3 == 0 else 0


def test_learned_fizzbuzz_predicts_1_to_100_after_training_on_101_to_1023():
    ef.set_seed(3)
    train = range(101, 1024)
    x = np.stack([encode(n) for n in train])
    y = np.array([fizzbuzz_class(n) for n in train])
    model = nn.Sequential([nn.Dense(512, "relu"), nn.Dense(4)])
    nn.fit(model, x, y, loss="sparse_softmax_cross_entropy", optimizer=nn.AdamOptimizer(0.005),
           epochs=100, batch_size=64, seed=3, verbose=False)  # fmt: skip
    test = range(1, 101)
    predicted = np.argmax(model(np.stack([encode(n) for n in test])).numpy(), axis=1)
    truth = np.array([fizzbuzz_class(n) for n in test])
    accuracy = float(np.mean(predicted == truth))
    wrong = [n for n, p, t in zip(test, predicted, truth, strict=True) if p != t]
    assert accuracy >= 0.95, f"accuracy {accuracy:.2f}; wrong for {wrong}"
