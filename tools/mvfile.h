/* Motion-field files: the binary VKMV format (docs/MVFORMAT.md) with writer and
 * validating reader, plus CSV and JSON writers. A writer always writes PATH.tmp and
 * renames it to PATH only when closed with commit = 1, so a failed run never leaves
 * a half-written file behind. */
#ifndef VIDK_TOOLS_MVFILE_H
#define VIDK_TOOLS_MVFILE_H

#include <stddef.h>
#include <stdint.h>

#include "vidkern/vidkern.h"

#define MVF_MAGIC       "VKMV"
#define MVF_VERSION     1
#define MVF_HEADER_SIZE 64
#define MVF_RECORD_SIZE 12 /* int16 mvx, int16 mvy, uint32 cost, uint32 sad */

/* Header flags. */
#define MVF_FLAG_REF_FILE 1u /* fields against a separate reference sequence (--ref) */
#define MVF_FLAG_PRED     2u /* a non-zero MV predictor was used (cost - sad unchecked) */
#define MVF_FLAGS_KNOWN   (MVF_FLAG_REF_FILE | MVF_FLAG_PRED)

/* What a file describes. */
typedef struct MvfInfo {
    int w, h;        /* picture size */
    int mb_w, mb_h;  /* ceil(w / 16), ceil(h / 16) */
    int bitdepth;    /* of the searched pictures, 8..16 */
    unsigned shapes; /* VIDK_ME_SHAPE mask, subset of VIDK_ME_SHAPES_ALL, not 0 */
    int range;       /* R, 0..VIDK_ME_MAX_RANGE */
    unsigned lambda; /* 0..VIDK_ME_MAX_LAMBDA */
    uint32_t frames; /* number of fields (frame pairs) */
    uint32_t flags;  /* MVF_FLAG_* */
} MvfInfo;

/* Fill info for a w x h picture (mb_w/mb_h computed), frames 0, flags 0. */
void mvf_info_init(MvfInfo *info, int w, int h, int bitdepth, unsigned shapes, int range,
                   unsigned lambda);

/* Blocks across/down of shape bs for a w x h picture (the VidkMeField grid). */
void mvf_grid(int w, int h, VidkBlockSize bs, int *gw, int *gh);

/* Records of one frame (all shapes of info). */
uint64_t mvf_frame_records(const MvfInfo *info);

/* Check every header field; 0 or -1 with a message in err. */
int mvf_info_check(const MvfInfo *info, char *err, size_t errlen);

/* Signed Exp-Golomb code length (independent of the library's vidk_me_mv_bits so
 * the reader can cross-check costs). */
unsigned mvf_se_bits(int v);

typedef enum MvfFormat { MVF_FORMAT_BIN = 0, MVF_FORMAT_CSV, MVF_FORMAT_JSON } MvfFormat;

/* Format from the file name's extension (.bin/.vkmv, .csv, .json); -1 if unknown. */
int mvf_format_from_path(const char *path);
const char *mvf_format_name(MvfFormat f);

typedef struct MvfWriter MvfWriter;
/* Open PATH through vio_out_open() (picio.h: a regular file is written under a temporary
 * name; a .bin output must be a regular file) and write the header. 0 or <0 with a
 * message in err. */
int mvf_writer_open(MvfWriter **w, const char *path, MvfFormat fmt, const MvfInfo *info,
                    char *err, size_t errlen);
/* Append one field (size and shapes must match info; extra shapes are ignored). */
int mvf_writer_frame(MvfWriter *w, const VidkMeField *f, char *err, size_t errlen);
/* commit = 1: finish (frame count), flush and move the temporary file to PATH; commit = 0
 * (or a failure while committing): remove the temporary file. Always frees *w and sets it to
 * NULL. Returns 0 or <0 with a message in err. */
int mvf_writer_close(MvfWriter **w, int commit, char *err, size_t errlen);

typedef struct MvfReader MvfReader;
/* Open a VKMV file ("-" = stdin), read and validate the header, and, for a regular
 * file, that its size matches the frame count exactly. */
int mvf_reader_open(MvfReader **r, const char *path, MvfInfo *info, char *err, size_t errlen);
/* Read the next field into f (from vidk_me_field_alloc(f, info.w, info.h, info.shapes)
 * or a superset of shapes). Every record is validated (|mv| <= R, sad within the
 * block's maximum, cost consistent with sad, lambda and the MV bits).
 * Returns 1 = field read, 0 = all frames read, <0 = error (message in err). */
int mvf_reader_frame(MvfReader *r, VidkMeField *f, char *err, size_t errlen);
void mvf_reader_close(MvfReader **r);

#endif
