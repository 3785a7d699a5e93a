/* Portable C reference of the h264 family (ground truth for every other backend), the
 * spec's tables, and the block-array API.
 *
 * Clause numbers refer to ITU-T H.264 (08/2021). The arithmetic itself (transforms,
 * quantiser, DC transforms) is src/h264_core.h's, shared with the coding loop and the
 * CUDA kernels. */
#include <stdlib.h>
#include <string.h>

#include "h264_core.h"
#include "internal.h"

/* ---- tables ---------------------------------------------------------------------- */

/* 8.5.9, normAdjust4x4: v[m][0] for (i%2, j%2) == (0, 0), v[m][1] for (1, 1), v[m][2]
 * otherwise. */
const uint8_t vidk_h264_norm4[6][3] = {
    {10, 16, 13}, {11, 18, 14}, {13, 20, 16}, {14, 23, 18}, {16, 25, 20}, {18, 29, 23},
};

/* 8.5.9, normAdjust8x8: classes 0: i%4 == 0 && j%4 == 0; 1: i%2 == 1 && j%2 == 1;
 * 2: i%4 == 2 && j%4 == 2; 3: (i%4 == 0 && j%2 == 1) || (i%2 == 1 && j%4 == 0);
 * 4: (i%4 == 0 && j%4 == 2) || (i%4 == 2 && j%4 == 0); 5: otherwise. */
const uint8_t vidk_h264_norm8[6][6] = {
    {20, 18, 32, 19, 25, 24}, {22, 19, 35, 21, 28, 26}, {26, 23, 42, 24, 33, 31},
    {28, 25, 45, 26, 35, 33}, {32, 28, 51, 30, 40, 38}, {36, 32, 58, 34, 46, 43},
};

/* Forward quantiser factors of the reference encoder model (JM; Malvar et al. 2003 for
 * 4x4, the FRExt 8x8 design for 8x8): MF * normAdjust ~= 2^17 (4x4) / 2^18 (8x8) times
 * the squared norm ratio of the position class. */
const uint16_t vidk_h264_mf4[6][3] = {
    {13107, 5243, 8066}, {11916, 4660, 7490}, {10082, 4194, 6554},
    {9362, 3647, 5825},  {8192, 3355, 5243},  {7282, 2893, 4559},
};
const uint16_t vidk_h264_mf8[6][6] = {
    {13107, 11428, 20972, 12222, 16777, 15481}, {11916, 10826, 19174, 11058, 14980, 14290},
    {10082, 8943, 15978, 9675, 12710, 11985},   {9362, 8228, 14913, 8931, 11984, 11259},
    {8192, 7346, 13159, 7740, 10486, 9777},     {7282, 6428, 11570, 6830, 9118, 8640},
};

const uint8_t vidk_h264_class4[16] = {
    0, 2, 0, 2, 2, 1, 2, 1, 0, 2, 0, 2, 2, 1, 2, 1,
};

const uint8_t vidk_h264_class8[64] = {
    0, 3, 4, 3, 0, 3, 4, 3, 3, 1, 5, 1, 3, 1, 5, 1, 4, 5, 2, 5, 4, 5,
    2, 5, 3, 1, 5, 1, 3, 1, 5, 1, 0, 3, 4, 3, 0, 3, 4, 3, 3, 1, 5, 1,
    3, 1, 5, 1, 4, 5, 2, 5, 4, 5, 2, 5, 3, 1, 5, 1, 3, 1, 5, 1,
};

static const uint8_t flat16[64] = {
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
    16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16,
};

/* 8.5.9: LevelScale4x4(m, i, j) = weightScale4x4(i, j) * normAdjust4x4(m, i, j). */
void vidk_h264_level_scale4(int16_t ls[6][16], const uint8_t *w16) {
    if (!w16) w16 = flat16;
    for (int m = 0; m < 6; m++)
        for (int k = 0; k < 16; k++)
            ls[m][k] = (int16_t)(w16[k] * vidk_h264_norm4[m][vidk_h264_class4[k]]);
}

void vidk_h264_level_scale8(int16_t ls[6][64], const uint8_t *w64) {
    if (!w64) w64 = flat16;
    for (int m = 0; m < 6; m++)
        for (int k = 0; k < 64; k++)
            ls[m][k] = (int16_t)(w64[k] * vidk_h264_norm8[m][vidk_h264_class8[k]]);
}

/* Encoder factors for a scaling matrix: MF * 16 / weight, rounded to nearest, so that
 * MF' * LevelScale stays the flat product (the quantiser inverts the dequantiser). */
