"""volley.ReplayBuffer over include/volley/replay.h. Skipped, with the reason,
while the libvolley under test has no vl_rbuf_* (store/vl_rbuf.c)."""
import threading

import numpy as np
import pytest

import volley

pytestmark = pytest.mark.skipif(
    not volley.HAVE_REPLAY,
    reason=f"{volley.lib_path} has no vl_rbuf_new: store/vl_rbuf.c has not landed")

FIELDS = {
    "id": ((), np.int64),
    "obs": ((4, 3), np.float32),
    "frame": ((2, 2, 2), np.uint8),
    "act": ((), np.int32),
    "ret": ((2,), np.float64),
}


def rows(ids):
    """Rows whose every field is a function of their id, so any row read back
    can be checked whole."""
    ids = np.asarray(ids, np.int64)
    n = ids.size
    return {
        "id": ids,
        "obs": (ids[:, None, None] * 0.5 + np.arange(12).reshape(1, 4, 3)).astype(np.float32),
        "frame": ((ids[:, None, None, None] + np.arange(8).reshape(1, 2, 2, 2)) % 251)
        .astype(np.uint8),
        "act": (ids % 7).astype(np.int32),
        "ret": np.stack([ids * 0.25, -ids * 1.5], axis=1).reshape(n, 2),
    }


def check_whole(got):
    """Every row of got (a dict of fields) is the row its id says."""
    want = rows(got["id"])
    for name in FIELDS:
        assert got[name].dtype == np.dtype(FIELDS[name][1]), name
        assert np.array_equal(got[name], want[name]), name


def test_round_trip_of_several_dtypes():
    buf = volley.ReplayBuffer(64, FIELDS, seed=3)
    assert len(buf) == 0 and buf.capacity == 64 and list(buf.fields) == list(FIELDS)
    buf.add_batch(rows(range(10)))
    buf.add_batch(**rows(range(10, 25)))
    assert len(buf) == 25
    views = {name: buf.fields[name][:25] for name in FIELDS}
    check_whole(views)
    assert sorted(views["id"]) == list(range(25))
    got = buf.sample(200)
    assert set(got) == set(FIELDS) and got["obs"].shape == (200, 4, 3)
    check_whole(got)
    assert set(got["id"]) <= set(range(25))


def test_a_full_ring_keeps_the_newest():
    buf = volley.ReplayBuffer(8, FIELDS)
    firsts = [buf.add_batch(rows(range(k, k + 3))) for k in range(0, 21, 3)]
    assert firsts == [k % 8 for k in range(0, 21, 3)] and len(buf) == 8
    assert sorted(buf.fields["id"]) == list(range(13, 21))
    buf.add_batch(rows(range(100, 120)))  # more than capacity at once: its last 8 stay
    assert sorted(buf.fields["id"]) == list(range(112, 120))
    check_whole({name: buf.fields[name] for name in FIELDS})


def test_fields_are_read_only_views_not_copies():
    buf = volley.ReplayBuffer(8, FIELDS)
    obs = buf.fields["obs"]
    assert obs.shape == (8, 4, 3) and not obs.flags.writeable
    with pytest.raises(ValueError):
        obs[0, 0, 0] = 1
    buf.add_batch(rows([42]))
    row = int(np.flatnonzero(buf.fields["id"] == 42)[0])
    assert obs[row, 0, 0] == 21.0  # the earlier view sees the add: it is the storage
    assert np.shares_memory(obs, buf.fields["obs"])
    del buf  # the view holds the buffer alive
    assert obs[row, 0, 0] == 21.0


def test_prioritized_sample_and_update():
    buf = volley.ReplayBuffer(32, FIELDS, seed=5)
    buf.add_batch(rows(range(32)))
    got = buf.sample(64, beta=0.5)
    assert got["indices"].dtype == np.uint64 and got["weights"].dtype == np.float32
    assert got["weights"].max() == 1.0
    check_whole(got)
    ids = buf.fields["id"]
    assert np.array_equal(ids[got["indices"]], got["id"])
    # all rows but one to priority 0: only that one is drawn
    keep = int(got["indices"][0])
    buf.update_priorities(np.arange(32), 0.0)
    buf.update_priorities([keep], [3.0])
    again = buf.sample(50, beta=1.0)
    assert np.all(again["indices"] == keep) and np.all(again["weights"] == 1.0)
    with pytest.raises(ValueError, match=r"priorities: expected >= 0 and finite"):
        buf.update_priorities([0], [np.inf])
    with pytest.raises(IndexError, match=r"indices: row 32 holds no sample \(rows 0 .. 31 do\)"):
        buf.update_priorities([32], [1.0])


