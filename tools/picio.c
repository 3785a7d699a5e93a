/* Y4M and raw planar picture streams (see picio.h). Everything is read and written
 * sequentially, so pipes work; every byte of input is checked before it is trusted, and a
 * frame is either read whole or reported as an error. Files opened by name (and stdin) are
 * read through their descriptor: header and FRAME lines through a small buffer, the
 * samples straight into the picture rows (readv/preadv, one copy by the kernel). */
#define _GNU_SOURCE /* preadv, F_SETPIPE_SZ */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "picio.h"
#include "picio_int.h"

/* ---- formats ----------------------------------------------------------------------- */

void vio_format_default(VioFormat *f) {
    memset(f, 0, sizeof(*f));
    f->chroma = VIDK_CHROMA_420;
    f->bitdepth = 8;
    f->fps_num = 25;
    f->fps_den = 1;
    f->interlace = 'p';
    f->y4m_tags = VIO_Y4M_TAGS_ALL;
}

const char *vio_chroma_name(VidkChroma c) {
    switch (c) {
    case VIDK_CHROMA_400:
        return "4:0:0";
    case VIDK_CHROMA_420:
        return "4:2:0";
    case VIDK_CHROMA_422:
        return "4:2:2";
    case VIDK_CHROMA_444:
        return "4:4:4";
    }
    return "?";
}