void vidk_h264_quant_mf4(int32_t mf[6][16], const uint8_t *w16) {
    if (!w16) w16 = flat16;
    for (int m = 0; m < 6; m++)
        for (int k = 0; k < 16; k++) {
            const int32_t n = vidk_h264_mf4[m][vidk_h264_class4[k]] * 16;
            mf[m][k] = (n + w16[k] / 2) / w16[k];
        }
}

void vidk_h264_quant_mf8(int32_t mf[6][64], const uint8_t *w64) {
    if (!w64) w64 = flat16;
    for (int m = 0; m < 6; m++)
        for (int k = 0; k < 64; k++) {
            const int32_t n = vidk_h264_mf8[m][vidk_h264_class8[k]] * 16;
            mf[m][k] = (n + w64[k] / 2) / w64[k];
        }
}

/* ---- inverse path (decoder): the arithmetic of src/h264_core.h ---------------------- */

static inline void dequant_n(int32_t *d, const int16_t *c, const int16_t *ls, int qp, int n) {
    const int per = qp / 6, lim = n == 4 ? 4 : 6;
    for (int k = 0; k < n * n; k++)
        d[k] = (int32_t)vidk_h264_dequant1(c[k], ls[k], per, lim);
}

static decl_h264_dequant_fn(dequant_4x4_c) {
    dequant_n(d, c, ls, qp, 4);
}

static decl_h264_dequant_fn(dequant_8x8_c) {
    dequant_n(d, c, ls, qp, 8);
}

static inline void idct_n(int32_t *r, const int32_t *d, int n) {
    uint32_t t[64];
    for (int k = 0; k < n * n; k++)
        t[k] = (uint32_t)d[k];
    vidk_h264_itx_2d(n, t);
    for (int k = 0; k < n * n; k++)
        r[k] = (int32_t)vidk_h264_round6(t[k]);
}

static decl_h264_idct_fn(idct_4x4_c) {
    idct_n(r, d, 4);
}

static decl_h264_idct_fn(idct_8x8_c) {
    idct_n(r, d, 8);
}

static inline void idct_add_n(uint8_t *dst, ptrdiff_t stride, const int32_t *d, int n) {
    uint32_t t[64];
    for (int k = 0; k < n * n; k++)
        t[k] = (uint32_t)d[k];
    vidk_h264_idct_add(n, dst, stride, t);
}

static decl_h264_idct_add_fn(idct_add_4x4_c) {
    idct_add_n(dst, stride, d, 4);
}

static decl_h264_idct_add_fn(idct_add_8x8_c) {
    idct_add_n(dst, stride, d, 8);
}

static decl_h264_idct_add16_fn(idct_add16_4x4_c) {
    int32_t w[16];
    for (int k = 0; k < 16; k++)
        w[k] = d[k];
    idct_add_4x4_c(dst, stride, w);
}

static decl_h264_idct_add16_fn(idct_add16_8x8_c) {
    int32_t w[64];
    for (int k = 0; k < 64; k++)
        w[k] = d[k];
    idct_add_8x8_c(dst, stride, w);
}

static decl_h264_dequant_idct_add_fn(dequant_idct_add_4x4_c) {
    vidk_h264_deq_idct_add(4, dst, stride, c, ls, qp, dc);
}

static decl_h264_dequant_idct_add_fn(dequant_idct_add_8x8_c) {
    vidk_h264_deq_idct_add(8, dst, stride, c, ls, qp, dc); /* dc: never used by the spec */
}

/* 8.5.10 / 8.5.11: the DC transform, then the scaling with LevelScale4x4(qP,DC % 6, 0, 0)
 * (qP,DC = qP + 3 for 4:2:2 chroma). */
static inline void idct_dc_n(int type, int32_t *dc, const int16_t *c, int w, int qp) {
    const int qpdc = type == VIDK_H264_DC_CHROMA422 ? qp + 3 : qp;
    vidk_h264_idct_dc(type, dc, c, (uint32_t)(w * vidk_h264_norm4[qpdc % 6][0]), qpdc);
}

static decl_h264_idct_dc_fn(idct_dc_luma_c) {
    idct_dc_n(VIDK_H264_DC_LUMA, dc, c, w, qp);
}

static decl_h264_idct_dc_fn(idct_dc_chroma_c) {
    idct_dc_n(VIDK_H264_DC_CHROMA, dc, c, w, qp);
}

static decl_h264_idct_dc_fn(idct_dc_chroma422_c) {
    idct_dc_n(VIDK_H264_DC_CHROMA422, dc, c, w, qp);
}

/* ---- forward path (encoder; not normative: the JM / Malvar et al. design) --------- */