def test_threads_adding_at_once_keep_every_row():
    threads_n, batches, batch = 4, 50, 16
    buf = volley.ReplayBuffer(threads_n * batches * batch, FIELDS, seed=7)
    errors = []

    def work(k):
        try:
            for b in range(batches):
                first = (k * batches + b) * batch
                buf.add_batch(rows(range(first, first + batch)))
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(buf) == buf.capacity
    views = {name: buf.fields[name] for name in FIELDS}
    check_whole(views)
    assert np.array_equal(np.sort(views["id"]), np.arange(buf.capacity))


def test_save_load(tmp_path):
    buf = volley.ReplayBuffer(16, FIELDS, seed=9)
    buf.add_batch(rows(range(100, 111)))
    path = tmp_path / "buf.vlrb"
    buf.save(path)
    back = volley.ReplayBuffer.load(path)
    assert len(back) == 11 and back.capacity == 16 and list(back.fields) == list(FIELDS)
    for name in FIELDS:
        assert back.fields[name].dtype == buf.fields[name].dtype
        assert np.array_equal(back.fields[name][:11], buf.fields[name][:11]), name
    check_whole(back.sample(30))
    with pytest.raises(volley.VolleyError, match=r"save: .*buf\.vlrb.*exists"):
        buf.save(path)  # never overwrites


def test_truncated_file_refused_with_its_reason(tmp_path):
    buf = volley.ReplayBuffer(16, FIELDS)
    buf.add_batch(rows(range(16)))
    path = tmp_path / "buf.vlrb"
    buf.save(path)
    data = path.read_bytes()
    cut = tmp_path / "cut.vlrb"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(volley.VolleyError, match=r"load: .*cut\.vlrb: .*trunc"):
        volley.ReplayBuffer.load(cut)
    with pytest.raises(volley.VolleyError, match=r"load: .*missing\.vlrb: .+"):
        volley.ReplayBuffer.load(tmp_path / "missing.vlrb")


def test_wrong_dtype_or_shape_refused_by_name():
    buf = volley.ReplayBuffer(8, FIELDS)
    good = rows(range(4))
    with pytest.raises(TypeError, match=r"field 'obs': expected dtype float32, got float64"):
        buf.add_batch({**good, "obs": good["obs"].astype(np.float64)})
    with pytest.raises(ValueError, match=r"field 'frame': expected shape \(n, 2, 2, 2\), got \(4, 2, 4\)"):
        buf.add_batch({**good, "frame": good["frame"].reshape(4, 2, 4)})
    with pytest.raises(ValueError, match=r"field 'act': 3 rows, field 'id' has 4"):
        buf.add_batch({**good, "act": good["act"][:3]})
    with pytest.raises(ValueError, match=r"field 'ret' is missing"):
        buf.add_batch({k: v for k, v in good.items() if k != "ret"})
    with pytest.raises(ValueError, match=r"unknown field 'rew'"):
        buf.add_batch({**good, "rew": good["act"]})
    assert len(buf) == 0  # nothing refused got in
    with pytest.raises(TypeError, match=r"field 'flag': dtype bool is not one of"):
        volley.ReplayBuffer(8, {"flag": ((), bool)})
    with pytest.raises(ValueError, match=r"field 'x': expected up to 4 dimensions"):
        volley.ReplayBuffer(8, {"x": ((1, 1, 1, 1, 1), np.uint8)})
    with pytest.raises(ValueError, match=r"field 'weights': the name is reserved"):
        volley.ReplayBuffer(8, {"weights": ((), np.float32)})
    with pytest.raises(ValueError, match=r"sample: the buffer is empty"):
        buf.sample(1)


def test_strided_input_is_copied_once_and_accepted():
    buf = volley.ReplayBuffer(8, FIELDS)
    good = rows(range(8))
    buf.add_batch({**good, "obs": np.asfortranarray(good["obs"])})
    check_whole({name: buf.fields[name] for name in FIELDS})
