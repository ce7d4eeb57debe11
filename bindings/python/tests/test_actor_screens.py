"""uint8 screens as users have them: (H, W), (H, W, C) and (C, H, W) Boxes
give one Spec, channels first, and the same rows on the wire; how a screen
is read is said once when the actor starts; a (72, 80, 1) screen is an
image, not 72 channels of 80x1; a u8 screen whose values would fit in two
bits, and a network that flattens a screen, are each said once. End to
end, through a broker to a learner: an HWC screen arrives channels first,
and a learner's MLP over a declared HW screen is named."""
import numpy as np
import pytest

import volley
from actor_envs import Dict
from procs import free_port
from volley.actor import U2, U8
from volley.envs.cartpole import Box, Discrete
from volley.envs.screens import BANK, SHAPE

H, W = SHAPE[1:]

# A Game-Boy-shaped vector env (volley.envs.screens) as other emulators hand their
# screens out: channels last, (H, W, C), or no channel axis at all, (H, W).
WRAPPERS = '''import numpy as np
from volley.envs.cartpole import Box
from volley.envs.screens import ScreensVectorEnv


class Reshaped:
    """ScreensVectorEnv's (1, 72, 80) screens as (72, 80, 2) (the screen, then
    its negative) or (72, 80)."""

    def __init__(self, shape, high, scale):
        self.venv = ScreensVectorEnv(4, scale=scale, seed=0)
        self.num_envs, self.metadata = 4, self.venv.metadata
        self.single_observation_space = Box(0, high, shape, dtype=np.uint8)
        self.single_action_space = self.venv.single_action_space
        self.shape, self.top = shape, 3 * scale

    def _one(self, screen):
        if len(self.shape) == 2:
            return screen[0].copy()
        return np.stack([screen[0], self.top - screen[0]], axis=-1)

    def _all(self, screens):
        return np.stack([self._one(s) for s in screens])

    def reset(self, seed=None, options=None):
        obs, info = self.venv.reset(seed=seed)
        return self._all(obs), info

    def step(self, actions):
        obs, r, te, tr, info = self.venv.step(actions)
        if "final_obs" in info:
            info["final_obs"] = [None if f is None else self._one(f) for f in info["final_obs"]]
        return self._all(obs), r, te, tr, info


def hwc_shades():
    """(72, 80, 2) screens of shades 0, 85, 170, 255 in a Box(0, 255)."""
    return Reshaped((72, 80, 2), 255, 85)


def hw_values():
    """(72, 80) screens of values 0..3 in a Box(0, 255)."""
    return Reshaped((72, 80), 255, 1)
'''


def screens(n=3, c=1, seed=0):
    """n random screens of c channels of values 0..3, channels first."""
    return np.random.default_rng(seed).integers(0, 4, (n, c, H, W)).astype(np.uint8)


def test_three_layouts_give_one_spec_and_the_same_rows():
    chw = screens()
    given = {(1, H, W): chw, (H, W, 1): np.moveaxis(chw, 1, -1), (H, W): chw[:, 0]}
    specs = {shape: volley.spec_from_spaces(Box(0, 3, shape, dtype=np.uint8), Discrete(7))
             for shape in given}
    for shape, spec in specs.items():
        assert [f[:3] for f in spec.fields] == [("", U2, (1, H, W))], shape
        assert spec.obs_dim == H * W
        rows = spec.flatten_batch(given[shape])
        np.testing.assert_array_equal(rows, chw.reshape(3, -1).astype(np.float32), str(shape))
        np.testing.assert_array_equal(spec.flatten(given[shape][1]), rows[1])
    assert [sc.layout for sc in (s.screens[0] for s in specs.values())] == ["CHW", "HWC", "HW"]
    rgb = screens(c=3)
    hwc = volley.spec_from_spaces(Box(0, 255, (H, W, 3), dtype=np.uint8), Discrete(7))
    assert [f[:3] for f in hwc.fields] == [("", U8, (3, H, W))]
    np.testing.assert_array_equal(hwc.flatten_batch(np.moveaxis(rgb, 1, -1)),
                                  rgb.reshape(3, -1).astype(np.float32))
    np.testing.assert_array_equal(hwc.flatten_batch(rgb.reshape(3, -1)),
                                  rgb.reshape(3, -1).astype(np.float32))  # rows: as sent


