/* HEVC transforms above the block kernels: the block-array API, frame batches (TBs
 * grouped by size), and their execution on the c, simd and threads backends.
 *
 * vidk_hevc_batch_forward / _inverse go through ctx->ops.hevc (backend.h; cuda:
 * src/cuda/hevc.cu); the CPU code here runs the context's dsp table on ctx->ops.run (the
 * pool for threads) in jobs whose outputs do not overlap, so results never depend on the
 * thread count:
 * - forward, residuals, inverse without a picture: jobs are index ranges of one list.
 * - inverse into a picture: TBs are aligned to their size N <= 32, so a TB never crosses
 *   a 32-row band of its plane. The TBs are bucketed by band (a stable counting sort:
 *   within a band they keep the serial order, list by list, index by index), and each
 *   job owns whole bands: overlapping TBs, if any, are added in the serial order.
 * Work inside a job goes through runs of consecutive TBs with the same record key
 * (plane, qp, flags), in chunks of CHUNK_VALUES values that stay in L1. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CHUNK_VALUES 4096  /* int16 values per kernel call (8 KB) */
#define JOB_VALUES   65536 /* values per pool job of the transform passes */
#define SORT_JOB_TBS 16384 /* TBs per job of the band-sort passes */
#define BAND_SHIFT   5     /* 32-row bands */
#define MAX_CAPACITY (1u << 26)

/* ------------------------------------------------------------------ parameters */

/* The workspace behind VidkHevcBatch.priv. */
typedef struct HevcPriv {
    /* Per-coefficient scales for every (size, matrixId, qP % 6), valid for `cached`. */
    int tables_valid;
    VidkHevcScaling cached;
    int32_t *qs;
    int16_t *ds;
    /* band sort of the threaded inverse */
    uint32_t *perm;
    size_t perm_cap;
    uint32_t *counts;
    size_t counts_cap;
} HevcPriv;

#define TABLE_ENTRIES (36 * (16 + 64 + 256 + 1024))

static size_t table_offset(int size, int matrix_id, int rem) {
    static const int base[4] = {0, 36 * 16, 36 * (16 + 64), 36 * (16 + 64 + 256)};
    return (size_t)base[size] + (size_t)(matrix_id * 6 + rem) * (size_t)(16 << (2 * size));
}

/* Parameters shared by consecutive TBs. */
typedef struct Run {
    int size, tx, len, bd;
    int32_t qscale, qoffset;
    int qbits;
    const int32_t *qs; /* NULL: flat */
    int dscale, dshift;
    const int16_t *ds; /* NULL: flat */
} Run;

static void run_params(Run *r, int size, int qp, unsigned flags, int plane, int bd,
                       const HevcPriv *tables) {
    const int log2n = size + 2;
    r->size = size;
    r->tx = vidk_hevc_tx_kind(size, flags);
    r->len = 1 << (2 * log2n);
    r->bd = bd;
    r->qbits = vidk_hevc_qbits(qp, bd, log2n);
    r->qoffset = vidk_hevc_qoffset(r->qbits, !!(flags & VIDK_HEVC_TB_ISLICE));
    r->qscale = vidk_hevc_qscale[qp % 6];
    r->dscale = 16 * vidk_hevc_level_scale[qp % 6]; /* m = 16 */
    r->dshift = vidk_hevc_dqshift(qp, bd, log2n);
    r->qs = NULL;
    r->ds = NULL;
    if (tables) {
        const int id = plane + (flags & VIDK_HEVC_TB_INTRA ? 0 : 3);
        const size_t o = table_offset(size, id, qp % 6);
        r->qs = tables->qs + o;
        r->ds = tables->ds + o;
    }
}

static int check_scaling(const uint8_t *m, int len) {
    for (int k = 0; k < len; k++)
        if (!m[k]) return VIDK_ERR(EINVAL);
    return 0;
}

/* (Re)compute the per-coefficient tables when the scaling factors changed. */
static int prepare_tables(VidkHevcBatch *b, HevcPriv *pv) {
    if (pv->tables_valid && !memcmp(&pv->cached, &b->scaling, sizeof(b->scaling))) return 0;
    pv->tables_valid = 0;
    if (!pv->qs) {
        pv->qs = malloc(TABLE_ENTRIES * sizeof(*pv->qs));
        pv->ds = malloc(TABLE_ENTRIES * sizeof(*pv->ds));
        if (!pv->qs || !pv->ds) {
            free(pv->qs);
            free(pv->ds);
            pv->qs = NULL;
            pv->ds = NULL;
            return VIDK_ERR(ENOMEM);
        }
    }
    for (int size = 0; size < VIDK_HEVC_TB_SIZES; size++)
        for (int id = 0; id < 6; id++) {
            const int len = 16 << (2 * size);
            const uint8_t *m = vidk_hevc_scaling_matrix(&b->scaling, size, id);
            for (int rem = 0; rem < 6; rem++) {
                const size_t o = table_offset(size, id, rem);
                vidk_hevc_quant_scales(pv->qs + o, m, len, rem);
                vidk_hevc_dequant_scales(pv->ds + o, m, len, rem);
            }
        }
    pv->cached = b->scaling;
    pv->tables_valid = 1;
    return 0;
}

