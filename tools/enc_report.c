/* Totals, JSON, hashes and PNG pictures of the coding loop's outputs (enc_report.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enc_report.h"
#include "mvpng.h"
#include "picio.h"
#include "report.h"

void enc_accum_init(EncAccum *a) {
    memset(a, 0, sizeof(*a));
}

void enc_accum_add(EncAccum *a, const VidkEncFrameInfo *fi, int w, int h) {
    const uint64_t luma = (uint64_t)w * (uint64_t)h;
    const uint64_t chroma = (uint64_t)(w / 2) * (uint64_t)(h / 2);
    a->frames++;
    a->intra += fi->intra != 0;
    a->bframes += fi->bframe != 0;
    for (int p = 0; p < 3; p++) {
        a->psnr_sum[p] += fi->psnr[p];
        a->sse[p] += fi->sse[p];
        a->samples[p] += p ? chroma : luma;
        a->nnz[p] += fi->nnz[p];
    }
    a->bits_mode += fi->bits_mode;
    a->bits_mv += fi->bits_mv;
    a->bits_level += fi->bits_level;
    a->bits += fi->bits;
    for (int k = 0; k < VIDK_ENC_PART_COUNT; k++)
        a->parts[k] += fi->parts[k];
    for (int s = 0; s < VIDK_ENC_STAGE_COUNT; s++)
        a->stage_ms[s] += fi->stage_ms[s];
    a->total_ms += fi->total_ms;
    a->h2d_bytes += fi->h2d_bytes;
    a->d2h_bytes += fi->d2h_bytes;
    a->stream_bytes += fi->stream_size;
}

double enc_psnr(uint64_t sse, uint64_t samples) {
    if (!sse || !samples) return 100;
    return 10 * log10(255.0 * 255.0 * (double)samples / (double)sse);
}

double enc_accum_seq_psnr(const EncAccum *a, int p) {
    return enc_psnr(a->sse[p], a->samples[p]);
}

double enc_accum_avg_psnr(const EncAccum *a, int p) {
    return a->frames ? a->psnr_sum[p] / (double)a->frames : 0;
}

const char *enc_stage_name(int stage) {
    static const char *const n[VIDK_ENC_STAGE_COUNT] = {"upload", "me",       "code",
                                                        "stats",  "download", "stream"};
    return stage >= 0 && stage < VIDK_ENC_STAGE_COUNT ? n[stage] : "?";
}

const char *enc_part_name(int part) {
    static const char *const n[VIDK_ENC_PART_COUNT] = {"intra", "32x32", "16x16",
                                                       "16x8",  "8x16",  "8x8"};
    return part >= 0 && part < VIDK_ENC_PART_COUNT ? n[part] : "?";
}

int enc_part_in_codec(int part, VidkCodec codec) {
    return part != VIDK_ENC_PART_32x32 || codec == VIDK_CODEC_HEVC;
}

int enc_part_area16(int part) {
    return part == VIDK_ENC_PART_32x32 ? 4 : 1;
}

void enc_json_frame(FILE *f, const VidkEncFrameInfo *fi) {
    fprintf(f,
            "{\"index\": %lld, \"intra\": %d, \"bframe\": %d, \"qp\": %d, \"sse\": [%llu, "
            "%llu, %llu], "
            "\"psnr\": [%.4f, %.4f, %.4f], \"nnz\": [%llu, %llu, %llu], \"bits_mode\": %llu, "
            "\"bits_mv\": %llu, \"bits_level\": %llu, \"bits\": %llu, \"parts\": {",
            (long long)fi->index, fi->intra, fi->bframe, fi->qp, (unsigned long long)fi->sse[0],
            (unsigned long long)fi->sse[1], (unsigned long long)fi->sse[2], fi->psnr[0],
            fi->psnr[1], fi->psnr[2], (unsigned long long)fi->nnz[0],
            (unsigned long long)fi->nnz[1], (unsigned long long)fi->nnz[2],
            (unsigned long long)fi->bits_mode, (unsigned long long)fi->bits_mv,
            (unsigned long long)fi->bits_level, (unsigned long long)fi->bits);
    for (int k = 0; k < VIDK_ENC_PART_COUNT; k++)
        fprintf(f, "%s\"%s\": %u", k ? ", " : "", enc_part_name(k), (unsigned)fi->parts[k]);
    fprintf(f, "}, \"stage_ms\": {");
    for (int s = 0; s < VIDK_ENC_STAGE_COUNT; s++)
        fprintf(f, "%s\"%s\": %.6f", s ? ", " : "", enc_stage_name(s), fi->stage_ms[s]);
    fprintf(f,
            "}, \"total_ms\": %.6f, \"h2d_bytes\": %llu, \"d2h_bytes\": %llu, "
            "\"stream_bytes\": %llu}",
            fi->total_ms, (unsigned long long)fi->h2d_bytes, (unsigned long long)fi->d2h_bytes,
            (unsigned long long)fi->stream_size);
}

void enc_json_summary(FILE *f, const EncAccum *a, const char *ind) {
    const double n = a->frames ? (double)a->frames : 1;
    fprintf(f,
            "{\n%s  \"frames\": %lld,\n%s  \"intra_frames\": %lld,\n%s  \"b_frames\": %lld,\n",
            ind, (long long)a->frames, ind, (long long)a->intra, ind, (long long)a->bframes);
    fprintf(f, "%s  \"psnr_avg\": [%.4f, %.4f, %.4f],\n", ind, enc_accum_avg_psnr(a, 0),
            enc_accum_avg_psnr(a, 1), enc_accum_avg_psnr(a, 2));
    fprintf(f, "%s  \"psnr_sequence\": [%.4f, %.4f, %.4f],\n", ind, enc_accum_seq_psnr(a, 0),
            enc_accum_seq_psnr(a, 1), enc_accum_seq_psnr(a, 2));
    fprintf(f, "%s  \"sse\": [%llu, %llu, %llu],\n", ind, (unsigned long long)a->sse[0],
            (unsigned long long)a->sse[1], (unsigned long long)a->sse[2]);
    fprintf(f,
            "%s  \"bits\": %llu,\n%s  \"kbits_per_frame\": %.4f,\n"
            "%s  \"kbits_per_frame_split\": {\"mode\": %.4f, \"mv\": %.4f, \"level\": %.4f},\n",
            ind, (unsigned long long)a->bits, ind, (double)a->bits / n / 1e3, ind,
            (double)a->bits_mode / n / 1e3, (double)a->bits_mv / n / 1e3,
            (double)a->bits_level / n / 1e3);
    fprintf(f, "%s  \"nnz_per_frame\": [%.2f, %.2f, %.2f],\n", ind, (double)a->nnz[0] / n,
            (double)a->nnz[1] / n, (double)a->nnz[2] / n);
    fprintf(f, "%s  \"parts\": {", ind);
    for (int k = 0; k < VIDK_ENC_PART_COUNT; k++)
        fprintf(f, "%s\"%s\": %llu", k ? ", " : "", enc_part_name(k),
                (unsigned long long)a->parts[k]);
    fprintf(f, "},\n%s  \"stage_ms_avg\": {", ind);
    for (int s = 0; s < VIDK_ENC_STAGE_COUNT; s++)
        fprintf(f, "%s\"%s\": %.6f", s ? ", " : "", enc_stage_name(s), a->stage_ms[s] / n);
    fprintf(f,
            "},\n%s  \"total_ms_avg\": %.6f,\n%s  \"h2d_bytes_per_frame\": %.1f,\n"
            "%s  \"d2h_bytes_per_frame\": %.1f,\n%s  \"stream_bytes\": %llu,\n"
            "%s  \"stream_kbits_per_frame\": %.4f\n%s}",
            ind, a->total_ms / n, ind, (double)a->h2d_bytes / n, ind, (double)a->d2h_bytes / n,
            ind, (unsigned long long)a->stream_bytes, ind,
            (double)a->stream_bytes * 8 / n / 1e3, ind);
}

/* ---- hashes ------------------------------------------------------------------------ */
uint64_t enc_hash_bytes(uint64_t h, const void *p, size_t n) {
    /* 64-bit FNV-1a over 8-byte words (a byte-wise tail), mixed once more per word so
     * that a hash of a 4K picture costs a few milliseconds, not tens. */
    const unsigned char *b = p;
    const uint64_t prime = 0x100000001b3ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * prime;
        h ^= h >> 31;
    }
    for (; i < n; i++)
        h = (h ^ b[i]) * prime;
    return h;
}

