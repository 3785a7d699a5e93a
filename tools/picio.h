/* Picture input/output of the vidkern tools: YUV4MPEG2 (.y4m) and headerless planar
 * (.yuv) streams, read and written sequentially (pipes work: nothing needs to seek; a
 * regular input file can also be read at frame offsets, by several threads), and PNG
 * output, and the one way the tools create output files (vio_out_open()). Tool-level
 * code, not part of the library: it prints nothing, every failure comes back as a
 * negative errno code plus a one-line message "NAME: problem" where NAME is the path given
 * ("stdin" / "stdout" for "-"), or "cannot create 'PATH': reason" for an output that
 * cannot be created.
 *
 * Y4M as read and written here (the mjpegtools YUV4MPEG2 format, as ffmpeg writes it):
 *   header  "YUV4MPEG2" then space-separated tags, then '\n':
 *           W<width> H<height> F<num>:<den> I<p|t|b|m|?> A<num>:<den> C<chroma> X<ext>
 *   frames  "FRAME" [space parameters] '\n', then the planes Y, U, V (Y only for mono),
 *           each row-major without padding; chroma planes ceil(w/2) x ceil(h/2) (4:2:0),
 *           ceil(w/2) x h (4:2:2) or w x h (4:4:4). Samples of 9..16 bits take 2 bytes,
 *           little-endian, in the file (uint16_t, native endian, in memory).
 * Raw .yuv is the same planes back to back without header or FRAME lines.
 */
#ifndef VIDK_TOOLS_PICIO_H
#define VIDK_TOOLS_PICIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vidkern/vidkern.h"

/** Padding margin (luma samples) of pictures from vio_picture_alloc(). */
#define VIO_PAD 64

/** Longest Y4M header or FRAME line accepted, newline included. */
#define VIO_Y4M_LINE_MAX 1024
/** X fields kept by the reader, in bytes: room is left for the longest W H F I A C tags. */
#define VIO_Y4M_EXT_KEEP (VIO_Y4M_LINE_MAX - 128)

/** Largest frame a reader accepts, in bytes of the file (512 MiB: 16384x16384 4:2:0
 *  8-bit or 8K 4:4:4 16-bit fit; checked when the stream opens, before any picture is
 *  allocated, so a header announcing a huge frame costs no memory). */
#define VIO_FRAME_BYTES_MAX ((size_t)512 << 20)
/** Frames from this size up (1 MiB) are checked against the size of a regular file when
 *  the stream opens: a file with less than one whole frame fails at once. */
#define VIO_FRAME_BYTES_CHECK ((size_t)1 << 20)

/** Bits of VioFormat.y4m_tags: the optional Y4M header tags present. */
#define VIO_Y4M_TAG_F    1u
#define VIO_Y4M_TAG_I    2u
#define VIO_Y4M_TAG_A    4u
#define VIO_Y4M_TAG_C    8u
#define VIO_Y4M_TAGS_ALL 15u

/** Stream format. Fill with vio_format_default() first. */
typedef struct VioFormat {
    int w, h;             /**< luma size */
    VidkChroma chroma;    /**< 400/420/422/444 */
    int bitdepth;         /**< 8..16 */
    int fps_num, fps_den; /**< default 25/1 */
    int par_num, par_den; /**< pixel aspect ratio; 0:0 = unknown */
    char interlace;       /**< 'p' (default), 't', 'b', 'm', '?' */
    /** The Y4M C tag read or to write, without the 'C' (e.g. "420jpeg", "420mpeg2",
     *  "420p10"); "" = the default for chroma/bitdepth. A tag that contradicts
     *  chroma/bitdepth is replaced by the default when writing. */
    char y4m_chroma[16];
    /** Y4M X extension fields, e.g. "XYSCSS=420JPEG XCOLORRANGE=LIMITED": space
     *  separated, each with its 'X'. Kept as read (up to VIO_Y4M_EXT_KEEP bytes; fields
     *  past that are dropped whole, so a format as read can always be written) and written
     *  back after the C tag, so read -> write gives the same header. XYSCSS fields that
     *  contradict chroma/bitdepth are dropped when writing. */
    char y4m_ext[VIO_Y4M_LINE_MAX];
    /** The optional tags (VIO_Y4M_TAG_*) the Y4M header had, as read; a writer writes a
     *  tag missing here only when its value differs from what a reader assumes without it
     *  (F25:1, Ip, A0:0, 4:2:0 8-bit), so read -> write adds no tag the source lacked. */
    unsigned y4m_tags;
} VioFormat;

/** 0x0, 4:2:0, 8 bit, 25/1 fps, 0:0 aspect, progressive, default C tag, no X fields,
 *  every tag written (y4m_tags = VIO_Y4M_TAGS_ALL). */
void vio_format_default(VioFormat *f);

/**
 * ffmpeg-style pixel format names for raw .yuv: gray, grayNle, yuv420p, yuv422p, yuv444p,
 * yuv420pNle, yuv422pNle, yuv444pNle with N in 9..16 (e.g. yuv420p10le, gray10le), and
 * the full-range aliases yuvj420p, yuvj422p, yuvj444p (same layout). Fills chroma and
 * bitdepth of f (and resets y4m_chroma). @return 0, or -1 for an unknown name.
 */