/* ------------------------------------------------------------------ kernels over runs */

static void fwd_blocks(const VidkHevcDSP *dsp, const Run *r, int16_t *lev, const int16_t *res,
                       size_t nb, uint16_t *nnz) {
    const size_t ch = (size_t)(CHUNK_VALUES / r->len), len = (size_t)r->len;
    uint16_t tmp[CHUNK_VALUES / 16];
    for (size_t i = 0; i < nb; i += ch) {
        const int n = (int)(nb - i < ch ? nb - i : ch);
        int16_t *l = lev + i * len;
        uint16_t *z = nnz ? nnz + i : tmp;
        dsp->fwd[r->tx](l, res + i * len, n, r->bd);
        if (r->qs)
            dsp->quant_sl(l, l, n, r->len, r->qs, r->qbits, r->qoffset, z);
        else
            dsp->quant(l, l, n, r->len, r->qscale, r->qbits, r->qoffset, z);
    }
}

static void dequant_blocks(const VidkHevcDSP *dsp, const Run *r, int16_t *coef,
                           const int16_t *lev, int n) {
    if (r->ds)
        dsp->dequant_sl(coef, lev, n, r->len, r->ds, r->dshift);
    else
        dsp->dequant(coef, lev, (size_t)n * (size_t)r->len, r->dscale, r->dshift);
}

/* Residuals of nb blocks (res may equal lev). */
static void inv_blocks(const VidkHevcDSP *dsp, const Run *r, int16_t *res, const int16_t *lev,
                       size_t nb) {
    const size_t ch = (size_t)(CHUNK_VALUES / r->len), len = (size_t)r->len;
    for (size_t i = 0; i < nb; i += ch) {
        const int n = (int)(nb - i < ch ? nb - i : ch);
        dequant_blocks(dsp, r, res + i * len, lev + i * len, n);
        dsp->inv[r->tx](res + i * len, res + i * len, n, r->bd);
    }
}

static void add_tb(const VidkHevcDSP *dsp, int size, VidkPicture *pic, const VidkHevcTb *t,
                   const int16_t *res, int bd) {
    const ptrdiff_t st = pic->stride[t->plane];
    uint8_t *row = (uint8_t *)pic->data[t->plane] + (ptrdiff_t)t->y * st;
    if (bd == 8)
        dsp->add8[size](row + t->x, st, res);
    else
        dsp->add16[size]((uint16_t *)(void *)row + t->x, st, res, bd);
}

/* Dequantise, inverse transform and add nb consecutive TBs of a list (one run); TBs
 * whose levels are all zero are skipped. */
static void inv_add_tbs(const VidkHevcDSP *dsp, const Run *r, const VidkHevcTb *tb,
                        const int16_t *lev, size_t nb, VidkPicture *pic) {
    VIDK_HEVC_ALIGN(64) int16_t buf[CHUNK_VALUES];
    uint16_t cnt[CHUNK_VALUES / 16];
    const size_t len = (size_t)r->len;
    const int ch = CHUNK_VALUES / r->len;
    for (size_t i = 0; i < nb; i += (size_t)ch) {
        const int n = (int)(nb - i < (size_t)ch ? nb - i : (size_t)ch);
        const int16_t *l = lev + i * len;
        dsp->nnz(cnt, l, n, r->len);
        for (int j = 0; j < n;) {
            if (!cnt[j]) {
                j++;
                continue;
            }
            int k = j + 1;
            while (k < n && cnt[k])
                k++;
            dequant_blocks(dsp, r, buf, l + (size_t)j * len, k - j);
            dsp->inv[r->tx](buf, buf, k - j, r->bd);
            for (int t = j; t < k; t++)
                add_tb(dsp, r->size, pic, &tb[i + (size_t)t], buf + (size_t)(t - j) * len,
                       r->bd);
            j = k;
        }
    }
}

/* ------------------------------------------------------------------ records */

static inline uint32_t tb_key(const VidkHevcTb *t) {
    return (uint32_t)t->plane | (uint32_t)t->qp << 8 | (uint32_t)t->flags << 16 |
           (uint32_t)t->reserved << 24;
}

/* ---- the checks of every backend (hevc.h) ---- */

int vidk_hevc_check_record(const VidkHevcTb *t, int size, int bd) {
    if (t->plane > 2 || t->reserved) return VIDK_ERR(EINVAL);
    return vidk_hevc_check_tb(size, t->qp, bd, t->flags);
}