uint64_t enc_hash_picture(uint64_t h, const VidkPicture *pic) {
    const int planes = pic->chroma == VIDK_CHROMA_400 ? 1 : 3;
    for (int p = 0; p < planes; p++) {
        int pw, ph;
        if (vidk_picture_plane_size(pic, p, &pw, &ph) < 0) continue;
        const size_t row = (size_t)pw * (pic->bitdepth > 8 ? 2 : 1);
        for (int y = 0; y < ph; y++)
            h = enc_hash_bytes(h, (const uint8_t *)pic->data[p] + (ptrdiff_t)y * pic->stride[p],
                               row);
    }
    return h;
}

uint64_t enc_hash_info(uint64_t h, const VidkEncFrameInfo *fi) {
    /* Field by field: the struct's padding is not part of the result. */
    const int64_t v[] = {fi->index, fi->intra, fi->qp};
    h = enc_hash_bytes(h, v, sizeof(v));
    h = enc_hash_bytes(h, fi->sse, sizeof(fi->sse));
    h = enc_hash_bytes(h, fi->nnz, sizeof(fi->nnz));
    const uint64_t bits[] = {fi->bits_mode, fi->bits_mv, fi->bits_level, fi->bits};
    h = enc_hash_bytes(h, bits, sizeof(bits));
    return enc_hash_bytes(h, fi->parts, sizeof(fi->parts));
}