/* Decimal digits only (no sign, no spaces), value <= max; overflow-safe. */
static int parse_uint(const char *s, size_t n, long max, long *out) {
    if (!n) return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        const int d = s[i] - '0';
        if (v > (max - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* "N:D" with 0 <= N, D <= INT_MAX. */
static int parse_ratio(const char *s, size_t n, int *a, int *b) {
    const char *colon = memchr(s, ':', n);
    if (!colon) return -1;
    long x, y;
    const size_t na = (size_t)(colon - s);
    if (parse_uint(s, na, INT_MAX, &x) < 0 ||
        parse_uint(colon + 1, n - na - 1, INT_MAX, &y) < 0)
        return -1;
    *a = (int)x;
    *b = (int)y;
    return 0;
}

static int ieq(const char *a, size_t n, const char *lit, int icase) {
    if (strlen(lit) != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = a[i];
        if (icase && c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != lit[i]) return 0;
    }
    return 1;
}

/* A Y4M chroma tag (without the C) -> chroma + bit depth. icase for XYSCSS values, which
 * ffmpeg writes in upper case. */
int vio_chroma_from_tag(const char *s, size_t n, int icase, VidkChroma *c, int *bd) {
    static const struct {
        const char *name;
        VidkChroma c;
    } plain[] = {{"420jpeg", VIDK_CHROMA_420},  {"420paldv", VIDK_CHROMA_420},
                 {"420mpeg2", VIDK_CHROMA_420}, {"420", VIDK_CHROMA_420},
                 {"422", VIDK_CHROMA_422},      {"444", VIDK_CHROMA_444},
                 {"mono", VIDK_CHROMA_400}};
    for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
        if (ieq(s, n, plain[i].name, icase)) {
            *c = plain[i].c;
            *bd = 8;
            return 0;
        }
    /* High bit depth: 420p10, 422p12, 444p16, mono10 ... (9..16 bits). */
    static const struct {
        const char *prefix;
        VidkChroma c;
    } deep[] = {{"420p", VIDK_CHROMA_420},
                {"422p", VIDK_CHROMA_422},
                {"444p", VIDK_CHROMA_444},
                {"mono", VIDK_CHROMA_400}};
    for (size_t i = 0; i < sizeof(deep) / sizeof(deep[0]); i++) {
        const size_t pl = strlen(deep[i].prefix);
        long d;
        if (n > pl && ieq(s, pl, deep[i].prefix, icase) &&
            parse_uint(s + pl, n - pl, 99, &d) == 0 && d >= 9 && d <= 16 && s[pl] != '0') {
            *c = deep[i].c;
            *bd = (int)d;
            return 0;
        }
    }
    return -1;
}

void vio_default_ctag(VidkChroma c, int bd, char *out, size_t n) {
    static const char *const base[] = {"mono", "420", "422", "444"};
    if (bd == 8)
        snprintf(out, n, "%s", c == VIDK_CHROMA_420 ? "420jpeg" : base[c]);
    else
        snprintf(out, n, "%s%s%d", base[c], c == VIDK_CHROMA_400 ? "" : "p", bd);
}

int vio_parse_pixfmt(const char *name, VioFormat *f) {
    if (!name || !f) return -1;
    static const struct {
        const char *prefix;
        VidkChroma c;
    } tab[] = {{"gray", VIDK_CHROMA_400},     {"yuv420p", VIDK_CHROMA_420},
               {"yuv422p", VIDK_CHROMA_422},  {"yuv444p", VIDK_CHROMA_444},
               {"yuvj420p", VIDK_CHROMA_420}, {"yuvj422p", VIDK_CHROMA_422},
               {"yuvj444p", VIDK_CHROMA_444}};
    const size_t n = strlen(name);
    for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
        const size_t pl = strlen(tab[i].prefix);
        if (n < pl || memcmp(name, tab[i].prefix, pl)) continue;
        int bd = 8;
        if (n > pl) {
            /* "<bits>le": 9..16 bits, little-endian 16-bit samples (no yuvj variants). */
            long d;
            if (tab[i].prefix[3] == 'j' || n < pl + 3 || memcmp(name + n - 2, "le", 2) ||
                name[pl] == '0' || parse_uint(name + pl, n - pl - 2, 99, &d) < 0 || d < 9 ||
                d > 16)
                continue;
            bd = (int)d;
        }
        f->chroma = tab[i].c;
        f->bitdepth = bd;
        f->y4m_chroma[0] = 0;
        return 0;
    }
    return -1;
}

void vio_plane_dims(const VioFormat *f, int p, int *w, int *h) {
    const int sx = p && (f->chroma == VIDK_CHROMA_420 || f->chroma == VIDK_CHROMA_422);
    const int sy = p && f->chroma == VIDK_CHROMA_420;
    *w = (f->w + sx) >> sx; /* ceil: odd sizes keep their last chroma column/row */
    *h = (f->h + sy) >> sy;
}

int vio_n_planes(VidkChroma c) {
    return c == VIDK_CHROMA_400 ? 1 : 3;
}

int vio_format_valid(const VioFormat *f) {
    return f && f->w >= 1 && f->h >= 1 && f->w <= VIDK_MAX_PICTURE_SIDE &&
           f->h <= VIDK_MAX_PICTURE_SIDE && (unsigned)f->chroma <= VIDK_CHROMA_444 &&
           f->bitdepth >= 8 && f->bitdepth <= 16;
}

size_t vio_frame_bytes(const VioFormat *f) {
    if (!vio_format_valid(f)) return 0;
    size_t total = 0;
    for (int p = 0; p < vio_n_planes(f->chroma); p++) {
        int w, h;
        vio_plane_dims(f, p, &w, &h);
        total += (size_t)w * (size_t)h; /* <= 16384^2 per plane: no overflow in size_t */
    }
    return total * (f->bitdepth > 8 ? 2 : 1);
}

int vio_picture_alloc(VidkPicture *pic, const VioFormat *f) {
    if (!pic) return VIDK_ERR(EINVAL);
    if (!vio_format_valid(f)) {
        memset(pic, 0, sizeof(*pic));
        return VIDK_ERR(EINVAL);
    }
    return vidk_picture_alloc(pic, f->w, f->h, f->chroma, f->bitdepth, VIO_PAD);
}

int vio_pic_matches(const VidkPicture *pic, const VioFormat *f) {
    if (!pic || pic->w != f->w || pic->h != f->h || pic->chroma != f->chroma ||
        pic->bitdepth != f->bitdepth || !pic->data[0])
        return 0;
    for (int p = 1; p < vio_n_planes(f->chroma); p++)
        if (!pic->data[p]) return 0;
    return 1;
}

/* ---- messages ---------------------------------------------------------------------- */

/* A copy of a path fit for a one-line message (control characters become '?'). */
char *vio_message_name(const char *path) {
    const char *src = !strcmp(path, "-") ? "stdin" : path;
    size_t n = strlen(src);
    if (n > NAME_MAX_CHARS) n = NAME_MAX_CHARS;
    char *s = malloc(n + 1);
    if (!s) return NULL;
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)src[i];
        s[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    s[n] = 0;
    return s;
}

/* Bytes of the input quoted for a message: printable ASCII as is, others as \xNN, at most
 * 40 input bytes. */
void vio_quote(char *out, size_t outlen, const char *s, size_t n) {
    size_t o = 0;
    const size_t lim = n > 40 ? 40 : n;
    for (size_t i = 0; i < lim && o + 5 < outlen; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f)
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, outlen - o, "\\x%02X", c);
    }
    if (lim < n && o + 4 < outlen) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o < outlen ? o : outlen - 1] = 0;
}

void vio_vmsg(char *dst, size_t len, const char *name, const char *fmt, va_list ap) {
    if (!dst || !len) return;
    int k = snprintf(dst, len, "%s: ", name);
    if (k < 0) k = 0;
    if ((size_t)k < len) vsnprintf(dst + k, len - (size_t)k, fmt, ap);
}

void vio_msg(char *dst, size_t len, const char *name, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vio_vmsg(dst, len, name, fmt, ap);
    va_end(ap);
}

int vio_sfail(VioState *s, int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vio_vmsg(s->err, sizeof(s->err), s->name, fmt, ap);
    va_end(ap);
    s->status = code;
    return code;
}

