/* Y4M and raw planar picture writer (picio.h: vio_writer_*). Split from picio.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "picio.h"
#include "picio_int.h"

/* ---- writer ------------------------------------------------------------------------ */

struct VioWriter {
    FILE *f;
    VioOut *out; /* the output from vio_writer_open(); NULL for a caller's stream */
    int raw;
    VioFormat fmt;
    uint8_t *row; /* little-endian staging row for 9..16-bit samples */
    VioState st;
};

/* The X fields to write: valid fields only (each starting with X, printable, no spaces
 * inside), XYSCSS fields that contradict the format dropped. -1 when ext is malformed. */
static int filter_ext(const VioFormat *f, char *out, size_t outlen) {
    const char *ext = f->y4m_ext;
    if (!memchr(ext, 0, sizeof(f->y4m_ext))) return -1;
    size_t o = 0;
    out[0] = 0;
    for (size_t i = 0; ext[i];) {
        if (ext[i] == ' ') {
            i++;
            continue;
        }
        const char *tok = ext + i;
        size_t tl = 0;
        while (tok[tl] && tok[tl] != ' ') {
            const unsigned char c = (unsigned char)tok[tl];
            if (c < 0x20 || c == 0x7f) return -1;
            tl++;
        }
        i += tl;
        if (tok[0] != 'X') return -1;
        /* an XYSCSS that does not give this format is dropped, an empty one too (a reader
         * ignores it, and the C tag is left out when an XYSCSS is written) */
        if (tl >= 7 && !memcmp(tok, "XYSCSS=", 7)) {
            VidkChroma c;
            int bd;
            if (vio_chroma_from_tag(tok + 7, tl - 7, 1, &c, &bd) < 0 || c != f->chroma ||
                bd != f->bitdepth)
                continue;
        }
        if (o + 1 + tl + 1 > outlen) return -1;
        out[o++] = ' ';
        memcpy(out + o, tok, tl);
        o += tl;
        out[o] = 0;
    }
    return 0;
}

static int write_y4m_header(VioWriter *w) {
    const VioFormat *f = &w->fmt;
    if (f->fps_num < 1 || f->fps_den < 1)
        return vio_sfail(&w->st, VIDK_ERR(EINVAL), "bad frame rate %d/%d for Y4M output",
                         f->fps_num, f->fps_den);
    if (f->par_num < 0 || f->par_den < 0 || !f->par_num != !f->par_den)
        return vio_sfail(&w->st, VIDK_ERR(EINVAL), "bad aspect ratio %d:%d for Y4M output",
                         f->par_num, f->par_den);
    if (!f->interlace || !strchr("ptbm?", f->interlace))
        return vio_sfail(&w->st, VIDK_ERR(EINVAL),
                         "bad interlacing '%c' for Y4M output (p, t, b, m, ?)",
                         f->interlace ? f->interlace : '0');
    char ctag[16];
    VidkChroma c;
    int bd;
    const size_t cl = strnlen(f->y4m_chroma, sizeof(f->y4m_chroma));
    if (cl && cl < sizeof(f->y4m_chroma) &&
        vio_chroma_from_tag(f->y4m_chroma, cl, 0, &c, &bd) == 0 && c == f->chroma &&
        bd == f->bitdepth)
        memcpy(ctag, f->y4m_chroma, cl + 1);
    else
        vio_default_ctag(f->chroma, f->bitdepth, ctag, sizeof(ctag));
    char ext[VIO_Y4M_LINE_MAX];
    if (filter_ext(f, ext, sizeof(ext)) < 0)
        return vio_sfail(&w->st, VIDK_ERR(EINVAL),
                         "bad Y4M X fields (each must start with X, no "
                         "control characters, %d bytes at most)",
                         VIO_Y4M_LINE_MAX - 64);
    /* A tag the source lacked is written only when the value differs from what a reader
     * assumes without it. */
    const unsigned t = f->y4m_tags;
    char tf[32] = "", ti[8] = "", ta[32] = "", tc[24] = "";
    if ((t & VIO_Y4M_TAG_F) || f->fps_num != 25 || f->fps_den != 1)
        snprintf(tf, sizeof(tf), " F%d:%d", f->fps_num, f->fps_den);
    if ((t & VIO_Y4M_TAG_I) || f->interlace != 'p')
        snprintf(ti, sizeof(ti), " I%c", f->interlace);
    if ((t & VIO_Y4M_TAG_A) || f->par_num || f->par_den)
        snprintf(ta, sizeof(ta), " A%d:%d", f->par_num, f->par_den);
    /* Without C a reader takes 4:2:0 8-bit, or what a (kept, so matching) XYSCSS says. */
    if ((t & VIO_Y4M_TAG_C) ||
        ((f->chroma != VIDK_CHROMA_420 || f->bitdepth != 8) && !strstr(ext, " XYSCSS=")))
        snprintf(tc, sizeof(tc), " C%s", ctag);
    char line[2 * VIO_Y4M_LINE_MAX];
    const int n = snprintf(line, sizeof(line), "YUV4MPEG2 W%d H%d%s%s%s%s%s\n", f->w, f->h, tf,
                           ti, ta, tc, ext);
    /* Stay within what a reader (this one included) accepts. */
    if (n < 0 || n > VIO_Y4M_LINE_MAX)
        return vio_sfail(&w->st, VIDK_ERR(EINVAL),
                         "Y4M header too long (X fields over %d bytes)", VIO_Y4M_LINE_MAX);
    errno = 0;
    if (fwrite(line, 1, (size_t)n, w->f) != (size_t)n) return vio_io_fail(&w->st, "write");
    return 0;
}