/* ---- pictures ---------------------------------------------------------------------- */
/* HSV (value 1) colour of a vector: hue from the direction, saturation from the length. */
static void wheel_colour(int x, int y, double norm, uint8_t out[3]) {
    const double len = sqrt((double)x * x + (double)y * y);
    /* Non-zero vectors get at least a fifth of full saturation, to tell them from 0. */
    const double s = len <= 0 ? 0 : len >= norm ? 1 : 0.2 + 0.8 * len / norm;
    double hue = atan2((double)y, (double)x) * (3.0 / 3.14159265358979323846); /* -3..3 */
    if (hue < 0) hue += 6;
    mvpng_hsv(hue, s, out);
}

/* Write the w x h picture rgb to path and free it. */
static int write_rgb(const char *path, uint8_t *rgb, int w, int h, char *err, size_t errlen) {
    const int e = vio_write_png(path, rgb, w, h, (ptrdiff_t)w * 3, 3, err, errlen);
    free(rgb);
    return e;
}

static int out_of_memory(const char *path, char *err, size_t errlen) {
    if (err && errlen) snprintf(err, errlen, "%s: out of memory", path);
    return VIDK_ERR(ENOMEM);
}

static int check_map(const char *path, int gw, int gh, int cell, int w, int h, char *err,
                     size_t errlen) {
    if (w < 1 || h < 1 || gw < 1 || gh < 1 || (int64_t)gw * cell < w ||
        (int64_t)gh * cell < h) {
        if (err && errlen)
            snprintf(err, errlen, "%s: a %dx%d map of %dx%d blocks does not cover %dx%d", path,
                     gw, gh, cell, cell, w, h);
        return VIDK_ERR(EINVAL);
    }
    return 0;
}

int enc_png_mvs(const char *path, const VidkMv *mv, int mv_w, int mv_h, int w, int h, int norm,
                int intra, char *err, size_t errlen) {
    int e = check_map(path, mv_w, mv_h, 4, w, h, err, errlen);
    if (e < 0) return e;
    uint8_t *rgb = malloc((size_t)w * (size_t)h * 3);
    if (!rgb) return out_of_memory(path, err, errlen);
    double nrm = norm;
    if (nrm <= 0) {
        /* 98th percentile of the non-zero vector lengths of the visible blocks: a few
         * outliers (a vector to the window's edge) would wash out the rest. */
        enum { NBIN = 1024 };
        uint32_t *hist = calloc(NBIN, sizeof(*hist));
        if (!hist) {
            free(rgb);
            return out_of_memory(path, err, errlen);
        }
        uint64_t nz = 0;
        for (int y = 0; y < (h + 3) / 4; y++)
            for (int x = 0; x < (w + 3) / 4; x++) {
                const VidkMv v = mv[(size_t)y * (size_t)mv_w + (size_t)x];
                if (!v.x && !v.y) continue;
                const double l = ceil(sqrt((double)v.x * v.x + (double)v.y * v.y));
                hist[l < NBIN ? (int)l : NBIN - 1]++;
                nz++;
            }
        uint64_t acc = 0;
        nrm = 1;
        for (int k = 1; k < NBIN && nz; k++) {
            acc += hist[k];
            if (acc * 50 >= nz * 49) {
                nrm = k;
                break;
            }
        }
        free(hist);
    }
    for (int y = 0; y < h; y++) {
        uint8_t *row = rgb + (size_t)y * (size_t)w * 3;
        const VidkMv *mrow = mv + (size_t)(y / 4) * (size_t)mv_w;
        for (int x = 0; x < w; x += 4) {
            uint8_t c[3] = {128, 128, 128};
            if (!intra) wheel_colour(mrow[x / 4].x, mrow[x / 4].y, nrm, c);
            for (int k = x; k < x + 4 && k < w; k++)
                memcpy(row + (size_t)k * 3, c, 3);
        }
    }
    return write_rgb(path, rgb, w, h, err, errlen);
}

