"""volley.torch is one package: volley.torch.model (the network), .engine
(the learner's update) and .learner (TorchLearner, `python3 -m volley
learner --torch`), each imported once, none through another; the names
users import from volley.torch are its submodules' objects; the former
module paths volley.torch_engine and volley.torch_learner name the same
objects; `import volley` alone never imports torch, and inside volley.torch
`torch` is PyTorch."""
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")


def test_the_public_names_are_the_submodules_objects():
    import torch
    import volley.torch as vt
    from volley.torch import engine, learner, model
    assert vt.build is model.build and vt.VolleyNet is model.VolleyNet
    assert vt.TorchEngine is engine.TorchEngine and vt.TorchLearner is learner.TorchLearner
    assert engine.torch is torch and model.nn is torch.nn  # PyTorch, not volley.torch


def test_the_former_paths_name_the_same_objects():
    import volley.torch_engine as old_engine
    import volley.torch_learner as old_learner
    from volley.torch import engine, learner
    assert old_engine.TorchEngine is engine.TorchEngine and old_engine.OPT_MAGIC == engine.OPT_MAGIC
    assert old_learner.main is learner.main and old_learner.TorchLearner is learner.TorchLearner


def test_import_volley_does_not_import_torch():
    code = "import sys, volley; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stdout + out.stderr
