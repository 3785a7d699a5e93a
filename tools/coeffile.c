/* Coefficient-frame files (docs/COEFFORMAT.md): the tools' file format for
 * VidkH264CoefFrame, written and read with the public API only. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coeffile.h"
#include "le_bytes.h"

static int n_planes(VidkChroma c) {
    return c == VIDK_CHROMA_400 ? 1 : 3;
}

static void plane_dims(int w, int h, VidkChroma c, int p, int *pw, int *ph) {
    *pw = p ? w / 2 : w;
    *ph = p ? (c == VIDK_CHROMA_422 ? h : h / 2) : h;
}

/* The geometry vidk_h264_coef_frame_alloc() accepts (checked here before the header's
 * sizes are used to bound the payload). */
static int geometry_ok(int w, int h, VidkChroma c, int bitdepth) {
    return w >= 16 && h >= 16 && w <= VIDK_MAX_PICTURE_SIDE && h <= VIDK_MAX_PICTURE_SIDE &&
           !(w % 16) && !(h % 16) &&
           (c == VIDK_CHROMA_400 || c == VIDK_CHROMA_420 || c == VIDK_CHROMA_422) &&
           bitdepth >= 8 && bitdepth <= VIDK_H264_MAX_BITDEPTH;
}

/* ---- coefficient-frame files (docs/COEFFORMAT.md) ------------------------------------------
 */

#define CF_MAGIC   "VKCF264\n"
#define CF_VERSION 1
#define CF_HEADER  64