static int writer_new(VioWriter **out, FILE *stream, VioOut *o, const char *name,
                      const VioFormat *f, int raw, char *err, size_t errlen) {
    VioWriter *w = calloc(1, sizeof(*w));
    char *nm = vio_message_name(name);
    if (!w || !nm) {
        free(w);
        free(nm);
        vio_out_close(&o, 0, NULL, 0);
        vio_msg(err, errlen, name, "out of memory");
        return VIDK_ERR(ENOMEM);
    }
    w->f = stream;
    w->out = o;
    w->raw = raw;
    w->st.name = nm;
    w->fmt = *f;
    int ret = 0;
    if (f->bitdepth > 8 && f->w >= 1 && f->w <= VIDK_MAX_PICTURE_SIDE) {
        w->row = malloc((size_t)f->w * 2);
        if (!w->row) ret = vio_sfail(&w->st, VIDK_ERR(ENOMEM), "out of memory");
    }
    if (!ret && !raw) ret = write_y4m_header(w);
    if (ret < 0) {
        if (err && errlen) snprintf(err, errlen, "%s", w->st.err);
        /* Leave no file behind for an output that never started. */
        vio_writer_abort(&w);
        return ret;
    }
    *out = w;
    return 0;
}

static int writer_check_format(const VioFormat *f, const char *name, char *err, size_t errlen) {
    if (!vio_format_valid(f)) {
        char *nm = vio_message_name(name);
        vio_msg(err, errlen, nm ? nm : "?",
                "bad output format: %dx%d, bit depth %d (sides 1..%d, bit depth 8..16)",
                f ? f->w : 0, f ? f->h : 0, f ? f->bitdepth : 0, VIDK_MAX_PICTURE_SIDE);
        free(nm);
        return VIDK_ERR(EINVAL);
    }
    return 0;
}

int vio_writer_open(VioWriter **w, const char *path, const VioFormat *f, int raw, char *err,
                    size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!w) return VIDK_ERR(EINVAL);
    *w = NULL;
    if (!path) {
        vio_msg(err, errlen, "(null)", "no output path");
        return VIDK_ERR(EINVAL);
    }
    const char *name = !strcmp(path, "-") ? "stdout" : path;
    int ret = writer_check_format(f, name, err, errlen);
    if (ret < 0) return ret;
    VioOut *o = NULL;
    if ((ret = vio_out_open(&o, path, err, errlen)) < 0) return ret;
    return writer_new(w, vio_out_stream(o), o, name, f, raw, err, errlen);
}

