/* The hevc kernel family: block-level dispatch table (C first, then ISA overrides), the
 * standard's tables and helpers shared by the block API and the batch code.
 *
 * Contract of every implementation, every ISA (checked by tests/checkkern/check_hevc.c):
 * - Blocks are raster order (c[y * N + x]), contiguous, N * N int16 values each; a call
 *   processes n_blocks consecutive blocks. No alignment is required of any pointer.
 * - fwd (VIDK_HEVC_TX_*): coefficients of the residual blocks. Residuals are clipped to
 *   [-(2^bd - 1), 2^bd - 1] first; then rows (shift log2N + bd - 9), then columns (shift
 *   log2N + 6), each rounded, exact in 32 bits. In that domain every stage-1 value and
 *   every coefficient lies in [-32767, 32767] (|row sum of |T|| <= 64 N), so int16
 *   storage is exact; a SIMD butterfly must keep its 16-bit sums within that bound
 *   too (the 32-point 4th level and every stage-2 butterfly do not: use pmaddwd pairs).
 *   Transform skip: res << (13 - bd).
 * - inv: residuals of dequantised coefficient blocks (any int16): columns, (x + 64) >> 7
 *   clipped to int16 (8.6.4.2, normative), then rows, (x + 2^(19 - bd)) >> (20 - bd)
 *   clipped to int16. Column sums are at most 32768 * 2900: exact in 32 bits.
 *   Transform skip: ((d << 7) + 2^(19 - bd)) >> (20 - bd).
 * - quant: lev = sign(c) * ((|c| * scale + offset) >> qbits), clipped to [-32768, 32767];
 *   |c| <= 32768, scale <= 26214, offset < 2^31 - 2^30: the flat product fits 31 bits.
 *   quant_sl takes per-coefficient scales (<= 26214 * 16, one block's worth, reused for
 *   every block): 64-bit products. qbits 12..31. nnz[i] = non-zero levels of block i.
 *   lev may equal coef.
 * - dequant: d = Clip3(-32768, 32767, shift > 0 ? (lev * scale + 2^(shift-1)) >> shift
 *   : lev * scale << -shift), scale = m * levelScale <= 255 * 72, shift in -12..12 (the
 *   spec's bdShift - qP / 6). dequant_sl: per-coefficient scales (one block, reused).
 *   n counts values (a multiple of 16). coef may equal lev.
 * - add: Clip1(dst + res), dst 8-bit (add8) or 16-bit with bit depth bd (add16).
 * - sub: res = src - pred (8- or 16-bit samples).
 * - nnz: cnt[i] = the number of non-zero values of block i (len values each).
 * - fwd / inv may run in place (coef == res); other overlaps are not allowed.
 */
#ifndef VIDK_HEVC_FAMILY_H
#define VIDK_HEVC_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "vidkern/vidkern.h"

/* Transform kinds: index = log2N - 2 for the DCTs. */
enum {
    VIDK_HEVC_TX_DCT4 = 0,
    VIDK_HEVC_TX_DCT8 = 1,
    VIDK_HEVC_TX_DCT16 = 2,
    VIDK_HEVC_TX_DCT32 = 3,
    VIDK_HEVC_TX_DST4 = 4,
    VIDK_HEVC_TX_TS4 = 5, /* transform skip, 4x4 */
    VIDK_HEVC_TX_COUNT = 6
};

#define decl_hevc_fwd_fn(name)                                                                 \
    void name(int16_t *coef, const int16_t *res, int n_blocks, int bd)
typedef decl_hevc_fwd_fn((*vidk_hevc_fwd_fn));

#define decl_hevc_inv_fn(name)                                                                 \
    void name(int16_t *res, const int16_t *coef, int n_blocks, int bd)
typedef decl_hevc_inv_fn((*vidk_hevc_inv_fn));

#define decl_hevc_quant_fn(name)                                                               \
    void name(int16_t *lev, const int16_t *coef, int n_blocks, int len, int32_t scale,         \
              int qbits, int32_t offset, uint16_t *nnz)
typedef decl_hevc_quant_fn((*vidk_hevc_quant_fn));

#define decl_hevc_quant_sl_fn(name)                                                            \
    void name(int16_t *lev, const int16_t *coef, int n_blocks, int len, const int32_t *qs,     \
              int qbits, int32_t offset, uint16_t *nnz)
typedef decl_hevc_quant_sl_fn((*vidk_hevc_quant_sl_fn));

#define decl_hevc_dequant_fn(name)                                                             \
    void name(int16_t *coef, const int16_t *lev, size_t n, int scale, int shift)
typedef decl_hevc_dequant_fn((*vidk_hevc_dequant_fn));

#define decl_hevc_dequant_sl_fn(name)                                                          \
    void name(int16_t *coef, const int16_t *lev, int n_blocks, int len, const int16_t *ds,     \
              int shift)
typedef decl_hevc_dequant_sl_fn((*vidk_hevc_dequant_sl_fn));

#define decl_hevc_add8_fn(name) void name(uint8_t *dst, ptrdiff_t stride, const int16_t *res)
typedef decl_hevc_add8_fn((*vidk_hevc_add8_fn));

#define decl_hevc_add16_fn(name)                                                               \
    void name(uint16_t *dst, ptrdiff_t stride, const int16_t *res, int bd)
typedef decl_hevc_add16_fn((*vidk_hevc_add16_fn));

#define decl_hevc_sub8_fn(name)                                                                \
    void name(int16_t *res, const uint8_t *src, ptrdiff_t src_stride, const uint8_t *pred,     \
              ptrdiff_t pred_stride)
typedef decl_hevc_sub8_fn((*vidk_hevc_sub8_fn));

