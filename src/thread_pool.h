/* A small fixed pool of worker threads that runs "parallel for" batches.
 *
 * vidk_pool_run() hands jobs 0..n_jobs-1 to the workers and the calling thread, in
 * any order, and returns when all are done. Results are independent of the thread
 * count as long as each job writes only its own outputs: the pool gives no ordering. */
#ifndef VIDK_THREAD_POOL_H
#define VIDK_THREAD_POOL_H

typedef struct VidkThreadPool VidkThreadPool;

/* job: index in [0, n_jobs); thread: in [0, n_threads), for per-thread scratch. */
typedef void (*VidkJobFn)(void *arg, int job, int thread);

/* n_threads >= 1 counts the caller: n_threads - 1 workers are started.
 * Returns 0 or a negative error code. */
int vidk_pool_create(VidkThreadPool **out, int n_threads);
void vidk_pool_destroy(VidkThreadPool **pool);
int vidk_pool_threads(const VidkThreadPool *pool);
/* Run a batch. pool NULL runs serially in the caller. Not reentrant. */
void vidk_pool_run(VidkThreadPool *pool, int n_jobs, VidkJobFn fn, void *arg);

/* Number of online CPUs (>= 1). */
int vidk_cpu_count(void);

#endif
