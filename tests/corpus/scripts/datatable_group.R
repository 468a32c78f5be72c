# Corpus program datatable: R's data.table (Debian's r-cran-data.table) grouping and ordering a
# seeded table with every CPU (setDTthreads(0), which ignores OMP_NUM_THREADS).
#
#     Rscript datatable_group.R
#
# Prints on stdout the thread count data.table chose, then each result's first rows and an MD5
# of the result serialized uncompressed (saveRDS to a temporary file that is removed): group-by
# aggregates keyed by an integer id and by a character column, a multi-column order, a keyed
# join. Everything data.table computes here is exact (integer sums, orders, counts) or summed in
# an order that does not depend on its team. scaf keeps data.table's team fixed (forder's region
# numbers its threads without reading its team size; docs/shapes.md says why that is safe and why
# the layer cannot be sure); scaf check finds this script malleable.
suppressPackageStartupMessages(library(data.table))
setDTthreads(0)
cat("threads", getDTthreads(), "\n")

set.seed(20240611)
n <- 1000000L
dt <- data.table(id = sample.int(40000L, n, TRUE),
                 g = sample(c(letters, LETTERS), n, TRUE),
                 x = sample.int(1000000L, n, TRUE),
                 y = round(runif(n) * 1000, 3))

digest <- function(tab, name) {
  # A file of this process's own: two copies run at once in one folder (a pair) must not share it.
  f <- tempfile(name, fileext = ".rds")
  saveRDS(tab, f, compress = FALSE)
  cat(name, nrow(tab), unname(tools::md5sum(f)), "\n")
  unlink(f)
  print(head(tab, 3))
}

digest(dt[, .(n = .N, sx = sum(x), mx = max(x), mn = min(x)), keyby = id], "by_id")
digest(dt[, .(n = .N, mx = max(x), sy = sum(y), my = mean(y)), keyby = g], "by_g")
digest(dt[order(g, -x, id)], "order")
a <- dt[, .(n = .N), keyby = id]
setkey(dt, id)
digest(dt[a[n > 30L], on = "id", nomatch = NULL][, .(k = .N, s = sum(x)), keyby = id], "join")