/* FNV-1a, 32 bits: offset basis 2166136261, prime 16777619. */
static uint32_t fnv1a(uint32_t h, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* Upper bound of a record's payload (scaling + mb info + every tile dense + checksum). */
static uint64_t cf_max_payload(int w, int h, VidkChroma c) {
    uint64_t n = 6 * 16 + 6 * 64 + (uint64_t)(w / 16) * (h / 16) * 4 + 4;
    for (int p = 0; p < n_planes(c); p++) {
        int pw, ph;
        plane_dims(w, h, c, p, &pw, &ph);
        n += (uint64_t)(pw / 4) * (ph / 4) * (2 + 32);
    }
    return n;
}

static int is_flat(const VidkH264Scaling *s) {
    for (size_t i = 0; i < sizeof(*s); i++)
        if (((const uint8_t *)s)[i] != 16) return 0;
    return 1;
}

int coeffile_write(FILE *f, const VidkH264CoefFrame *fr) {
    if (!f || vidk_h264_coef_frame_validate(fr) < 0) return VIDK_ERR(EINVAL);
    const uint64_t cap = cf_max_payload(fr->w, fr->h, fr->chroma);
    uint8_t *buf = malloc((size_t)cap + CF_HEADER);
    if (!buf) return VIDK_ERR(ENOMEM);
    uint8_t *p = buf + CF_HEADER;
    const int scal = !is_flat(&fr->scaling);
    if (scal) {
        for (int l = 0; l < 6; l++, p += 16)
            memcpy(p, fr->scaling.m4[l], 16);
        for (int l = 0; l < 6; l++, p += 64)
            memcpy(p, fr->scaling.m8[l], 64);
    }
    const int mbs = fr->mb_w * fr->mb_h;
    for (int i = 0; i < mbs; i++, p += 4) {
        p[0] = fr->mb[i].qp[0];
        p[1] = fr->mb[i].qp[1];
        p[2] = fr->mb[i].qp[2];
        p[3] = fr->mb[i].flags;
    }
    uint32_t nnz = 0;
    for (int pl = 0; pl < n_planes(fr->chroma); pl++) {
        const int pw = fr->plane_w[pl], ph = fr->plane_h[pl];
        for (int ty = 0; ty < ph / 4; ty++)
            for (int tx = 0; tx < pw / 4; tx++) {
                const int16_t *t = fr->coef[pl] + (size_t)(4 * ty) * pw + 4 * tx;
                uint8_t *mp = p;
                uint32_t mask = 0;
                p += 2;
                for (int k = 0; k < 16; k++) {
                    const int16_t v = t[(size_t)(k / 4) * pw + k % 4];
                    if (!v) continue;
                    mask |= 1u << k;
                    put16(p, (uint16_t)v);
                    p += 2;
                    nnz++;
                }
                put16(mp, mask);
            }
    }
    const uint32_t payload = (uint32_t)(p - (buf + CF_HEADER)) + 4;
    memset(buf, 0, CF_HEADER);
    memcpy(buf, CF_MAGIC, 8);
    put16(buf + 8, CF_VERSION);
    put16(buf + 10, CF_HEADER);
    put16(buf + 12, (uint32_t)fr->w);
    put16(buf + 14, (uint32_t)fr->h);
    buf[16] = (uint8_t)fr->chroma;
    buf[17] = (uint8_t)fr->bitdepth;
    buf[18] = (uint8_t)scal;
    put32(buf + 20, (uint32_t)mbs);
    put32(buf + 24, payload);
    put32(buf + 28, nnz);
    put32(p, fnv1a(2166136261u, buf, (size_t)(p - buf)));
    p += 4;
    const size_t len = (size_t)(p - buf);
    const int ok = fwrite(buf, 1, len, f) == len;
    free(buf);
    return ok ? 0 : VIDK_ERR(EIO);
}

static int cf_parse(VidkH264CoefFrame *fr, const uint8_t *hdr, const uint8_t *pl, size_t n) {
    const int w = (int)get16(hdr + 12), h = (int)get16(hdr + 14);
    const VidkChroma chroma = (VidkChroma)hdr[16];
    const int scal = hdr[18] & 1;
    const uint8_t *p = pl, *end = pl + n - 4;
    if (scal) {
        if ((size_t)(end - p) < 480) return VIDK_ERR(EINVAL);
        for (int l = 0; l < 6; l++, p += 16)
            memcpy(fr->scaling.m4[l], p, 16);
        for (int l = 0; l < 6; l++, p += 64)
            memcpy(fr->scaling.m8[l], p, 64);
    }
    const int mbs = fr->mb_w * fr->mb_h;
    if ((size_t)(end - p) < (size_t)mbs * 4) return VIDK_ERR(EINVAL);
    for (int i = 0; i < mbs; i++, p += 4) {
        fr->mb[i].qp[0] = p[0];
        fr->mb[i].qp[1] = p[1];
        fr->mb[i].qp[2] = p[2];
        fr->mb[i].flags = p[3];
    }
    uint32_t nnz = 0;
    for (int pi = 0; pi < n_planes(chroma); pi++) {
        int pw, ph;
        plane_dims(w, h, chroma, pi, &pw, &ph);
        for (int ty = 0; ty < ph / 4; ty++)
            for (int tx = 0; tx < pw / 4; tx++) {
                if (end - p < 2) return VIDK_ERR(EINVAL);
                const uint32_t mask = get16(p);
                p += 2;
                int16_t *t = fr->coef[pi] + (size_t)(4 * ty) * pw + 4 * tx;
                for (int k = 0; k < 16; k++) {
                    if (!(mask >> k & 1)) continue;
                    if (end - p < 2) return VIDK_ERR(EINVAL);
                    const int16_t v = (int16_t)get16(p);
                    p += 2;
                    if (!v) return VIDK_ERR(EINVAL); /* a set bit names a non-zero level */
                    t[(size_t)(k / 4) * pw + k % 4] = v;
                    nnz++;
                }
            }
    }
    if (p != end || nnz != get32(hdr + 28)) return VIDK_ERR(EINVAL);
    return vidk_h264_coef_frame_validate(fr) < 0 ? VIDK_ERR(EINVAL) : 0;
}

int coeffile_read(FILE *f, VidkH264CoefFrame *fr) {
    if (!f || !fr) return VIDK_ERR(EINVAL);
    uint8_t hdr[CF_HEADER];
    const size_t got = fread(hdr, 1, CF_HEADER, f);
    int err = VIDK_ERR(EINVAL);
    if (got == 0 && !ferror(f)) return 0;
    if (got != CF_HEADER) {
        err = ferror(f) ? VIDK_ERR(EIO) : VIDK_ERR(EINVAL);
        goto fail;
    }
    const int w = (int)get16(hdr + 12), h = (int)get16(hdr + 14);
    const VidkChroma chroma = (VidkChroma)hdr[16];
    const int bitdepth = hdr[17];
    if (memcmp(hdr, CF_MAGIC, 8) || get16(hdr + 8) != CF_VERSION ||
        get16(hdr + 10) != CF_HEADER || !geometry_ok(w, h, chroma, bitdepth) ||
        (hdr[18] & ~1) || hdr[19] || get32(hdr + 20) != (uint32_t)((w / 16) * (h / 16)))
        goto fail;
    for (int i = 32; i < CF_HEADER; i++)
        if (hdr[i]) goto fail;
    const uint32_t payload = get32(hdr + 24);
    if (payload < 4 || payload > cf_max_payload(w, h, chroma)) goto fail;
    uint8_t *buf = malloc(payload);
    if (!buf) {
        err = VIDK_ERR(ENOMEM);
        goto fail;
    }
    if (fread(buf, 1, payload, f) != payload) {
        err = ferror(f) ? VIDK_ERR(EIO) : VIDK_ERR(EINVAL);
        free(buf);
        goto fail;
    }
    const uint32_t sum = fnv1a(fnv1a(2166136261u, hdr, CF_HEADER), buf, payload - 4);
    if (sum != get32(buf + payload - 4)) {
        free(buf);
        goto fail;
    }
    /* Reuse the frame's allocation when the geometry is the same. */
    if (!(fr->alloc && fr->w == w && fr->h == h && fr->chroma == chroma &&
          fr->bitdepth == bitdepth)) {
        if (fr->alloc) vidk_h264_coef_frame_free(fr);
        if ((err = vidk_h264_coef_frame_alloc(fr, w, h, chroma, bitdepth)) < 0) {
            free(buf);
            goto fail;
        }
    } else {
        for (int p = 0; p < n_planes(chroma); p++)
            memset(fr->coef[p], 0, (size_t)fr->plane_w[p] * fr->plane_h[p] * 2);
    }
    vidk_h264_scaling_flat(&fr->scaling);
    err = cf_parse(fr, hdr, buf, payload);
    free(buf);
    if (err < 0) goto fail;
    return 1;
fail:
    if (fr->alloc)
        vidk_h264_coef_frame_free(fr);
    else
        memset(fr, 0, sizeof(*fr));
    return err;
}
