"""Checkpoint: exact round trips keyed by object paths, safe restores (all or nothing), clear
errors for bad files, atomic saves, and graph-mode variables through a Session."""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import Variable
from eagerflow.graph import Graph, Session, function, global_variables_initializer, placeholder
from eagerflow.nn import Checkpoint, CheckpointError
from eagerflow.nn.checkpoint import CheckpointWarning

X = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)


def trained(optimizer: nn.Optimizer | None = None, units: int = 4):
    """A built two-layer model, one Adam step taken, and an int64 step variable."""
    model = nn.Sequential([nn.Dense(units, activation="relu"), nn.Dense(2)])
    model(X)
    optimizer = optimizer or nn.AdamOptimizer(0.01)
    step = Variable(np.int64(0), trainable=False, name="step")
    optimizer.minimize(lambda: ef.reduce_sum(ef.square(model(X))),
                       var_list=model.trainable_variables, global_step=step)  # fmt: skip
    return model, optimizer, step


def snapshot(checkpoint: Checkpoint) -> dict[str, np.ndarray]:
    return {key: np.array(v.numpy()) for key, v in checkpoint.variables().items()}


def perturb(checkpoint: Checkpoint, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    for variable in checkpoint.variables().values():
        noise = rng.standard_normal(variable.shape) * 100
        variable.assign(np.asarray(noise).astype(variable.dtype.np))


def assert_next_steps_agree(model, optimizer, twin, twin_optimizer) -> None:
    """One more step of each optimizer on its model leaves the twin equal to the original."""
    for m, opt in ((model, optimizer), (twin, twin_optimizer)):
        opt.minimize(lambda m=m: ef.reduce_sum(ef.square(m(X))),
                     var_list=m.trainable_variables)  # fmt: skip
    for a, b in zip(twin.variables, model.variables, strict=True):
        assert np.array_equal(a.numpy(), b.numpy())


def assert_same(actual: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> None:
    assert actual.keys() == expected.keys()
    for key in expected:
        assert actual[key].dtype == expected[key].dtype, key
        assert np.array_equal(actual[key], expected[key]), key


# --- round trip -----------------------------------------------------------------------------
def test_round_trip_is_bit_exact(tmp_path: Path) -> None:
    model, optimizer, step = trained()
    step.assign(np.int64(2**40 + 3))  # not representable in float32
    checkpoint = Checkpoint(model=model, optimizer=optimizer, step=step)
    saved = snapshot(checkpoint)
    path = tmp_path / "ckpt.npz"
    assert checkpoint.write(path) == str(path)
    perturb(checkpoint)
    assert not np.array_equal(model.layers[0].kernel.numpy(), saved["model/layers/0/kernel"])
    checkpoint.restore(path)
    assert_same(snapshot(checkpoint), saved)
    assert step.numpy() == 2**40 + 3


def test_keys_are_paths_in_the_object_tree(tmp_path: Path) -> None:
    model, optimizer, step = trained()
    path = tmp_path / "ckpt"
    Checkpoint(model=model, optimizer=optimizer, step=step).write(path)
    with np.load(path, allow_pickle=False) as data:  # loadable without pickle
        files = set(data.files)
        kernel = data["model/layers/0/kernel"]
        m = data["optimizer/slots/model/layers/1/bias/m"]
    layer_keys = {f"model/layers/{i}/{n}" for i in (0, 1) for n in ("kernel", "bias")}
    slot_keys = {f"optimizer/slots/{k}/{s}" for k in layer_keys for s in "mv"}
    assert files - {"__eagerflow_checkpoint__"} == (
        layer_keys
        | slot_keys
        | {
            "optimizer/beta1_power",
            "optimizer/beta2_power",
            "step",
            "optimizer/learning_rate",
            "optimizer/iterations",
        }
    )
    np.testing.assert_array_equal(kernel, model.layers[0].kernel.numpy())
    np.testing.assert_array_equal(m, optimizer.slot(model.layers[1].bias, "m").numpy())


def test_restore_into_a_fresh_model_with_other_layer_names(tmp_path: Path) -> None:
    model, _, _ = trained()
    path = tmp_path / "ckpt"
    Checkpoint(model=model).write(path)
    fresh = nn.Sequential([nn.Dense(4, activation="relu"), nn.Dense(2)])
    fresh(X)  # build
    assert fresh.layers[0].name != model.layers[0].name
    Checkpoint(model=fresh).restore(path)
    for a, b in zip(fresh.variables, model.variables, strict=True):
        assert np.array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(fresh(X).numpy(), model(X).numpy())


def test_restore_creates_optimizer_slots_not_made_yet(tmp_path: Path) -> None:
    model, optimizer, step = trained()
    path = tmp_path / "ckpt"
    Checkpoint(model=model, optimizer=optimizer, step=step).write(path)
    fresh_optimizer = nn.AdamOptimizer(0.01)
    assert fresh_optimizer.variables() == []
    Checkpoint(model=model, optimizer=fresh_optimizer, step=step).restore(path)
    for name, primary, slot in optimizer.slots():
        restored = fresh_optimizer.slot(primary, name)
        assert np.array_equal(restored.numpy(), slot.numpy())
        assert not restored.trainable
    assert len(fresh_optimizer.slots()) == len(optimizer.slots())
    for name, variable in optimizer.non_slots().items():
        assert fresh_optimizer.non_slots()[name].numpy() == variable.numpy()


def test_restored_optimizer_continues_like_the_original(tmp_path: Path) -> None:
    """One more Adam step after restoring gives what the original's next step gives."""
    model, optimizer, _ = trained()
    path = tmp_path / "ckpt"
    Checkpoint(model=model, optimizer=optimizer).write(path)
    twin = nn.Sequential([nn.Dense(4, activation="relu"), nn.Dense(2)])
    twin(X)
    twin_optimizer = nn.AdamOptimizer(0.01)
    Checkpoint(model=twin, optimizer=twin_optimizer).restore(path)
    assert_next_steps_agree(model, optimizer, twin, twin_optimizer)


# --- restore checks everything first --------------------------------------------------------
def test_shape_mismatch_names_the_path_and_changes_nothing(tmp_path: Path) -> None:
    model, optimizer, step = trained(units=4)
    path = tmp_path / "ckpt"
    Checkpoint(model=model, optimizer=optimizer, step=step).write(path)
    other, other_optimizer, other_step = trained(units=5)
    checkpoint = Checkpoint(model=other, optimizer=other_optimizer, step=other_step)
    before = snapshot(checkpoint)
    with pytest.raises(CheckpointError, match=re.escape("model/layers/0/kernel")) as info:
        checkpoint.restore(path)
    assert str(path) in str(info.value)
    assert_same(snapshot(checkpoint), before)


def test_dtype_mismatch_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "ckpt"
    Checkpoint(w=Variable(np.zeros(3, np.float64))).write(path)
    target = Variable(np.ones(3, np.float32))
    with pytest.raises(CheckpointError, match=r"'w'.*float64"):
        Checkpoint(w=target).restore(path)
    np.testing.assert_array_equal(target.numpy(), np.ones(3, np.float32))


def test_mismatch_does_not_create_optimizer_slots(tmp_path: Path) -> None:
    model, optimizer, _ = trained(units=4)
    path = tmp_path / "ckpt"
    Checkpoint(model=model, optimizer=optimizer).write(path)
    other = nn.Sequential([nn.Dense(5, activation="relu"), nn.Dense(2)])
    other(X)
    fresh_optimizer = nn.AdamOptimizer(0.01)
    with pytest.raises(CheckpointError):
        Checkpoint(model=other, optimizer=fresh_optimizer).restore(path)
    assert fresh_optimizer.variables() == []


def test_missing_and_unknown_values_are_named_by_assert_consumed(tmp_path: Path) -> None:
    a, b = Variable(1.0), Variable(2.0)
    only_a, both = tmp_path / "only_a", tmp_path / "both"
    Checkpoint(a=Variable(7.0)).write(only_a)
    Checkpoint(a=Variable(5.0), b=Variable(6.0)).write(both)
    status = Checkpoint(a=a, b=b).restore(only_a)
    assert float(a) == 7.0  # what matched is restored, as in TensorFlow 2
    with pytest.raises(CheckpointError, match=r"variables with no value in the file: \['b'\]"):
        status.assert_consumed()
    status = Checkpoint(a=a).restore(both).expect_partial()
    with pytest.raises(CheckpointError, match=r"values in the file with no variable: \['b'\]"):
        status.assert_consumed()
    assert (float(a), float(b)) == (5.0, 2.0)


def test_unmatched_values_warn_unless_partial_restores_are_expected(tmp_path: Path) -> None:
    path = Checkpoint(a=Variable(5.0), b=Variable(6.0)).write(tmp_path / "both")
    with pytest.warns(CheckpointWarning, match=r"values in the file with no variable: \['b'\]"):
        Checkpoint(a=Variable(1.0)).restore(path)  # the status, dropped at once, warns
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Checkpoint(a=Variable(1.0)).restore(path).expect_partial()
        Checkpoint(a=Variable(1.0), b=Variable(2.0)).restore(path)  # all matched


def test_a_full_restore_passes_assert_consumed(tmp_path: Path) -> None:
    model, optimizer, step = trained()
    checkpoint = Checkpoint(model=model, optimizer=optimizer, step=step)
    path = checkpoint.write(tmp_path / "ckpt")
    status = checkpoint.restore(path)
    assert status.assert_consumed() is status
    # 4 weights, Adam's m and v for each, its rate, step count and two powers, and the step
    assert repr(status) == "<CheckpointLoadStatus: 17 restored, 0 unmatched, 0 waiting>"


# --- bad files ------------------------------------------------------------------------------
def test_truncated_file_names_the_file_and_changes_nothing(tmp_path: Path) -> None:
    model, optimizer, step = trained()
    checkpoint = Checkpoint(model=model, optimizer=optimizer, step=step)
    good = tmp_path / "good"
    checkpoint.write(good)
    data = good.read_bytes()
    truncated = tmp_path / "truncated"
    truncated.write_bytes(data[: len(data) // 2])
    perturb(checkpoint)
    before = snapshot(checkpoint)
    with pytest.raises(CheckpointError, match=re.escape(str(truncated))):
        checkpoint.restore(truncated)
    assert_same(snapshot(checkpoint), before)


def test_text_file_is_not_a_checkpoint(tmp_path: Path) -> None:
    w = Variable([1.0, 2.0])
    path = tmp_path / "notes.txt"
    path.write_text("model/layers/0/kernel = [1, 2]\n")
    with pytest.raises(CheckpointError, match=re.escape(f"{path} is not an eagerflow "
                       "checkpoint (not an .npz archive)")):  # fmt: skip
        Checkpoint(w=w).restore(path)
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])


def test_save_into_a_folder_that_does_not_exist_yet_creates_it(tmp_path: Path) -> None:
    w = Variable([1.0, 2.0])
    path = tmp_path / "runs" / "1" / "ckpt.npz"
    assert Checkpoint(w=w).write(path) == str(path)
    w.assign([0.0, 0.0])
    Checkpoint(w=w).restore(path)
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])


