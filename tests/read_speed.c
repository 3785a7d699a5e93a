/* The read path of `vidkern encode` alone (tools/picio.c): frames of a Y4M file (or stdin,
 * "-") into 8 pictures in rotation, as the encoder's reader threads do, timed; then the
 * same frames checked against each other. A measurement, not a timed test: ctest runs it
 * on the real clips for its check (every way of reading gives the same samples) and
 * ignores the times; docs/PERFORMANCE.md ("Reading the source") has the figures.
 *
 * usage: read_speed FILE|- [THREADS [REPEATS]]   (default 3 threads, 3 repeats)
 *        read_speed --dir VIDEO_DIR              (every *.y4m of the folder, 1 repeat)
 *
 * Reports per frame, the best of REPEATS: "in order" (vio_reader_read()), and for a regular
 * file "at offsets" (vio_reader_read_at()) by 1 and by THREADS threads, each thread taking
 * the next frame. Exit 0, 1 on a mismatch or an error, 77 when --dir has no clip. */
#include <dirent.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "picio.h"
#include "test_util.h"

#define NPIC        8
#define MAX_THREADS 64

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* FNV-1a of the visible samples. */
static uint64_t pic_hash(const VidkPicture *p, int bps) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < (p->chroma == VIDK_CHROMA_400 ? 1 : 3); i++) {
        int w, h_;
        vidk_picture_plane_size(p, i, &w, &h_);
        for (int y = 0; y < h_; y++) {
            const uint8_t *row = (const uint8_t *)p->data[i] + y * p->stride[i];
            for (int x = 0; x < w * bps; x++)
                h = (h ^ row[x]) * 1099511628211ull;
        }
    }
    return h;
}

typedef struct Shared {
    VioReader *r;
    VidkPicture *pics;
    uint64_t *hash; /* NULL: timing only */
    int bps, nframes, next, failed;
    pthread_mutex_t mu;
} Shared;

/* Each thread takes the next frame; frame k goes into pics[k % NPIC] (hash mode: one
 * thread, so pictures are never shared). */
static void *reader(void *arg) {
    Shared *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        const int k = s->next < s->nframes ? s->next++ : -1;
        pthread_mutex_unlock(&s->mu);
        if (k < 0) return NULL;
        VidkPicture *p = &s->pics[k % NPIC];
        if (vio_reader_read_at(s->r, k, p) != 1) {
            pthread_mutex_lock(&s->mu);
            s->failed = 1;
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        if (s->hash) s->hash[k] = pic_hash(p, s->bps);
    }
}

/* At offsets by nth threads: seconds, or -1 if a frame could not be read that way. */
static double at_offsets(Shared *s, int nth) {
    pthread_t th[MAX_THREADS];
    s->next = 0;
    s->failed = 0;
    const double t0 = now();
    int started = 0;
    for (; started < nth; started++)
        if (pthread_create(&th[started], NULL, reader, s)) break;
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    const double t = now() - t0;
    return s->failed || !started ? -1 : t;
}