static decl_h264_fdct_fn(fdct_4x4_c) {
    for (int k = 0; k < 16; k++)
        w[k] = res[k];
    vidk_h264_ftx_2d(4, w);
}

static decl_h264_fdct_fn(fdct_8x8_c) {
    for (int k = 0; k < 64; k++)
        w[k] = res[k];
    vidk_h264_ftx_2d(8, w);
}

static decl_h264_sub_fdct_fn(sub_fdct_4x4_c) {
    vidk_h264_sub_fdct(4, w, src, src_stride, pred, pred_stride);
}

static decl_h264_sub_fdct_fn(sub_fdct_8x8_c) {
    vidk_h264_sub_fdct(8, w, src, src_stride, pred, pred_stride);
}

static decl_h264_quant_fn(quant_4x4_c) {
    return vidk_h264_quant(16, lev, w, mf, qbits, f);
}
static decl_h264_quant_fn(quant_8x8_c) {
    return vidk_h264_quant(64, lev, w, mf, qbits, f);
}

/* Forward DC transforms: the decoder's matrices transposed (all symmetric), no scaling:
 * luma y = A w A, chroma y = B w B, 4:2:2 y = A w B. */
static decl_h264_fdct_dc_fn(fdct_dc_luma_c) {
    vidk_h264_fdct_dc(VIDK_H264_DC_LUMA, y, w);
}

static decl_h264_fdct_dc_fn(fdct_dc_chroma_c) {
    vidk_h264_fdct_dc(VIDK_H264_DC_CHROMA, y, w);
}

static decl_h264_fdct_dc_fn(fdct_dc_chroma422_c) {
    vidk_h264_fdct_dc(VIDK_H264_DC_CHROMA422, y, w);
}

static decl_h264_nnz_fn(nnz_4x4_c) {
    int n = 0;
    for (int y = 0; y < 4; y++, c = (const int16_t *)((const uint8_t *)c + stride))
        for (int x = 0; x < 4; x++)
            n += c[x] != 0;
    return n;
}

static decl_h264_nnz_fn(nnz_8x8_c) {
    int n = 0;
    for (int y = 0; y < 8; y++, c = (const int16_t *)((const uint8_t *)c + stride))
        for (int x = 0; x < 8; x++)
            n += c[x] != 0;
    return n;
}

void vidk_h264_dsp_init(VidkH264DSP *dsp, unsigned flags) {
    dsp->dequant[0] = dequant_4x4_c;
    dsp->dequant[1] = dequant_8x8_c;
    dsp->idct[0] = idct_4x4_c;
    dsp->idct[1] = idct_8x8_c;
    dsp->idct_add[0] = idct_add_4x4_c;
    dsp->idct_add[1] = idct_add_8x8_c;
    dsp->idct_add16[0] = idct_add16_4x4_c;
    dsp->idct_add16[1] = idct_add16_8x8_c;
    dsp->dequant_idct_add[0] = dequant_idct_add_4x4_c;
    dsp->dequant_idct_add[1] = dequant_idct_add_8x8_c;
    dsp->idct_dc[VIDK_H264_DC_LUMA] = idct_dc_luma_c;
    dsp->idct_dc[VIDK_H264_DC_CHROMA] = idct_dc_chroma_c;
    dsp->idct_dc[VIDK_H264_DC_CHROMA422] = idct_dc_chroma422_c;
    dsp->fdct[0] = fdct_4x4_c;
    dsp->fdct[1] = fdct_8x8_c;
    dsp->sub_fdct[0] = sub_fdct_4x4_c;
    dsp->sub_fdct[1] = sub_fdct_8x8_c;
    dsp->quant[0] = quant_4x4_c;
    dsp->quant[1] = quant_8x8_c;
    dsp->fdct_dc[VIDK_H264_DC_LUMA] = fdct_dc_luma_c;
    dsp->fdct_dc[VIDK_H264_DC_CHROMA] = fdct_dc_chroma_c;
    dsp->fdct_dc[VIDK_H264_DC_CHROMA422] = fdct_dc_chroma422_c;
    dsp->nnz[0] = nnz_4x4_c;
    dsp->nnz[1] = nnz_8x8_c;
#if VIDK_HAVE_SIMD
    vidk_h264_dsp_init_x86(dsp, flags);
#else
    (void)flags;
#endif
}

/* ---- block-array API -------------------------------------------------------------- */

static const uint8_t block_values[VIDK_H264_BLOCK_TYPES] = {16, 64, 16, 4, 8};

int vidk_h264_block_values(VidkH264BlockType t) {
    return (unsigned)t < VIDK_H264_BLOCK_TYPES ? block_values[t] : 0;
}