def test_a_dict_screen_is_transposed_beside_its_other_fields():
    spec = volley.spec_from_spaces(Dict({"screen": Box(0, 3, (H, W, 2), dtype=np.uint8),
                                         "pos": Box(-1.0, 1.0, (2,), dtype=np.float32)}),
                                   Discrete(7))
    assert [f[:3] for f in spec.fields] == [("screen", U2, (2, H, W)),
                                            ("pos", 0, (2,))]
    chw = screens(c=2)
    pos = np.full((3, 2), 0.5, np.float32)
    rows = spec.flatten_batch({"screen": np.moveaxis(chw, 1, -1), "pos": pos})
    np.testing.assert_array_equal(rows[:, :-2], chw.reshape(3, -1))
    np.testing.assert_array_equal(rows[:, -2:], pos)


def test_a_declared_layout_settles_an_ambiguous_shape():
    box = Box(0, 3, (4, 40, 4), dtype=np.uint8)
    detected = volley.spec_from_spaces(box, Discrete(2))
    assert detected.fields[0][2] == (4, 40, 4) and detected.screens[0].how == "ambiguous"
    assert "declare layout='HWC' (--obs-layout HWC)" in detected.screens[0].line(detected)
    declared = volley.spec_from_spaces(box, Discrete(2), layout="HWC")
    assert declared.fields[0][2] == (4, 4, 40)
    assert declared.screens[0].line(declared) == (
        "observations uint8 (4, 40, 4) read as HWC (declared): 4 channels of 4x40, sent as u2 "
        "(Box high 3)")
    with pytest.raises(ValueError, match="layout HW takes 2 dimensions"):
        volley.spec_from_spaces(box, Discrete(2), layout={"": "HW"})
    with pytest.raises(ValueError, match="expected one of HWC, CHW, HW"):
        volley.spec_from_spaces(box, Discrete(2), layout="WHC")


def test_the_layout_is_said_once_and_a_72x80x1_screen_opens(capsys):
    space = Box(0, 3, (H, W, 1), dtype=np.uint8)
    # no broker needs to be up: the actor connects when one comes
    with volley.Actor(f"127.0.0.1:{free_port()}", spec=(space, Discrete(7)), num_envs=2) as a:
        assert a.spec.fields[0][2] == (1, H, W)
    said = capsys.readouterr().err.splitlines()
    assert said == ["volley actor: observations uint8 (72, 80, 1) read as HWC: 1 channel of "
                    "72x80, sent as u2 (Box high 3)"]


def test_act_takes_hwc_screens_as_the_env_gives_them():
    rgb = screens(n=2, c=3)
    space = Box(0, 255, (H, W, 3), dtype=np.uint8)
    with volley.Actor(f"127.0.0.1:{free_port()}", spec=(space, Discrete(7)), num_envs=2) as a:
        a._load(a._obs, "obs", np.moveaxis(rgb, 1, -1))  # the observation path act takes
        np.testing.assert_array_equal(a._obs, rgb.reshape(2, -1))
        a._load(a._obs, "obs", rgb.reshape(2, -1))  # rows: as sent
        np.testing.assert_array_equal(a._obs, rgb.reshape(2, -1))
        with pytest.raises(ValueError, match=r"obs: shape \(2, 5\), expected \(2, 17280\)"):
            a._load(a._obs, "obs", np.zeros((2, 5)))


