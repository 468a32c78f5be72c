"""runtime_work.py — real parallel work on one runtime that reads its count once: the runtime tests' and the bench's program.

    python runtime_work.py RUNTIME ROUNDS [UNTIL]

RUNTIME: polars (rayon), duckdb, onnxruntime, arrow, numba, numexpr. Each round runs the runtime's own
parallel work on seeded data and prints `round=R result=X` and `pool=P round=R`: X the round's result, the same
for every pool size (integers, or floats rounded where the runtime's sums regroup with its threads), P the pool
size the runtime reports it runs (its own answer, never ours; a line of its own, which the bench ignores). Then `done`. UNTIL: a path; after ROUNDS, rounds go
on until it exists.

WORK_THREADS, when set, is the count this script gives the runtimes without a variable of their own, as a
user's script does in code: DuckDB's `SET threads`, pyarrow.set_cpu_count(), onnxruntime's
intra_op_num_threads. The bench's static split and serial runs set it (scaf bench pairs --program NAME).
"""

import os
import sys
import time


def own_count() -> int | None:
    v = os.environ.get("WORK_THREADS")
    return int(v) if v else None


def polars_work():
    import polars as pl

    n = 3_000_000
    df = pl.select(i=pl.int_range(0, n, dtype=pl.Int64)).select(
        k=(pl.col("i") * 7919) % 1009, v=(pl.col("i") * 31) % 1000, w=(pl.col("i") * 104729) % 1000003)

    def one() -> tuple[int, str]:
        g = df.group_by("k").agg(pl.col("v").sum().alias("s"), pl.col("w").max().alias("m")).sort("k")
        s = df.sort(["w", "k"]).head(1000)
        return pl.thread_pool_size(), f"{int(g['s'].sum())}:{int(g['m'].sum())}:{int(s['k'].sum())}:{len(g)}"

    return one


def duckdb_work():
    import duckdb

    c = duckdb.connect()
    if own_count():
        c.execute(f"SET threads = {own_count()}")
    c.execute("CREATE TABLE t AS SELECT (i * 7919) % 1009 AS k, (i * 31) % 1000 AS v FROM range(4000000) r(i)")

    def one() -> tuple[int, str]:
        pool = c.execute("SELECT current_setting('threads')").fetchone()[0]
        s, n = c.execute("SELECT sum(s), count(*) FROM (SELECT k, sum(v) AS s FROM t GROUP BY k)").fetchone()
        top = c.execute("SELECT sum(k) FROM (SELECT k FROM t ORDER BY v, k LIMIT 1000)").fetchone()[0]
        return int(pool), f"{int(s)}:{int(top)}:{n}"

    return one


def onnxruntime_work():
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper

    rng = np.random.default_rng(7)
    w1 = helper.make_tensor("W1", TensorProto.FLOAT, [256, 512], rng.standard_normal(256 * 512).astype(np.float32))
    w2 = helper.make_tensor("W2", TensorProto.FLOAT, [512, 64], rng.standard_normal(512 * 64).astype(np.float32))
    g = helper.make_graph(
        [helper.make_node("MatMul", ["X", "W1"], ["H"]), helper.make_node("Relu", ["H"], ["R"]),
         helper.make_node("MatMul", ["R", "W2"], ["Y"])], "mlp",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 256])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 64])], [w1, w2])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    so = ort.SessionOptions()
    if own_count():
        so.intra_op_num_threads = own_count()
    before = len(os.listdir("/proc/self/task"))
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    # Its intra-op pool: the threads the session started, and the thread that calls it.
    pool = len(os.listdir("/proc/self/task")) - before + 1
    x = rng.standard_normal((2048, 256)).astype(np.float32)

    def one() -> tuple[int, str]:
        y = None
        for _ in range(8):
            y = sess.run(None, {"X": x})[0]
        return pool, f"{float(np.round(y.astype(np.float64).sum(), 1)):.1f}"

    return one


def arrow_work():
    import pyarrow as pa
    import pyarrow.compute as pc

    if own_count():
        pa.set_cpu_count(own_count())
    import numpy as np

    # Many batches: Arrow's exec plans (group_by) spread batches over its CPU pool.
    chunks = [pa.array((np.arange(c * 125_000, (c + 1) * 125_000, dtype=np.int64) * 7919) % 1000003)
              for c in range(64)]
    a = pa.chunked_array(chunks)
    t = pa.Table.from_batches([pa.record_batch([pc.bit_wise_and(x, 1023), x], names=["k", "v"]) for x in chunks])

    def one() -> tuple[int, str]:
        g = t.group_by("k", use_threads=True).aggregate([("v", "sum"), ("v", "max")])
        f = pc.sum(pc.multiply(pc.bit_wise_and(a, 255), 3)).as_py()
        return pa.cpu_count(), f"{pc.sum(g['v_sum']).as_py()}:{pc.sum(g['v_max']).as_py()}:{f}"

    return one


def numba_work():
    import numba
    import numpy as np

    @numba.njit(parallel=True, cache=False)
    def work(n: int) -> int:
        s = 0
        for i in numba.prange(n):
            x = i
            for _ in range(50):
                x = (x * 1103515245 + 12345) % 2147483648
            s += x % 1000
        return s

    work(10)

    def one() -> tuple[int, str]:
        return numba.get_num_threads(), str(int(work(np.int64(3_000_000))))

    return one


def numexpr_work():
    import numexpr as ne
    import numpy as np

    a = np.arange(4_000_000, dtype=np.float64)

    def one() -> tuple[int, str]:
        r = ne.evaluate("sin(a) ** 2 + cos(a) ** 2 + a * 2", local_dict={"a": a})
        return ne.get_num_threads(), f"{float(np.round(r[::1000].sum(), 3)):.3f}"

    return one


WORK = {"polars": polars_work, "duckdb": duckdb_work, "onnxruntime": onnxruntime_work, "arrow": arrow_work,
        "numba": numba_work, "numexpr": numexpr_work}


def main() -> int:
    if len(sys.argv) < 3 or sys.argv[1] not in WORK:
        print(f"usage: runtime_work.py {{{','.join(WORK)}}} ROUNDS [UNTIL]", file=sys.stderr)
        return 2
    rounds, until = int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None
    one = WORK[sys.argv[1]]()
    r = 0
    while r < rounds or (until and not os.path.exists(until)):
        pool, result = one()
        print(f"round={r} result={result}\npool={pool} round={r}", flush=True)
        r += 1
        if until and r >= rounds:
            time.sleep(0.01)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
