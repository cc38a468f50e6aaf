"""nn.callbacks: the hooks fit calls (in Keras' order), the progress bar's exact text, and
EarlyStopping, ModelCheckpoint, LearningRateScheduler, CSVLogger, History."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import eagerflow.nn as nn
import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import function
from eagerflow.nn.callbacks.progbar import LineStream, format_eta, format_per_step, format_values
from eagerflow.tensor.errors import InvalidArgumentError

FIXTURE = Path(__file__).parent / "fixtures" / "keras_callback_order.json"
HOOKS = ["on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
         "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_end",
         "on_test_batch_begin", "on_test_batch_end"]  # fmt: skip


def data(n: int = 8) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(0).standard_normal((n, 2)).astype(np.float32)
    return x, x.sum(axis=1, keepdims=True)


def fit(callbacks: list[nn.callbacks.Callback], epochs: int = 2, **options: Any) -> nn.History:
    ef.set_seed(0)
    x, y = data()
    options = {"batch_size": 4, "verbose": 0, "validation_data": (x[:4], y[:4]), **options}
    model = options.pop("model", None) or nn.Sequential([nn.Dense(1)])
    return nn.fit(model, x, y, loss="mean_squared_error", epochs=epochs, callbacks=callbacks,
                  optimizer=options.pop("optimizer", nn.GradientDescentOptimizer(0.1)),
                  shuffle=False, **options)  # fmt: skip


class Recorder(nn.callbacks.Callback):
    """Every hook call as [hook, epoch or batch, sorted log keys], as the Keras fixture."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[Any]] = []
        for hook in HOOKS:
            setattr(self, hook, self._recorder(hook))

    def _recorder(self, hook: str) -> Any:
        def record(*args: Any) -> None:
            *number, logs = args
            self.calls.append([hook, *number, sorted(logs or {})])

        return record


# --- the order of the hooks -----------------------------------------------------------------
def keras_documented_order(epochs: int, batches: int) -> list[list[Any]]:
    """The order Keras' callback guide documents ("Writing your own callbacks"): training
    batches, then the validation pass's test hooks, inside each epoch."""
    calls: list[list[Any]] = [["on_train_begin", []]]
    for epoch in range(epochs):
        calls.append(["on_epoch_begin", epoch, []])
        for batch in range(batches):
            calls += [["on_train_batch_begin", batch, []], ["on_train_batch_end", batch, ["loss"]]]
        calls += [["on_test_begin", []], ["on_test_batch_begin", 0, []],
                  ["on_test_batch_end", 0, ["loss"]], ["on_test_end", ["loss"]],
                  ["on_epoch_end", epoch, ["loss", "val_loss"]]]  # fmt: skip
    return [*calls, ["on_train_end", ["loss", "val_loss"]]]


def test_the_recorded_keras_fit_follows_the_documented_order() -> None:
    recorded = json.loads(FIXTURE.read_text())
    assert recorded["calls"] == keras_documented_order(epochs=2, batches=2)


def test_fit_calls_the_hooks_in_the_order_a_real_keras_fit_does() -> None:
    recorder = Recorder()
    fit([recorder])  # as the fixture's run: 8 examples, batches of 4, 2 epochs, validation
    assert recorder.calls == json.loads(FIXTURE.read_text())["calls"]


def test_callbacks_get_the_model_and_params() -> None:
    recorder = Recorder()
    model = nn.Sequential([nn.Dense(1)])
    fit([recorder], model=model, epochs=3)
    assert recorder.model is model
    assert {k: recorder.params[k] for k in ("epochs", "steps", "verbose")} == {
        "epochs": 3, "steps": 2, "verbose": 0}  # fmt: skip


