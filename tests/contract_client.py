#!/usr/bin/python3
"""A volley actor written only from messages/PROTOCOL.md and messages/volley.proto.

No libvolley, no ctypes: Debian's python3-zmq, python3-protobuf and python3-lz4,
and volley_pb2 generated at start with protoc into a temporary directory. It
steps its own CartPole-v1 (Gymnasium's equations, 500-step time limit), runs
the policy net from the Weights it receives, pushes one segment per env every
--horizon steps, beats its spec once a second, and reads the learner's Stats on
topic "~stats" until the mean return over 100 episodes reaches --target.

It speaks schema 3: its Spec and Segments carry the action space (CartPole's
DISCRETE of 2 choices) and actions travel as float32. With --schema2-rounds N
its first N rounds of segments are sent as a sender from before action spaces
wrote them (schema 2: num_actions and int32 actions), which receivers still take.

Exit status: 0 target reached, 1 time out or error, 2 the broker refused our
spec (["REFUSED"]["spec"][reason], printed as "REFUSED spec: <reason>").
"""
import argparse
import math
import operator
import os
import random
import struct
import subprocess
import sys
import tempfile
import time

import lz4.block
import zmq

SCHEMA = 3            # PROTOCOL.md §2: what senders write
SCHEMAS_READ = (2, 3)  # and what a receiver takes
STATS_TOPIC = b"~stats"


def load_pb2(proto):
    """Compiles volley.proto with protoc into a temporary directory and imports it."""
    with tempfile.TemporaryDirectory(prefix="volley_pb2_") as out:
        subprocess.run(["protoc", "--python_out=" + out, "-I",
                        os.path.dirname(os.path.abspath(proto)), os.path.abspath(proto)], check=True)
        sys.path.insert(0, out)
        sys.dont_write_bytecode = True
        import volley_pb2  # noqa: E402  (generated just now)
        sys.path.remove(out)
    return volley_pb2


class CartPole:
    """CartPole-v1 as Gymnasium writes it: Euler steps in float64, float32 observations."""
    GRAVITY, MASSCART, MASSPOLE, LENGTH, FORCE_MAG, TAU = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    TOTAL_MASS = MASSPOLE + MASSCART
    POLEMASS_LENGTH = MASSPOLE * LENGTH
    THETA_LIMIT = 12 * 2 * math.pi / 360
    X_LIMIT = 2.4
    MAX_STEPS = 500   # TimeLimit(max_episode_steps=500): truncation

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.reset()

    def reset(self):
        self.s = [self.rng.uniform(-0.05, 0.05) for _ in range(4)]
        self.steps = 0
        return self.observe()

    def observe(self):
        """Returns (float32 little-endian bytes, the float32 values as floats)."""
        raw = struct.pack("<4f", *self.s)
        return raw, struct.unpack("<4f", raw)

    def step(self, action):
        """Returns reward, terminated, truncated (time limit and not terminated)."""
        x, x_dot, theta, theta_dot = self.s
        force = self.FORCE_MAG if action == 1 else -self.FORCE_MAG
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + self.POLEMASS_LENGTH * (theta_dot * theta_dot) * sintheta) / self.TOTAL_MASS
        thetaacc = (self.GRAVITY * sintheta - costheta * temp) / (
            self.LENGTH * (4.0 / 3.0 - self.MASSPOLE * (costheta * costheta) / self.TOTAL_MASS))
        xacc = temp - self.POLEMASS_LENGTH * thetaacc * costheta / self.TOTAL_MASS
        x = x + self.TAU * x_dot
        x_dot = x_dot + self.TAU * xacc
        theta = theta + self.TAU * theta_dot
        theta_dot = theta_dot + self.TAU * thetaacc
        self.s = [x, x_dot, theta, theta_dot]
        self.steps += 1
        terminated = (x < -self.X_LIMIT or x > self.X_LIMIT or
                      theta < -self.THETA_LIMIT or theta > self.THETA_LIMIT)
        truncated = self.steps >= self.MAX_STEPS and not terminated
        return 1.0, terminated, truncated