int vidk_hevc_picture_planes(const VidkPicture *p, int bd, VidkHevcPlanes *pl) {
    if (!p || p->bitdepth != bd || p->w < 1 || p->h < 1 || !p->data[0]) return VIDK_ERR(EINVAL);
    for (int i = 0; i < 3; i++) {
        pl->w[i] = pl->h[i] = 0;
        if (vidk_picture_plane_size(p, i, &pl->w[i], &pl->h[i]) < 0 || !p->data[i])
            pl->w[i] = pl->h[i] = 0;
    }
    pl->pb = bd > 8 ? 2 : 1;
    return 0;
}

int vidk_hevc_check_position(const VidkHevcTb *t, int n, const VidkHevcPlanes *pl) {
    const int p = t->plane;
    if (p > 2 || (t->x & (n - 1)) || (t->y & (n - 1))) return VIDK_ERR(EINVAL);
    if (t->x + n > pl->w[p] || t->y + n > pl->h[p]) return VIDK_ERR(EINVAL);
    return 0;
}

int vidk_hevc_batch_check(const VidkHevcBatch *b, int forward) {
    if (b->bitdepth < VIDK_HEVC_MIN_BITDEPTH || b->bitdepth > VIDK_HEVC_MAX_BITDEPTH)
        return VIDK_ERR(EINVAL);
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        const VidkHevcTbList *l = &b->list[s];
        if (l->count > l->capacity) return VIDK_ERR(EINVAL);
        if (l->count && (!l->tb || !l->res || !l->lev || !l->nnz)) return VIDK_ERR(EINVAL);
        if (forward && l->count && (!l->nz_index || (b->compact_levels && !l->nz_lev)))
            return VIDK_ERR(EINVAL);
    }
    if (b->scaling_lists &&
        check_scaling((const uint8_t *)&b->scaling, (int)sizeof(b->scaling)) < 0)
        return VIDK_ERR(EINVAL);
    return 0;
}

/* ------------------------------------------------------------------ jobs */

typedef struct Job {
    int size;
    uint32_t i0, i1; /* TB index range of list `size` */
    uint32_t nz;     /* forward: non-zero TBs in the range; then their first slot */
    int err;
} Job;

typedef struct Exec {
    const VidkHevcDSP *dsp;
    VidkHevcBatch *b;
    const HevcPriv *tables; /* NULL: flat */
    Job *jobs;
    int n_jobs;
    /* pictures */
    VidkPicture *pic;
    const VidkPicture *src, *pred;
    VidkHevcPlanes pl;
    /* band sort */
    uint32_t *counts; /* n_jobs x n_bands */
    uint32_t *perm;
    uint32_t *band_start; /* n_bands + 1 */
    int n_bands, band_base[3];
} Exec;

/* Split every non-empty list into ranges of `per` values (at least one TB each). */
static int make_jobs(Exec *e, size_t per_values, size_t per_tbs) {
    size_t n = 0;
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        const size_t c = e->b->list[s].count;
        const size_t per =
            per_tbs ? per_tbs : (size_t)vidk_imax(1, (int)(per_values >> (4 + 2 * s)));
        n += (c + per - 1) / per;
    }
    e->n_jobs = (int)n;
    e->jobs = calloc(n ? n : 1, sizeof(*e->jobs));
    if (!e->jobs) return VIDK_ERR(ENOMEM);
    n = 0;
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        const uint32_t c = e->b->list[s].count;
        const uint32_t per =
            (uint32_t)(per_tbs ? per_tbs
                               : (size_t)vidk_imax(1, (int)(per_values >> (4 + 2 * s))));
        for (uint32_t i = 0; i < c; i += per) {
            e->jobs[n].size = s;
            e->jobs[n].i0 = i;
            e->jobs[n].i1 = c - i < per ? c : i + per;
            n++;
        }
    }
    return 0;
}

static int jobs_error(const Exec *e) {
    for (int j = 0; j < e->n_jobs; j++)
        if (e->jobs[j].err) return e->jobs[j].err;
    return 0;
}

/* Calls fn(e, job, run, first TB, TB count) for every run of equal keys of a job;
 * stops with the job's error at the first invalid key. */
typedef void (*RunFn)(Exec *e, Job *jb, const Run *r, uint32_t i, uint32_t n);

static void for_runs(Exec *e, Job *jb, RunFn fn) {
    const VidkHevcTbList *l = &e->b->list[jb->size];
    uint32_t i = jb->i0;
    while (i < jb->i1) {
        const uint32_t key = tb_key(&l->tb[i]);
        uint32_t k = i + 1;
        while (k < jb->i1 && tb_key(&l->tb[k]) == key)
            k++;
        if ((jb->err = vidk_hevc_check_record(&l->tb[i], jb->size, e->b->bitdepth)) < 0) return;
        Run r;
        run_params(&r, jb->size, (key >> 8) & 255, (key >> 16) & 255, key & 255, e->b->bitdepth,
                   e->tables);
        fn(e, jb, &r, i, k - i);
        i = k;
    }
}