def test_an_hwc_screen_reaches_the_learner_channels_first(procs, tmp_path):
    (tmp_path / "wrapped.py").write_text(WRAPPERS)
    port = free_port()
    procs.broker(port)
    actor = procs.python("actor", "-m", "volley", "actor", "--env", "wrapped:hwc_shades",
                         "--broker", f"127.0.0.1:{port}", "--horizon", 20, cwd=tmp_path)
    with volley.Learner(f"127.0.0.1:{port}", capacity=8, timeout=30) as learner:
        spec = learner.spec
        assert spec["fields"] == [((2, H, W), "u8")], spec
        assert "conv" in spec["model"], spec  # an image, so volley's cnn
        learner.publish(volley.Model(spec["model"], spec, seed=1).tensors(), 0)
        b = learner.take(4, timeout=30)
        assert b is not None, "no batch came\n" + procs.dump()
    bank = np.random.default_rng(0).integers(0, 4, (BANK,) + SHAPE, dtype=np.uint8) * 85
    known = {bytes(s) for s in bank.reshape(BANK, -1)}
    rows = b.obs.reshape(-1, 2, H * W).astype(np.uint8)  # each row: two whole screens
    assert len(rows) > 4 * 20
    assert all(bytes(r[0]) in known for r in rows), "a screen came transposed"
    np.testing.assert_array_equal(rows[:, 1], 255 - rows[:, 0])
    log = procs.text(actor)
    said = [line for line in log.splitlines() if line.startswith("volley actor:")]
    assert said.count("volley actor: observations uint8 (72, 80, 2) read as HWC: 2 channels of "
                      "72x80, sent as u8 (Box high 255)") == 1, log
    advice = [line for line in said if "travel as u2" in line]
    assert advice == ["volley actor: observations took only the values 0, 85, 170, 255 in the "
                      "first 16 steps, sent as u8 (a byte each): map them to 0..3 (obs // 85) and "
                      "declare the Box's high=3; they then travel as u2, four to a byte"], log
    assert not [line for line in said if "no conv layers" in line], log


def test_a_learners_mlp_over_a_screen_is_said_once(procs, tmp_path):
    (tmp_path / "wrapped.py").write_text(WRAPPERS)
    port = free_port()
    procs.broker(port)
    spec = {"fields": [((1, H, W), "u8")], "num_actions": 7, "horizon": 16, "model": "mlp"}
    with volley.Learner(f"127.0.0.1:{port}", capacity=8, spec=spec, timeout=30) as learner:
        learner.publish(volley.Model("mlp", spec).tensors(), 0)
        actor = procs.python("actor", "-m", "volley", "actor", "--env", "wrapped:hw_values",
                             "--broker", f"127.0.0.1:{port}", "--horizon", 16,
                             "--obs-layout", "HW", cwd=tmp_path)
        b = learner.take(4, timeout=30)
        assert b is not None, "no batch came\n" + procs.dump()
        assert procs.wait_for(actor, "first 16 steps", 10), procs.dump()
    said = [line for line in procs.text(actor).splitlines() if line.startswith("volley actor:")]
    assert said[0] == ("volley actor: observations uint8 (72, 80) read as HW (declared): 1 "
                       "channel of 72x80, sent as u8 (Box high 255)"), said
    mlp = [line for line in said if "no conv layers" in line]
    assert mlp == ["volley actor: the policy's network (its learner's) 'linear(64) tanh "
                   "linear(64) tanh' has no conv layers: it takes the uint8 observations "
                   "(72, 80) as 5760 flat inputs; give model='cnn' (--model cnn) to the actor "
                   "and its learner to read it as an image"], said
    advice = [line for line in said if "travel as u2" in line]
    assert len(advice) == 1 and "declare the Box's high=3 (shades 0..3)" in advice[0], said


def test_torch_model_flag_acts_on_a_screen_with_the_callers_module(monkeypatch, tmp_path):
    pytest.importorskip("volley.torch.actor", reason="volley.torch.actor (and torch) needed")
    from pathlib import Path
    from volley import actor_cmd
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent))  # torch_custom_nets
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "wrapped.py").write_text(WRAPPERS)
    import wrapped
    envs = wrapped.hwc_shades()
    a = actor_cmd.parser().parse_args(["--env", "wrapped:hwc_shades", "--broker", "127.0.0.1",
                                       "--torch-model", "torch_custom_nets:build_cnn"])
    assert a.torch_device == "cpu"
    policy_fn, model = actor_cmd.torch_policy_of(a, envs)
    assert model == "torch:torch_custom_nets:build_cnn"
    obs, _ = envs.reset(seed=1)
    rows = volley.actor._as_spec(envs).flatten_batch(obs)
    actions, logps = policy_fn(rows, volley.Weights())
    assert np.shape(actions) == (4,) and np.all((0 <= actions) & (actions < 7))
    assert np.shape(logps) == (4,) and np.all(np.asarray(logps) <= 0)
    assert "act with your own torch module (MOD:FN builds it from the spec, as the torch " \
        "learner's --torch-model)" in " ".join(actor_cmd.parser().format_help().split())