def test_save_to_a_folder_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match=re.escape(f"{tmp_path}: it is a folder")):
        Checkpoint(w=Variable([1.0])).write(tmp_path)
    assert list(tmp_path.parent.glob(f".{tmp_path.name}.*")) == []  # no temporary file


def test_npz_without_the_marker_is_not_a_checkpoint(tmp_path: Path) -> None:
    w = Variable([1.0, 2.0])
    path = tmp_path / "foreign.npz"
    np.savez(path, w=np.array([5.0, 6.0]))
    with pytest.raises(CheckpointError, match=re.escape(str(path))) as info:
        Checkpoint(w=w).restore(path)
    assert "not an eagerflow checkpoint" in str(info.value)
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])


def test_npy_file_is_not_a_checkpoint(tmp_path: Path) -> None:
    w = Variable([1.0, 2.0])
    path = tmp_path / "array.npy"
    np.save(path, np.array([5.0, 6.0]))
    with pytest.raises(CheckpointError, match=re.escape(str(path))):
        Checkpoint(w=w).restore(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nothing_here"):
        Checkpoint(w=Variable(1.0)).restore(tmp_path / "nothing_here")


# --- atomic save ----------------------------------------------------------------------------
def test_a_failed_save_keeps_the_old_checkpoint_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = Variable(np.arange(1000, dtype=np.float64))
    checkpoint = Checkpoint(w=w)
    path = tmp_path / "ckpt"
    checkpoint.write(path)
    old = path.read_bytes()

    def failing_savez(file, *args, **kwargs) -> None:
        file.write(b"PK\x03\x04 half a zip")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", failing_savez)
    w.assign(np.zeros(1000))
    with pytest.raises(OSError, match="disk full"):
        checkpoint.write(path)
    assert path.read_bytes() == old
    assert os.listdir(tmp_path) == ["ckpt"]


def test_save_overwrites_an_existing_checkpoint(tmp_path: Path) -> None:
    w = Variable(1.0)
    path = tmp_path / "ckpt"
    Checkpoint(w=w).write(path)
    w.assign(2.0)
    Checkpoint(w=w).write(path)
    w.assign(3.0)
    Checkpoint(w=w).restore(path)
    assert float(w) == 2.0
    assert os.listdir(tmp_path) == ["ckpt"]


# --- graph mode -----------------------------------------------------------------------------
def graph_model():
    g = Graph()
    with g.as_default():
        model = nn.Sequential([nn.Dense(4, activation="relu"), nn.Dense(2)])
        x = placeholder(ef.float32, (None, 3))
        out = model(x)
        init = global_variables_initializer()
    return g, model, x, out, init


def test_graph_mode_save_and_restore_with_a_session(tmp_path: Path) -> None:
    g, model, x, out, init = graph_model()
    checkpoint = Checkpoint(model=model)
    path = tmp_path / "ckpt"
    with Session(g) as session:
        session.run(init)
        saved = session.run(model.variables)
        expected = session.run(out, {x: X})
        checkpoint.write(path, session=session)
    with np.load(path, allow_pickle=False) as data:
        np.testing.assert_array_equal(data["model/layers/0/kernel"], saved[0])
    with Session(g) as session:  # a new Session: restoring stands in for the initializer
        checkpoint.restore(path, session=session)
        for value, variable in zip(saved, model.variables, strict=True):
            assert np.array_equal(session.run(variable), value)
        np.testing.assert_array_equal(session.run(out, {x: X}), expected)


def test_graph_variables_need_a_session(tmp_path: Path) -> None:
    _, model, _, _, _ = graph_model()
    with pytest.raises(CheckpointError, match="session"):
        Checkpoint(model=model).write(tmp_path / "ckpt")
    eager_model = nn.Sequential([nn.Dense(4, activation="relu"), nn.Dense(2)])
    eager_model(X)
    Checkpoint(model=eager_model).write(tmp_path / "ckpt")
    with pytest.raises(CheckpointError, match="session"):
        Checkpoint(model=model).restore(tmp_path / "ckpt")


def test_eager_checkpoint_restores_into_a_graph_model(tmp_path: Path) -> None:
    eager_model, _, _ = trained()
    path = tmp_path / "ckpt"
    Checkpoint(model=eager_model).write(path)
    g, model, x, out, _ = graph_model()
    with Session(g) as session:
        Checkpoint(model=model).restore(path, session=session)
        np.testing.assert_allclose(session.run(out, {x: X}), eager_model(X).numpy(),
                                   rtol=1e-6, atol=1e-7)  # fmt: skip


# --- construction ---------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [42, "model", np.zeros(3), [Variable(1.0)]])
def test_checkpoint_rejects_objects_without_variables(bad) -> None:
    with pytest.raises(TypeError, match="'model'"):
        Checkpoint(model=bad)


def test_a_checkpoint_of_another_format_version_is_refused(tmp_path):

    step = Variable(3, name="step")
    path = tmp_path / "future.npz"
    np.savez(path, __eagerflow_checkpoint__=np.array(99), step=np.array(7, np.int32))
    with pytest.raises(nn.CheckpointError, match="format 99"):
        nn.Checkpoint(step=step).restore(path)
    assert int(step) == 3


def test_another_optimizers_slots_are_not_matched(tmp_path):
    w = Variable([1.0, 2.0], name="w")
    momentum = nn.MomentumOptimizer(0.1, 0.9)
    momentum.apply_gradients([(ef.constant([1.0, 1.0]), w)])
    path = nn.Checkpoint(w=w, optimizer=momentum).write(tmp_path / "ckpt.npz")
    before = w.numpy()
    w.assign([5.0, 5.0])
    adam = nn.AdamOptimizer()
    status = nn.Checkpoint(w=w, optimizer=adam).restore(path).expect_partial()
    with pytest.raises(nn.CheckpointError, match=r"optimizer/slots/w/momentum"):
        status.assert_consumed()
    assert adam.slots() == []  # no Adam slot was made from a Momentum one
    assert set(adam.non_slots()) == {"learning_rate", "iterations"}  # every optimizer's two
    np.testing.assert_array_equal(w.numpy(), before)


# --- partial restores, as in TensorFlow 2 ---------------------------------------------------
def unbuilt(units: int = 4) -> nn.Sequential:
    return nn.Sequential([nn.Dense(units, activation="relu"), nn.Dense(2)])


def test_a_model_alone_restores_from_a_checkpoint_with_optimizer_state(tmp_path: Path) -> None:
    model, optimizer, step = trained()
    path = Checkpoint(model=model, optimizer=optimizer, step=step).write(tmp_path / "ckpt")
    fresh = unbuilt()
    fresh(X)
    status = Checkpoint(model=fresh).restore(path).expect_partial()
    np.testing.assert_array_equal(fresh(X).numpy(), model(X).numpy())
    with pytest.raises(CheckpointError, match=r"no variable: \['optimizer/beta1_power'") as info:
        status.assert_consumed()
    assert "'step'" in str(info.value) and "optimizer/slots/model/layers/0/kernel/m" in str(
        info.value
    )


def test_restore_into_a_model_not_built_yet_waits_for_its_variables(tmp_path: Path) -> None:
    model, _, _ = trained()
    path = Checkpoint(model=model).write(tmp_path / "ckpt")
    fresh = unbuilt()
    status = Checkpoint(model=fresh).restore(path)
    assert fresh.variables == []
    with pytest.raises(CheckpointError, match=r"waiting for variables.*model/layers/0/kernel"):
        status.assert_consumed()
    assert "4 waiting" in repr(status)
    np.testing.assert_array_equal(fresh(X).numpy(), model(X).numpy())  # built: restored
    assert status.assert_consumed() is status
    for a, b in zip(fresh.variables, model.variables, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_waiting_values_are_applied_by_build_called_by_hand(tmp_path: Path) -> None:
    model, _, _ = trained()
    path = Checkpoint(model=model).write(tmp_path / "ckpt")
    fresh = unbuilt()
    Checkpoint(model=fresh).restore(path)
    fresh.build((None, 3))
    np.testing.assert_array_equal(fresh.layers[1].bias.numpy(), model.layers[1].bias.numpy())


def test_restore_into_a_model_built_from_its_input_shape_needs_no_call(tmp_path: Path) -> None:
    model, _, _ = trained()
    path = Checkpoint(model=model).write(tmp_path / "ckpt")
    fresh = nn.Sequential([nn.Dense(4, activation="relu", input_shape=(3,)), nn.Dense(2)])
    Checkpoint(model=fresh).restore(path).assert_consumed()
    np.testing.assert_array_equal(fresh.layers[0].kernel.numpy(), model.layers[0].kernel.numpy())


def test_waiting_optimizer_slots_are_made_when_their_variables_are(tmp_path: Path) -> None:
    """Restore model and Adam before the model is built; after the build, one more step
    gives what the original's next step gives."""
    model, optimizer, _ = trained()
    path = Checkpoint(model=model, optimizer=optimizer).write(tmp_path / "ckpt")
    twin, twin_optimizer = unbuilt(), nn.AdamOptimizer(0.01)
    status = Checkpoint(model=twin, optimizer=twin_optimizer).restore(path)
    assert len(twin_optimizer.slots()) == 0 and len(twin_optimizer.non_slots()) == 4
    twin(X)
    status.assert_consumed()
    assert len(twin_optimizer.slots()) == len(optimizer.slots())
    assert_next_steps_agree(model, optimizer, twin, twin_optimizer)


def test_a_waiting_value_of_another_shape_is_an_error_at_build(tmp_path: Path) -> None:
    model, _, _ = trained(units=4)
    path = Checkpoint(model=model).write(tmp_path / "ckpt")
    other = unbuilt(units=5)
    status = Checkpoint(model=other).restore(path)
    with pytest.raises(CheckpointError, match=re.escape("model/layers/0/kernel")) as info:
        other(X)
    message = str(info.value)
    assert "(3, 4) in the file" in message and "(3, 5) here" in message
    assert any("restoring into layer" in note for note in info.value.__notes__)
    with pytest.raises(CheckpointError, match="waiting"):
        status.assert_consumed()


def test_waiting_values_go_to_the_initializers_of_graph_variables(tmp_path: Path) -> None:
    model, _, _ = trained()
    path = Checkpoint(model=model).write(tmp_path / "ckpt")
    g = Graph()
    with g.as_default():
        fresh = unbuilt()
        status = Checkpoint(model=fresh).restore(path)
        x = placeholder(ef.float32, (None, 3))
        out = fresh(x)  # builds graph variables, whose initializers assign the saved values
        init = global_variables_initializer()
    status.assert_consumed()
    with Session(g) as session:
        session.run(init)
        np.testing.assert_array_equal(session.run(out, {x: X}), model(X).numpy())


def test_waiting_values_are_restored_when_a_function_builds_the_model(tmp_path: Path) -> None:
    model, _, _ = trained()
    path = Checkpoint(model=model).write(tmp_path / "ckpt")
    fresh = unbuilt()
    status = Checkpoint(model=fresh).restore(path)
    out = function(lambda x: fresh(x))(ef.constant(X))
    np.testing.assert_array_equal(out.numpy(), model(X).numpy())
    status.assert_consumed()


def test_a_value_for_a_layer_that_is_built_and_lacks_it_is_unmatched(tmp_path: Path) -> None:
    model, _, _ = trained()
    path = Checkpoint(model=model).write(tmp_path / "ckpt")
    shorter = nn.Sequential([nn.Dense(4, activation="relu", input_shape=(3,))])
    with pytest.warns(CheckpointWarning, match=r"model/layers/1/bias"):
        Checkpoint(model=shorter).restore(path)


# --- the file format ------------------------------------------------------------------------
def test_a_file_in_the_first_format_restores(tmp_path: Path) -> None:
    """Format 1, as the first Checkpoint wrote it: an .npz of arrays keyed by object paths,
    plus the marker. Written by hand here, so a change of format cannot go unnoticed."""
    rng = np.random.default_rng(5)
    arrays = {
        "model/layers/0/kernel": rng.standard_normal((3, 4)).astype(np.float32),
        "model/layers/0/bias": rng.standard_normal(4).astype(np.float32),
        "model/layers/1/kernel": rng.standard_normal((4, 2)).astype(np.float32),
        "model/layers/1/bias": rng.standard_normal(2).astype(np.float32),
        "step": np.array(7, np.int64),
    }
    path = tmp_path / "old.npz"
    np.savez(path, __eagerflow_checkpoint__=np.array(1), **arrays)
    fresh, step = unbuilt(), Variable(np.int64(0), trainable=False)
    status = Checkpoint(model=fresh, step=step).restore(path)
    fresh(X)
    status.assert_consumed()
    restored = {f"model/{p}": v.numpy() for p, v in fresh.variable_paths()} | {"step": step.numpy()}
    assert_same(restored, arrays)
    Checkpoint(model=fresh, step=step).write(tmp_path / "again.npz")
    with np.load(tmp_path / "again.npz") as again:
        assert sorted(again.files) == sorted([*arrays, "__eagerflow_checkpoint__"])


@pytest.mark.parametrize("built", [True, False], ids=["built", "unbuilt"])
def test_an_optimizer_slot_of_the_wrong_shape_is_refused(tmp_path: Path, built: bool) -> None:
    model, optimizer, _ = trained()
    path = Checkpoint(model=model, optimizer=optimizer).write(tmp_path / "ckpt")
    with np.load(path) as saved:
        arrays = dict(saved)
    arrays["optimizer/slots/model/layers/0/kernel/m"] = np.zeros((7, 7), np.float32)
    with open(path, "wb") as file:
        np.savez(file, **arrays)  # type: ignore[arg-type]
    twin, twin_optimizer = unbuilt(), nn.AdamOptimizer(0.01)
    if built:
        twin(X)
    with pytest.raises(CheckpointError, match=r"kernel/m' is float32 \(7, 7\) in the file"):
        Checkpoint(model=twin, optimizer=twin_optimizer).restore(path).assert_consumed()
    assert twin_optimizer.slots() == []