class Policy:
    """The policy half of volley's net (PROTOCOL.md "The network"): obs -> hidden ->
    hidden -> head outputs, tanh on the hidden layers, weights [out][in] row-major.
    For a discrete space the head has sum(n) logits; when the weights carry the
    statistics tensors (norm.obs.mean, norm.obs.var, norm.state) the F32
    observation values are normalised with them first."""

    NORM_EPS, NORM_CLIP, NORM_COUNT0 = 1e-8, 10.0, 1e-4

    def __init__(self, tensors, obs_dim, outputs, hidden):
        want = {"pi.0.weight": (hidden, obs_dim), "pi.0.bias": (hidden,),
                "pi.1.weight": (hidden, hidden), "pi.1.bias": (hidden,),
                "pi.2.weight": (outputs, hidden), "pi.2.bias": (outputs,),
                "v.0.weight": (hidden, obs_dim), "v.0.bias": (hidden,),
                "v.1.weight": (hidden, hidden), "v.1.bias": (hidden,),
                "v.2.weight": (1, hidden), "v.2.bias": (1,)}
        for name, shape in want.items():
            if name not in tensors:
                raise ValueError("weights lack tensor %s" % name)
            if tensors[name][0] != shape:
                raise ValueError("tensor %s is %s, want %s" % (name, tensors[name][0], shape))
        self.norm = None
        stats = ("norm.obs.mean", "norm.obs.var", "norm.state")
        shapes = ((obs_dim,), (obs_dim,), (4,))
        if all(name in tensors and tensors[name][0] == shape for name, shape in zip(stats, shapes)):
            mean, var, state = (tensors[name][1] for name in stats)
            if any(v < 0 for v in var) or not (state[0] > 0 and state[1] > 0 and state[3] >= 0):
                raise ValueError("statistics out of range: a variance < 0 or a count <= 0")
            if state[0] > self.NORM_COUNT0:  # statistics of no observation leave x as it is
                self.norm = [(m, math.sqrt(v + self.NORM_EPS)) for m, v in zip(mean, var)]
        self.layers = []
        for layer in range(3):
            (out, inp), w = tensors["pi.%d.weight" % layer]
            rows = [w[o * inp:(o + 1) * inp] for o in range(out)]
            self.layers.append(list(zip(rows, tensors["pi.%d.bias" % layer][1])))

    def normalised(self, x):
        """x as the net reads it: every value here is F32, so all are normalised."""
        if self.norm is None:
            return x
        c = self.NORM_CLIP
        return [min(c, max(-c, (v - m) / s)) for v, (m, s) in zip(x, self.norm)]

    def logits(self, x):
        mul, tanh = operator.mul, math.tanh
        x = self.normalised(x)
        l0, l1, l2 = self.layers
        h = [tanh(b + sum(map(mul, row, x))) for row, b in l0]
        h = [tanh(b + sum(map(mul, row, h))) for row, b in l1]
        return [b + sum(map(mul, row, h)) for row, b in l2]


def log_softmax(z):
    m = max(z)
    log_sum = math.log(sum(math.exp(v - m) for v in z))
    return [(v - m) - log_sum for v in z]


def decode_weights(pb, body, policy):
    """Parses and checks a Weights message; returns it and {name: (shape, floats)}."""
    w = pb.Weights()
    w.ParseFromString(body)
    if w.schema not in SCHEMAS_READ:
        raise ValueError("schema %d" % w.schema)
    if w.policy_id != policy:
        raise ValueError("policy_id %r" % w.policy_id)
    tensors = {}
    for t in w.tensors:
        n = 1
        for d in t.shape:
            n *= d
        if n == 0 or t.raw_size != 4 * n:
            raise ValueError("tensor %s: raw_size %d for shape %s" % (t.name, t.raw_size, list(t.shape)))
        raw = lz4.block.decompress(t.payload, uncompressed_size=t.raw_size)
        if len(raw) != t.raw_size:
            raise ValueError("tensor %s decompressed to %d bytes" % (t.name, len(raw)))
        values = struct.unpack("<%df" % n, raw)
        if not all(math.isfinite(v) for v in values):
            raise ValueError("tensor %s: non-finite" % t.name)
        tensors[t.name] = (tuple(t.shape), values)
    return w, tensors


