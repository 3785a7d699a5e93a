/* The h264 kernel family: block-level dispatch table (C first, then ISA overrides),
 * the spec's constant tables and the helpers shared by the block and batch code.
 *
 * Contract of every implementation, every ISA (checked by tests/checkkern/check_h264.c):
 * - Coefficient matrices are raster order (c[y * N + x]); N = 4 or 8.
 * - Inverse path: exact 32-bit two's-complement arithmetic, wrapping modulo 2^32, right
 *   shifts arithmetic. Any int16 level and any int32 dequantised value is accepted; an
 *   implementation using 16-bit lanes must prove (by a per-block test) that its result
 *   equals the 32-bit one, and fall back to 32 bits otherwise.
 * - Forward path: int16 residuals / 8-bit samples; the transforms are exact in 32 bits.
 * - ls (LevelScale) tables: int16, LevelScale(qp % 6, i, j) = weightScale(i, j) *
 *   normAdjust(qp % 6, i, j), raster; 1 <= ls <= 255 * 58. qp is the full qP'
 *   (0..87); the function uses qp / 6.
 * - mf (quantiser factor) tables: int32, 0 <= mf < 2^20; qbits 15..31; 0 <= f < 2^31.
 * - Pixel pointers and strides have no alignment requirement; coefficient, residual and
 *   level arrays are 16-byte aligned.
 */
#ifndef VIDK_H264_FAMILY_H
#define VIDK_H264_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "h264_core.h"
#include "vidkern/vidkern.h"

/* Size index of the tables: 0 = 4x4, 1 = 8x8 (VIDK_H264_TX_4x4 / _8x8). */
/* DC index: VIDK_H264_DC_LUMA (4x4), _CHROMA (2x2), _CHROMA422 (4 rows x 2). */

/* d = dequantised c (8.5.12.1 / 8.5.13.1), every element including element 0. */
#define decl_h264_dequant_fn(name)                                                             \
    void name(int32_t *d, const int16_t *c, const int16_t *ls, int qp)
typedef decl_h264_dequant_fn((*vidk_h264_dequant_fn));

/* r = inverse transform of d, (x + 32) >> 6 (8.5.12.2 / 8.5.13.2). */
#define decl_h264_idct_fn(name) void name(int32_t *r, const int32_t *d)
typedef decl_h264_idct_fn((*vidk_h264_idct_fn));

/* dst = Clip1(dst + inverse transform of d) (8.5.14), 8-bit samples. */
#define decl_h264_idct_add_fn(name) void name(uint8_t *dst, ptrdiff_t stride, const int32_t *d)
typedef decl_h264_idct_add_fn((*vidk_h264_idct_add_fn));

/* idct_add on int16 dequantised coefficients (the x264 / FFmpeg interface: those of a
 * conforming stream fit 16 bits). Same result as idct_add on the values widened to int32
 * for every input; SIMD proves the 16-bit shortcut per block as idct_add does. */
#define decl_h264_idct_add16_fn(name)                                                          \
    void name(uint8_t *dst, ptrdiff_t stride, const int16_t *d)
typedef decl_h264_idct_add16_fn((*vidk_h264_idct_add16_fn));

/* The decoder's fused path: dequantise c, replace element 0 by *dc when dc is not NULL
 * (blocks fed by a DC transform), inverse transform, add to dst and clip. */
#define decl_h264_dequant_idct_add_fn(name)                                                    \
    void name(uint8_t *dst, ptrdiff_t stride, const int16_t *c, const int16_t *ls, int qp,     \
              const int32_t *dc)
typedef decl_h264_dequant_idct_add_fn((*vidk_h264_dequant_idct_add_fn));

/* DC transform + scaling (8.5.10, 8.5.11): dc = dequantised DC values (16, 4 or 8).
 * w = weightScale4x4(0, 0) of the block's list (1..255); the function forms
 * LevelScale4x4(qP % 6, 0, 0) = w * normAdjust itself (4:2:2 chroma: qP,DC = qp + 3). */
#define decl_h264_idct_dc_fn(name) void name(int32_t *dc, const int16_t *c, int w, int qp)
typedef decl_h264_idct_dc_fn((*vidk_h264_idct_dc_fn));

/* w = forward transform of an int16 residual block (rows first, then columns). */
#define decl_h264_fdct_fn(name) void name(int32_t *w, const int16_t *res)
typedef decl_h264_fdct_fn((*vidk_h264_fdct_fn));

