/* What tools/picio.c (formats, messages, reader), vio_out.c (output files) and
 * picio_write.c (writer) share; internal to the picture I/O, not part of picio.h. */
#ifndef VIDK_TOOLS_PICIO_INT_H
#define VIDK_TOOLS_PICIO_INT_H

#include <stdarg.h>
#include <stddef.h>

#include "picio.h"

#if defined(__GNUC__)
#define VIO_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define VIO_PRINTF(a, b)
#endif

#define NAME_MAX_CHARS 1024
#define MSG_MAX        (NAME_MAX_CHARS + 512)

/* What a reader and a writer share: the name for messages and the failure, which every
 * later call returns again. */
typedef struct VioState {
    int status; /* 0 or the error code */
    char *name;
    char err[MSG_MAX];
} VioState;

/* Formats (picio.c). */
int vio_chroma_from_tag(const char *s, size_t n, int icase, VidkChroma *c, int *bd);
void vio_default_ctag(VidkChroma c, int bd, char *out, size_t n);
void vio_plane_dims(const VioFormat *f, int p, int *w, int *h);
int vio_n_planes(VidkChroma c);
int vio_format_valid(const VioFormat *f);
int vio_pic_matches(const VidkPicture *pic, const VioFormat *f);

/* Messages (picio.c): a path fit for a one-line message (malloc'd), input bytes quoted,
 * "NAME: text" into dst. */
char *vio_message_name(const char *path);
void vio_quote(char *out, size_t outlen, const char *s, size_t n);
void vio_vmsg(char *dst, size_t len, const char *name, const char *fmt, va_list ap);
void vio_msg(char *dst, size_t len, const char *name, const char *fmt, ...) VIO_PRINTF(4, 5);

/* A failure recorded in s (returned again by every later call); io_fail: errno, EIO if
 * unset. */
int vio_sfail(VioState *s, int code, const char *fmt, ...) VIO_PRINTF(3, 4);
int vio_io_fail(VioState *s, const char *what);

#endif