/* A failed read or write (what): errno, EIO if unset. */
int vio_io_fail(VioState *s, const char *what) {
    const int e = errno ? errno : EIO;
    return vio_sfail(s, VIDK_ERR(e), "%s error: %s", what, strerror(e));
}

/* ---- reader ------------------------------------------------------------------------ */

/* Bytes buffered for the header and FRAME lines (and what a read brings past a frame). */
#define IN_BUF 4096
/* Row segments per readv/preadv call (Linux takes 1024). */
#define IOV_SEGS 256

struct VioReader {
    int fd;  /* >= 0: read through the descriptor (and buf); -1: through f */
    FILE *f; /* a stream from vio_reader_open_stream() */
    int own; /* close fd / fclose f on close */
    int raw;
    VioFormat fmt;
    size_t frame_bytes;
    int frames;
    /* Descriptor input: buf[bpos, blen) read but not consumed; in_err = errno of a failed
     * read (0: none). */
    size_t bpos, blen;
    int in_err;
    /* Random access (vio_reader_read_at()): a regular file; frame k (with its FRAME line)
     * at base + k * (frame_bytes + 6 or 0 for raw), the file size at open. */
    int ra;
    long long base, size;
    VioState st;
    uint8_t buf[IN_BUF];
};

/* read() that retries on EINTR; in_err set on failure. */
static ssize_t in_sysread(VioReader *r, const struct iovec *iov, int n) {
    for (;;) {
        const ssize_t k = readv(r->fd, iov, n);
        if (k >= 0 || errno != EINTR) {
            if (k < 0) r->in_err = errno ? errno : EIO;
            return k;
        }
    }
}

/* The next byte, or EOF at the end of the input or on a read error (in_error()). */
static int in_getc(VioReader *r) {
    if (r->fd < 0) return getc(r->f);
    if (r->bpos == r->blen) {
        if (r->in_err) return EOF;
        const struct iovec iov = {r->buf, IN_BUF};
        const ssize_t k = in_sysread(r, &iov, 1);
        if (k <= 0) return EOF;
        r->bpos = 0;
        r->blen = (size_t)k;
    }
    return r->buf[r->bpos++];
}

/* 1 after a failed read, with errno set to its error. */
static int in_error(VioReader *r) {
    if (r->fd < 0) return ferror(r->f) != 0;
    if (r->in_err) errno = r->in_err;
    return r->in_err != 0;
}

/* Up to n iovecs for the bytes [from, frame_bytes) of a frame in pic, in file order (planes
 * Y, U, V, rows top to bottom); *more = 1 if the frame goes on past them. */
static int frame_iov(const VioFormat *f, const VidkPicture *pic, size_t from, struct iovec *iov,
                     int n, int *more) {
    const size_t bps = f->bitdepth > 8 ? 2 : 1;
    int k = 0;
    *more = 0;
    for (int p = 0; p < vio_n_planes(f->chroma); p++) {
        int w, h;
        vio_plane_dims(f, p, &w, &h);
        const size_t rowbytes = (size_t)w * bps, plane = rowbytes * (size_t)h;
        if (from >= plane) {
            from -= plane;
            continue;
        }
        for (size_t y = from / rowbytes; y < (size_t)h; y++) {
            if (k == n) {
                *more = 1;
                return k;
            }
            const size_t x = y == from / rowbytes ? from % rowbytes : 0;
            iov[k].iov_base = (uint8_t *)pic->data[p] + (ptrdiff_t)y * pic->stride[p] + x;
            iov[k].iov_len = rowbytes - x;
            k++;
        }
        from = 0;
    }
    return k;
}

/* The samples of one frame into pic's rows: what is buffered first, then readv() straight
 * into the rows, with the buffer after the last row for the next FRAME line. Returns the
 * bytes of the frame read: frame_bytes, or fewer at the end of the input or on a read error
 * (in_error()). */
static size_t in_read_frame(VioReader *r, const VidkPicture *pic) {
    const size_t fb = r->frame_bytes;
    struct iovec iov[IOV_SEGS + 1];
    size_t got = 0;
    int more;
    /* Buffered bytes: copied (at most IN_BUF of them). */
    while (got < fb && r->bpos < r->blen) {
        frame_iov(&r->fmt, pic, got, iov, 1, &more);
        size_t c = r->blen - r->bpos;
        if (c > iov[0].iov_len) c = iov[0].iov_len;
        memcpy(iov[0].iov_base, r->buf + r->bpos, c);
        r->bpos += c;
        got += c;
    }
    if (got == fb || r->in_err) return got;
    r->bpos = r->blen = 0;
    while (got < fb) {
        int n = frame_iov(&r->fmt, pic, got, iov, IOV_SEGS, &more);
        if (!more) iov[n++] = (struct iovec){r->buf, IN_BUF}; /* what follows the frame */
        const ssize_t k = in_sysread(r, iov, n);
        if (k <= 0) break;
        const size_t left = fb - got;
        if ((size_t)k > left) {
            r->blen = (size_t)k - left;
            got = fb;
        } else {
            got += (size_t)k;
        }
    }
    return got;
}