#define decl_hevc_sub16_fn(name)                                                               \
    void name(int16_t *res, const uint16_t *src, ptrdiff_t src_stride, const uint16_t *pred,   \
              ptrdiff_t pred_stride)
typedef decl_hevc_sub16_fn((*vidk_hevc_sub16_fn));

#define decl_hevc_nnz_fn(name) void name(uint16_t *cnt, const int16_t *v, int n_blocks, int len)
typedef decl_hevc_nnz_fn((*vidk_hevc_nnz_fn));

typedef struct VidkHevcDSP {
    vidk_hevc_fwd_fn fwd[VIDK_HEVC_TX_COUNT];
    vidk_hevc_inv_fn inv[VIDK_HEVC_TX_COUNT];
    vidk_hevc_quant_fn quant;
    vidk_hevc_quant_sl_fn quant_sl;
    vidk_hevc_dequant_fn dequant;
    vidk_hevc_dequant_sl_fn dequant_sl;
    vidk_hevc_add8_fn add8[VIDK_HEVC_TB_SIZES];
    vidk_hevc_add16_fn add16[VIDK_HEVC_TB_SIZES];
    vidk_hevc_sub8_fn sub8[VIDK_HEVC_TB_SIZES];
    vidk_hevc_sub16_fn sub16[VIDK_HEVC_TB_SIZES];
    vidk_hevc_nnz_fn nnz;
} VidkHevcDSP;

/* Fill with the C versions, then override by rising ISA within flags. */
void vidk_hevc_dsp_init(VidkHevcDSP *dsp, unsigned flags);
/* x86 part (src/x86/hevc_init.c); returns early at the first missing flag. */
void vidk_hevc_dsp_init_x86(VidkHevcDSP *dsp, unsigned flags);
/* Per-ISA parts (src/x86/hevc_<isa>.c), called by vidk_hevc_dsp_init_x86 only. */
void vidk_hevc_dsp_init_sse41(VidkHevcDSP *dsp);
void vidk_hevc_dsp_init_avx2(VidkHevcDSP *dsp);
void vidk_hevc_dsp_init_avx512(VidkHevcDSP *dsp);

/* ---- batch checks (src/hevc_batch.c), the same for every backend ---- */
/* Plane sizes of a picture for the TB position checks (w 0: plane absent), bytes per
 * sample. EINVAL: no picture, another bit depth, no luma. */
typedef struct VidkHevcPlanes {
    int w[3], h[3], pb;
} VidkHevcPlanes;
int vidk_hevc_picture_planes(const VidkPicture *p, int bd, VidkHevcPlanes *pl);
/* One TB record of size class `size` (plane, qp, flags, reserved), and its position. */
int vidk_hevc_check_record(const VidkHevcTb *t, int size, int bd);
int vidk_hevc_check_position(const VidkHevcTb *t, int n, const VidkHevcPlanes *pl);
/* Everything but the records: bit depth, counts, arrays (forward: the compacted outputs
 * too) and, with scaling lists, no zero scaling factor. 0 or EINVAL. */
int vidk_hevc_batch_check(const VidkHevcBatch *b, int forward);

/* ---- the standard's tables (src/hevc.c) ---- */
/* The 32-point DCT matrix of 8.6.4.2: vidk_hevc_t32[k][n], k the basis function (row),
 * n the sample. The N-point matrix is T_N[k][n] = vidk_hevc_t32[k * 32 / N][n]. */
extern const int8_t vidk_hevc_t32[32][32];
/* The DST-VII matrix of 8.6.4.2 (trType 1): [k][n]. */
extern const int8_t vidk_hevc_dst4[4][4];
/* Forward quantiser scales (HM) and levelScale (8.6.3), indexed by qP % 6. */
extern const int32_t vidk_hevc_qscale[6];
extern const int32_t vidk_hevc_level_scale[6];

/* ---- quantiser parameters (src/hevc.c) ---- */
/* qbits and the rounding offset of a TB (forward). log2n: 2..5. */
static inline int vidk_hevc_qbits(int qp, int bd, int log2n) {
    return 14 + qp / 6 + (15 - bd - log2n);
}
static inline int32_t vidk_hevc_qoffset(int qbits, int islice) {
    return (int32_t)((islice ? 171 : 85) << (qbits - 9));
}
/* Dequantiser shift: bdShift - qP / 6 (> 0: rounding right shift; <= 0: left shift). */
static inline int vidk_hevc_dqshift(int qp, int bd, int log2n) {
    return bd + log2n - 5 - qp / 6;
}
/* Per-coefficient scales from scaling factors m (len values): quantiser (Q << 4) / m
 * (HM's encoder), dequantiser m * levelScale. */
void vidk_hevc_quant_scales(int32_t *qs, const uint8_t *m, int len, int qp);
void vidk_hevc_dequant_scales(int16_t *ds, const uint8_t *m, int len, int qp);

/* Validation of a qp / flags / size combination (0 or VIDK_ERR(EINVAL)). */
int vidk_hevc_check_tb(int size, int qp, int bd, unsigned flags);
/* Transform kind of a TB. */
static inline int vidk_hevc_tx_kind(int size, unsigned flags) {
    if (size == 0 && (flags & VIDK_HEVC_TB_DST)) return VIDK_HEVC_TX_DST4;
    if (size == 0 && (flags & VIDK_HEVC_TB_TSKIP)) return VIDK_HEVC_TX_TS4;
    return size;
}
/* ScalingFactor matrix of a size / matrixId inside a VidkHevcScaling. */
const uint8_t *vidk_hevc_scaling_matrix(const VidkHevcScaling *s, int size, int matrix_id);

#if defined(__GNUC__)
#define VIDK_HEVC_ALIGN(n) __attribute__((aligned(n)))
#else
#define VIDK_HEVC_ALIGN(n) _Alignas(n)
#endif

#endif