/* Heat-map ramp: t in [0, 1] -> colour, piecewise linear between anchors. */
static void heat_colour(double t, uint8_t out[3]) {
    static const double at[] = {0, 0.25, 0.5, 0.75, 1};
    static const uint8_t col[][3] = {
        {0, 0, 0}, {90, 20, 120}, {200, 50, 70}, {250, 150, 30}, {255, 250, 190}};
    if (t <= 0) t = 0;
    if (t >= 1) t = 1;
    int k = 0;
    while (k < 3 && t > at[k + 1])
        k++;
    const double f = (t - at[k]) / (at[k + 1] - at[k]);
    for (int c = 0; c < 3; c++)
        out[c] = (uint8_t)lrint(col[k][c] + f * (col[k + 1][c] - col[k][c]));
}

int enc_png_energy(const char *path, const uint32_t *energy, int mb_w, int mb_h, int w, int h,
                   char *err, size_t errlen) {
    int e = check_map(path, mb_w, mb_h, 16, w, h, err, errlen);
    if (e < 0) return e;
    uint8_t *rgb = malloc((size_t)w * (size_t)h * 3);
    if (!rgb) return out_of_memory(path, err, errlen);
    const double top = log1p(64.0 * 64.0);
    for (int y = 0; y < h; y++) {
        uint8_t *row = rgb + (size_t)y * (size_t)w * 3;
        const uint32_t *erow = energy + (size_t)(y / 16) * (size_t)mb_w;
        for (int x = 0; x < w; x += 16) {
            uint8_t c[3];
            heat_colour(log1p(erow[x / 16] / 256.0) / top, c);
            for (int k = x; k < x + 16 && k < w; k++)
                memcpy(row + (size_t)k * 3, c, 3);
        }
    }
    return write_rgb(path, rgb, w, h, err, errlen);
}

/* ---- device description ------------------------------------------------------------- */
const char *enc_cpu_level(unsigned flags) {
    if (flags & VIDK_CPU_AVX512) return "avx512";
    if (flags & VIDK_CPU_AVX2) return "avx2";
    if (flags & VIDK_CPU_SSE41) return "sse4.1";
    if (flags & VIDK_CPU_SSSE3) return "ssse3";
    if (flags & VIDK_CPU_SSE2) return "sse2";
    return "none";
}

void enc_device_desc(VidkContext *ctx, int device, char *buf, size_t n) {
    const VidkBackend be = vidk_get_backend(ctx);
    if (be == VIDK_BACKEND_CUDA) {
        VidkDeviceInfo di;
        if (vidk_cuda_device_info(device, &di) == 0)
            snprintf(buf, n, "%s (device %d, %d SMs, compute %d.%d)", di.name, device,
                     di.multiprocessors, di.major, di.minor);
        else
            snprintf(buf, n, "CUDA device %d", device);
        return;
    }
    char cpu[256];
    report_cpu_name(cpu, sizeof(cpu));
    const int threads = vidk_get_threads(ctx);
    snprintf(buf, n, "%s, %s, %d thread%s", cpu,
             be == VIDK_BACKEND_C ? "plain C" : enc_cpu_level(vidk_get_cpu_flags(ctx)), threads,
             threads == 1 ? "" : "s");
}
