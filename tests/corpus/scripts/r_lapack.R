# r_lapack.R — Debian's R on its system BLAS and LAPACK (libblas.so.3, liblapack.so.3: OpenBLAS built with OpenMP
# where libopenblas0-openmp is installed): crossprod (dsyrk), chol (dpotrf), solve (dgesv: dgetrf), eigen (dsyevr)
# and %*% (dgemm) on seeded matrices large enough for OpenBLAS to split each call into work items that wait for
# each other. Prints sums to 7 significant digits: OpenBLAS's last bits follow its thread count, as its own
# OPENBLAS_NUM_THREADS makes them.
args <- commandArgs(trailingOnly = TRUE)
n <- if (length(args) >= 1) as.integer(args[1]) else 1200L
rounds <- if (length(args) >= 2) as.integer(args[2]) else 3L
set.seed(20261201)
a <- matrix(rnorm(n * n), n)
s <- crossprod(a) + diag(n) * n
cat(sprintf("crossprod %.6e\n", sum(s)))
for (i in seq_len(rounds)) {
  u <- chol(s)
  x <- solve(s, a[, i])
  e <- eigen(s[1:(n %/% 2), 1:(n %/% 2)], symmetric = TRUE, only.values = TRUE)$values
  p <- a %*% u
  cat(sprintf("round %d chol %.6e solve %.6e eigen %.6e gemm %.6e\n", i, sum(u), sum(x), sum(e), sum(p)))
}