void vidk_h264_default_block_params(VidkH264BlockParams *p) {
    if (!p) return;
    memset(p, 0, sizeof(*p));
    p->type = VIDK_H264_BLOCK_4x4;
    p->qp = 26;
    p->bitdepth = 8;
    p->intra = 1;
}

static int check_params(const VidkH264BlockParams *p) {
    if (!p || (unsigned)p->type >= VIDK_H264_BLOCK_TYPES) return 0;
    if (p->bitdepth < 8 || p->bitdepth > VIDK_H264_MAX_BITDEPTH) return 0;
    if (p->qp < 0 || p->qp > VIDK_H264_MAX_QP(p->bitdepth)) return 0;
    if (p->intra != 0 && p->intra != 1) return 0;
    for (size_t i = 0; i < sizeof(p->reserved); i++)
        if (p->reserved[i]) return 0;
    if (p->scaling) {
        const int n = p->type == VIDK_H264_BLOCK_8x8 ? 64 : 16;
        for (int k = 0; k < n; k++)
            if (!p->scaling[k]) return 0;
    }
    return 1;
}

/* Everything a job needs for one call on a range of blocks. */
typedef struct BlockJob {
    const VidkH264DSP *dsp;
    const VidkH264BlockParams *p;
    const int16_t *in;
    int16_t *lev;
    int32_t *out;
    size_t n, per_job;
    int nv;
    VIDK_ALIGN(16) int16_t ls[64];
    VIDK_ALIGN(16) int32_t mf[64];
    int dc_type, qbits;
    int32_t f;
    size_t nnz[64]; /* per job slot, summed by the caller (jobs <= 64) */
} BlockJob;

static void forward_job(void *arg, int job, int thread) {
    (void)thread;
    BlockJob *j = arg;
    const size_t b0 = (size_t)job * j->per_job;
    const size_t b1 = b0 + j->per_job < j->n ? b0 + j->per_job : j->n;
    const int nv = j->nv;
    VIDK_ALIGN(16) int16_t res[64];
    VIDK_ALIGN(16) int32_t w[64], y[16];
    VIDK_ALIGN(16) int16_t lev[64];
    size_t nz = 0;
    for (size_t b = b0; b < b1; b++) {
        const int16_t *src = j->in + b * (size_t)nv;
        int16_t *dst = j->lev + b * (size_t)nv;
        if (j->dc_type < 0) {
            const int sz = nv == 64;
            memcpy(res, src, (size_t)nv * sizeof(*src));
            j->dsp->fdct[sz](w, res);
            nz += (size_t)j->dsp->quant[sz](lev, w, j->mf, j->qbits, j->f);
            memcpy(dst, lev, (size_t)nv * sizeof(*dst));
        } else {
            for (int k = 0; k < 16; k++)
                w[k] = k < nv ? src[k] : 0;
            j->dsp->fdct_dc[j->dc_type](y, w);
            for (int k = nv; k < 16; k++)
                y[k] = 0;
            nz += (size_t)j->dsp->quant[0](lev, y, j->mf, j->qbits, j->f);
            memcpy(dst, lev, (size_t)nv * sizeof(*dst));
        }
    }
    j->nnz[job] = nz;
}

static void inverse_job(void *arg, int job, int thread) {
    (void)thread;
    BlockJob *j = arg;
    const size_t b0 = (size_t)job * j->per_job;
    const size_t b1 = b0 + j->per_job < j->n ? b0 + j->per_job : j->n;
    const int nv = j->nv;
    VIDK_ALIGN(16) int16_t c[64];
    VIDK_ALIGN(16) int32_t d[64], r[64];
    const int w00 = j->p->scaling ? j->p->scaling[0] : 16;
    for (size_t b = b0; b < b1; b++) {
        memcpy(c, j->in + b * (size_t)nv, (size_t)nv * sizeof(*c));
        int32_t *dst = j->out + b * (size_t)nv;
        if (j->dc_type < 0) {
            const int sz = nv == 64;
            j->dsp->dequant[sz](d, c, j->ls, j->p->qp);
            j->dsp->idct[sz](r, d);
            memcpy(dst, r, (size_t)nv * sizeof(*dst));
        } else {
            j->dsp->idct_dc[j->dc_type](r, c, w00, j->p->qp);
            memcpy(dst, r, (size_t)nv * sizeof(*dst));
        }
    }
}

