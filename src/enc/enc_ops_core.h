/* enc_tmpl.h's transform primitives bound to the families' cores (h264_core.h, hevc_core.h):
 * what the device runs (src/cuda/encode.cu) and what src/enc/encode.c's test instance runs on a
 * CPU. Include right before enc_tmpl.h, with ENC_T defined. */
#define EO_H264_SUB_FDCT(n, w, s, ss, p, ps) vidk_h264_sub_fdct(n, w, s, ss, p, ps)
#define EO_H264_QUANT(n, lev, w, mf, qb, fo) vidk_h264_quant((n) * (n), lev, w, mf, qb, fo)
#define EO_H264_DEQ_IDCT_ADD(n, d, ds, c, ls, qp, dc)                                          \
    vidk_h264_deq_idct_add(n, d, ds, c, ls, qp, dc)
#define EO_H264_FDCT_DC(t, y, w)                   vidk_h264_fdct_dc(t, y, w)
#define EO_H264_IDCT_DC(t, dc, c, ls00, qp)        vidk_h264_idct_dc(t, dc, c, (uint32_t)(ls00), qp)
#define EO_HEVC_FWD(l, coef, res, tmp)             enc_hevc_fwd(l, coef, res, tmp)
#define EO_HEVC_INV(l, res, coef, tmp)             enc_hevc_inv(l, res, coef, tmp)
#define EO_HEVC_QUANT(lev, coef, len, sc, qb, off) vidk_hevc_quant(lev, coef, len, sc, qb, off)
#define EO_HEVC_DEQUANT(coef, lev, len, sc, sh)    vidk_hevc_dequant(coef, lev, len, sc, sh)