int vio_writer_open_stream(VioWriter **w, FILE *stream, const char *name, const VioFormat *f,
                           int raw, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!w) return VIDK_ERR(EINVAL);
    *w = NULL;
    if (!stream || !name) {
        vio_msg(err, errlen, name ? name : "(null)", "no output stream");
        return VIDK_ERR(EINVAL);
    }
    const int ret = writer_check_format(f, name, err, errlen);
    if (ret < 0) return ret;
    return writer_new(w, stream, NULL, name, f, raw, err, errlen);
}

const char *vio_writer_error(const VioWriter *w) {
    return w ? w->st.err : "no writer";
}

int vio_writer_write(VioWriter *w, const VidkPicture *pic) {
    if (!w) return VIDK_ERR(EINVAL);
    if (w->st.status) return w->st.status;
    const VioFormat *f = &w->fmt;
    if (!vio_pic_matches(pic, f)) {
        vio_msg(w->st.err, sizeof(w->st.err), w->st.name,
                "picture does not match the output (%dx%d %s %d-bit expected)", f->w, f->h,
                vio_chroma_name(f->chroma), f->bitdepth);
        return VIDK_ERR(EINVAL);
    }
    const int bps = f->bitdepth > 8 ? 2 : 1;
    const unsigned maxv = (1u << f->bitdepth) - 1;
    /* Check every sample before writing a byte: no partial frame in the output. */
    if (bps == 2 && f->bitdepth < 16) {
        for (int p = 0; p < vio_n_planes(f->chroma); p++) {
            int pw, ph;
            vio_plane_dims(f, p, &pw, &ph);
            for (int y = 0; y < ph; y++) {
                const uint16_t *s =
                    (const uint16_t *)((const uint8_t *)pic->data[p] + y * pic->stride[p]);
                for (int x = 0; x < pw; x++)
                    if (s[x] > maxv) {
                        vio_msg(
                            w->st.err, sizeof(w->st.err), w->st.name,
                            "sample %u at plane %d x %d y %d is above the %d-bit maximum %u",
                            (unsigned)s[x], p, x, y, f->bitdepth, maxv);
                        return VIDK_ERR(ERANGE);
                    }
            }
        }
    }
    errno = 0;
    if (!w->raw && fwrite("FRAME\n", 1, 6, w->f) != 6) return vio_io_fail(&w->st, "write");
    for (int p = 0; p < vio_n_planes(f->chroma); p++) {
        int pw, ph;
        vio_plane_dims(f, p, &pw, &ph);
        const size_t rowbytes = (size_t)pw * (size_t)bps;
        for (int y = 0; y < ph; y++) {
            const uint8_t *row = (const uint8_t *)pic->data[p] + y * pic->stride[p];
            if (bps == 2) {
                const uint16_t *s = (const uint16_t *)row;
                for (int x = 0; x < pw; x++) {
                    w->row[2 * x] = (uint8_t)(s[x] & 0xff);
                    w->row[2 * x + 1] = (uint8_t)(s[x] >> 8);
                }
                row = w->row;
            }
            if (fwrite(row, 1, rowbytes, w->f) != rowbytes) return vio_io_fail(&w->st, "write");
        }
    }
    return 0;
}

/* Flush and close (commit 1: the output is kept; 0: discarded). */
static int writer_end(VioWriter **pw, int commit, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!pw || !*pw) return 0;
    VioWriter *w = *pw;
    int ret = w->st.status;
    errno = 0;
    if (commit && !ret && fflush(w->f) != 0) ret = vio_io_fail(&w->st, "write");
    if (w->out) {
        char oerr[MSG_MAX];
        const int e = vio_out_close(&w->out, commit && !ret, oerr, sizeof(oerr));
        if (e < 0 && commit && !ret) {
            snprintf(w->st.err, sizeof(w->st.err), "%s", oerr);
            ret = e;
        }
    }
    if (ret < 0 && err && errlen) snprintf(err, errlen, "%s", w->st.err);
    free(w->row);
    free(w->st.name);
    free(w);
    *pw = NULL;
    return ret;
}

int vio_writer_close_msg(VioWriter **pw, char *err, size_t errlen) {
    return writer_end(pw, 1, err, errlen);
}

int vio_writer_close(VioWriter **w) {
    return writer_end(w, 1, NULL, 0);
}

void vio_writer_abort(VioWriter **w) {
    writer_end(w, 0, NULL, 0);
}