/* The same through stdio (vio_reader_open_stream()): row by row, up to the first short
 * row. */
static size_t file_read_frame(VioReader *r, const VidkPicture *pic) {
    struct iovec iov[IOV_SEGS];
    size_t got = 0;
    int more = 1;
    while (more) {
        const int n = frame_iov(&r->fmt, pic, got, iov, IOV_SEGS, &more);
        for (int i = 0; i < n; i++) {
            const size_t k = fread(iov[i].iov_base, 1, iov[i].iov_len, r->f);
            got += k;
            if (k < iov[i].iov_len) return got;
        }
    }
    return got;
}

/* Little-endian 9..16-bit samples (in the file) to native (in memory) in the rows wholly
 * within the first got bytes of the frame, checking the bit depth's maximum. Each pair is
 * read before the same two bytes are overwritten. 0, or -1 with the first sample above the
 * maximum in *bp, *bx, *by, *bv. */
static int le16_rows(const VioFormat *f, const VidkPicture *pic, size_t got, int *bp, int *bx,
                     int *by, unsigned *bv) {
    const unsigned maxv = (1u << f->bitdepth) - 1;
    for (int p = 0; p < vio_n_planes(f->chroma); p++) {
        int w, h;
        vio_plane_dims(f, p, &w, &h);
        const size_t rowbytes = (size_t)w * 2;
        int y = 0;
        for (; y < h && got >= rowbytes; y++, got -= rowbytes) {
            uint8_t *row = (uint8_t *)pic->data[p] + y * pic->stride[p];
            uint16_t *s = (uint16_t *)row;
            unsigned bad = 0;
            for (int x = 0; x < w; x++) {
                const unsigned v = (unsigned)row[2 * x] | (unsigned)row[2 * x + 1] << 8;
                s[x] = (uint16_t)v;
                bad |= v > maxv;
            }
            if (bad) {
                int x = 0;
                while (s[x] <= maxv)
                    x++;
                *bp = p, *bx = x, *by = y, *bv = s[x];
                return -1;
            }
        }
        if (y < h) break; /* a partial row: the frame ends here */
    }
    return 0;
}

/* Reads a line into buf (without the '\n'). 1: line read; 0: end of input before any
 * byte; -1: end of input inside the line; -2: longer than max bytes; -3: read error. */
static int read_line(VioReader *r, char *buf, size_t max, size_t *len) {
    size_t n = 0;
    for (;;) {
        const int c = in_getc(r);
        if (c == EOF) {
            *len = n;
            return in_error(r) ? -3 : n ? -1 : 0;
        }
        if (c == '\n') break;
        if (n == max) {
            *len = n;
            return -2;
        }
        buf[n++] = (char)c;
    }
    *len = n;
    return 1;
}

static int append_ext(VioFormat *f, const char *tok, size_t n) {
    size_t have = strlen(f->y4m_ext);
    if (have + (have ? 1 : 0) + n > VIO_Y4M_EXT_KEEP) return -1;
    if (have) f->y4m_ext[have++] = ' ';
    memcpy(f->y4m_ext + have, tok, n);
    f->y4m_ext[have + n] = 0;
    return 0;
}

