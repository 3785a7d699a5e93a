/* Output files of the tools (picio.h: vio_out_*): a temporary file renamed when complete,
 * or written in place for stdout, pipes and devices. Split from picio.c. */
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

/* ---- output files ------------------------------------------------------------------ */

struct VioOut {
    FILE *f;
    char *path; /* as given */
    char *tmp;  /* temporary name; NULL when written in place */
    char *name; /* for messages */
    int is_stdout, finished, failed;
};

static void out_free(VioOut *o) {
    free(o->path);
    free(o->tmp);
    free(o->name);
    free(o);
}

static int create_error(char *err, size_t errlen, const char *path, int e) {
    char *nm = vio_message_name(path);
    if (err && errlen)
        snprintf(err, errlen, "cannot create '%s': %s", nm ? nm : "?", strerror(e));
    free(nm);
    return VIDK_ERR(e);
}

/* Drop a temporary file that cannot be used; errno is kept. -1. */
static int tmp_fail(VioOut *o, int fd) {
    const int e = errno;
    close(fd);
    remove(o->tmp);
    errno = e;
    return -1;
}

int vio_out_open(VioOut **po, const char *path, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!po) return VIDK_ERR(EINVAL);
    *po = NULL;
    if (!path || !path[0]) return create_error(err, errlen, path ? path : "(null)", ENOENT);
    VioOut *o = calloc(1, sizeof(*o));
    const size_t n = strlen(path);
    if (!o || !(o->path = malloc(n + 1)) || !(o->name = vio_message_name(path))) {
        if (o) out_free(o);
        return create_error(err, errlen, path, ENOMEM);
    }
    memcpy(o->path, path, n + 1);
    if (!strcmp(path, "-")) {
        o->is_stdout = 1;
        o->f = stdout;
        *po = o;
        return 0;
    }
    struct stat st;
    const int exists = lstat(path, &st) == 0;
    if (!exists || S_ISREG(st.st_mode)) {
        /* A file the user may not write is not replaced behind its back either. */
        if (exists && access(path, W_OK) < 0) {
            const int e = errno ? errno : EACCES;
            out_free(o);
            return create_error(err, errlen, path, e);
        }
        /* Beside the output, so that the rename stays within one file system: PATH.tmp,
         * created exclusively, or PATH.tmpXXXXXX if that name is taken. */
        static const char suffix[] = ".tmpXXXXXX";
        if (!(o->tmp = malloc(n + sizeof(suffix)))) {
            out_free(o);
            return create_error(err, errlen, path, ENOMEM);
        }
        memcpy(o->tmp, path, n);
        memcpy(o->tmp + n, ".tmp", 5);
        errno = 0;
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd < 0 && errno == EEXIST) {
            memcpy(o->tmp + n, suffix, sizeof(suffix));
            errno = 0;
            if ((fd = mkstemp(o->tmp)) >= 0) {
                /* mkstemp makes the file 0600: the mode a new output would have. */
                const mode_t mask = umask(0);
                umask(mask);
                if (fchmod(fd, 0666 & ~mask) < 0) fd = tmp_fail(o, fd);
            }
        }
        /* An existing output keeps its permission bits. */
        if (fd >= 0 && exists && fchmod(fd, st.st_mode & 07777) < 0) fd = tmp_fail(o, fd);
        if (fd >= 0 && !(o->f = fdopen(fd, "wb"))) fd = tmp_fail(o, fd);
        if (fd >= 0) {
            *po = o;
            return 0;
        }
        const int e = errno ? errno : EIO;
        free(o->tmp);
        o->tmp = NULL;
        /* A folder that takes no new files: write an existing, writable file in place. */
        if (!exists || (e != EACCES && e != EPERM && e != EROFS) || access(path, W_OK) < 0) {
            out_free(o);
            return create_error(err, errlen, path, e);
        }
    }
    errno = 0;
    if (!(o->f = fopen(path, "wb"))) {
        const int e = errno ? errno : EIO;
        out_free(o);
        return create_error(err, errlen, path, e);
    }
    *po = o;
    return 0;
}

FILE *vio_out_stream(const VioOut *o) {
    return o ? o->f : NULL;
}

const char *vio_out_name(const VioOut *o) {
    return !o ? "(null)" : o->is_stdout ? "stdout" : o->name;
}

int vio_out_seekable(const VioOut *o) {
    struct stat st;
    return o && o->f && fstat(fileno(o->f), &st) == 0 && S_ISREG(st.st_mode);
}

int vio_out_finish(VioOut *o, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!o) return VIDK_ERR(EINVAL);
    if (o->finished) return o->failed ? VIDK_ERR(EIO) : 0;
    o->finished = 1;
    errno = 0;
    int bad = ferror(o->f) || fflush(o->f) != 0;
    int e = errno;
    if (!o->is_stdout) {
        if (fclose(o->f) != 0 && !bad) {
            bad = 1;
            e = errno;
        }
        o->f = NULL;
    }
    if (bad) {
        o->failed = 1;
        if (!e) e = EIO;
        vio_msg(err, errlen, vio_out_name(o), "write error: %s", strerror(e));
        return VIDK_ERR(e);
    }
    return 0;
}

int vio_out_close(VioOut **po, int commit, char *err, size_t errlen) {
    if (err && errlen) err[0] = 0;
    if (!po || !*po) return 0;
    VioOut *o = *po;
    *po = NULL;
    int ret = 0;
    if (!o->finished) {
        ret = vio_out_finish(o, commit ? err : NULL, commit ? errlen : 0);
    } else if (o->failed) {
        ret = VIDK_ERR(EIO);
        if (commit) vio_msg(err, errlen, vio_out_name(o), "write error");
    }
    if (o->tmp) {
        if (commit && !ret && rename(o->tmp, o->path) < 0) {
            const int e = errno ? errno : EIO;
            ret = create_error(err, errlen, o->path, e);
        }
        if (!commit || ret) remove(o->tmp);
    }
    out_free(o);
    return ret;
}

static int stat_arg(const char *path, int fd, struct stat *st) {
    return !strcmp(path, "-") ? fstat(fd, st) : stat(path, st);
}

int vio_same_file(const char *out, const char *in) {
    struct stat so, si;
    if (!out || !in || stat_arg(out, STDOUT_FILENO, &so) < 0 ||
        stat_arg(in, STDIN_FILENO, &si) < 0)
        return 0;
    return S_ISREG(so.st_mode) && S_ISREG(si.st_mode) && so.st_dev == si.st_dev &&
           so.st_ino == si.st_ino;
}
