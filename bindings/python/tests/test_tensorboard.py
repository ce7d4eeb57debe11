"""The event files `volley up` writes (runs/NAME/events.out.tfevents.*) read with
TensorBoard's own reader (from PyPI, in the checkout's .venv): every report in
metrics.jsonl is there as scalars at its env_steps, with the same values (the return and
length once an episode has ended, window > 0; the losses once an update was made, version > 0;
the learner leaves out what it cannot know yet)."""
import json
import subprocess

from conftest import need
from procs import VOLLEY

need("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

TAGS = {"charts/episode_return": "return_mean", "charts/episode_length": "length_mean",
        "losses/policy_loss": "loss_pi", "losses/value_loss": "loss_v",
        "losses/entropy": "entropy", "charts/learning_rate": "lr"}


def test_tensorboard_reads_what_volley_up_wrote(tmp_path):
    r = subprocess.run([VOLLEY, "up", "--runs", str(tmp_path / "runs"), "--name", "tb",
                        "--until", "steps", "--max-steps", "30000", "--port", "0"],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    run = tmp_path / "runs" / "tb"
    reports = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert len(reports) >= 2
    ea = EventAccumulator(str(run), size_guidance={"scalars": 0})
    ea.Reload()
    assert set(TAGS) <= set(ea.Tags()["scalars"]), ea.Tags()
    episodic = ("charts/episode_return", "charts/episode_length")
    for tag, key in TAGS.items():
        events = ea.Scalars(tag)
        want = [m for m in reports if (m["window"] > 0 or tag not in episodic) and
                (m["version"] > 0 or not tag.startswith("losses/"))]
        assert [e.step for e in events] == [m["env_steps"] for m in want], tag
        for e, m in zip(events, want):
            assert abs(e.value - m[key]) <= 1e-6 * max(1.0, abs(m[key])), (tag, e, m)
        assert abs(events[-1].wall_time - reports[-1]["wall_time"]) < 1e-3