static void fwd_run_fn(Exec *e, Job *jb, const Run *r, uint32_t i, uint32_t n) {
    VidkHevcTbList *l = &e->b->list[jb->size];
    const size_t len = (size_t)r->len;
    fwd_blocks(e->dsp, r, l->lev + i * len, l->res + i * len, n, l->nnz + i);
}

static void fwd_job(void *arg, int j, int thread) {
    Exec *e = arg;
    Job *jb = &e->jobs[j];
    (void)thread;
    for_runs(e, jb, fwd_run_fn);
    const uint16_t *nnz = e->b->list[jb->size].nnz;
    uint32_t nz = 0;
    for (uint32_t i = jb->i0; i < jb->i1; i++)
        nz += nnz[i] != 0;
    jb->nz = nz;
}

static void compact_job(void *arg, int j, int thread) {
    Exec *e = arg;
    const Job *jb = &e->jobs[j];
    VidkHevcTbList *l = &e->b->list[jb->size];
    const size_t len = (size_t)16 << (2 * jb->size);
    uint32_t o = jb->nz;
    (void)thread;
    /* one copy per run of consecutive non-zero TBs */
    for (uint32_t i = jb->i0; i < jb->i1;) {
        if (!l->nnz[i]) {
            i++;
            continue;
        }
        uint32_t k = i;
        for (; k < jb->i1 && l->nnz[k]; k++)
            l->nz_index[o + (k - i)] = k;
        if (e->b->compact_levels)
            memcpy(l->nz_lev + (size_t)o * len, l->lev + (size_t)i * len,
                   (size_t)(k - i) * len * sizeof(int16_t));
        o += k - i;
        i = k;
    }
}

static void inv_res_run_fn(Exec *e, Job *jb, const Run *r, uint32_t i, uint32_t n) {
    VidkHevcTbList *l = &e->b->list[jb->size];
    const size_t len = (size_t)r->len;
    inv_blocks(e->dsp, r, l->res + i * len, l->lev + i * len, n);
}

static void inv_res_job(void *arg, int j, int thread) {
    (void)thread;
    for_runs(arg, &((Exec *)arg)->jobs[j], inv_res_run_fn);
}

static void sub_job(void *arg, int j, int thread) {
    Exec *e = arg;
    Job *jb = &e->jobs[j];
    VidkHevcTbList *l = &e->b->list[jb->size];
    const int n = 4 << jb->size;
    const size_t len = (size_t)n * (size_t)n;
    (void)thread;
    for (uint32_t i = jb->i0; i < jb->i1; i++) {
        const VidkHevcTb *t = &l->tb[i];
        if ((jb->err = vidk_hevc_check_position(t, n, &e->pl)) < 0) return;
        const int p = t->plane;
        const ptrdiff_t ss = e->src->stride[p], ps = e->pred->stride[p];
        const uint8_t *s = (const uint8_t *)e->src->data[p] + (ptrdiff_t)t->y * ss;
        const uint8_t *q = (const uint8_t *)e->pred->data[p] + (ptrdiff_t)t->y * ps;
        if (e->b->bitdepth == 8)
            e->dsp->sub8[jb->size](l->res + i * len, s + t->x, ss, q + t->x, ps);
        else
            e->dsp->sub16[jb->size](l->res + i * len, (const uint16_t *)(const void *)s + t->x,
                                    ss, (const uint16_t *)(const void *)q + t->x, ps);
    }
}

/* ---- inverse into a picture ---- */

static int check_positions_serial(Exec *e) {
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        const VidkHevcTbList *l = &e->b->list[s];
        uint32_t last = UINT32_MAX;
        for (uint32_t i = 0; i < l->count; i++) {
            const uint32_t key = tb_key(&l->tb[i]);
            if (key != last && vidk_hevc_check_record(&l->tb[i], s, e->b->bitdepth) < 0)
                return VIDK_ERR(EINVAL);
            last = key;
            if (vidk_hevc_check_position(&l->tb[i], 4 << s, &e->pl) < 0)
                return VIDK_ERR(EINVAL);
        }
    }
    return 0;
}

static void inv_add_run(Exec *e, int size, uint32_t i, uint32_t n) {
    const VidkHevcTbList *l = &e->b->list[size];
    const uint32_t key = tb_key(&l->tb[i]);
    Run r;
    run_params(&r, size, (key >> 8) & 255, (key >> 16) & 255, key & 255, e->b->bitdepth,
               e->tables);
    inv_add_tbs(e->dsp, &r, l->tb + i, l->lev + (size_t)i * (size_t)r.len, n, e->pic);
}