class Segment:
    """One env's steps since its last segment was cut."""

    def __init__(self):
        self.obs, self.actions, self.rewards, self.logp, self.dones = [], [], [], [], []
        self.finals, self.ep_returns, self.ep_lengths = [], [], []
        self.version = 0

    def payload(self, horizon, schema):
        """PROTOCOL.md §4: obs, actions (schema 3: float32 [T][dims], dims = 1 here;
        schema 2: int32 [T]), rewards, logp, dones, final observations."""
        T = horizon
        actions = struct.pack("<%d%s" % (T, "f" if schema >= 3 else "i"), *self.actions)
        return b"".join([b"".join(self.obs), actions,
                         struct.pack("<%df" % T, *self.rewards), struct.pack("<%df" % T, *self.logp),
                         bytes(self.dones), b"".join(self.finals)])


class Client:
    def __init__(self, a, pb):
        self.a, self.pb = a, pb
        self.policy = a.policy
        host, _, port = a.broker.rpartition(":")
        base = int(port)
        self.ctx = zmq.Context()
        self.push = self.sock(zmq.PUSH, host, base + 0)
        self.sub = self.sock(zmq.SUB, host, base + 3)
        self.sub.setsockopt(zmq.SUBSCRIBE, self.policy.encode())
        self.sub.setsockopt(zmq.SUBSCRIBE, STATS_TOPIC)
        self.control = self.sock(zmq.DEALER, host, base + 4)
        self.choices = a.choices
        self.action = pb.ActionSpace(kind=pb.DISCRETE, n=[self.choices])
        self.spec = pb.Spec(schema=SCHEMA, policy_id=self.policy, action=self.action,
                            num_actions=self.choices,  # written for a DISCRETE space only
                            horizon=a.horizon, hidden=a.hidden, env="cartpole-python",
                            obs_fields=[pb.ObsField(encoding=pb.F32, shape=[4])])
        self.envs = [CartPole(a.seed * 1000 + i) for i in range(a.envs)]
        self.cur = [e.observe() for e in self.envs]
        self.ep_ret = [0.0] * a.envs
        self.ep_len = [0] * a.envs
        self.segs = [Segment() for _ in range(a.envs)]
        self.rng = random.Random(a.seed)
        self.net = None
        self.version = None
        self.applied = []             # versions applied, in order
        self.normalising = 0          # of them, weights whose statistics normalise observations
        self.apply_ms = []
        self.rounds_on_version = 0
        self.seq = 0
        self.sent = 0
        self.rounds = 0
        self.sent_schema2 = 0
        self.steps = 0
        self.ends = [0, 0, 0]         # dones sent: 0 goes on, 1 terminated, 2 truncated
        self.stats = None             # the learner's last Stats for our policy
        self.beat_at = 0.0
        self.beat_steps = 0
        self.refusals_seen = set()
        self.refused_spec = None
        self.start = time.monotonic()
        self.print_at = self.start

    def sock(self, kind, host, port):
        s = self.ctx.socket(kind)
        s.setsockopt(zmq.LINGER, 1000)
        s.setsockopt(zmq.HEARTBEAT_IVL, 1000)
        s.setsockopt(zmq.HEARTBEAT_TIMEOUT, 4000)
        s.setsockopt(zmq.HEARTBEAT_TTL, 6000)
        s.setsockopt(zmq.RECONNECT_IVL, 100)
        s.setsockopt(zmq.RECONNECT_IVL_MAX, 5000)
        s.connect("tcp://%s:%d" % (host, port))
        return s

    # --- control port: beats out, refusals in
    def beat(self, force=False):
        now = time.monotonic()
        if not force and now - self.beat_at < 1.0:
            return
        sps = (self.steps - self.beat_steps) / (now - self.beat_at) if self.beat_at else 0.0
        ms = self.apply_ms
        b = self.pb.Beat(schema=SCHEMA, policy_id=self.policy, actor_id=self.a.id,
                         segments_sent=self.sent, weights_version=self.version or 0,
                         apply_ms=sum(ms) / len(ms) if ms else 0.0, apply_ms_max=max(ms) if ms else 0.0,
                         env_steps_per_s=sps, spec=self.spec)
        try:
            self.control.send_multipart([b"BEAT", b.SerializeToString()], zmq.NOBLOCK)
        except zmq.Again:
            pass  # beats are news: one lost is replaced a second later
        self.beat_at, self.beat_steps, self.apply_ms = now, self.steps, []

    def read_control(self):
        while True:
            try:
                frames = self.control.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            text = [f.decode("ascii", "replace") for f in frames]
            if len(text) == 3 and text[0] == "REFUSED":
                if text[1] == "spec":
                    print("REFUSED spec: %s" % text[2], flush=True)
                    self.refused_spec = text[2]
                elif text[2] not in self.refusals_seen:
                    self.refusals_seen.add(text[2])
                    print("REFUSED %s: %s" % (text[1], text[2]), flush=True)
            else:
                print("control: unexpected %r" % (text,), flush=True)

    # --- weights and stats
    def poll_sub(self, timeout_ms):
        """Takes every waiting publication, waiting up to timeout_ms for the first.
        Returns True if new weights were applied."""
        new = False
        if not self.sub.poll(timeout_ms):
            return False
        while True:
            try:
                frames = self.sub.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return new
            if len(frames) != 2:
                continue
            topic, body = frames
            if topic == STATS_TOPIC:
                st = self.pb.Stats()
                try:
                    st.ParseFromString(body)
                except Exception:
                    continue
                if st.schema in SCHEMAS_READ and st.policy_id == self.policy:
                    self.stats = st
            elif topic == self.policy.encode():   # exact: subscriptions are prefixes
                new |= self.apply(body)

    def apply(self, body):
        try:
            w, tensors = decode_weights(self.pb, body, self.policy)
            if self.version is not None and w.version == self.version:
                return False  # a republication or the last-value cache again
            net = Policy(tensors, 4, self.choices, self.a.hidden)
        except Exception as e:  # noqa: BLE001  hostile input is dropped, not fatal
            print("ignoring weights: %s" % e, flush=True)
            return False
        if self.applied and w.version < self.applied[-1]:
            print("weights version went down: %d after %d (learner restarted?)" %
                  (w.version, self.applied[-1]), flush=True)
        self.net, self.version = net, w.version
        self.applied.append(w.version)
        self.normalising += net.norm is not None
        self.rounds_on_version = 0
        if w.publish_ns:
            ms = (time.time_ns() - w.publish_ns) / 1e6
            if ms >= 0:
                self.apply_ms.append(ms)
        return True

    # --- acting
    def step_all(self, t):
        rng, net = self.rng, self.net
        for i, env in enumerate(self.envs):
            raw, x = self.cur[i]
            seg = self.segs[i]
            if t == 0:
                seg.version = self.version  # the weights acting at the segment's first step
            logp = log_softmax(net.logits(x))
            u, acc, a = rng.random(), 0.0, 0
            for a in range(len(logp) - 1):
                acc += math.exp(logp[a])
                if u < acc:
                    break
            else:
                a = len(logp) - 1
            reward, term, trunc = env.step(a)
            seg.obs.append(raw)
            seg.actions.append(a)  # packed as float32 (schema 3) or int32 (schema 2)
            seg.rewards.append(reward)
            seg.logp.append(logp[a])
            self.ep_ret[i] += reward
            self.ep_len[i] += 1
            if term or trunc:
                seg.dones.append(1 if term else 2)
                self.ends[seg.dones[-1]] += 1
                if trunc:
                    seg.finals.append(env.observe()[0])  # where the time limit cut it
                seg.ep_returns.append(self.ep_ret[i])
                seg.ep_lengths.append(self.ep_len[i])
                self.ep_ret[i], self.ep_len[i] = 0.0, 0
                self.cur[i] = env.reset()               # obs[t+1]: the next episode's first
            else:
                seg.dones.append(0)
                self.cur[i] = env.observe()
        self.steps += len(self.envs)

    def segment_msg(self, i, seg, schema):
        """Segment i as one message of the given schema: 3 carries the action space, 2 (a
        sender from before action spaces) num_actions."""
        T = self.a.horizon
        payload = seg.payload(T, schema)
        block = lz4.block.compress(payload, store_size=False)
        msg = self.pb.Segment(
            schema=schema, actor_id=self.a.id, env_id=i, seq=self.seq, policy_id=self.policy,
            policy_version=seg.version, horizon=T,
            obs_fields=[self.pb.ObsField(encoding=self.pb.F32, shape=[4])],
            raw_size=len(payload), payload=block, episode_returns=seg.ep_returns,
            episode_lengths=seg.ep_lengths, send_ns=time.time_ns(), truncations=len(seg.finals))
        if schema >= 3:
            msg.action.CopyFrom(self.action)
        else:
            msg.num_actions = self.choices
        return msg.SerializeToString()

    def send_segments(self):
        schema = 2 if self.rounds < self.a.schema2_rounds else SCHEMA
        for i, seg in enumerate(self.segs):
            seg.obs.append(self.cur[i][0])  # bootstrap observation obs[T]
            data = self.segment_msg(i, seg, schema)
            while True:
                try:
                    self.push.send(data, zmq.NOBLOCK)
                    break
                except zmq.Again:  # the broker takes nothing now: keep beating
                    self.beat()
                    self.read_control()
                    if self.refused_spec is not None:
                        return
                    time.sleep(0.01)
            self.seq += 1
            self.sent += 1
            self.sent_schema2 += schema == 2
            self.segs[i] = Segment()
        self.rounds += 1

    def progress(self, force=False):
        now = time.monotonic()
        if not force and now - self.print_at < self.a.print_every:
            return
        self.print_at = now
        el = now - self.start
        st = self.stats
        learner = ("learner: version=%d return=%.1f window=%d episodes=%d env_steps=%d trained=%d "
                   "dropped=%d" % (st.version, st.mean_return, st.window, st.episodes, st.env_steps,
                                   st.segments_trained, st.segments_dropped)) if st else "learner: -"
        print("t=%.1fs steps=%d sps=%.0f segments=%d weights=%s applied=%d | %s" %
              (el, self.steps, self.steps / el if el else 0, self.sent, self.version,
               len(self.applied), learner), flush=True)

    def settle(self, timeout=3.0):
        """Stops acting until the learner's Stats count every step we sent (or timeout), so
        the verdict is on everything we pushed. Returns reached() on those stats."""
        until = time.monotonic() + timeout
        while time.monotonic() < until and (self.stats is None or self.stats.env_steps < self.steps):
            self.poll_sub(100)
            self.beat()
        return self.reached()

    def reached(self):
        st = self.stats
        return st is not None and st.window >= 100 and st.mean_return >= self.a.target

    def run(self):
        a = self.a
        deadline = self.start + a.max_seconds
        self.beat(force=True)
        while self.net is None:
            self.poll_sub(200)
            self.beat()
            self.read_control()
            if self.refused_spec is not None:
                return 2
            if time.monotonic() > deadline:
                print("no weights for policy '%s' within %d s" % (self.policy, a.max_seconds))
                return 1
        print("acting for policy '%s' with %d envs, horizon %d, hidden %d, from weights version %d" %
              (self.policy, a.envs, a.horizon, a.hidden, self.version), flush=True)
        while True:
            for t in range(a.horizon):
                self.poll_sub(0)
                self.beat()
                self.step_all(t)
            self.read_control()
            if self.refused_spec is not None:
                return 2
            self.send_segments()
            self.rounds_on_version += 1
            # pacing: after --max-ahead rounds on one version, wait up to --wait-ms for newer
            wait_until = time.monotonic() + a.wait_ms / 1000.0
            while a.max_ahead and self.rounds_on_version >= a.max_ahead:
                left = wait_until - time.monotonic()
                if left <= 0:
                    break
                self.poll_sub(int(min(left, 1.0) * 1000) + 1)
                self.beat()
            self.read_control()
            if self.refused_spec is not None:
                return 2
            self.progress()
            if self.reached() and self.settle():
                el = time.monotonic() - self.start
                self.progress(force=True)
                print("reached: mean return %.1f over %d episodes at weights version %d; the "
                      "learner ingested %d env steps, we stepped %d in %.1f s (%.0f steps/s)" %
                      (self.stats.mean_return, self.stats.window, self.stats.version,
                       self.stats.env_steps, self.steps, el, self.steps / el), flush=True)
                return 0
            if self.steps >= a.max_steps:
                self.progress(force=True)
                print("not reached within %d env steps" % a.max_steps, flush=True)
                return 1
            if time.monotonic() > deadline:
                self.progress(force=True)
                print("hung: not reached within %d s, %d of its %d env steps stepped" %
                      (a.max_seconds, self.steps, a.max_steps), flush=True)
                return 1

    def summary(self):
        print("segments sent: %d, %d of them in schema 2" % (self.sent, self.sent_schema2))
        print("episodes ended: %d terminated (done 1), %d truncated at %d steps (done 2, with "
              "their final observations)" % (self.ends[1], self.ends[2], CartPole.MAX_STEPS))
        v = self.applied
        up = all(b > c for b, c in zip(v[1:], v))
        print("weights applied: %d versions, first %s, last %s, each newer than the last: %s" %
              (len(v), v[0] if v else "-", v[-1] if v else "-", "yes" if up else "no"))
        print("weights normalising observations: %d of %d" % (self.normalising, len(v)), flush=True)

    def close(self):
        for s in (self.push, self.sub, self.control):
            s.close()
        self.ctx.term()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--broker", required=True, help="HOST:PORT (base port)")
    p.add_argument("--policy", default="default")
    p.add_argument("--proto", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "..", "messages", "volley.proto"))
    p.add_argument("--envs", type=int, default=16)
    p.add_argument("--horizon", type=int, default=64)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--id", type=int, default=os.getpid())
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-ahead", type=int, default=1)
    p.add_argument("--wait-ms", type=int, default=500)
    p.add_argument("--target", type=float, default=475.0)
    p.add_argument("--max-steps", type=int, default=2000000,
                   help="env steps within which --target must be reached")
    p.add_argument("--max-seconds", type=float, default=900,
                   help="a hang guard far above the seconds --max-steps takes")
    p.add_argument("--print-every", type=float, default=2.0)
    p.add_argument("--choices", type=int, default=2,
                   help="declare the space DISCRETE(N): CartPole's is 2 (push left 0, right 1); "
                        "another N (choices other than 1 push left) is one its learner refuses")
    p.add_argument("--schema2-rounds", type=int, default=0,
                   help="send the first N rounds of segments in schema 2 (int32 actions)")
    a = p.parse_args()
    pb = load_pb2(a.proto)
    c = Client(a, pb)
    try:
        rc = c.run()
    except KeyboardInterrupt:
        rc = 130
    c.summary()
    c.close()
    return rc


if __name__ == "__main__":
    sys.exit(main())
