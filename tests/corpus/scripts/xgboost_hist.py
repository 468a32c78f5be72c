"""Corpus program xgboost-hist: XGBoost's `hist` tree method on seeded synthetic data.

    xgboost_hist.py [--dump FILE.npz]

Prints on stderr the OpenMP and BLAS objects mapped (the wheel's bundled libgomp), and on
stdout one line per result, in full precision: a SHA-256 of the predictions on the training
data and of the model (its JSON form), and the last evaluation line. Plain runs with
OMP_NUM_THREADS 1 to 4 print the same bits (the float32 gradients' sums in double are exact at
this size). XGBoost cuts blocks of rows by the thread count it read before its regions and gives
them out by thread number (ParallelFor2d, docs/shapes.md): a smaller team would skip rows, so
scaf keeps its team, and the row checks that. --dump also saves the predictions.
"""

from __future__ import annotations

import argparse
import hashlib
import sys

import numpy as np
import xgboost as xgb

from common import print_runtimes, sha


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", help="also save the predictions to this .npz file")
    args = ap.parse_args()

    rng = np.random.default_rng(20240611)
    n, f = 20_000, 24
    x = rng.standard_normal((n, f)).astype(np.float32)
    w = rng.standard_normal(f)
    y = ((x @ w + 0.5 * np.sin(3 * x[:, 0]) * x[:, 1] + rng.standard_normal(n) * 0.3) > 0).astype(np.float32)
    dtrain = xgb.DMatrix(x, label=y)
    evals: dict = {}
    # nthread unset: XGBoost takes one thread per CPU (omp_get_max_threads()), as a user gets it.
    bst = xgb.train({"tree_method": "hist", "objective": "binary:logistic", "max_depth": 6, "eta": 0.3,
                     "max_bin": 64, "seed": 0, "eval_metric": "logloss"},
                    dtrain, num_boost_round=30, evals=[(dtrain, "train")], evals_result=evals,
                    verbose_eval=False)
    pred = bst.predict(dtrain)
    model = bytes(bst.save_raw(raw_format="json"))
    print_runtimes()
    print("predict", pred.shape, sha(pred))
    print("model", len(model), hashlib.sha256(model).hexdigest())
    print("logloss", repr(evals["train"]["logloss"][-1]))
    if args.dump:
        np.savez(args.dump, predict=pred)
    return 0


if __name__ == "__main__":
    sys.exit(main())