static void inv_add_run_fn(Exec *e, Job *jb, const Run *r, uint32_t i, uint32_t n) {
    const VidkHevcTbList *l = &e->b->list[jb->size];
    inv_add_tbs(e->dsp, r, l->tb + i, l->lev + (size_t)i * (size_t)r->len, n, e->pic);
}

/* Serial order: list by list, runs of equal keys. */
static void inv_add_serial(Exec *e) {
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        Job jb = {.size = s, .i1 = e->b->list[s].count};
        for_runs(e, &jb, inv_add_run_fn);
    }
}

static inline int tb_band(const Exec *e, const VidkHevcTb *t) {
    return e->band_base[t->plane] + (t->y >> BAND_SHIFT);
}

/* Phase A: validate and count TBs per band. */
static void count_job(void *arg, int j, int thread) {
    Exec *e = arg;
    Job *jb = &e->jobs[j];
    const VidkHevcTbList *l = &e->b->list[jb->size];
    uint32_t *cnt = e->counts + (size_t)j * (size_t)e->n_bands;
    uint32_t last = UINT32_MAX;
    (void)thread;
    for (uint32_t i = jb->i0; i < jb->i1; i++) {
        const VidkHevcTb *t = &l->tb[i];
        const uint32_t key = tb_key(t);
        if (key != last && (jb->err = vidk_hevc_check_record(t, jb->size, e->b->bitdepth)) < 0)
            return;
        last = key;
        if ((jb->err = vidk_hevc_check_position(t, 4 << jb->size, &e->pl)) < 0) return;
        cnt[tb_band(e, t)]++;
    }
}

/* Phase C: scatter (size << 30 | index) into each band's slots, in job order. */
static void scatter_job(void *arg, int j, int thread) {
    Exec *e = arg;
    const Job *jb = &e->jobs[j];
    const VidkHevcTbList *l = &e->b->list[jb->size];
    uint32_t *off = e->counts + (size_t)j * (size_t)e->n_bands;
    (void)thread;
    for (uint32_t i = jb->i0; i < jb->i1; i++)
        e->perm[off[tb_band(e, &l->tb[i])]++] = (uint32_t)jb->size << 30 | i;
}

/* Phase D: one band, in serial order; consecutive indices of one list with equal keys
 * form runs. */
static void band_job(void *arg, int band, int thread) {
    Exec *e = arg;
    const uint32_t *p = e->perm + e->band_start[band];
    const uint32_t n = e->band_start[band + 1] - e->band_start[band];
    (void)thread;
    uint32_t a = 0;
    while (a < n) {
        const int size = (int)(p[a] >> 30);
        const uint32_t i = p[a] & 0x3fffffffu;
        const VidkHevcTbList *l = &e->b->list[size];
        const uint32_t key = tb_key(&l->tb[i]);
        uint32_t k = a + 1;
        while (k < n && p[k] == p[k - 1] + 1 && tb_key(&l->tb[p[k] & 0x3fffffffu]) == key)
            k++;
        inv_add_run(e, size, i, k - a);
        a = k;
    }
}

static int inv_add_threads(Exec *e, VidkContext *ctx, HevcPriv *pv) {
    int err = 0;
    size_t total = 0;
    e->n_bands = 0;
    for (int p = 0; p < 3; p++) {
        e->band_base[p] = e->n_bands;
        e->n_bands += (e->pl.h[p] + (1 << BAND_SHIFT) - 1) >> BAND_SHIFT;
    }
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++)
        total += e->b->list[s].count;
    if ((err = make_jobs(e, 0, SORT_JOB_TBS)) < 0) return err;
    size_t nc;
    if (!vidk_mul_size((size_t)e->n_jobs, (size_t)e->n_bands, &nc)) return VIDK_ERR(ENOMEM);
    nc += (size_t)e->n_bands + 1; /* band_start */
    if (nc > pv->counts_cap) {
        free(pv->counts);
        pv->counts_cap = 0;
        if (!(pv->counts = malloc(nc * sizeof(uint32_t)))) return VIDK_ERR(ENOMEM);
        pv->counts_cap = nc;
    }
    if (total > pv->perm_cap) {
        free(pv->perm);
        pv->perm_cap = 0;
        if (!(pv->perm = malloc(total * sizeof(uint32_t)))) return VIDK_ERR(ENOMEM);
        pv->perm_cap = total;
    }
    e->counts = pv->counts;
    e->perm = pv->perm;
    e->band_start = pv->counts + (size_t)e->n_jobs * (size_t)e->n_bands;
    memset(e->counts, 0, (size_t)e->n_jobs * (size_t)e->n_bands * sizeof(uint32_t));

    ctx->ops.run(ctx, e->n_jobs, count_job, e);
    if ((err = jobs_error(e)) < 0) return err;
    /* counts -> first slot of each (job, band), band-major */
    uint32_t run = 0;
    for (int bd = 0; bd < e->n_bands; bd++) {
        e->band_start[bd] = run;
        for (int j = 0; j < e->n_jobs; j++) {
            uint32_t *c = &e->counts[(size_t)j * (size_t)e->n_bands + (size_t)bd];
            const uint32_t v = *c;
            *c = run;
            run += v;
        }
    }
    e->band_start[e->n_bands] = run;
    ctx->ops.run(ctx, e->n_jobs, scatter_job, e);
    ctx->ops.run(ctx, e->n_bands, band_job, e);
    return 0;
}