static int parse_y4m_header(VioReader *r) {
    char line[VIO_Y4M_LINE_MAX];
    char q[200];
    size_t n;
    errno = 0;
    const int st = read_line(r, line, sizeof(line) - 1, &n);
    if (st == -3) return vio_io_fail(&r->st, "read");
    if (st == 0) return vio_sfail(&r->st, VIDK_ERR(ENODATA), "empty input");
    /* The signature first: anything else is "not Y4M" rather than a header problem. */
    static const char magic[] = "YUV4MPEG2";
    const size_t ml = sizeof(magic) - 1;
    if (memcmp(line, magic, n < ml ? n : ml) || (n > ml && line[ml] != ' ') ||
        (n < ml && st != -1))
        return vio_sfail(&r->st, VIDK_ERR(EINVAL), "not a YUV4MPEG2 stream");
    if (st == -1)
        return vio_sfail(&r->st, VIDK_ERR(EINVAL),
                         "Y4M header has no newline (input ends after %zu bytes)", n);
    if (st == -2)
        return vio_sfail(&r->st, VIDK_ERR(EINVAL), "Y4M header line too long (over %d bytes)",
                         VIO_Y4M_LINE_MAX);
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)line[i];
        if (c < 0x20 || c == 0x7f)
            return vio_sfail(&r->st, VIDK_ERR(EINVAL),
                             "Y4M header has a control character (0x%02X) at byte %zu", c, i);
    }

    VioFormat *f = &r->fmt;
    vio_format_default(f);
    f->y4m_tags = 0;
    int have_w = 0, have_h = 0, have_c = 0;
    const char *xyscss = NULL;
    size_t xyscss_n = 0;
    for (size_t i = ml; i < n;) {
        if (line[i] == ' ') { /* tolerate repeated separators */
            i++;
            continue;
        }
        const char *tok = line + i;
        size_t tl = 0;
        while (i + tl < n && tok[tl] != ' ')
            tl++;
        i += tl;
        const char *v = tok + 1;
        const size_t vl = tl - 1;
        vio_quote(q, sizeof(q), tok, tl);
        long x;
        switch (tok[0]) {
        case 'W':
        case 'H':
            if (parse_uint(v, vl, VIDK_MAX_PICTURE_SIDE, &x) < 0 || x < 1)
                return vio_sfail(&r->st, VIDK_ERR(EINVAL),
                                 "bad %s '%s' in Y4M header (expected %c1..%c%d)",
                                 tok[0] == 'W' ? "width" : "height", q, tok[0], tok[0],
                                 VIDK_MAX_PICTURE_SIDE);
            if (tok[0] == 'W') {
                f->w = (int)x;
                have_w = 1;
            } else {
                f->h = (int)x;
                have_h = 1;
            }
            break;
        case 'F':
            if (parse_ratio(v, vl, &f->fps_num, &f->fps_den) < 0 || f->fps_num < 1 ||
                f->fps_den < 1)
                return vio_sfail(
                    &r->st, VIDK_ERR(EINVAL),
                    "bad frame rate '%s' in Y4M header (expected FN:D, N and D > 0)", q);
            f->y4m_tags |= VIO_Y4M_TAG_F;
            break;
        case 'A':
            if (parse_ratio(v, vl, &f->par_num, &f->par_den) < 0 ||
                (!f->par_num) != (!f->par_den))
                return vio_sfail(
                    &r->st, VIDK_ERR(EINVAL),
                    "bad aspect ratio '%s' in Y4M header (expected AN:D with N and "
                    "D > 0, or A0:0)",
                    q);
            f->y4m_tags |= VIO_Y4M_TAG_A;
            break;
        case 'I':
            if (vl != 1 || !strchr("ptbm?", v[0]))
                return vio_sfail(
                    &r->st, VIDK_ERR(EINVAL),
                    "bad interlacing '%s' in Y4M header (expected Ip, It, Ib, Im or "
                    "I?)",
                    q);
            f->interlace = v[0];
            f->y4m_tags |= VIO_Y4M_TAG_I;
            break;
        case 'C':
            if (vio_chroma_from_tag(v, vl, 0, &f->chroma, &f->bitdepth) < 0)
                return vio_sfail(
                    &r->st, VIDK_ERR(EINVAL),
                    "unsupported chroma '%s' in Y4M header (supported: 420jpeg, "
                    "420paldv, 420mpeg2, 420, 422, 444, mono, 420pN, 422pN, 444pN, "
                    "monoN with N 9..16)",
                    q);
            memcpy(f->y4m_chroma, v, vl); /* vl < 16: every accepted tag is short */
            f->y4m_chroma[vl] = 0;
            have_c = 1;
            f->y4m_tags |= VIO_Y4M_TAG_C;
            break;
        case 'X':
            if (tl > 7 && !memcmp(tok, "XYSCSS=", 7)) {
                xyscss = tok;
                xyscss_n = tl;
            }
            append_ext(f, tok, tl); /* dropped if past VIO_Y4M_EXT_KEEP */
            break;
        default: /* unknown tags: skipped, as the format's readers do */
            break;
        }
    }
    if (!have_w) return vio_sfail(&r->st, VIDK_ERR(EINVAL), "Y4M header has no W (width) tag");
    if (!have_h) return vio_sfail(&r->st, VIDK_ERR(EINVAL), "Y4M header has no H (height) tag");
    /* Without C the format is 420jpeg (the spec's default), unless ffmpeg's XYSCSS field
     * says otherwise. */
    if (!have_c && xyscss) {
        if (vio_chroma_from_tag(xyscss + 7, xyscss_n - 7, 1, &f->chroma, &f->bitdepth) < 0) {
            vio_quote(q, sizeof(q), xyscss, xyscss_n);
            return vio_sfail(&r->st, VIDK_ERR(EINVAL), "unsupported chroma '%s' in Y4M header",
                             q);
        }
    }
    return 0;
}

/* Offset in the input of the next byte to consume; -1 if unknown (not seekable). */
static long long in_tell(VioReader *r) {
    if (r->fd < 0) return ftell(r->f);
    const off_t o = lseek(r->fd, 0, SEEK_CUR);
    return o < 0 ? -1 : (long long)o - (long long)(r->blen - r->bpos);
}

