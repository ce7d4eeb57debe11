"""The device the user holds is the device used: `--device cuda` where this
Python's torch has no CUDA is one line and exit 2, naming the torch found
and how to get a CUDA one; a device left unset is logged, with a warning
when it is the CPU while an NVIDIA GPU is visible; on CUDA the learner's
minibatch defaults to 2048; and `volley up --learner torch` takes
--device, --compile and --amp to the learner's command line (refused
without --learner torch)."""
import os
import re
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (Debian: python3-torch)")

from procs import REPO, VOLLEY  # noqa: E402
from volley.torch.learner import CUDA_MINIBATCH, TorchOptions, minibatch_for  # noqa: E402

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="this torch has CUDA and a GPU")


def env_here(**more):
    """The environment for a child: this checkout's package, this Python for up's learner."""
    e = dict(os.environ, PYTHONPATH=str(REPO / "bindings" / "python"), VOLLEY_PYTHON=sys.executable)
    e.update(more)
    return e


@no_cuda
@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_cuda_without_cuda_is_one_line_and_exit_2(device):
    out = subprocess.run([sys.executable, "-m", "volley", "learner", "--torch", "--device", device,
                          "--broker", "127.0.0.1:1"], capture_output=True, text=True,
                         env=env_here(), timeout=60)
    lines = out.stderr.splitlines()
    assert out.returncode == 2 and len(lines) == 1 and not out.stdout, out
    assert lines[0].startswith(f"volley learner --torch: --device {device}: this Python's torch "
                               f"{torch.__version__} ({os.path.dirname(torch.__file__)})"), lines
    assert "CUDA" in lines[0] and "pip install" in lines[0] and "VOLLEY_PYTHON" in lines[0]


@no_cuda
def test_an_unset_device_is_logged_with_a_warning_when_a_gpu_is_visible(monkeypatch, capsys):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    opts = TorchOptions()
    assert opts.choose() == torch.device("cpu") and opts.device == "cpu"
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and re.search(r"learner\[\d+\] info: device cpu \(--device unset", err[0])
    assert " warning: an NVIDIA GPU is visible (CUDA_VISIBLE_DEVICES=0) but not used: " in err[1]
    assert f"torch {torch.__version__}" in err[1] and "no CUDA" in err[1]


def test_a_given_device_is_used_as_given_without_a_word(capsys):
    opts = TorchOptions(device="cpu")
    assert opts.choose() == torch.device("cpu") and capsys.readouterr().err == ""


def test_minibatch_defaults_to_2048_on_cuda_only():
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert CUDA_MINIBATCH == 2048
    assert minibatch_for(cuda, ["--broker", "h", "--batch", "64"]) == 2048
    assert minibatch_for(torch.device("cuda:1"), []) == 2048
    for given in (["--minibatch", "512"], ["--minibatch=512"], ["--mini", "512"]):
        assert minibatch_for(cuda, given) is None, given
    assert minibatch_for(cpu, []) is None
    assert minibatch_for(cuda, ["--max-steps", "9"]) == 2048  # another flag of the same letters


def up(tmp_path, *args):
    return subprocess.run([VOLLEY, "up", *args], capture_output=True, text=True, cwd=tmp_path,
                          env=env_here(), timeout=180)


def section(text, name):
    """The lines of [name] in a config.ini."""
    part = text.split(f"[{name}]\n", 1)[1]
    return part.split("\n[", 1)[0].splitlines()


def test_up_takes_the_torch_flags_to_the_learner(tmp_path):
    out = up(tmp_path, "--learner", "torch", "--device", "cpu", "--compile", "--amp", "bf16",
             "--until", "steps", "--max-steps", "1024", "--actors", "1", "--envs", "4",
             "--name", "flags")
    config = (tmp_path / "runs" / "flags" / "config.ini").read_text()
    command = section(config, "learner")[0]
    assert " -m volley learner --torch " in command, config
    assert command.endswith(" --device cpu --compile --amp bf16") or \
        " --device cpu --compile --amp bf16 " in command, command
    kept = section(config, "up")
    assert {"device = cpu", "compile = true", "amp = bf16"} <= set(kept), kept
    # the torch learner sizes its minibatch for its device unless told
    assert not any(k.startswith("minibatch =") for k in kept), kept
    if not hasattr(torch, "compile"):  # PyTorch 1: --compile reached the learner, which refuses it
        assert out.returncode == 1, out
        said = "the learner said: volley learner --torch: --compile: torch.compile needs PyTorch 2"
        assert said in out.stderr and out.stderr.count("the learner said: ") == 1, out.stderr


@pytest.mark.parametrize("flag", [["--device", "cpu"], ["--compile"], ["--amp", "bf16"]])
def test_up_refuses_the_torch_flags_for_the_c_learner(tmp_path, flag):
    out = up(tmp_path, *flag)
    assert out.returncode == 2 and not out.stdout, out
    assert out.stderr.splitlines() == [f"volley up: {flag[0]} is the PyTorch learner's: add "
                                       "--learner torch (the C learner runs on the CPU)"]
    assert not (tmp_path / "runs").exists()


def test_up_refuses_an_amp_it_does_not_offer(tmp_path):
    out = up(tmp_path, "--learner", "torch", "--amp", "fp16")
    assert out.returncode == 2 and out.stderr == "volley up: --amp wants bf16, not 'fp16'\n", out


def test_up_help_lists_the_torch_flags(tmp_path):
    out = up(tmp_path, "--help")
    entries = re.findall(r"^  (--[a-z-]+)", out.stdout, re.M)
    assert {"--device", "--compile", "--amp", "--learner"} <= set(entries), entries