/* w = forward transform of (src - pred), 8-bit samples. */
#define decl_h264_sub_fdct_fn(name)                                                            \
    void name(int32_t *w, const uint8_t *src, ptrdiff_t src_stride, const uint8_t *pred,       \
              ptrdiff_t pred_stride)
typedef decl_h264_sub_fdct_fn((*vidk_h264_sub_fdct_fn));

/* lev[k] = sign(w[k]) * min(32767, (|w[k]| * mf[k] + f) >> qbits); returns the number
 * of non-zero levels. 16 (4x4) or 64 (8x8) values. */
#define decl_h264_quant_fn(name)                                                               \
    int name(int16_t *lev, const int32_t *w, const int32_t *mf, int qbits, int32_t f)
typedef decl_h264_quant_fn((*vidk_h264_quant_fn));

/* Forward DC transform (Hadamard, exact): y = H w H^T for 16, 4 or 8 values. */
#define decl_h264_fdct_dc_fn(name) void name(int32_t *y, const int32_t *w)
typedef decl_h264_fdct_dc_fn((*vidk_h264_fdct_dc_fn));

/* Number of non-zero levels of a 4x4 / 8x8 block stored in a plane (stride in bytes). */
#define decl_h264_nnz_fn(name) int name(const int16_t *c, ptrdiff_t stride)
typedef decl_h264_nnz_fn((*vidk_h264_nnz_fn));

typedef struct VidkH264DSP {
    vidk_h264_dequant_fn dequant[2];
    vidk_h264_idct_fn idct[2];
    vidk_h264_idct_add_fn idct_add[2];
    vidk_h264_dequant_idct_add_fn dequant_idct_add[2];
    vidk_h264_idct_dc_fn idct_dc[3];
    vidk_h264_fdct_fn fdct[2];
    vidk_h264_sub_fdct_fn sub_fdct[2];
    vidk_h264_quant_fn quant[2];
    vidk_h264_fdct_dc_fn fdct_dc[3];
    vidk_h264_nnz_fn nnz[2];
    vidk_h264_idct_add16_fn idct_add16[2];
} VidkH264DSP;

/* Fill with the C versions, then override by rising ISA within flags. */
void vidk_h264_dsp_init(VidkH264DSP *dsp, unsigned flags);
/* x86 part (src/x86/h264_init.c); returns early at the first missing flag. */
void vidk_h264_dsp_init_x86(VidkH264DSP *dsp, unsigned flags);
/* Per-ISA parts (src/x86/h264_<isa>.c), called by vidk_h264_dsp_init_x86 only. */
void vidk_h264_dsp_init_sse2(VidkH264DSP *dsp);
void vidk_h264_dsp_init_avx2(VidkH264DSP *dsp);
void vidk_h264_dsp_init_avx512(VidkH264DSP *dsp);

/* ---- spec tables (src/h264.c) ---- */
/* normAdjust4x4 (8-315): v[m][class], class 0 (even, even), 1 (odd, odd), 2 other. */
extern const uint8_t vidk_h264_norm4[6][3];
/* normAdjust8x8 (8-318): v[m][class], classes as vidk_h264_class8. */
extern const uint8_t vidk_h264_norm8[6][6];
/* Forward quantiser factors (JM encoder model), same classes. */
extern const uint16_t vidk_h264_mf4[6][3];
extern const uint16_t vidk_h264_mf8[6][6];
/* Class of each raster position. */
extern const uint8_t vidk_h264_class4[16];
extern const uint8_t vidk_h264_class8[64];

/* LevelScale tables for one scaling matrix and every qp % 6: ls[m][k] (raster). */
void vidk_h264_level_scale4(int16_t ls[6][16], const uint8_t *w16);
void vidk_h264_level_scale8(int16_t ls[6][64], const uint8_t *w64);
/* Quantiser factors for one scaling matrix: mf[m][k] = round(MF * 16 / weight). */
void vidk_h264_quant_mf4(int32_t mf[6][16], const uint8_t *w16);
void vidk_h264_quant_mf8(int32_t mf[6][64], const uint8_t *w64);
/* Dead-zone offset vidk_h264_deadzone(): src/h264_core.h. */

/* 16-byte aligned scratch helpers for the kernels. */
#if defined(__GNUC__)
#define VIDK_ALIGN(n) __attribute__((aligned(n)))
#else
#define VIDK_ALIGN(n) _Alignas(n)
#endif

#endif