int vio_parse_pixfmt(const char *name, VioFormat *f);

/** Bytes of one frame's samples in a file of format f (no FRAME line); 0 if f is
 *  invalid. */
size_t vio_frame_bytes(const VioFormat *f);

/** Short text for a chroma format: "4:0:0", "4:2:0", "4:2:2", "4:4:4", or "?". */
const char *vio_chroma_name(VidkChroma c);

typedef struct VioReader VioReader;

/**
 * Open a stream for reading. path "-" = stdin, read through its descriptor (nothing may
 * have been read from stdin through stdio before; a pipe is enlarged with F_SETPIPE_SZ
 * where allowed). raw NULL: Y4M (the header is read and
 * checked here). raw non-NULL: headerless planar data of that format (w, h, chroma,
 * bitdepth required; invalid fps/aspect/interlace fall back to the defaults).
 * Before returning, a frame over VIO_FRAME_BYTES_MAX is refused, and so is a regular file
 * with less than one whole frame of VIO_FRAME_BYTES_CHECK bytes or more after the header
 * (but not an empty stream: 0 frames).
 * Interlacing (It, Ib, Im) is only reported in the format; refusing it is the caller's
 * choice.
 * @return 0; on failure *r = NULL, a negative errno code and the message "PATH: problem"
 *         in err (errlen bytes, always terminated; err may be NULL when errlen is 0):
 *         VIDK_ERR(ENOENT) etc. from the OS, VIDK_ERR(EINVAL) for a bad header or format,
 *         VIDK_ERR(ENODATA) for an empty input, VIDK_ERR(ENOMEM).
 */
int vio_reader_open(VioReader **r, const char *path, const VioFormat *raw, char *err,
                    size_t errlen);

/** As vio_reader_open() on an open stream named `name` in messages. The reader does not
 *  close it; it must stay open until vio_reader_close(). */
int vio_reader_open_stream(VioReader **r, FILE *stream, const char *name, const VioFormat *raw,
                           char *err, size_t errlen);

/** Format of the stream (the parsed header for Y4M). */
const VioFormat *vio_reader_format(const VioReader *r);

/** Allocate a picture for format f: VidkPicture of f's size/chroma/bitdepth with margin
 *  VIO_PAD. Free with vidk_picture_free(). @return 0 or a negative errno code. */
int vio_picture_alloc(VidkPicture *pic, const VioFormat *f);

/**
 * Read the next frame into pic (of the reader's size/chroma/bitdepth, any padding) and
 * fill its margin by edge replication (vidk_picture_pad_edges()).
 * @return 1 = frame read, 0 = clean end of stream, < 0 = error: truncated frame, bad FRAME
 *         marker, sample above the bit depth's maximum, I/O error, picture not matching
 *         the stream. The message is in vio_reader_error(). After an error of the stream
 *         every later call fails the same way; the contents of pic are unspecified.
 */
int vio_reader_read(VioReader *r, VidkPicture *pic);

/** Message of the last failure ("" if none). */
const char *vio_reader_error(const VioReader *r);

/** Frames read so far (= the 0-based number of the next frame, as in messages). */
int vio_reader_frames(const VioReader *r);

/* Random access, for reading a regular file from several threads at once (vidkern
 * encode). Frame k of a regular file opened by vio_reader_open() (a path, or stdin
 * redirected from a file) starts at a known offset as long as every FRAME line before it
 * is exactly "FRAME\n" (raw: always). vio_reader_read_at() reads frame k there, checking
 * its own FRAME line only; so a caller keeps frame k only when frames 0..k-1 were all read
 * this way, and at the first frame it gets 0 for, goes on with vio_reader_seek_frame() and
 * vio_reader_read(), which read that frame (and the rest) as if every frame had been read
 * in order: the same frames, the same errors and messages. */

/** 1 if vio_reader_read_at() may work: a regular file read through its descriptor, no
 *  error so far. */
int vio_reader_random_access(const VioReader *r);

/**
 * Read frame k (0-based) at its offset into pic (of the reader's format) and pad its edges,
 * when that offset holds exactly "FRAME\n" (Y4M) and the whole frame lies within the file
 * as it was when opened, and every sample is within the bit depth. Thread-safe: it reads
 * only what vio_reader_open() set (by preadv(), which moves no file position), so several
 * threads may call it at once, also while another thread is in vio_reader_read() (but not
 * in vio_reader_seek_frame()); it changes no state of r (vio_reader_frames() included)
 * and reports nothing.
 * @return 1 = read; 0 = not read this way (anything unusual, the end of the input
 *         included; pic's contents are then unspecified): read frame k with
 *         vio_reader_seek_frame(r, k) and vio_reader_read().
 */
int vio_reader_read_at(VioReader *r, int k, VidkPicture *pic);

/** Make frame k (at its offset as in vio_reader_read_at()) the next one vio_reader_read()
 *  reads; vio_reader_frames() becomes k. @return 0; VIDK_ERR(EINVAL) without random access;
 *  a seek error (message in vio_reader_error()); a previous error of the stream. */