/* One file: 0 ok, 1 mismatch or error. */
static int run(const char *path, int nth, int reps, int verbose) {
    char err[1024];
    VioReader *r = NULL;
    VidkPicture pics[NPIC] = {{0}};
    uint64_t *h_seq = NULL, *h_par = NULL;
    int ret = 1, n = 0, cap = 0;
    double best_seq = 1e30, best_1 = 1e30, best_n = 1e30;
    const int is_stdin = !strcmp(path, "-");
    for (int rep = 0; rep < reps + 1; rep++) {
        /* Repeat 0 hashes every frame (not timed); stdin is read once, timed only. */
        if (vio_reader_open(&r, path, NULL, err, sizeof(err)) < 0) {
            fprintf(stderr, "%s\n", err);
            goto done;
        }
        const VioFormat *f = vio_reader_format(r);
        if (!pics[0].data[0])
            for (int i = 0; i < NPIC; i++)
                if (vio_picture_alloc(&pics[i], f) < 0) goto oom;
        const int bps = f->bitdepth > 8 ? 2 : 1;
        int k = 0, e;
        const double t0 = now();
        while ((e = vio_reader_read(r, &pics[k % NPIC])) == 1) {
            if (!rep && !is_stdin) {
                if (k == cap) {
                    cap = cap ? 2 * cap : 256;
                    uint64_t *a = realloc(h_seq, sizeof(*a) * (size_t)cap);
                    if (!a) goto oom;
                    h_seq = a;
                }
                h_seq[k] = pic_hash(&pics[k % NPIC], bps);
            }
            k++;
        }
        const double t = now() - t0;
        if (e < 0) {
            fprintf(stderr, "%s\n", vio_reader_error(r));
            goto done;
        }
        if ((rep || is_stdin) && t < best_seq) best_seq = t;
        n = k;
        if (n && !is_stdin && vio_reader_random_access(r)) {
            Shared s = {r, pics, NULL, bps, n, 0, 0, PTHREAD_MUTEX_INITIALIZER};
            if (!rep) {
                if (!(h_par = calloc((size_t)n, sizeof(*h_par)))) goto oom;
                s.hash = h_par;
                if (at_offsets(&s, 1) < 0) {
                    /* FRAME lines with parameters: only in order (vidkern encode too). */
                    if (verbose) printf("%s: frames not all at their offsets\n", path);
                    free(h_par);
                    h_par = NULL;
                } else {
                    for (int i = 0; i < n; i++)
                        CHECK(h_par[i] == h_seq[i]);
                }
            } else if (h_par) {
                double t1 = at_offsets(&s, 1), tn = nth > 1 ? at_offsets(&s, nth) : t1;
                if (t1 < 0 || tn < 0) {
                    fprintf(stderr, "%s: a frame could not be read at its offset\n", path);
                    goto done;
                }
                if (t1 < best_1) best_1 = t1;
                if (tn < best_n) best_n = tn;
            }
        }
        vio_reader_close(&r);
        if (is_stdin) break;
    }
    if (n) {
        printf("%s: %d frames; ms/frame (best of %d): in order %.3f", path, n,
               is_stdin ? 1 : reps, best_seq * 1e3 / n);
        if (h_par)
            printf(", at offsets 1 thread %.3f, %d threads %.3f", best_1 * 1e3 / n, nth,
                   best_n * 1e3 / n);
        printf("\n");
    }
    ret = test_failures ? 1 : 0;
    goto done;
oom:
    fprintf(stderr, "out of memory\n");
done:
    vio_reader_close(&r);
    for (int i = 0; i < NPIC; i++)
        vidk_picture_free(&pics[i]);
    free(h_seq);
    free(h_par);
    return ret;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: read_speed FILE|- [THREADS [REPEATS]] | --dir VIDEO_DIR\n");
        return 1;
    }
    if (!strcmp(argv[1], "--dir")) {
        DIR *d = argc > 2 ? opendir(argv[2]) : NULL;
        if (!d) {
            test_video_missing("no clip folder");
            return test_finish("read_speed");
        }
        int files = 0, bad = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            const size_t l = strlen(e->d_name);
            if (l < 5 || strcmp(e->d_name + l - 4, ".y4m")) continue;
            char p[4096];
            snprintf(p, sizeof(p), "%s/%s", argv[2], e->d_name);
            bad |= run(p, 3, 1, 1);
            files++;
        }
        closedir(d);
        if (!files) test_video_missing("no clip in the folder");
        if (bad) test_failures++;
        return test_finish("read_speed");
    }
    const int nth = argc > 2 ? atoi(argv[2]) : 3, reps = argc > 3 ? atoi(argv[3]) : 3;
    if (nth < 1 || nth > MAX_THREADS || reps < 1) {
        fprintf(stderr, "read_speed: THREADS 1..%d, REPEATS >= 1\n", MAX_THREADS);
        return 1;
    }
    return run(argv[1], nth, reps, 1);
}