/* ------------------------------------------------------------------ batch API */

void vidk_hevc_batch_init(VidkHevcBatch *b, int bitdepth) {
    if (!b) return;
    memset(b, 0, sizeof(*b));
    b->bitdepth = vidk_iclip(bitdepth, VIDK_HEVC_MIN_BITDEPTH, VIDK_HEVC_MAX_BITDEPTH);
    b->compact_levels = 1;
    vidk_hevc_scaling_flat(&b->scaling);
}

static void list_free(VidkHevcTbList *l) {
    free(l->tb);
    vidk_free_aligned(l->res);
    vidk_free_aligned(l->lev);
    free(l->nnz);
    free(l->nz_index);
    vidk_free_aligned(l->nz_lev);
    memset(l, 0, sizeof(*l));
}

void vidk_hevc_batch_free(VidkHevcBatch *b) {
    if (!b) return;
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++)
        list_free(&b->list[s]);
    HevcPriv *pv = b->priv;
    if (pv) {
        free(pv->qs);
        free(pv->ds);
        free(pv->perm);
        free(pv->counts);
        free(pv);
    }
    b->priv = NULL;
}

void vidk_hevc_batch_clear(VidkHevcBatch *b) {
    if (!b) return;
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++) {
        b->list[s].count = 0;
        b->list[s].nz_count = 0;
    }
}

/* Grow an aligned int16 array keeping `keep` values. */
static int grow16(int16_t **p, size_t keep, size_t n) {
    int16_t *q = vidk_malloc_aligned(64, n * sizeof(int16_t));
    if (!q) return VIDK_ERR(ENOMEM);
    if (keep) memcpy(q, *p, keep * sizeof(int16_t));
    vidk_free_aligned(*p);
    *p = q;
    return 0;
}

static int grow(void **p, size_t keep, size_t n) {
    void *q = malloc(n);
    if (!q) return VIDK_ERR(ENOMEM);
    if (keep) memcpy(q, *p, keep);
    free(*p);
    *p = q;
    return 0;
}

int vidk_hevc_batch_reserve(VidkHevcBatch *b, VidkHevcTbSize size, uint32_t capacity) {
    if (!b || (unsigned)size >= VIDK_HEVC_TB_SIZES || capacity > MAX_CAPACITY)
        return VIDK_ERR(EINVAL);
    VidkHevcTbList *l = &b->list[size];
    if (capacity <= l->capacity) return 0;
    const size_t len = (size_t)16 << (2 * size), c = capacity, k = l->count;
    /* all or nothing: a failed step leaves the list as it was */
    VidkHevcTbList n = *l;
    n.tb = NULL, n.res = n.lev = n.nz_lev = NULL, n.nnz = NULL, n.nz_index = NULL;
    int err = 0;
    if ((err = grow((void **)&n.tb, 0, c * sizeof(VidkHevcTb))) < 0 ||
        (err = grow16(&n.res, 0, c * len)) < 0 || (err = grow16(&n.lev, 0, c * len)) < 0 ||
        (err = grow16(&n.nz_lev, 0, c * len)) < 0 ||
        (err = grow((void **)&n.nnz, 0, c * sizeof(uint16_t))) < 0 ||
        (err = grow((void **)&n.nz_index, 0, c * sizeof(uint32_t))) < 0) {
        free(n.tb);
        vidk_free_aligned(n.res);
        vidk_free_aligned(n.lev);
        vidk_free_aligned(n.nz_lev);
        free(n.nnz);
        free(n.nz_index);
        return err;
    }
    if (k) {
        memcpy(n.tb, l->tb, k * sizeof(VidkHevcTb));
        memcpy(n.res, l->res, k * len * sizeof(int16_t));
        memcpy(n.lev, l->lev, k * len * sizeof(int16_t));
        memcpy(n.nnz, l->nnz, k * sizeof(uint16_t));
    }
    if (l->nz_count) {
        memcpy(n.nz_lev, l->nz_lev, l->nz_count * len * sizeof(int16_t));
        memcpy(n.nz_index, l->nz_index, l->nz_count * sizeof(uint32_t));
    }
    n.capacity = capacity;
    const uint32_t count = l->count, nzc = l->nz_count;
    list_free(l);
    *l = n;
    l->count = count;
    l->nz_count = nzc;
    return 0;
}

