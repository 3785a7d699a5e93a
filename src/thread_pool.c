#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

struct VidkThreadPool {
    int n_threads;
    pthread_t *workers;
    pthread_mutex_t lock;
    pthread_cond_t start_cv, done_cv;
    unsigned generation; /* bumped per batch; workers wait for a change */
    int stop;
    /* the batch */
    VidkJobFn fn;
    void *arg;
    int n_jobs;
    atomic_int next_job;
    int busy; /* workers still inside the current batch */
};

typedef struct {
    VidkThreadPool *pool;
    int id;
} WorkerArg;

static void run_jobs(VidkThreadPool *p, int thread) {
    for (;;) {
        const int j = atomic_fetch_add(&p->next_job, 1);
        if (j >= p->n_jobs) break;
        p->fn(p->arg, j, thread);
    }
}

static void *worker_main(void *varg) {
    WorkerArg *wa = varg;
    VidkThreadPool *p = wa->pool;
    const int id = wa->id;
    free(wa);
    unsigned seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->start_cv, &p->lock);
        if (p->stop) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->lock);
        run_jobs(p, id);
        pthread_mutex_lock(&p->lock);
        if (--p->busy == 0) pthread_cond_signal(&p->done_cv);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

int vidk_cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 1024 ? 1024 : (int)n;
}

int vidk_pool_create(VidkThreadPool **out, int n_threads) {
    *out = NULL;
    if (n_threads < 1 || n_threads > 1024) return VIDK_ERR(EINVAL);
    VidkThreadPool *p = calloc(1, sizeof(*p));
    if (!p) return VIDK_ERR(ENOMEM);
    p->n_threads = 1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->start_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    if (n_threads > 1) {
        p->workers = calloc((size_t)n_threads - 1, sizeof(*p->workers));
        if (!p->workers) goto fail;
        for (int i = 1; i < n_threads; i++) {
            WorkerArg *wa = malloc(sizeof(*wa));
            if (!wa) goto fail;
            wa->pool = p;
            wa->id = i;
            if (pthread_create(&p->workers[i - 1], NULL, worker_main, wa)) {
                free(wa);
                goto fail;
            }
            p->n_threads++;
        }
    }
    *out = p;
    return 0;
fail:
    vidk_pool_destroy(&p);
    return VIDK_ERR(ENOMEM);
}

void vidk_pool_destroy(VidkThreadPool **pp) {
    VidkThreadPool *p = pp ? *pp : NULL;
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->start_cv);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_threads - 1; i++)
        pthread_join(p->workers[i], NULL);
    free(p->workers);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->start_cv);
    pthread_cond_destroy(&p->done_cv);
    free(p);
    *pp = NULL;
}

int vidk_pool_threads(const VidkThreadPool *p) {
    return p ? p->n_threads : 1;
}

void vidk_pool_run(VidkThreadPool *p, int n_jobs, VidkJobFn fn, void *arg) {
    if (n_jobs <= 0) return;
    if (!p || p->n_threads == 1 || n_jobs == 1) {
        for (int j = 0; j < n_jobs; j++)
            fn(arg, j, 0);
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->arg = arg;
    p->n_jobs = n_jobs;
    atomic_store(&p->next_job, 0);
    p->busy = p->n_threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->start_cv);
    pthread_mutex_unlock(&p->lock);
    run_jobs(p, 0);
    pthread_mutex_lock(&p->lock);
    while (p->busy > 0)
        pthread_cond_wait(&p->done_cv, &p->lock);
    pthread_mutex_unlock(&p->lock);
}

int vidk_cpu_count_online(void) {
    return vidk_cpu_count();
}