/* After the header: random access for a regular file read through its descriptor; a
 * larger pipe for a FIFO (fewer, larger reads; failure costs only speed). */
static void in_setup(VioReader *r) {
    struct stat st;
    if (r->fd < 0 || fstat(r->fd, &st) < 0) return;
#ifdef F_SETPIPE_SZ
    if (S_ISFIFO(st.st_mode)) {
        /* Two frames, never less than it has; an unprivileged process may go up to
         * /proc/sys/fs/pipe-max-size (1 MiB by default). */
        const int cur = fcntl(r->fd, F_GETPIPE_SZ);
        size_t want = 2 * r->frame_bytes;
        if (want > ((size_t)16 << 20)) want = (size_t)16 << 20;
        if (cur > 0 && want > (size_t)cur && fcntl(r->fd, F_SETPIPE_SZ, (int)want) < 0 &&
            cur < (1 << 20))
            fcntl(r->fd, F_SETPIPE_SZ, 1 << 20);
    }
#endif
    const long long pos = in_tell(r);
    if (!S_ISREG(st.st_mode) || pos < 0 || !r->frame_bytes) return;
    r->ra = 1;
    r->base = pos;
    r->size = (long long)st.st_size;
    /* Frames are read front to back (by several threads at nearby offsets): a larger
     * read-ahead when the file is not in the page cache. */
    posix_fadvise(r->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
}

/* Before any picture is allocated for it: a frame within VIO_FRAME_BYTES_MAX and, for a
 * frame of VIO_FRAME_BYTES_CHECK or more in a regular file, at least one whole frame after
 * the header (or none: an empty stream). So a small file announcing 16384x16384 fails
 * here, at once. */
static int check_frame_size(VioReader *r) {
    const VioFormat *f = &r->fmt;
    if (r->frame_bytes > VIO_FRAME_BYTES_MAX)
        return vio_sfail(&r->st, VIDK_ERR(EFBIG),
                         "%dx%d %s %d-bit frames of %zu bytes are over the limit of %zu MiB a "
                         "frame",
                         f->w, f->h, vio_chroma_name(f->chroma), f->bitdepth, r->frame_bytes,
                         VIO_FRAME_BYTES_MAX >> 20);
    /* Smaller frames cost little: a short one is reported when read, as "frame 0
     * truncated", like any other. */
    if (r->frame_bytes < VIO_FRAME_BYTES_CHECK) return 0;
    struct stat st;
    const int fd = r->fd >= 0 ? r->fd : fileno(r->f);
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) return 0;
    const long long pos = in_tell(r);
    if (pos < 0 || (long long)st.st_size <= pos) return 0;
    const unsigned long long left = (unsigned long long)((long long)st.st_size - pos);
    const unsigned long long need = r->frame_bytes + (r->raw ? 0u : 6u);
    if (left >= need) return 0;
    if (r->raw)
        return vio_sfail(
            &r->st, VIDK_ERR(EINVAL),
            "raw %dx%d %s %d-bit frames are %llu bytes, but the file has only %llu "
            "(not one whole frame)",
            f->w, f->h, vio_chroma_name(f->chroma), f->bitdepth, need, left);
    return vio_sfail(&r->st, VIDK_ERR(EINVAL),
                     "the Y4M header announces %dx%d %s %d-bit frames of %llu bytes, but only "
                     "%llu bytes follow it (not one whole frame)",
                     f->w, f->h, vio_chroma_name(f->chroma), f->bitdepth, need, left);
}