def test_batch_logs_are_the_running_averages_and_the_epoch_logs_the_averages() -> None:
    seen: list[float] = []

    class Batches(nn.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            seen.append(logs["loss"])

    history = fit([Batches()], epochs=1, validation_data=None)
    assert seen[-1] == pytest.approx(history.history["loss"][0])


def test_a_callback_that_is_not_a_callback_is_named() -> None:
    with pytest.raises(
        TypeError, match=r"callbacks must be nn\.callbacks\.Callback objects, got str"
    ):
        fit(["EarlyStopping"])  # type: ignore[list-item]


# --- History ---------------------------------------------------------------------------------
def test_fit_returns_the_history_and_keeps_it_on_the_model() -> None:
    model = nn.Sequential([nn.Dense(1)])
    history = fit([], model=model, epochs=3)
    assert model.history is history and history.model is model
    assert history.epoch == [0, 1, 2]
    assert set(history.history) == {"loss", "val_loss"}
    assert len(history.history["loss"]) == 3 and history["loss"] == history.history["loss"]
    assert history.epochs[1] == {"loss": history["loss"][1], "val_loss": history["val_loss"][1]}


# --- the progress bar, against a fake clock --------------------------------------------------
class Clock:
    """A clock that moves ``step`` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.now, self.step = -step, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_while_running_and_finished() -> None:
    bar = nn.callbacks.Progbar(32, stream=Terminal(), clock=Clock(0.6))  # starts at 0
    assert bar.line(12, {"loss": 0.41213}, 0.6, finalize=False) == (
        "12/32 [==========>...................] - ETA: 1s - loss: 0.4121"
    )
    assert bar.line(32, {"loss": 0.238, "val_loss": 0.19451}, 1.6, finalize=True) == (
        "32/32 [==============================] - 2s 50ms/step - loss: 0.2380 - val_loss: 0.1945"
    )
    start = " 1/32 [..............................] - ETA: 19s"
    assert bar.line(1, {}, 0.6, finalize=False) == start


def test_verbose_2_and_an_unknown_number_of_steps() -> None:
    quiet = nn.callbacks.Progbar(32, verbose=2, clock=Clock(0.6))
    line = "32/32 - 2s 50ms/step - loss: 0.2380"
    assert quiet.line(32, {"loss": 0.238}, 1.6, finalize=True) == line
    unknown = nn.callbacks.Progbar(None, clock=Clock(0.6))
    assert unknown.line(7, {"loss": 0.5}, 0.07, finalize=False) == (
        "      7/Unknown - 0s 10ms/step - loss: 0.5000")  # fmt: skip


def test_the_bar_redraws_in_place_on_a_terminal() -> None:
    out = Terminal()
    bar = nn.callbacks.Progbar(2, stream=out, clock=Clock(0.5))
    bar.update(1, {"loss": 1.5})
    bar.update(2, {"loss": 1.25}, finalize=True)
    assert out.getvalue() == (
        "\r1/2 [==============>...............] - ETA: 0s - loss: 1.5000"
        "\r2/2 [==============================] - 1s 500ms/step - loss: 1.2500\n")  # fmt: skip


def test_fit_prints_keras_lines_against_a_fake_clock() -> None:
    lines: list[str] = []
    # the clock is read as the epoch begins, after each of its 2 steps, and when it ends
    logger = nn.callbacks.ProgbarLogger(stream=LineStream(lines.append), clock=Clock(0.4))
    history = fit([logger], verbose=1)
    loss, val = history["loss"], history["val_loss"]
    assert lines == [
        "Epoch 1/2",
        f"2/2 [==============================] - 1s 600ms/step - loss: {loss[0]:.4f} - "
        f"val_loss: {val[0]:.4f}",
        "Epoch 2/2",
        f"2/2 [==============================] - 1s 600ms/step - loss: {loss[1]:.4f} - "
        f"val_loss: {val[1]:.4f}",
    ]  # fmt: skip


def test_a_long_epoch_is_never_silent_off_a_terminal() -> None:
    out = io.StringIO()  # not a terminal: a line each PROGRESS_EVERY seconds, then the bar
    bar = nn.callbacks.Progbar(100, stream=out, clock=Clock(2.0))
    for step in range(1, 6):
        bar.update(step, {})
    bar.update(6, {}, finalize=True)
    assert [line.split(" - ")[0][:7] for line in out.getvalue().splitlines()] == [
        "  3/100", "  6/100"]  # fmt: skip


@pytest.mark.parametrize("seconds, shown", [(7.4, "7s"), (125, "2:05"), (3725, "1:02:05")])
def test_eta_format(seconds: float, shown: str) -> None:
    assert format_eta(seconds) == shown


def test_step_time_and_value_formats() -> None:
    assert [format_per_step(t) for t in (2.0, 0.002, 2e-6)] == ["2s/step", "2ms/step", "2us/step"]
    assert format_values({"loss": 0.00012, "acc": 0.5}) == " - loss: 1.2000e-04 - acc: 0.5000"


def test_verbose_must_be_0_1_or_2() -> None:
    with pytest.raises(ValueError, match=r"fit: verbose must be 0 \(silent\), 1"):
        fit([], verbose=3)


# --- EarlyStopping ---------------------------------------------------------------------------
class FakeModel:
    def __init__(self) -> None:
        self.stop_training = False
        self.variables = [Variable(np.zeros(2, np.float32))]


def run_epochs(callback: nn.callbacks.Callback, values: list[float],
               monitor: str = "val_loss") -> tuple[FakeModel, int]:  # fmt: skip
    """Feed the callback one epoch per value (the weights hold the epoch's number); returns
    the model and how many epochs ran."""
    model = FakeModel()
    callback.set_model(model)
    callback.on_train_begin()
    ran = 0
    for epoch, value in enumerate(values):
        model.variables[0].assign(np.full(2, epoch, np.float32))
        callback.on_epoch_end(epoch, {monitor: value})
        ran += 1
        if model.stop_training:
            break
    callback.on_train_end()
    return model, ran


@pytest.mark.parametrize("options, values, ran", [
    ({"patience": 2}, [1.0, 0.5, 0.6, 0.7, 0.4], 4),
    ({"patience": 0}, [1.0, 0.5, 0.6, 0.4], 3),
    ({"patience": 1, "min_delta": 0.2}, [1.0, 0.9, 0.85, 0.1], 2),  # too small to count
    ({"patience": 2}, [1.0, 1.0, 1.0, 1.0], 3),
    ({"patience": 2, "baseline": 0.1}, [1.0, 1.0, 1.0, 1.0], 2),  # the first epoch counts
    ({"patience": 1, "start_from_epoch": 3}, [1.0, 2.0, 3.0, 4.0, 5.0], 5),
])  # fmt: skip
def test_early_stopping_stops_when_the_monitor_stops_improving(
    options: dict[str, Any], values: list[float], ran: int
) -> None:
    assert run_epochs(nn.callbacks.EarlyStopping(**options), values)[1] == ran


def test_early_stopping_maximizes_an_accuracy_and_restores_the_best_weights() -> None:
    stop = nn.callbacks.EarlyStopping("val_accuracy", patience=1, restore_best_weights=True)
    model, ran = run_epochs(stop, [0.5, 0.9, 0.8, 0.95], monitor="val_accuracy")
    assert ran == 3 and stop.best_epoch == 1
    np.testing.assert_array_equal(model.variables[0].numpy(), [1.0, 1.0])


def test_early_stopping_ends_fit() -> None:
    stop = nn.callbacks.EarlyStopping("loss", min_delta=1e9)  # no epoch improves enough
    history = fit([stop], epochs=10)
    assert history.epoch == [0, 1] and stop.stopped_epoch == 1


def test_early_stopping_warns_about_a_missing_monitor_and_a_bad_mode() -> None:
    with pytest.warns(UserWarning, match=r"monitors 'val_acc', which is not in the logs"):
        fit([nn.callbacks.EarlyStopping("val_acc")], epochs=1)
    with pytest.raises(ValueError, match="mode must be 'auto', 'min' or 'max', got 'up'"):
        nn.callbacks.EarlyStopping(mode="up")


# --- ModelCheckpoint -------------------------------------------------------------------------
def test_model_checkpoint_names_files_from_the_epoch_and_logs(tmp_path: Path) -> None:
    model = nn.Sequential([nn.Dense(1)])
    save = nn.callbacks.ModelCheckpoint(tmp_path / "ckpt-{epoch:02d}-{val_loss:.2f}.npz")
    history = fit([save], model=model)
    assert [Path(p).name for p in save.saved] == [
        f"ckpt-{e + 1:02d}-{history['val_loss'][e]:.2f}.npz" for e in range(2)]  # fmt: skip
    with np.load(save.saved[-1]) as arrays:  # weights and the optimizer's state
        assert any(k.startswith("model/") for k in arrays)
    restored = nn.Sequential([nn.Dense(1)])
    nn.Checkpoint(model=restored).restore(save.saved[-1]).expect_partial()
    x, _ = data()
    np.testing.assert_array_equal(restored(x).numpy(), model(x).numpy())


def test_model_checkpoint_save_best_only_and_weights_only(tmp_path: Path) -> None:
    save = nn.callbacks.ModelCheckpoint(tmp_path / "e{epoch}.npz", save_best_only=True,
                                        save_weights_only=True, optimizer=None)  # fmt: skip
    model = nn.Sequential([nn.Dense(1)])
    model.build((None, 2))
    save.set_model(model)
    save.set_params({"optimizer": nn.AdamOptimizer()})
    for epoch, value in enumerate([1.0, 2.0, 0.5, 0.7]):
        save.on_epoch_end(epoch, {"val_loss": value})
    assert [Path(p).name for p in save.saved] == ["e1.npz", "e3.npz"]
    with np.load(save.saved[0]) as arrays:
        assert not any(k.startswith("optimizer/") for k in arrays)


def test_model_checkpoint_names_a_missing_log(tmp_path: Path) -> None:
    save = nn.callbacks.ModelCheckpoint(tmp_path / "{val_auc:.2f}.npz")
    with pytest.raises(KeyError, match="names 'val_auc', which is not in the logs"):
        fit([save], epochs=1)


# --- LearningRateScheduler -------------------------------------------------------------------
def test_the_scheduler_sets_the_rate_each_epoch_and_logs_it() -> None:
    optimizer = nn.GradientDescentOptimizer(0.1)
    schedule = nn.callbacks.LearningRateScheduler(lambda epoch, rate: 0.1 * 0.5**epoch)
    history = fit([schedule], epochs=3, optimizer=optimizer)
    # the rate is a float32 variable: Keras logs it as the float it holds
    assert history["learning_rate"] == [float(np.float32(r)) for r in (0.1, 0.05, 0.025)]
    assert optimizer.learning_rate.numpy() == np.float32(0.025)


def test_the_scheduled_rate_is_the_one_the_steps_use() -> None:
    frozen = fit([nn.callbacks.LearningRateScheduler(lambda e, r: 1e-30)], epochs=1)
    moving = fit([], epochs=1)
    assert frozen["val_loss"] != pytest.approx(moving["val_loss"][0])
    model = nn.Sequential([nn.Dense(1)])
    ef.set_seed(0)
    x, y = data()
    before = float(nn.mean_squared_error(y[:4], model(x[:4])))
    fit([nn.callbacks.LearningRateScheduler(lambda e, r: 1e-30)], epochs=1, model=model)
    assert float(nn.mean_squared_error(y[:4], model(x[:4]))) == pytest.approx(before)


@pytest.mark.parametrize("run_eagerly", [True, False], ids=["eager", "traced"])
def test_the_scheduler_reaches_eager_and_traced_steps_alike(run_eagerly: bool) -> None:
    """The rate is a variable the step reads: a step traced once follows the schedule."""
    optimizer = nn.GradientDescentOptimizer(0.1)
    rates = nn.callbacks.LearningRateScheduler(lambda epoch, rate: 0.1 * 0.5**epoch)
    history = fit([rates], epochs=3, optimizer=optimizer, run_eagerly=run_eagerly)
    eager = fit([nn.callbacks.LearningRateScheduler(lambda epoch, rate: 0.1 * 0.5**epoch)],
                epochs=3)  # fmt: skip
    assert history["loss"] == pytest.approx(eager["loss"], rel=1e-6)
    assert history["learning_rate"] == eager["learning_rate"]
    assert optimizer.iterations.numpy() == 3 * 2  # 2 batches an epoch


def test_a_rate_set_between_calls_reaches_a_traced_step_without_a_retrace() -> None:
    w = Variable(np.array([1.0, 2.0], np.float32))
    optimizer = nn.GradientDescentOptimizer(0.1)
    # its two variables made now, eagerly, so the first trace makes none (and is not traced
    # again to check that a second would not)
    assert (optimizer.learning_rate.numpy(), optimizer.iterations.numpy()) == (np.float32(0.1), 0)

    @function
    def step() -> None:
        with GradientTape() as tape:
            loss = ef.reduce_sum(w * w)
        optimizer.apply_gradients([(tape.gradient(loss, w), w)])

    step()  # w -= 0.1 * 2w
    np.testing.assert_allclose(w.numpy(), [0.8, 1.6], rtol=1e-6)
    optimizer.learning_rate = 0.25  # assigns the variable
    assert isinstance(optimizer.learning_rate, Variable)
    step()  # w -= 0.25 * 2w: the new rate
    np.testing.assert_allclose(w.numpy(), [0.4, 0.8], rtol=1e-6)
    assert step.trace_count == 1


# --- ReduceLROnPlateau -----------------------------------------------------------------------
class Losses(nn.callbacks.Callback):
    """Puts a given val_loss in each epoch's logs (before the callbacks after it read them)."""

    def __init__(self, values: list[float]) -> None:
        super().__init__()
        self.values = values

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        logs["val_loss"] = self.values[epoch]


@pytest.mark.parametrize("run_eagerly", [True, False], ids=["eager", "traced"])
def test_reduce_lr_on_plateau_follows_keras(run_eagerly: bool) -> None:
    # improves at epochs 0, 1; flat after: patience 2 -> halved at the end of epoch 3; the
    # cooldown of 1 epoch restarts the count at epoch 4, so halved again at the end of epoch
    # 5; then min_lr stops it. Each epoch logs the rate it trained with (before a change).
    values = [1.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    plateau = nn.callbacks.ReduceLROnPlateau(factor=0.5, patience=2, cooldown=1, min_lr=0.02)
    optimizer = nn.GradientDescentOptimizer(0.08)
    history = fit([Losses(values), plateau], epochs=len(values), optimizer=optimizer,
                  run_eagerly=run_eagerly)  # fmt: skip
    f32 = lambda r: float(np.float32(r))  # noqa: E731
    assert history["learning_rate"] == [f32(0.08)] * 4 + [f32(0.04)] * 2 + [f32(0.02)] * 4
    assert optimizer.learning_rate.numpy() == np.float32(0.02)


def test_reduce_lr_on_plateau_refuses_a_factor_of_one_or_more() -> None:
    with pytest.raises(ValueError, match="factor must be < 1"):
        nn.callbacks.ReduceLROnPlateau(factor=1.0)


def test_a_scheduled_optimizer_refuses_a_rate_from_a_callback() -> None:
    decay = nn.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5)
    with pytest.raises(TypeError, match="its learning rate is a ExponentialDecay"):
        fit([nn.callbacks.LearningRateScheduler(lambda e, r: 0.1)], epochs=1,
            optimizer=nn.GradientDescentOptimizer(decay))  # fmt: skip


def test_a_bad_scheduled_rate_is_named() -> None:
    bad = nn.callbacks.LearningRateScheduler(lambda epoch, rate: -1.0)
    with pytest.raises(InvalidArgumentError, match="the schedule's learning_rate must be > 0"):
        fit([bad], epochs=1)


# --- CSVLogger -------------------------------------------------------------------------------
def test_csv_logger_writes_a_row_per_epoch_and_appends(tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    first = fit([nn.callbacks.CSVLogger(path)], epochs=2)
    rows = [line.split(",") for line in path.read_text().splitlines()]
    assert rows[0] == ["epoch", "loss", "val_loss"]
    assert [float(v) for v in rows[2][1:]] == pytest.approx(
        [first["loss"][1], first["val_loss"][1]], rel=1e-6)  # fmt: skip
    fit([nn.callbacks.CSVLogger(path, append=True)], epochs=1)
    assert [line.split(",")[0] for line in path.read_text().splitlines()] == [
        "epoch", "0", "1", "0"]  # fmt: skip
    fit([nn.callbacks.CSVLogger(path, separator=";")], epochs=1)
    assert re.fullmatch(r"epoch;loss;val_loss\n0;[^;]+;[^;]+\n", path.read_text())