int vidk_hevc_batch_add(VidkHevcBatch *b, VidkHevcTbSize size, const VidkHevcTb *tb,
                        const int16_t *res) {
    if (!b || !tb || (unsigned)size >= VIDK_HEVC_TB_SIZES) return VIDK_ERR(EINVAL);
    VidkHevcTbList *l = &b->list[size];
    if (l->count >= MAX_CAPACITY) return VIDK_ERR(EINVAL);
    if (l->count == l->capacity) {
        const uint32_t c = l->capacity < 64 ? 64 : l->capacity * 2;
        const int err = vidk_hevc_batch_reserve(b, size, c < MAX_CAPACITY ? c : MAX_CAPACITY);
        if (err < 0) return err;
    }
    const size_t len = (size_t)16 << (2 * size), i = l->count;
    l->tb[i] = *tb;
    if (res)
        memcpy(l->res + i * len, res, len * sizeof(int16_t));
    else
        memset(l->res + i * len, 0, len * sizeof(int16_t));
    l->count++;
    return (int)i;
}

static int batch_begin(VidkContext *ctx, VidkHevcBatch *b, int forward, Exec *e,
                       HevcPriv **ppv) {
    memset(e, 0, sizeof(*e));
    if (!ctx || !b) return VIDK_ERR(EINVAL);
    int err = vidk_hevc_batch_check(b, forward);
    if (err < 0) return err;
    if (!b->priv && !(b->priv = calloc(1, sizeof(HevcPriv)))) return VIDK_ERR(ENOMEM);
    HevcPriv *pv = b->priv;
    e->dsp = &ctx->hevc;
    e->b = b;
    if (b->scaling_lists) {
        if ((err = prepare_tables(b, pv)) < 0) return err;
        e->tables = pv;
    }
    *ppv = pv;
    return 0;
}

/* The backends validate the batch themselves (the cuda launchers are public to the tests
 * and benchmarks with the same checks). */
int vidk_hevc_batch_forward(VidkContext *ctx, VidkHevcBatch *b) {
    return ctx ? ctx->ops.hevc.forward(ctx, b) : VIDK_ERR(EINVAL);
}

int vidk_hevc_batch_inverse(VidkContext *ctx, VidkHevcBatch *b, VidkPicture *pic) {
    return ctx ? ctx->ops.hevc.inverse(ctx, b, pic) : VIDK_ERR(EINVAL);
}

int vidk_hevc_batch_forward_cpu(VidkContext *ctx, VidkHevcBatch *b) {
    Exec e;
    HevcPriv *pv;
    int err = batch_begin(ctx, b, 1, &e, &pv);
    if (err < 0) return err;
    if ((err = make_jobs(&e, JOB_VALUES, 0)) < 0) return err;
    ctx->ops.run(ctx, e.n_jobs, fwd_job, &e);
    if ((err = jobs_error(&e)) < 0) goto out;
    /* per-list prefix sums of the non-zero TBs: each job's first compacted slot */
    uint64_t total = 0;
    uint32_t run[VIDK_HEVC_TB_SIZES] = {0};
    for (int j = 0; j < e.n_jobs; j++) {
        const uint32_t v = e.jobs[j].nz;
        e.jobs[j].nz = run[e.jobs[j].size];
        run[e.jobs[j].size] += v;
        total += v;
    }
    for (int s = 0; s < VIDK_HEVC_TB_SIZES; s++)
        b->list[s].nz_count = run[s];
    ctx->ops.run(ctx, e.n_jobs, compact_job, &e);
    err = total > INT32_MAX ? INT32_MAX : (int)total;
out:
    free(e.jobs);
    return err;
}

int vidk_hevc_batch_inverse_cpu(VidkContext *ctx, VidkHevcBatch *b, VidkPicture *pic) {
    Exec e;
    HevcPriv *pv;
    int err = batch_begin(ctx, b, 0, &e, &pv);
    if (err < 0) return err;
    if (!pic) {
        if ((err = make_jobs(&e, JOB_VALUES, 0)) < 0) return err;
        ctx->ops.run(ctx, e.n_jobs, inv_res_job, &e);
        err = jobs_error(&e);
        free(e.jobs);
        return err;
    }
    if ((err = vidk_hevc_picture_planes(pic, b->bitdepth, &e.pl)) < 0) return err;
    e.pic = pic;
    if (ctx->n_threads > 1) {
        err = inv_add_threads(&e, ctx, pv);
        free(e.jobs);
        return err;
    }
    if ((err = check_positions_serial(&e)) < 0) return err;
    inv_add_serial(&e);
    return 0;
}