/* A reader of stream (fd < 0) or of descriptor fd. */
static int reader_new(VioReader **out, FILE *stream, int fd, int own, const char *path,
                      const VioFormat *raw, char *err, size_t errlen) {
    VioReader *r = calloc(1, sizeof(*r));
    char *name = vio_message_name(path);
    if (!r || !name) {
        free(r);
        free(name);
        if (own && fd >= 0) close(fd);
        if (own && fd < 0) fclose(stream);
        vio_msg(err, errlen, path, "out of memory");
        return VIDK_ERR(ENOMEM);
    }
    r->f = stream;
    r->fd = fd;
    r->own = own;
    r->st.name = name;
    int ret = 0;
    if (raw) {
        r->raw = 1;
        r->fmt = *raw;
        if (!vio_format_valid(raw)) {
            ret = vio_sfail(&r->st, VIDK_ERR(EINVAL),
                            "raw input needs a size (1..%d a side), a chroma format and a bit "
                            "depth (8..16); got %dx%d, bit depth %d",
                            VIDK_MAX_PICTURE_SIDE, raw->w, raw->h, raw->bitdepth);
        } else {
            VioFormat d;
            vio_format_default(&d);
            if (r->fmt.fps_num < 1 || r->fmt.fps_den < 1) {
                r->fmt.fps_num = d.fps_num;
                r->fmt.fps_den = d.fps_den;
            }
            if (r->fmt.par_num < 0 || r->fmt.par_den < 0 || !r->fmt.par_num != !r->fmt.par_den)
                r->fmt.par_num = r->fmt.par_den = 0;
            if (!r->fmt.interlace || !strchr("ptbm?", r->fmt.interlace)) r->fmt.interlace = 'p';
            if (!memchr(r->fmt.y4m_chroma, 0, sizeof(r->fmt.y4m_chroma)))
                r->fmt.y4m_chroma[0] = 0;
            if (!memchr(r->fmt.y4m_ext, 0, sizeof(r->fmt.y4m_ext))) r->fmt.y4m_ext[0] = 0;
            /* Peek one byte (pushback needs no seeking) to report an empty input now. */
            errno = 0;
            const int c = in_getc(r);
            if (c == EOF)
                ret = in_error(r) ? vio_io_fail(&r->st, "read")
                                  : vio_sfail(&r->st, VIDK_ERR(ENODATA), "empty input");
            else if (r->fd >= 0)
                r->bpos--;
            else
                ungetc(c, stream);
        }
    } else {
        ret = parse_y4m_header(r);
    }
    if (!ret) {
        r->frame_bytes = vio_frame_bytes(&r->fmt);
        ret = check_frame_size(r);
    }
    if (!ret) in_setup(r);
    if (ret < 0) {
        if (err && errlen) snprintf(err, errlen, "%s", r->st.err);
        vio_reader_close(&r);
        return ret;
    }
    *out = r;
    return 0;
}

int vio_reader_open(VioReader **r, const char *path, const VioFormat *raw, char *err,
                    size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!r) return VIDK_ERR(EINVAL);
    *r = NULL;
    if (!path) {
        vio_msg(err, errlen, "(null)", "no input path");
        return VIDK_ERR(EINVAL);
    }
    /* stdin through its descriptor: nothing may have been read from it through stdio. */
    if (!strcmp(path, "-")) return reader_new(r, NULL, STDIN_FILENO, 0, path, raw, err, errlen);
    errno = 0;
    int fd;
    do
        fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        const int e = errno ? errno : EIO;
        char *name = vio_message_name(path);
        vio_msg(err, errlen, name ? name : "?", "cannot open: %s", strerror(e));
        free(name);
        return VIDK_ERR(e);
    }
    return reader_new(r, NULL, fd, 1, path, raw, err, errlen);
}

int vio_reader_open_stream(VioReader **r, FILE *stream, const char *name, const VioFormat *raw,
                           char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!r) return VIDK_ERR(EINVAL);
    *r = NULL;
    if (!stream || !name) {
        vio_msg(err, errlen, name ? name : "(null)", "no input stream");
        return VIDK_ERR(EINVAL);
    }
    return reader_new(r, stream, -1, 0, name, raw, err, errlen);
}

const VioFormat *vio_reader_format(const VioReader *r) {
    return r ? &r->fmt : NULL;
}
const char *vio_reader_error(const VioReader *r) {
    return r ? r->st.err : "no reader";
}
int vio_reader_frames(const VioReader *r) {
    return r ? r->frames : 0;
}

/* "FRAME" [' ' parameters] '\n'. 1: found; 0: clean end of input; < 0: error. */
static int read_frame_marker(VioReader *r) {
    static const char marker[] = "FRAME";
    char seen[8];
    char q[64];
    errno = 0;
    for (int i = 0; i < 6; i++) {
        const int c = in_getc(r);
        if (c == EOF) {
            if (in_error(r)) return vio_io_fail(&r->st, "read");
            if (!i) return 0;
            return vio_sfail(&r->st, VIDK_ERR(EINVAL),
                             "frame %d truncated (input ends inside the FRAME marker)",
                             r->frames);
        }
        seen[i] = (char)c;
        if (i < 5 ? c != marker[i] : c != '\n' && c != ' ') {
            vio_quote(q, sizeof(q), seen, (size_t)i + 1);
            return vio_sfail(&r->st, VIDK_ERR(EINVAL), "frame %d: bad FRAME marker '%s'",
                             r->frames, q);
        }
        if (i == 5 && c == '\n') return 1;
    }
    /* Frame parameters (per-frame interlacing etc.) are skipped. */
    for (int k = 6;; k++) {
        const int c = in_getc(r);
        if (c == '\n') return 1;
        if (c == EOF) {
            if (in_error(r)) return vio_io_fail(&r->st, "read");
            return vio_sfail(&r->st, VIDK_ERR(EINVAL),
                             "frame %d truncated (input ends inside the FRAME line)",
                             r->frames);
        }
        if (k >= VIO_Y4M_LINE_MAX - 1) /* byte k is not the newline */
            return vio_sfail(&r->st, VIDK_ERR(EINVAL),
                             "frame %d: FRAME line too long (over %d bytes)", r->frames,
                             VIO_Y4M_LINE_MAX);
    }
}