static int run_blocks(VidkContext *ctx, const VidkH264BlockParams *p, const int16_t *in,
                      int16_t *lev, int32_t *out, size_t n, size_t *nnz) {
    if (!ctx || !check_params(p) || (n && !in) || (n && !lev && !out)) return VIDK_ERR(EINVAL);
    BlockJob *j = vidk_malloc_aligned(64, sizeof(*j));
    if (!j) return VIDK_ERR(ENOMEM);
    memset(j, 0, sizeof(*j));
    j->dsp = &ctx->h264;
    j->p = p;
    j->in = in;
    j->lev = lev;
    j->out = out;
    j->n = n;
    j->nv = vidk_h264_block_values(p->type);
    j->dc_type =
        p->type >= VIDK_H264_BLOCK_DC_LUMA ? (int)p->type - VIDK_H264_BLOCK_DC_LUMA : -1;
    const int m = p->qp % 6, per = p->qp / 6;
    if (p->type == VIDK_H264_BLOCK_8x8) {
        int16_t ls[6][64];
        int32_t mf[6][64];
        vidk_h264_level_scale8(ls, p->scaling);
        vidk_h264_quant_mf8(mf, p->scaling);
        memcpy(j->ls, ls[m], sizeof(j->ls));
        memcpy(j->mf, mf[m], sizeof(j->mf));
        j->qbits = 16 + per;
    } else if (p->type == VIDK_H264_BLOCK_4x4) {
        int16_t ls[6][16];
        int32_t mf[6][16];
        vidk_h264_level_scale4(ls, p->scaling);
        vidk_h264_quant_mf4(mf, p->scaling);
        memcpy(j->ls, ls[m], 16 * sizeof(int16_t));
        memcpy(j->mf, mf[m], 16 * sizeof(int32_t));
        j->qbits = 15 + per;
    } else {
        /* DC: every value uses the (0, 0) factor; 4:2:2 chroma quantises with qP + 3. */
        const int qpdc = p->type == VIDK_H264_BLOCK_DC_CHROMA422 ? p->qp + 3 : p->qp;
        const int w00 = p->scaling ? p->scaling[0] : 16;
        const int32_t mf00 = (vidk_h264_mf4[qpdc % 6][0] * 16 + w00 / 2) / w00;
        for (int k = 0; k < 16; k++)
            j->mf[k] = mf00;
        j->qbits = (p->type == VIDK_H264_BLOCK_DC_LUMA ? 17 : 16) + qpdc / 6;
    }
    j->f = vidk_h264_deadzone(j->qbits, p->intra);

    int jobs = 1;
    if (ctx->n_threads > 1 && n >= 2048) jobs = n / 1024 < 64 ? (int)(n / 1024) : 64;
    j->per_job = jobs > 1 ? (n + (size_t)jobs - 1) / (size_t)jobs : n;
    if (n) ctx->ops.run(ctx, jobs, lev ? forward_job : inverse_job, j);
    size_t total = 0;
    for (int k = 0; k < jobs; k++)
        total += j->nnz[k];
    if (nnz) *nnz = total;
    vidk_free_aligned(j);
    return 0;
}

int vidk_h264_forward_blocks(VidkContext *ctx, const VidkH264BlockParams *p, const int16_t *in,
                             int16_t *out, size_t n, size_t *nnz) {
    if (n && !out) return VIDK_ERR(EINVAL);
    return run_blocks(ctx, p, in, out ? out : NULL, NULL, n, nnz);
}

int vidk_h264_inverse_blocks(VidkContext *ctx, const VidkH264BlockParams *p, const int16_t *in,
                             int32_t *out, size_t n) {
    if (n && !out) return VIDK_ERR(EINVAL);
    return run_blocks(ctx, p, in, NULL, out, n, NULL);
}

/* Table 8-15: QPC as a function of qPI for qPI >= 30. */
static const uint8_t chroma_qp_tab[22] = {29, 30, 31, 32, 32, 33, 34, 34, 35, 35, 36,
                                          36, 37, 37, 37, 38, 38, 38, 39, 39, 39, 39};

int vidk_h264_chroma_qp(int qpy, int offset, int bitdepth) {
    if (bitdepth < 8 || bitdepth > VIDK_H264_MAX_BITDEPTH) return VIDK_ERR(EINVAL);
    const int bd_off = 6 * (bitdepth - 8);
    if (qpy < -bd_off || qpy > 51 || offset < -12 || offset > 12) return VIDK_ERR(EINVAL);
    /* 8.5.8: qPI = Clip3(-QpBdOffsetC, 51, QPY + qPOffset). */
    const int qpi = vidk_iclip(qpy + offset, -bd_off, 51);
    const int qpc = qpi < 30 ? qpi : chroma_qp_tab[qpi - 30];
    return qpc + bd_off;
}