int vio_reader_seek_frame(VioReader *r, int k);

/** Close (stdin and streams from vio_reader_open_stream() stay open); *r = NULL. */
void vio_reader_close(VioReader **r);

typedef struct VioWriter VioWriter;

/**
 * Open a stream for writing, through vio_out_open() (a regular file is written under a
 * temporary name and only appears by vio_writer_close()). path "-" = stdout. raw = 0: Y4M,
 * the header is written at once; raw = 1: headerless planar.
 * @return 0; on failure *w = NULL, VIDK_ERR(EINVAL) for a bad format, an OS error code
 *         otherwise, with the message in err.
 */
int vio_writer_open(VioWriter **w, const char *path, const VioFormat *f, int raw, char *err,
                    size_t errlen);

/** As vio_writer_open() on an open stream named `name` in messages; not closed by
 *  vio_writer_close() (which flushes it). */
int vio_writer_open_stream(VioWriter **w, FILE *stream, const char *name, const VioFormat *f,
                           int raw, char *err, size_t errlen);

/** Write one frame. pic must match the writer's size, chroma and bitdepth, with samples
 *  in range for the bit depth. @return 0 or < 0 (message in vio_writer_error()). */
int vio_writer_write(VioWriter *w, const VidkPicture *pic);

/** Message of the last failure ("" if none). */
const char *vio_writer_error(const VioWriter *w);

/** Flush, close and commit the output (vio_out_close(), commit 1); *w = NULL. @return 0,
 *  or < 0 if anything failed (a write error, including one found only now while flushing;
 *  the message is lost with the writer, so read vio_writer_error() of a failed write
 *  before closing). A failed close leaves no output file. */
int vio_writer_close(VioWriter **w);

/** Close and discard: a regular output file is not created (or not replaced); an output
 *  written in place (stdout, FIFO, device, link) keeps what was written. *w = NULL. */
void vio_writer_abort(VioWriter **w);

/** As vio_writer_close() but copies the error message, if any, into err. */
int vio_writer_close_msg(VioWriter **w, char *err, size_t errlen);

/* ---- output files ------------------------------------------------------------------ */

typedef struct VioOut VioOut;

/**
 * Open an output file: the one way every output of the tools is created.
 *  - "-": stdout (flushed, never closed), named "stdout" in messages;
 *  - a name that does not exist, or names a regular file: a temporary file
 *    "PATH.tmpXXXXXX" in the same folder, renamed to PATH by vio_out_close(commit 1) and
 *    removed otherwise, so a failed command leaves neither a half-written PATH nor a
 *    temporary file, and an existing PATH keeps its contents until the rename (its
 *    permission bits are kept; one the user may not write is refused, as fopen() would).
 *    If the folder refuses new files but PATH exists and is writable, PATH is written in
 *    place;
 *  - anything else (a FIFO, a character device such as /dev/null, a symbolic link) is
 *    opened and written in place: never replaced, a link stays a link.
 * @return 0, or a negative errno code with the message "cannot create 'PATH': <strerror>"
 *         in err (errlen bytes; err may be NULL when errlen is 0).
 */
int vio_out_open(VioOut **o, const char *path, char *err, size_t errlen);
/** The stream to write to. */
FILE *vio_out_stream(const VioOut *o);
/** The name for messages: the path as given, "stdout" for "-". */
const char *vio_out_name(const VioOut *o);
/** 1 if the stream is a regular file (seekable), 0 otherwise. */
int vio_out_seekable(const VioOut *o);
/** Flush and close the stream now (the output is complete) but keep a temporary file
 *  under its temporary name until vio_out_close(). @return 0, or < 0 with
 *  "NAME: write error: ..." in err; the output then counts as failed. */
int vio_out_finish(VioOut *o, char *err, size_t errlen);
/** Finish (if not yet done) and release; commit 1 moves a temporary file to its name,
 *  commit 0 (or a write error) removes it. *o = NULL; NULL or *o NULL is a no-op.
 *  @return 0, or < 0 with the message in err. */
int vio_out_close(VioOut **o, int commit, char *err, size_t errlen);

/** 1 when out (an output path, "-" = stdout) and in (an input path, "-" = stdin) are the
 *  same existing regular file (same device and inode, links followed), else 0. */
int vio_same_file(const char *out, const char *in);

/**
 * PNG output (libpng when VIDK_HAVE_PNG, else VIDK_ERR(ENOSYS) with a message): 8-bit gray
 * (channels 1) or RGB (channels 3) image, rows of w * channels bytes, `stride` bytes apart.
 * path "-" = stdout.
 * @return 0; VIDK_ERR(EINVAL) for bad arguments; VIDK_ERR(EIO) or an OS error code.
 */
int vio_write_png(const char *path, const uint8_t *pixels, int w, int h, ptrdiff_t stride,
                  int channels, char *err, size_t errlen);
/** As vio_write_png() into an open stream (not closed; written and flushed), named `name`
 *  in messages. */
int vio_write_png_stream(FILE *f, const char *name, const uint8_t *pixels, int w, int h,
                         ptrdiff_t stride, int channels, char *err, size_t errlen);

#endif