int vio_reader_read(VioReader *r, VidkPicture *pic) {
    if (!r) return VIDK_ERR(EINVAL);
    if (r->st.status) return r->st.status;
    if (!vio_pic_matches(pic, &r->fmt)) {
        vio_msg(r->st.err, sizeof(r->st.err), r->st.name,
                "picture does not match the stream (%dx%d %s %d-bit expected)", r->fmt.w,
                r->fmt.h, vio_chroma_name(r->fmt.chroma), r->fmt.bitdepth);
        return VIDK_ERR(EINVAL);
    }
    if (!r->raw) {
        const int m = read_frame_marker(r);
        if (m <= 0) return m;
    }
    const VioFormat *f = &r->fmt;
    errno = 0;
    const size_t got = r->fd >= 0 ? in_read_frame(r, pic) : file_read_frame(r, pic);
    /* As row by row: a bad sample in a whole row first, then the read error or the end. */
    int bp, bx, by;
    unsigned bv;
    if (f->bitdepth > 8 && le16_rows(f, pic, got, &bp, &bx, &by, &bv) < 0)
        return vio_sfail(
            &r->st, VIDK_ERR(ERANGE),
            "frame %d: sample %u at plane %d x %d y %d is above the %d-bit maximum %u",
            r->frames, bv, bp, bx, by, f->bitdepth, (1u << f->bitdepth) - 1);
    if (got < r->frame_bytes) {
        if (in_error(r)) return vio_io_fail(&r->st, "read");
        if (r->raw && got == 0) return 0; /* clean end between frames */
        return vio_sfail(&r->st, VIDK_ERR(EINVAL), "frame %d truncated (got %zu of %zu bytes)",
                         r->frames, got, r->frame_bytes);
    }
    r->frames++;
    vidk_picture_pad_edges(pic);
    return 1;
}

int vio_reader_random_access(const VioReader *r) {
    return r && r->ra && !r->st.status;
}

int vio_reader_read_at(VioReader *r, int k, VidkPicture *pic) {
    if (!r || !r->ra || k < 0 || !vio_pic_matches(pic, &r->fmt)) return 0;
    const VioFormat *f = &r->fmt;
    const long long step = (long long)r->frame_bytes + (r->raw ? 0 : 6);
    /* Frame k whole within the file as it was when opened. */
    if (r->size - r->base < step || (r->size - r->base) / step <= k) return 0;
    long long off = r->base + (long long)k * step;
    char mark[6];
    struct iovec iov[IOV_SEGS + 1];
    size_t got = 0;
    int n = 0, more = 1, first = 1;
    while (more) {
        n = 0;
        if (first && !r->raw) iov[n++] = (struct iovec){mark, 6};
        n += frame_iov(f, pic, got, iov + n, IOV_SEGS, &more);
        size_t want = 0;
        for (int i = 0; i < n; i++)
            want += iov[i].iov_len;
        /* A regular file gives all it has: anything short is its end (or an error). */
        ssize_t m;
        do
            m = preadv(r->fd, iov, n, (off_t)off);
        while (m < 0 && errno == EINTR);
        if (m < 0 || (size_t)m != want) return 0;
        off += m;
        got += (size_t)m - (first && !r->raw ? 6 : 0);
        first = 0;
    }
    if (!r->raw && memcmp(mark, "FRAME\n", 6)) return 0;
    int bp, bx, by;
    unsigned bv;
    if (f->bitdepth > 8 && le16_rows(f, pic, got, &bp, &bx, &by, &bv) < 0) return 0;
    vidk_picture_pad_edges(pic);
    return 1;
}

int vio_reader_seek_frame(VioReader *r, int k) {
    if (!r) return VIDK_ERR(EINVAL);
    if (r->st.status) return r->st.status;
    if (!r->ra || k < 0) return VIDK_ERR(EINVAL);
    const long long step = (long long)r->frame_bytes + (r->raw ? 0 : 6);
    if (k > (LLONG_MAX - r->base) / step) return VIDK_ERR(EINVAL);
    errno = 0;
    if (lseek(r->fd, (off_t)(r->base + (long long)k * step), SEEK_SET) < 0)
        return vio_io_fail(&r->st, "seek");
    r->bpos = r->blen = 0;
    r->frames = k;
    return 0;
}

void vio_reader_close(VioReader **pr) {
    if (!pr || !*pr) return;
    VioReader *r = *pr;
    if (r->own && r->fd >= 0) close(r->fd);
    if (r->own && r->fd < 0) fclose(r->f);
    free(r->st.name);
    free(r);
    *pr = NULL;
}