int vidk_hevc_batch_residual(VidkContext *ctx, VidkHevcBatch *b, const VidkPicture *src,
                             const VidkPicture *pred) {
    Exec e;
    HevcPriv *pv;
    int err = batch_begin(ctx, b, 0, &e, &pv);
    if (err < 0) return err;
    VidkHevcPlanes p2;
    if ((err = vidk_hevc_picture_planes(src, b->bitdepth, &e.pl)) < 0 ||
        (err = vidk_hevc_picture_planes(pred, b->bitdepth, &p2)) < 0)
        return err;
    if (memcmp(&e.pl, &p2, sizeof(p2))) return VIDK_ERR(EINVAL);
    e.src = src;
    e.pred = pred;
    if ((err = make_jobs(&e, JOB_VALUES, 0)) < 0) return err;
    ctx->ops.run(ctx, e.n_jobs, sub_job, &e);
    err = jobs_error(&e);
    free(e.jobs);
    return err;
}

/* ------------------------------------------------------------------ block arrays */

void vidk_hevc_default_block_params(VidkHevcBlockParams *p) {
    if (!p) return;
    memset(p, 0, sizeof(*p));
    p->size = VIDK_HEVC_TB_4x4;
    p->qp = 26;
    p->bitdepth = 8;
    p->flags = VIDK_HEVC_TB_INTRA | VIDK_HEVC_TB_ISLICE;
}

typedef struct BlockExec {
    const VidkHevcDSP *dsp;
    Run r;
    const int16_t *in;
    int16_t *out;
    uint16_t *nnz;
    size_t n, per;
} BlockExec;

static void block_fwd_job(void *arg, int j, int thread) {
    BlockExec *e = arg;
    const size_t i = (size_t)j * e->per, n = e->n - i < e->per ? e->n - i : e->per;
    const size_t o = i * (size_t)e->r.len;
    (void)thread;
    fwd_blocks(e->dsp, &e->r, e->out + o, e->in + o, n, e->nnz ? e->nnz + i : NULL);
}

static void block_inv_job(void *arg, int j, int thread) {
    BlockExec *e = arg;
    const size_t i = (size_t)j * e->per, n = e->n - i < e->per ? e->n - i : e->per;
    const size_t o = i * (size_t)e->r.len;
    (void)thread;
    inv_blocks(e->dsp, &e->r, e->out + o, e->in + o, n);
}

static int block_exec(VidkContext *ctx, const VidkHevcBlockParams *p, const int16_t *in,
                      int16_t *out, size_t n, uint16_t *nnz, int inverse) {
    if (!ctx || !p) return VIDK_ERR(EINVAL);
    int err = vidk_hevc_check_tb((int)p->size, p->qp, p->bitdepth, p->flags);
    if (err < 0) return err;
    for (size_t i = 0; i < sizeof(p->reserved); i++)
        if (p->reserved[i]) return VIDK_ERR(EINVAL);
    const int len = 16 << (2 * (int)p->size);
    if (p->scaling && check_scaling(p->scaling, len) < 0) return VIDK_ERR(EINVAL);
    if (!n) return 0;
    if (!in || !out) return VIDK_ERR(EINVAL);
    size_t total;
    if (!vidk_mul_size(n, (size_t)len * sizeof(int16_t), &total)) return VIDK_ERR(EINVAL);

    BlockExec e = {.dsp = &ctx->hevc, .in = in, .out = out, .nnz = nnz, .n = n};
    int32_t *qs = NULL;
    int16_t *ds = NULL;
    run_params(&e.r, (int)p->size, p->qp, p->flags, 0, p->bitdepth, NULL);
    if (p->scaling) {
        qs = malloc((size_t)len * sizeof(*qs));
        ds = malloc((size_t)len * sizeof(*ds));
        if (!qs || !ds) {
            free(qs);
            free(ds);
            return VIDK_ERR(ENOMEM);
        }
        vidk_hevc_quant_scales(qs, p->scaling, len, p->qp);
        vidk_hevc_dequant_scales(ds, p->scaling, len, p->qp);
        e.r.qs = qs;
        e.r.ds = ds;
    }
    e.per = (size_t)(JOB_VALUES / len);
    const size_t jobs = (n + e.per - 1) / e.per;
    if (jobs > INT32_MAX) {
        err = VIDK_ERR(EINVAL);
    } else {
        ctx->ops.run(ctx, (int)jobs, inverse ? block_inv_job : block_fwd_job, &e);
    }
    free(qs);
    free(ds);
    return err;
}

int vidk_hevc_forward_blocks(VidkContext *ctx, const VidkHevcBlockParams *p, const int16_t *res,
                             int16_t *lev, size_t n, uint16_t *nnz) {
    return block_exec(ctx, p, res, lev, n, nnz, 0);
}

int vidk_hevc_inverse_blocks(VidkContext *ctx, const VidkHevcBlockParams *p, const int16_t *lev,
                             int16_t *res, size_t n) {
    return block_exec(ctx, p, lev, res, n, NULL, 1);
}
