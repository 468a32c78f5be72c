/* runtimes.h — the process's parallel runtimes other than OpenMP and BLAS (include/scaf/startenv.h's table): named by scaf run or found among the loaded objects, the team their pools run, and what the page says of them. */
#ifndef SCAF_LAYER_RUNTIMES_H
#define SCAF_LAYER_RUNTIMES_H

#include <stdint.h>

struct scaf_page;

/*
 * Why (docs/runtimes.md): a process whose parallelism is a pool that read its
 * count once (polars, onnxruntime, the JVM ...) is a client like an OpenMP
 * program, planned around as a fixed team of that count; one that follows the
 * share (Arrow, through the layer) is not. scaf run names the runtimes it saw
 * in the program and its libraries (SCAF_RUNTIMES); the helper adds those an
 * interpreter loads later, by the names of their objects.
 */

/* From the layer's constructor, after the settings: SCAF_RUNTIMES, and each runtime's variable as the user left
 * it (its pool reads it when it is built). */
void scaf_runtimes_init(void);

/* The runtimes found so far (1 << enum scaf_startenv_id). */
uint32_t scaf_runtimes_bits(void);

/* Looks at the loaded objects' names (helper thread, after something was loaded); returns the new bits. */
uint32_t scaf_runtimes_scan(void);

/* Of those, the ones whose pool follows the share now through the layer: the table's SCAF_FOLLOW_LAYER rows
 * (Arrow), and those whose pool runs on OpenMP, or on a oneTBB that opened a TCM permit (its on_* objects). */
uint32_t scaf_runtimes_follow(void);

/* A oneTBB of the process opened a TCM permit (from core/permit.c): numba's, if it runs on oneTBB, follows. */
void scaf_runtimes_tcm_asked(void);

/*
 * The team the pools that read their count once run: for each such runtime found, its variable's count where
 * the user (or scaf run) set one, else for one whose pool spins SCAF_START_SHARE, else the CPUs the process
 * could use at start; the largest of them. 0 when none is found.
 */
unsigned scaf_runtimes_team(void);

/* Writes the bits, those that follow and the team into `page` (at every (re)connect, when a runtime is found,
 * and when the first TCM permit opens); nothing without a page. */
void scaf_runtimes_publish(struct scaf_page *page);

#endif
