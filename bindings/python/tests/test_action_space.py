"""volley.ActionSpace, the package's vl_env_action_t: read from Gymnasium-style
spaces by attribute, refused with the reason when volley cannot act in them, the
same space through C's struct, the export's dict and the spec's text as the C side
writes it, and actions turned into what an env of each kind takes."""
import numpy as np
import pytest

import volley
from action_envs import MultiDiscrete
from volley.action import CAction
from volley.envs.cartpole import Box, Discrete

A = volley.ActionSpace


def test_spaces_from_their_attributes():
    assert A.from_gym(Discrete(3)) == A.discrete(3)
    assert A.from_gym(Discrete(3, start=-1)).start.tolist() == [-1]
    assert A.from_gym(MultiDiscrete([3, 2])) == A.multi_discrete([3, 2])
    box = A.from_gym(Box(np.array([-1, -2], np.float32), np.array([1, 2], np.float32)))
    assert box == A.box([-1, -2], [1, 2]) and box.outputs == 2 and box.is_box
    assert A.multi_discrete([3, 2]).outputs == 5 and A.discrete(4).outputs == 4
    assert A.box(-1, [1, 2, 3]).low.tolist() == [-1, -1, -1]


@pytest.mark.parametrize("space,words", [
    (Discrete(1), r"Discrete\(1\)\): volley needs at least 2 actions"),
    (MultiDiscrete([3, 1]), r"action dimension 1: 1 choices"),
    (MultiDiscrete(np.full((2, 2), 2)), r"MultiDiscrete of shape \[2, 2\]"),
    (MultiDiscrete(np.full(17, 2)), r"17 dimensions; volley takes 1 \.\. 16"),
    (Box(-1.0, 1.0, shape=(2, 3)), r"Box of shape \[2, 3\]"),
    (Box(-np.inf, 1.0, shape=(1,)), r"box dimension 0: bounds \[-inf, 1.0\]"),
    (Box(-1e39, 2.0, shape=(1,), dtype=np.float64), r"box dimension 0: bounds"),  # float32 inf
    (Box(np.nan, 2.0, shape=(1,)), r"box dimension 0: bounds \[nan, 2.0\]"),
    (Box(np.array([0, 1], np.float32), np.array([1, 1], np.float32)),
     r"box dimension 1: low 1.0 is not below high 1.0"),
    (type("Tuple", (), {})(), r"action space \(Tuple\)"),
])
def test_spaces_volley_cannot_act_in_are_named(space, words):
    with pytest.raises(ValueError, match=words):
        A.from_gym(space)


def test_the_same_space_through_c_the_export_and_text():
    for space, text in ((A.discrete(2), "discrete(2)"),
                        (A.multi_discrete([3, 3, 2]), "multi_discrete(3,3,2)"),
                        (A.box([-1, -2], [1, 2]), "box(2)[-1..1,-2..2]")):
        assert str(space) == text  # vl_action_str's words
        assert A.from_c(space.to_c()) == space
        assert A.from_dict(space.as_dict()) == space and A.of(space.as_dict()) == space
    assert A.box([-1], [1]) != A.box([-1], [2]) and A.discrete(2) != A.multi_discrete([2, 2])
    for bad in ({"kind": "box", "dims": 2, "low": [0], "high": [1]}, {"kind": "lever", "n": [2]},
                {"kind": "discrete"}, {"kind": "discrete", "n": ["x"]}, ["discrete", 2]):
        with pytest.raises(ValueError):
            A.of(bad) if isinstance(bad, dict) else A.from_dict(bad)
    c = CAction()
    c.kind, c.dims = 2, 40  # a struct from C that no space fits
    with pytest.raises(ValueError, match="40 dimensions"):
        A.from_c(c)


def test_actions_as_each_env_takes_them():
    raw = np.array([[2.0, 1.0], [0.0, 0.0]], np.float32)
    md = A.multi_discrete([3, 2], start=[1, -1])
    out = md.to_env(raw)
    assert out.dtype == np.int64 and out.tolist() == [[3, 0], [1, -1]]
    one = A.discrete(3, start=1).to_env_one(np.array([2.0], np.float32))
    assert one == 3 and isinstance(one, int)
    box = A.box([-1, 0], [1, 0.5])
    clipped = box.to_env(np.array([[2.5, -3.0], [0.25, 0.4]], np.float32))
    assert clipped.dtype == np.float32
    assert np.array_equal(clipped, np.array([[1.0, 0.0], [0.25, 0.4]], np.float32))
    assert md.find_bad(raw) is None and box.find_bad([[9.0, -9.0]]) is None  # unclipped is fine
    assert md.find_bad([[3, 0]]) == (0, 0, 3.0)
    assert md.find_bad([[0, 0], [1, 0.5]]) == (1, 1, 0.5)
    i, d, v = box.find_bad([[0, 0], [np.nan, 0]])
    assert (i, d) == (1, 0) and np.isnan(v)
