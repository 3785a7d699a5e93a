/* `vidkern encode`: the hybrid coding loop (include/vidkern/encode.h) over a sequence: the
 * H.264 stream, reconstruction, statistics, timings, per-block maps. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "enc_report.h"
#include "gen.h"
#include "picio.h"
#include "report.h"

#define CMD "encode"

#ifndef VIDK_GIT_COMMIT
#define VIDK_GIT_COMMIT "unknown"
#endif

/* Source pictures in rotation: VIDK_ENC_MAX_PENDING in the encoder plus those the reader
 * threads read (or generate) ahead while the encoder works. */
#define NBUF (VIDK_ENC_MAX_PENDING + 4)
/* The reconstruction's reorder queue with B-frames: an anchor is coded at most
 * VIDK_ENC_MAX_BFRAMES frames ahead of its display turn. */
#define RQ (VIDK_ENC_MAX_BFRAMES + 2)

/* Reader threads (--read-threads, default READERS): frame k into pics[k % NBUF] once frame
 * k - NBUF has been received, so reading overlaps the coding (on cuda: the GPU's work and
 * the stream's host part). A regular file is read at the frames' offsets by all of them at
 * once (vio_reader_read_at(), straight into the pictures); frames become available in
 * order, and the first frame that cannot be read that way (a FRAME line with parameters,
 * the end of the file, a truncated frame, ...) and all later ones are read in order by one
 * thread (vio_reader_seek_frame() then cli_source_read()), which gives the same frames and
 * the same errors as reading everything in order. Other inputs: one thread, in order. */
#define READERS     3
#define READERS_MAX 16

typedef struct Reader {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    CliSource *src;
    VidkPicture *pics;
    long limit;    /* frames to read at most (0: all) */
    int nread;     /* frames read: frames [0, nread) are ready, in order */
    int released;  /* frames received: their pictures may be reused */
    int eof, err;  /* all reading done; a read error (reported by cli_source_read) */
    int stop;      /* the consumer gives up */
    double read_s; /* time in reading, of all reader threads together */
    int live;      /* reader threads not finished */
    /* Reading at offsets: frames [nread, claim) are handed out; state[k % NBUF] of frame k
     * is 0 while it is read, 1 when read, -1 when it must be read in order. */
    int par;
    int claim, busy; /* next frame to hand out; reads in flight */
    int seq;         /* frame nread could not be read at its offset: in order from there */
    int seq_taken;   /* a thread reads in order */
    signed char state[NBUF];
} Reader;

/* In order from frame nread, as the only reader (mutex held). */
static void reader_seq(Reader *r) {
    for (;;) {
        while (!r->stop && r->nread - r->released >= NBUF)
            pthread_cond_wait(&r->cv, &r->mu);
        if (r->stop) return;
        const int k = r->nread;
        if (r->limit && k >= r->limit) return;
        pthread_mutex_unlock(&r->mu);
        const double t = cli_now();
        const int res = cli_source_read(r->src, CMD, &r->pics[k % NBUF]);
        const double dt = cli_now() - t;
        pthread_mutex_lock(&r->mu);
        r->read_s += dt;
        if (res < 0) r->err = 1;
        if (res > 0) r->nread++;
        pthread_cond_broadcast(&r->cv);
        if (res <= 0) return;
    }
}

/* Frames at their offsets, several threads at once (mutex held); returns when none is left
 * to hand out, or at the first frame that must be read in order (r->seq). */
static void reader_par(Reader *r) {
    VioReader *vr = r->src->rd;
    for (;;) {
        while (!r->stop && !r->seq && !(r->limit && r->claim >= r->limit) &&
               r->claim - r->released >= NBUF)
            pthread_cond_wait(&r->cv, &r->mu);
        if (r->stop || r->seq || (r->limit && r->claim >= r->limit)) return;
        const int k = r->claim++;
        r->state[k % NBUF] = 0;
        r->busy++;
        pthread_mutex_unlock(&r->mu);
        const double t = cli_now();
        const int ok = vio_reader_read_at(vr, k, &r->pics[k % NBUF]);
        const double dt = cli_now() - t;
        pthread_mutex_lock(&r->mu);
        r->read_s += dt;
        r->busy--;
        r->state[k % NBUF] = ok ? 1 : -1;
        while (r->nread < r->claim && r->state[r->nread % NBUF] == 1)
            r->nread++;
        if (r->nread < r->claim && r->state[r->nread % NBUF] < 0) r->seq = 1;
        pthread_cond_broadcast(&r->cv);
    }
}

static void *reader_main(void *arg) {
    Reader *r = arg;
    pthread_mutex_lock(&r->mu);
    if (r->par) {
        reader_par(r);
        /* The first thread here once the other reads (into pictures the in-order reader
         * will use) are over reads the rest in order. */
        while (r->seq && !r->seq_taken && r->busy && !r->stop)
            pthread_cond_wait(&r->cv, &r->mu);
        if (r->seq && !r->seq_taken && !r->stop) {
            r->seq_taken = 1;
            if (vio_reader_seek_frame(r->src->rd, r->nread) < 0) {
                cli_error(CMD, "%s", vio_reader_error(r->src->rd));
                r->err = 1;
            } else {
                reader_seq(r);
            }
        }
    } else {
        reader_seq(r);
    }
    if (--r->live == 0) r->eof = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* Wait until frame k is read (1), or the input ended before it (0) or failed (-1). */
static int reader_wait(Reader *r, int k) {
    pthread_mutex_lock(&r->mu);
    while (r->nread <= k && !r->eof)
        pthread_cond_wait(&r->cv, &r->mu);
    const int res = r->nread > k ? 1 : r->err ? -1 : 0;
    pthread_mutex_unlock(&r->mu);
    return res;
}

static void reader_release(Reader *r, int received) {
    pthread_mutex_lock(&r->mu);
    r->released = received;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void help(void) {
    printf(
        "usage: vidkern encode [IN.y4m|-] [-o OUT.264] [options]\n\n"
        "Encodes a sequence: intra frames, full-search motion estimation against the\n"
        "previous reconstruction, partition choice, transform + quantisation,\n"
        "reconstruction, and with -o an H.264 stream (Annex-B, High profile, CABAC) that\n"
        "any decoder plays; prints a summary: PSNR, stream bits (or the\n"
        "Exp-Golomb estimate without -o, and for HEVC, which has no stream yet), non-zero\n"
        "levels, partitions, time per stage, PCIe traffic. Every backend gives the same\n"
        "bytes.\n"
        "Without IN the built-in generated video (352x288, 30 frames) is coded.\n"
        "The encoder takes 8-bit 4:2:0 pictures of even sizes, at least 16x16.\n\n"
        "options:\n"
        "  -o, --output F.264 write the H.264 stream; '-' = stdout (then all other output\n"
        "                     goes to stderr)\n"
        "  --preset P         H.264 tools by name, after the x264 preset whose quality\n"
        "                     they reach on real clips (BD-rate, docs/ENCODE.md):\n"
        "                     ultrafast = --cavlc, Intra_16x16 only, no B-frames;\n"
        "                     superfast = CABAC, Intra_16x16 only, no B-frames (the\n"
        "                     defaults); veryfast = CABAC, --i4x4 --i8x8, --bframes 3\n"
        "                     --b-pyramid normal (adaptive): x264 veryfast's quality, about\n"
        "                     a quarter of superfast's speed on cuda; the options given\n"
        "                     with it win\n"
        "  --slices N|auto    slices per picture, each a run of whole macroblock rows (at\n"
        "                     most the rows; intra prediction and vector prediction do\n"
        "                     not cross slices); auto (default): with CABAC at 720p and\n"
        "                     above one per 4 rows, so that the slices' arithmetic\n"
        "                     coders run in parallel (1080p: 17, about 1.5%% more bits\n"
        "                     than 1), else 1\n"
        "  --deblock          the in-loop deblocking filter on the reconstruction (the\n"
        "                     next frame's reference, what a decoder shows); H.264: on\n"
        "                     by default; HEVC: not implemented (an error)\n"
        "  --no-deblock       no deblocking filter (HEVC's default)\n"
        "  --cabac            H.264 stream: CABAC entropy coding (default; about 10%%\n"
        "                     fewer bits than CAVLC; serial within a slice: each slice's\n"
        "                     arithmetic coder is one host thread, on cuda from bins\n"
        "                     made on the GPU; see --slices)\n"
        "  --cavlc            H.264 stream: CAVLC entropy coding (faster)\n"
        "  --i4x4             H.264 intra macroblocks: Intra_4x4 (nine directional\n"
        "                     modes per 4x4 block) as well as Intra_16x16, per\n"
        "                     macroblock by cost\n"
        "  --no-i4x4          no Intra_4x4 (default)\n"
        "  --i8x8             H.264 intra macroblocks: Intra_8x8 (nine modes per 8x8\n"
        "                     block, the 8x8 transform) a candidate too\n"
        "  --no-i8x8          no Intra_8x8 (default)\n"
        "  --bframes N        H.264: N B-frames between anchors (0..%d; default 0):\n"
        "                     I B B P B B P ... with 2, the stream in coding order\n"
        "  --b-adapt N        with --bframes: 1 = B-frames only where the scene is still\n"
        "                     (a look-ahead search of the sources; default), 0 = the\n"
        "                     fixed pattern\n"
        "  --b-pyramid M      with --bframes: normal (or strict) = in a run of two or\n"
        "                     more B-frames the middle one (the first of two) is a\n"
        "                     reference the others predict from; none = B-frames are\n"
        "                     not references (default)\n"
        "  --fps N[/D]        frame rate for the stream's timing (default: the Y4M's F\n"
        "                     tag, else 25); --recon keeps the source's header\n"
        "  --codec C          h264 (16x16 macroblocks; default) or hevc (32x32 CTUs)\n"
        "  --qp N             luma QP 0..%d (default 30; chroma by the codec's table)\n"
        "  --range R          motion search range: vectors in [-R, R]^2, 0..%d (default 16)\n"
        "  --keyint N         an intra frame every N frames; 0 = only the first (default)\n"
        "  --frames N         code at most N frames\n"
        "  --recon OUT.y4m    write the reconstruction (Y4M, the source's size and header);\n"
        "                     '-' = stdout, and then all other output goes to stderr\n"
        "  --report F.json    machine-readable report: parameters, every frame's statistics\n"
        "                     (all VidkEncFrameInfo fields), the summary\n"
        "  --png-dir DIR      per frame DIR/mv_NNNN.png (motion vectors of the 4x4 blocks,\n"
        "                     colour wheel: hue = direction (right red, down yellow-green,\n"
        "                     left cyan, up violet), saturation = length (full at the\n"
        "                     98th percentile of the frame's non-zero lengths), white =\n"
        "                     (0,0), grey = intra frame) and\n"
        "                     DIR/energy_NNNN.png (prediction residual energy of the 16x16\n"
        "                     blocks on a fixed log scale of the mean squared residual per\n"
        "                     sample: black = 0 .. pale yellow = 64^2 and above); the\n"
        "                     pictures have the source's size; DIR is created if missing\n"
        "  --verbose, -v      one line per frame in coding order: number, type (I, P, B),\n"
        "                     PSNR, bits, non-zero levels, time\n"
        "  --size WxH         size of the generated video when no IN is given\n"
        "  --gen-frames N     frames of the generated video (default 30, or --frames)\n"
        "  --input-size WxH   raw (headerless) input of this size ...\n"
        "  --input-format F   ... and pixel format (default yuv420p; only yuv420p/yuvj420p\n"
        "                     can be coded)\n"
        "  --assume-progressive  accept interlaced Y4M input (It, Ib, Im; refused by\n"
        "                     default) and code each frame as one progressive picture\n"
        "  --read-threads N   threads reading a regular input file, each frame at its\n"
        "                     offset straight into its picture, 1..%d (default %d); 1, or\n"
        "                     input from a pipe: one thread reading in order\n\n"
        "Output files (-o, --recon, --report) are written under a temporary name and appear\n"
        "only when the run succeeds; '-', a FIFO or a device is written in place, a\n"
        "symbolic link is written through. An output naming the input is refused. The\n"
        "reconstruction's Y4M header has the source's tags, no others. Options with a\n"
        "value also take the form --option=value. The encoder is pipelined: frame i+1 is\n"
        "sent (on cuda: uploaded) before frame i is received. Exit status 0, or 1 with a\n"
        "message on any error.\n\n",
        VIDK_ENC_MAX_BFRAMES, VIDK_ENC_MAX_QP, VIDK_ME_MAX_RANGE, READERS_MAX, READERS);
    cli_common_help(stdout);
}

/* ---- outputs ------------------------------------------------------------------------- */
/* Create DIR if missing and check that files can be created in it. */
static int prepare_dir(const char *dir) {
    struct stat st;
    if (mkdir(dir, 0777) < 0 && errno != EEXIST)
        return cli_error(CMD, "cannot create '%s': %s", dir, strerror(errno)), -1;
    if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
        return cli_error(CMD, "--png-dir %s: not a directory", dir), -1;
    if (access(dir, W_OK | X_OK) < 0)
        return cli_error(CMD, "cannot create files in '%s': %s", dir, strerror(errno)), -1;
    return 0;
}

/* Everything the summary, --json and --report describe. */
typedef struct Run {
    const char *input; /* path or generator description */
    const char *recon, *report, *png_dir, *out;
    int w, h;
    VidkEncGeometry g;
    VidkEncParams p;
    VidkBackend backend;
    int threads;
    char device[384];
    double seconds; /* wall clock of the loop: input, coding, outputs */
    double
        host_s[4]; /* of which: waiting for input, vidk_enc_send, vidk_enc_receive, writing */
    double read_s; /* the reader threads' time in reading, added up */
    EncAccum acc;
    VidkEncFrameInfo *info; /* every frame, for --report */
    size_t ninfo, cap;
    char command[2048], date[64];
} Run;

static int run_push(Run *r, const VidkEncFrameInfo *fi) {
    if (r->ninfo == r->cap) {
        const size_t cap = r->cap ? 2 * r->cap : 64;
        VidkEncFrameInfo *n = realloc(r->info, cap * sizeof(*n));
        if (!n) return -1;
        r->info = n, r->cap = cap;
    }
    r->info[r->ninfo++] = *fi;
    return 0;
}

static void print_outputs(FILE *f, unsigned o) {
    static const char *const names[] = {"recon", "mvs", "energy", "levels", "stream"};
    int first = 1;
    fputc('[', f);
    for (int k = 0; k < 5; k++)
        if (o & (1u << k)) {
            fprintf(f, "%s\"%s\"", first ? "" : ", ", names[k]);
            first = 0;
        }
    fputc(']', f);
}

static void write_json(FILE *f, const Run *r, int with_frames) {
    fprintf(f, "{\n  \"command\": ");
    report_json_str(f, r->command);
    fprintf(f, ",\n  \"vidkern\": \"%s\",\n  \"commit\": ", vidk_version());
    report_json_str(f, VIDK_GIT_COMMIT);
    fprintf(f, ",\n  \"date\": \"%s\",\n  \"input\": ", r->date);
    report_json_str(f, r->input);
    fprintf(f,
            ",\n  \"width\": %d,\n  \"height\": %d,\n  \"coded_width\": %d,\n"
            "  \"coded_height\": %d,\n  \"codec\": \"%s\",\n  \"qp\": %d,\n  \"range\": %d,\n"
            "  \"keyint\": %d,\n  \"lambda\": %d,\n  \"outputs\": ",
            r->w, r->h, r->g.coded_w, r->g.coded_h, vidk_codec_name(r->p.codec), r->p.qp,
            r->p.range, r->p.keyint, vidk_enc_lambda(r->p.qp));
    print_outputs(f, r->p.outputs);
    fprintf(f, ",\n  \"backend\": \"%s\",\n  \"threads\": %d,\n  \"device\": ",
            vidk_backend_name(r->backend), r->threads);
    report_json_str(f, r->device);
    const double fps = r->seconds > 0 ? (double)r->acc.frames / r->seconds : 0;
    fprintf(f, ",\n  \"seconds\": %.6f,\n  \"frames_per_second\": %.4f", r->seconds, fps);
    fprintf(f,
            ",\n  \"host_seconds\": {\"wait_input\": %.6f, \"send\": %.6f, \"receive\": %.6f, "
            "\"outputs\": %.6f, \"read_thread\": %.6f}",
            r->host_s[0], r->host_s[1], r->host_s[2], r->host_s[3], r->read_s);
    report_json_field(f, "output", r->out);
    fprintf(f,
            ",\n  \"slices\": %d,\n  \"deblock\": %d,\n  \"cabac\": %d,\n  \"i4x4\": %d,\n"
            "  \"i8x8\": %d,\n  \"bframes\": %d,\n  \"b_adapt\": %d,\n  \"b_pyramid\": %d,\n"
            "  \"fps\": [%d, %d]",
            r->p.slices, r->p.deblock, r->p.cabac, r->p.intra4x4, r->p.intra8x8, r->p.bframes,
            r->p.b_adapt, r->p.b_pyramid, r->p.fps_num, r->p.fps_den);
    report_json_field(f, "recon", r->recon);
    report_json_field(f, "report", r->report);
    report_json_field(f, "png_dir", r->png_dir);
    fprintf(f, ",\n  \"summary\": ");
    enc_json_summary(f, &r->acc, "  ");
    if (with_frames) {
        fprintf(f, ",\n  \"per_frame\": [");
        for (size_t i = 0; i < r->ninfo; i++) {
            fprintf(f, "%s\n    ", i ? "," : "");
            enc_json_frame(f, &r->info[i]);
        }
        fprintf(f, "\n  ]");
    }
    fprintf(f, "\n}\n");
}

static void print_summary(FILE *f, const Run *r) {
    const EncAccum *a = &r->acc;
    const double n = a->frames ? (double)a->frames : 1;
    const VidkCodec codec = r->p.codec;
    const int unit = codec == VIDK_CODEC_HEVC ? 32 : 16;
    fprintf(f, "vidkern encode: %lld frames of %s\n", (long long)a->frames, r->input);
    fprintf(f, "  %-12s %s", "backend", vidk_backend_name(r->backend));
    fprintf(f, " on %s\n", r->device);
    char bf[48] = "";
    if (r->p.bframes)
        snprintf(bf, sizeof(bf), ", %d B-frames%s%s", r->p.bframes,
                 r->p.b_adapt ? " (adaptive)" : "", r->p.b_pyramid ? " (pyramid)" : "");
    fprintf(f, "  %-12s %s, QP %d (lambda %d), R %d, keyint %d%s%s%s%s%s\n", "coding",
            vidk_codec_name(codec), r->p.qp, vidk_enc_lambda(r->p.qp), r->p.range, r->p.keyint,
            bf, r->p.deblock ? ", deblocking" : "", r->p.intra4x4 ? ", Intra_4x4" : "",
            r->p.intra8x8 ? ", Intra_8x8" : "",
            !r->out      ? ""
            : r->p.cabac ? ", CABAC"
                         : ", CAVLC");
    if (r->out && r->p.slices > 1)
        fprintf(f, "  %-12s %d per picture\n", "slices", r->p.slices);
    fprintf(f, "  %-12s %dx%d (coded %dx%d: %dx%d %s)\n", "size", r->w, r->h, r->g.coded_w,
            r->g.coded_h, r->g.coded_w / unit, r->g.coded_h / unit,
            codec == VIDK_CODEC_HEVC ? "CTUs" : "macroblocks");
    char nb[32] = "";
    if (r->p.bframes) snprintf(nb, sizeof(nb), ", %lld of them B", (long long)a->bframes);
    fprintf(f, "  %-12s %lld (%lld intra, %lld inter%s)\n", "frames", (long long)a->frames,
            (long long)a->intra, (long long)(a->frames - a->intra), nb);
    fprintf(f, "  %-12s Y %.3f  U %.3f  V %.3f dB (average of frames)\n", "PSNR",
            enc_accum_avg_psnr(a, 0), enc_accum_avg_psnr(a, 1), enc_accum_avg_psnr(a, 2));
    fprintf(f, "  %-12s Y %.3f  U %.3f  V %.3f dB (whole sequence, from the total SSE)\n", "",
            enc_accum_seq_psnr(a, 0), enc_accum_seq_psnr(a, 1), enc_accum_seq_psnr(a, 2));
    if (r->out) {
        const double fps = (double)r->p.fps_num / r->p.fps_den;
        fprintf(f,
                "  %-12s %.2f kbit/frame, %.1f kbit/s at %.3f frames/s (%llu bytes, headers "
                "included)\n",
                "stream", (double)a->stream_bytes * 8 / n / 1e3,
                (double)a->stream_bytes * 8 / n / 1e3 * fps, fps,
                (unsigned long long)a->stream_bytes);
    }
    fprintf(f, "  %-12s %.2f kbit/frame: mode %.2f, mv %.2f, levels %.2f (estimate)\n", "bits",
            (double)a->bits / n / 1e3, (double)a->bits_mode / n / 1e3,
            (double)a->bits_mv / n / 1e3, (double)a->bits_level / n / 1e3);
    fprintf(f, "  %-12s Y %.1f  U %.1f  V %.1f non-zero levels/frame\n", "levels",
            (double)a->nnz[0] / n, (double)a->nnz[1] / n, (double)a->nnz[2] / n);
    uint64_t blocks = 0, area = 0;
    for (int k = 0; k < VIDK_ENC_PART_COUNT; k++) {
        blocks += a->parts[k];
        area += a->parts[k] * (uint64_t)enc_part_area16(k);
    }
    fprintf(f, "  %-12s", "partitions");
    for (int k = 0; k < VIDK_ENC_PART_COUNT; k++) {
        if (!enc_part_in_codec(k, codec)) continue;
        fprintf(f, " %s %.1f%%", enc_part_name(k),
                area ? 100.0 * (double)a->parts[k] * enc_part_area16(k) / (double)area : 0.0);
    }
    fprintf(f, " of the area (%.1f blocks/frame)\n", (double)blocks / n);
    fprintf(f, "  %-12s", "stage ms");
    for (int s = 0; s < VIDK_ENC_STAGE_COUNT; s++)
        fprintf(f, " %s %.3f", enc_stage_name(s), a->stage_ms[s] / n);
    fprintf(f, " (average per frame%s)\n",
            r->backend == VIDK_BACKEND_CUDA ? ", CUDA events" : "");
    fprintf(f,
            "  %-12s %.3f ms/frame send to receive (average); %.2f frames/s overall "
            "(%.3f s wall clock, input and outputs included)\n",
            "time", a->total_ms / n, r->seconds > 0 ? (double)a->frames / r->seconds : 0.0,
            r->seconds);
    fprintf(f,
            "  %-12s waiting for input %.3f, send %.3f, receive %.3f, outputs %.3f ms/frame "
            "(host wall clock in the command's loop; the reader threads read for %.3f)\n",
            "host", r->host_s[0] * 1e3 / n, r->host_s[1] * 1e3 / n, r->host_s[2] * 1e3 / n,
            r->host_s[3] * 1e3 / n, r->read_s * 1e3 / n);
    if (r->backend == VIDK_BACKEND_CUDA)
        fprintf(f, "  %-12s host to device %.0f bytes/frame, device to host %.0f bytes/frame\n",
                "PCIe", (double)a->h2d_bytes / n, (double)a->d2h_bytes / n);
    else
        fprintf(f, "  %-12s none (CPU backend)\n", "PCIe");
    if (r->out) fprintf(f, "  %-12s %s\n", "output", !strcmp(r->out, "-") ? "stdout" : r->out);
    if (r->recon)
        fprintf(f, "  %-12s %s\n", "recon", !strcmp(r->recon, "-") ? "stdout" : r->recon);
    if (r->report) fprintf(f, "  %-12s %s\n", "report", r->report);
    if (r->png_dir)
        fprintf(f, "  %-12s %s/mv_NNNN.png, %s/energy_NNNN.png\n", "pictures", r->png_dir,
                r->png_dir);
}

static void print_frame_line(FILE *f, const VidkEncFrameInfo *fi) {
    fprintf(f,
            "frame %5lld %c  PSNR %6.2f %6.2f %6.2f  %8.2f kbit (mode %.2f mv %.2f level "
            "%.2f)  nnz %llu/%llu/%llu  %.3f ms\n",
            (long long)fi->index,
            fi->intra    ? 'I'
            : fi->bframe ? 'B'
                         : 'P',
            fi->psnr[0], fi->psnr[1], fi->psnr[2], (double)fi->bits / 1e3,
            (double)fi->bits_mode / 1e3, (double)fi->bits_mv / 1e3,
            (double)fi->bits_level / 1e3, (unsigned long long)fi->nnz[0],
            (unsigned long long)fi->nnz[1], (unsigned long long)fi->nnz[2], fi->total_ms);
}

/* ---- the command ------------------------------------------------------------------------ */
int vidk_cmd_encode(int argc, char **argv) {
    CliCommon c;
    cli_common_init(&c);
    const char *in = NULL, *recon = NULL, *report = NULL, *png_dir = NULL, *out = NULL;
    const char *in_size = NULL, *in_fmt = NULL;
    long qp = 30, range = 16, keyint = 0, frames = 0, gen_frames = 0, slices = 0 /* auto */,
         bframes = -1, badapt = -1; /* -1: not given (the preset's, else the default) */
    long read_threads = READERS;
    int fps_num = 0, fps_den = 0;
    int codec = VIDK_CODEC_H264, gen_w = 0, gen_h = 0, verbose = 0, progressive = 0;
    int deblock = -1;                                /* the codec's default */
    int cabac = -1, i4x4 = -1, i8x8 = -1, bpyr = -1; /* -1: not given */
    const char *preset = NULL;
    static const char *const value_opts[] = {
        "--codec",   "--qp",        "--range",  "--keyint",  "--frames",       "--gen-frames",
        "--size",    "--recon",     "--report", "--png-dir", "--input-size",   "--input-format",
        "-o",        "--output",    "--slices", "--fps",     "--read-threads", "--bframes",
        "--b-adapt", "--b-pyramid", "--preset", NULL};
    if (cli_args(CMD, &argc, &argv, value_opts) < 0) return 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (cli_is_help(a)) return help(), 0;
        const int r = cli_common_opt(&c, CMD, argc, argv, &i);
        if (r < 0) return 1;
        if (r) continue;
        if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
            verbose = 1;
            continue;
        }
        if (!strcmp(a, "--assume-progressive")) {
            progressive = 1;
            continue;
        }
        if (!strcmp(a, "--deblock") || !strcmp(a, "--no-deblock")) {
            deblock = !strcmp(a, "--deblock");
            continue;
        }
        if (!strcmp(a, "--cabac") || !strcmp(a, "--cavlc")) {
            cabac = !strcmp(a, "--cabac");
            continue;
        }
        if (!strcmp(a, "--i4x4") || !strcmp(a, "--no-i4x4")) {
            i4x4 = !strcmp(a, "--i4x4");
            continue;
        }
        if (!strcmp(a, "--i8x8") || !strcmp(a, "--no-i8x8")) {
            i8x8 = !strcmp(a, "--i8x8");
            continue;
        }
        if (a[0] != '-' || !strcmp(a, "-")) {
            if (in) return cli_error(CMD, "one input only ('%s' and '%s')", in, a);
            in = a;
            continue;
        }
        if (!cli_takes_value(a, value_opts))
            return cli_error(CMD, "unknown option '%s' (see --help)", a);
        if (!(v = cli_value(CMD, argc, argv, &i))) return 1;
        if (!strcmp(a, "--codec")) {
            codec = vidk_codec_from_name(v);
            if (codec < 0) return cli_error(CMD, "--codec: '%s' is not h264 or hevc", v);
        } else if (!strcmp(a, "--qp")) {
            if (cli_parse_int(CMD, a, v, 0, VIDK_ENC_MAX_QP, &qp) < 0) return 1;
        } else if (!strcmp(a, "--range")) {
            if (cli_parse_int(CMD, a, v, 0, VIDK_ME_MAX_RANGE, &range) < 0) return 1;
        } else if (!strcmp(a, "--bframes")) {
            if (cli_parse_int(CMD, a, v, 0, VIDK_ENC_MAX_BFRAMES, &bframes) < 0) return 1;
        } else if (!strcmp(a, "--b-adapt")) {
            if (cli_parse_int(CMD, a, v, 0, 1, &badapt) < 0) return 1;
        } else if (!strcmp(a, "--preset")) {
            VidkEncParams t;
            vidk_enc_default_params(&t);
            if (vidk_enc_preset(&t, v) < 0)
                return cli_error(CMD, "--preset: '%s' is not ultrafast, superfast or veryfast",
                                 v);
            preset = v;
        } else if (!strcmp(a, "--b-pyramid")) {
            if (strcmp(v, "none") && strcmp(v, "normal") && strcmp(v, "strict"))
                return cli_error(CMD, "--b-pyramid: '%s' is not none, normal or strict", v);
            bpyr = strcmp(v, "none") != 0;
        } else if (!strcmp(a, "--keyint")) {
            if (cli_parse_int(CMD, a, v, 0, 1000000, &keyint) < 0) return 1;
        } else if (!strcmp(a, "--frames")) {
            if (cli_parse_int(CMD, a, v, 1, 100000000, &frames) < 0) return 1;
        } else if (!strcmp(a, "--read-threads")) {
            if (cli_parse_int(CMD, a, v, 1, READERS_MAX, &read_threads) < 0) return 1;
        } else if (!strcmp(a, "--gen-frames")) {
            if (cli_parse_int(CMD, a, v, 1, 100000000, &gen_frames) < 0) return 1;
        } else if (!strcmp(a, "--size")) {
            if (cli_parse_size(CMD, a, v, &gen_w, &gen_h) < 0) return 1;
        } else if (!strcmp(a, "--recon")) {
            recon = v;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            out = v;
        } else if (!strcmp(a, "--slices")) {
            if (!strcmp(v, "auto"))
                slices = 0;
            else if (cli_parse_int(CMD, a, v, 1, VIDK_MAX_PICTURE_SIDE / 16, &slices) < 0)
                return 1;
        } else if (!strcmp(a, "--fps")) {
            long n = 0, d = 1;
            char *end;
            n = strtol(v, &end, 10);
            if (*end == '/') d = strtol(end + 1, &end, 10);
            if (*end || n <= 0 || d <= 0 || n > 1000000 || d > 1000000)
                return cli_error(CMD, "--fps: '%s' is not N or N/D (1..1000000)", v);
            fps_num = (int)n, fps_den = (int)d;
        } else if (!strcmp(a, "--report")) {
            report = v;
        } else if (!strcmp(a, "--png-dir")) {
            png_dir = v;
        } else if (!strcmp(a, "--input-size")) {
            in_size = v;
        } else if (!strcmp(a, "--input-format")) {
            in_fmt = v;
        } else {
            return cli_error(CMD, "unknown option '%s' (see --help)", a);
        }
    }
    if (in && (gen_w || gen_frames))
        return cli_error(CMD, "--size and --gen-frames are for the generated video (no IN); "
                              "raw input takes --input-size");
    if (!in && in_size) return cli_error(CMD, "--input-size needs an input (IN or -)");
    if (in_fmt && !in_size) return cli_error(CMD, "--input-format needs --input-size");
    if (recon && !strcmp(recon, "-") && c.json)
        return cli_error(CMD, "--recon - and --json both want stdout: write one to a file");
    if (out && !strcmp(out, "-") && c.json)
        return cli_error(CMD, "-o - and --json both want stdout: write one to a file");
    if (out && recon && !strcmp(out, "-") && !strcmp(recon, "-"))
        return cli_error(CMD, "-o - and --recon - both want stdout: write one to a file");
    if (out && codec != VIDK_CODEC_H264)
        return cli_error(CMD, "-o: only H.264 streams can be written so far (--codec h264)");
    if (report && !strcmp(report, "-"))
        return cli_error(CMD, "--report needs a file name (--json prints to stdout)");
    if (cli_output_is_input(CMD, "--recon", recon, &in, 1) ||
        cli_output_is_input(CMD, "--report", report, &in, 1) ||
        cli_output_is_input(CMD, "-o", out, &in, 1))
        return 1;
    if (cli_outputs_clash(recon, report))
        return cli_error(CMD, "--recon '%s' and --report '%s' are the same file", recon,
                         report);
    if (cli_outputs_clash(out, recon) || cli_outputs_clash(out, report))
        return cli_error(CMD, "-o '%s' names the same file as another output", out);
#if !VIDK_HAVE_PNG
    if (png_dir)
        return cli_error(CMD, "--png-dir: PNG output is not available (built without libpng)");
#endif
    VioFormat raw;
    vio_format_default(&raw);
    if (cli_raw_format(CMD, in_size, in_fmt,
                       "yuv420p; gray, yuv422p, yuv444p, yuv420p10le, ... are read but cannot "
                       "be coded",
                       &raw) < 0)
        return 1;

    int ret = 1;
    char err[512];
    VioOut *report_out = NULL, *stream_out = NULL;
    Reader rd = {0};
    pthread_t rd_th[READERS_MAX];
    int rd_started = 0;
    CliSource src = {.assume_progressive = progressive};
    VidkPicture pics[NBUF] = {0}, rec = {0};
    VidkPicture *bq = NULL; /* B-frames: RQ reconstructions waiting for their turn */
    int bq_has[RQ] = {0};
    int reg[NBUF + 1] = {0};
    VidkHostRange ranges[2], pinned[2];
    int npinned = 0;
    VidkEncMaps maps = {0};
    VidkContext *ctx = NULL;
    VidkEncoder *enc = NULL;
    VioWriter *wr = NULL;
    Run *run = calloc(1, sizeof(*run));
    if (!run) return cli_error(CMD, "out of memory");
    enc_accum_init(&run->acc);
    FILE *hout = (recon && !strcmp(recon, "-")) || (out && !strcmp(out, "-")) || c.json
                     ? stderr
                     : stdout;
    /* A closed pipe downstream is a write error with a message, not a silent SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);

    /* Input, and its format checked before anything is created. */
    if (in) {
        if (cli_source_open_file(&src, CMD, in, in_size ? &raw : NULL) < 0) goto done;
        run->input = src.name;
    } else {
        const int e =
            cli_source_open_gen(&src, gen_w, gen_h, gen_frames ? (int)gen_frames : (int)frames);
        if (e < 0) {
            cli_error(CMD, "generator (%dx%d): %s", src.fmt.w, src.fmt.h, vidk_strerror(e));
            goto done;
        }
        src.name = "generated video";
        run->input = src.desc;
    }
    const VioFormat *fi = &src.fmt;
    if (fi->bitdepth != 8 || fi->chroma != VIDK_CHROMA_420) {
        cli_error(CMD,
                  "%s: %s %d-bit input: the encoder takes 8-bit 4:2:0 only (convert, e.g. "
                  "ffmpeg -i IN -pix_fmt yuv420p -f yuv4mpegpipe OUT.y4m)",
                  src.name, vio_chroma_name(fi->chroma), fi->bitdepth);
        goto done;
    }
    if (fi->w < 16 || fi->h < 16 || fi->w % 2 || fi->h % 2 || fi->w > VIDK_MAX_PICTURE_SIDE ||
        fi->h > VIDK_MAX_PICTURE_SIDE) {
        cli_error(CMD,
                  "%s: %dx%d: the encoder takes even sizes from 16x16 to %dx%d (4:2:0 with "
                  "whole chroma samples)",
                  src.name, fi->w, fi->h, VIDK_MAX_PICTURE_SIDE, VIDK_MAX_PICTURE_SIDE);
        goto done;
    }
    run->w = fi->w, run->h = fi->h;
    run->recon = recon, run->report = report, run->png_dir = png_dir, run->out = out;

    /* Outputs: validated (created) before any work, so a bad name costs nothing. */
    if (report && vio_out_open(&report_out, report, err, sizeof(err)) < 0) goto fail;
    if (out && vio_out_open(&stream_out, out, err, sizeof(err)) < 0) goto fail;
    if (png_dir && prepare_dir(png_dir) < 0) goto done;
    if (recon && vio_writer_open(&wr, recon, fi, 0, err, sizeof(err)) < 0) goto fail;

    /* Encoder. */
    if (!(ctx = cli_open(&c, CMD))) goto done;
    VidkEncParams *p = &run->p;
    vidk_enc_default_params(p);
    p->codec = (VidkCodec)codec;
    p->qp = (int)qp;
    p->range = (int)range;
    p->keyint = (int)keyint;
    p->outputs = (recon ? VIDK_ENC_OUT_RECON : 0u) |
                 (png_dir ? (unsigned)(VIDK_ENC_OUT_MVS | VIDK_ENC_OUT_ENERGY) : 0u) |
                 (out ? (unsigned)VIDK_ENC_OUT_STREAM : 0u);
    p->deblock = deblock >= 0 ? deblock : p->codec == VIDK_CODEC_H264; /* as the library's -1 */
    if (preset) (void)vidk_enc_preset(p, preset); /* checked above; given options win */
    if (cabac >= 0) p->cabac = cabac;
    if (p->cabac < 0) p->cabac = p->codec == VIDK_CODEC_H264; /* as the library's -1 */
    if (i4x4 >= 0) p->intra4x4 = i4x4;
    if (i8x8 >= 0) p->intra8x8 = i8x8;
    if (bframes >= 0) p->bframes = (int)bframes;
    if (badapt >= 0) p->b_adapt = (int)badapt;
    if (bpyr >= 0) p->b_pyramid = bpyr;
    p->slices = (int)slices; /* then the number the encoder uses (auto: by size and coder) */
    p->slices = vidk_enc_slices(p, fi->w, fi->h);
    if (slices && p->slices < slices && !c.quiet)
        fprintf(stderr,
                "vidkern encode: note: --slices %ld lowered to %d (one per macroblock row)\n",
                slices, p->slices);
    p->fps_num = fps_num ? fps_num : fi->fps_num > 0 ? fi->fps_num : 25;
    p->fps_den = fps_num ? fps_den : fi->fps_num > 0 ? fi->fps_den : 1;
    int e = vidk_enc_open(ctx, &enc, p, fi->w, fi->h);
    if (e < 0) {
        cli_error(CMD, "cannot open the %s encoder for %dx%d on %s: %s",
                  vidk_codec_name(p->codec), fi->w, fi->h,
                  vidk_backend_name(vidk_get_backend(ctx)), vidk_strerror(e));
        goto done;
    }
    vidk_enc_geometry(enc, &run->g);
    run->backend = vidk_get_backend(ctx);
    run->threads = vidk_get_threads(ctx);
    enc_device_desc(ctx, c.device, run->device, sizeof(run->device));
    report_command_line(run->command, sizeof(run->command), "vidkern encode", argc, argv);
    report_utc_date(run->date, sizeof(run->date));

    /* Pictures and maps, registered once (page-locked on cuda, no-op elsewhere). A
     * registration that fails only costs speed: the library then stages the copies. */
    for (int k = 0; k < NBUF; k++)
        if (vio_picture_alloc(&pics[k], fi) < 0) goto oom;
    if (recon && vio_picture_alloc(&rec, fi) < 0) goto oom;
    if (recon && p->bframes) { /* the reorder queue of the reconstruction */
        if (!(bq = calloc(RQ, sizeof(*bq)))) goto oom;
        for (int k = 0; k < RQ; k++)
            if (vio_picture_alloc(&bq[k], fi) < 0) goto oom;
    }
    const VidkEncGeometry *g = &run->g;
    if (png_dir) {
        maps.mv = malloc(sizeof(*maps.mv) * (size_t)g->mv_w * (size_t)g->mv_h);
        maps.energy = malloc(sizeof(*maps.energy) * (size_t)g->mb_w * (size_t)g->mb_h);
        if (!maps.mv || !maps.energy) goto oom;
    }
    for (int k = 0; k < NBUF; k++)
        reg[k] = vidk_picture_register(ctx, &pics[k]) == 0;
    if (recon) reg[NBUF] = vidk_picture_register(ctx, &rec) == 0;
    if (png_dir) {
        ranges[0] = (VidkHostRange){maps.mv, sizeof(*maps.mv) * (size_t)g->mv_w * g->mv_h};
        ranges[1] =
            (VidkHostRange){maps.energy, sizeof(*maps.energy) * (size_t)g->mb_w * g->mb_h};
        if (vidk_host_register_set(ctx, ranges, 2, pinned, &npinned) < 0 && verbose)
            fprintf(hout, "vidkern encode: note: maps not page-locked\n");
    }

    if (src.gen && !c.quiet && !c.json)
        fprintf(stderr, "vidkern encode: no input given: coding the %s\n", src.desc);
    const int total = cli_source_total(&src, in, in_size != NULL, frames);
    CliProgress prog;
    cli_progress_start(&prog, "encode", total, c.quiet || verbose);

    /* The pipeline: frame k lives in pics[k % NBUF] from its read (by a reader thread)
     * until its receive. Frames [nrecv, nsent) are in the encoder (at most
     * VIDK_ENC_MAX_PENDING); send while there is room and a frame is read, else receive the
     * oldest: frames i+1 and i+2 are sent before frame i is received, and the reader keeps up
     * to NBUF frames read ahead. */
    int nread = 0, nsent = 0, nrecv = 0, eof = 0, ended = 0, next_out = 0;
    const int maxp = g->max_pending;
    const double t0 = cli_now();
    if (pthread_mutex_init(&rd.mu, NULL) || pthread_cond_init(&rd.cv, NULL)) goto oom;
    rd.src = &src, rd.pics = pics, rd.limit = frames;
    rd.par = src.rd && read_threads > 1 && vio_reader_random_access(src.rd);
    pthread_mutex_lock(&rd.mu);
    for (int k = 0; k < (rd.par ? (int)read_threads : 1); k++) {
        if (pthread_create(&rd_th[k], NULL, reader_main, &rd)) break;
        rd_started++;
        rd.live++;
    }
    pthread_mutex_unlock(&rd.mu);
    if (!rd_started) {
        cli_error(CMD, "cannot start the reader thread");
        goto done;
    }
    for (;;) {
        if (!eof && nread == nsent && nsent - nrecv < maxp) {
            const double tr = cli_now();
            const int r = reader_wait(&rd, nread);
            run->host_s[0] += cli_now() - tr;
            if (r < 0) goto done;
            if (r == 0)
                eof = 1;
            else
                nread++;
        }
        if (nread > nsent && nsent - nrecv < maxp) {
            const double ts = cli_now();
            e = vidk_enc_send(enc, &pics[nsent % NBUF]);
            run->host_s[1] += cli_now() - ts;
            if (e < 0) {
                cli_error(CMD, "frame %d: send failed: %s", nsent, vidk_strerror(e));
                goto done;
            }
            nsent++;
            continue;
        }
        if (nrecv == nsent) break;
        if (eof && nread == nsent && !ended) { /* the end of the input: the last frames */
            ended = 1;
            if ((e = vidk_enc_send(enc, NULL)) < 0) {
                cli_error(CMD, "end of input: %s", vidk_strerror(e));
                goto done;
            }
        }
        VidkEncFrameInfo info = {0};
        const double tv = cli_now();
        e = vidk_enc_receive(enc, recon ? &rec : NULL, png_dir ? &maps : NULL, &info);
        const double tw = cli_now();
        run->host_s[2] += tw - tv;
        if (e < 0) {
            cli_error(CMD, "frame %d: coding failed: %s", nrecv, vidk_strerror(e));
            goto done;
        }
        enc_accum_add(&run->acc, &info, fi->w, fi->h);
        if (stream_out) {
            FILE *sf = vio_out_stream(stream_out);
            if (fwrite(info.stream, 1, info.stream_size, sf) != info.stream_size ||
                ferror(sf)) {
                cli_error(CMD, "%s: write error: %s", vio_out_name(stream_out),
                          strerror(errno));
                goto done;
            }
        }
        if (report && run_push(run, &info) < 0) goto oom;
        if (wr && !bq && vio_writer_write(wr, &rec) < 0) {
            cli_error(CMD, "%s", vio_writer_error(wr));
            goto done;
        }
        if (wr && bq) { /* B-frames: the reconstruction back in display order */
            const int k = (int)(info.index % RQ);
            for (int pl = 0; pl < 3; pl++)
                for (int y = 0; y < (pl ? fi->h / 2 : fi->h); y++)
                    memcpy((uint8_t *)bq[k].data[pl] + (ptrdiff_t)y * bq[k].stride[pl],
                           (const uint8_t *)rec.data[pl] + (ptrdiff_t)y * rec.stride[pl],
                           (size_t)(pl ? fi->w / 2 : fi->w));
            bq_has[k] = 1;
            for (; bq_has[next_out % RQ]; next_out++) {
                bq_has[next_out % RQ] = 0;
                if (vio_writer_write(wr, &bq[next_out % RQ]) < 0) {
                    cli_error(CMD, "%s", vio_writer_error(wr));
                    goto done;
                }
            }
        }
        if (png_dir) {
            char name[4200];
            snprintf(name, sizeof(name), "%s/mv_%04d.png", png_dir, (int)info.index);
            if (enc_png_mvs(name, maps.mv, g->mv_w, g->mv_h, fi->w, fi->h, 0, info.intra, err,
                            sizeof(err)) < 0)
                goto fail;
            snprintf(name, sizeof(name), "%s/energy_%04d.png", png_dir, (int)info.index);
            if (enc_png_energy(name, maps.energy, g->mb_w, g->mb_h, fi->w, fi->h, err,
                               sizeof(err)) < 0)
                goto fail;
        }
        run->host_s[3] += cli_now() - tw;
        nrecv++;
        reader_release(&rd, nrecv);
        if (verbose) print_frame_line(hout, &info);
        cli_progress_update(&prog, nrecv);
    }
    run->seconds = cli_now() - t0;
    run->read_s = rd.read_s;
    cli_progress_end(&prog);
    if (!nrecv) {
        cli_error(CMD, "%s: empty input (0 frames)", src.name);
        goto done;
    }
    if (wr && vio_writer_close_msg(&wr, err, sizeof(err)) < 0) goto fail;
    if (stream_out && vio_out_close(&stream_out, 1, err, sizeof(err)) < 0) goto fail;
    if (report_out) {
        write_json(vio_out_stream(report_out), run, 1);
        if (vio_out_close(&report_out, 1, err, sizeof(err)) < 0) goto fail;
    }
    if (c.json)
        write_json(stdout, run, 0);
    else
        print_summary(hout, run);
    if (fflush(stdout) != 0) {
        cli_error(CMD, "stdout: write error");
        goto done;
    }
    ret = 0;
    goto done;
fail:
    cli_error(CMD, "%s", err);
    goto done;
oom:
    cli_error(CMD, "out of memory");
done:
    if (rd_started) {
        pthread_mutex_lock(&rd.mu);
        rd.stop = 1;
        pthread_cond_broadcast(&rd.cv);
        pthread_mutex_unlock(&rd.mu);
        for (int k = 0; k < rd_started; k++)
            pthread_join(rd_th[k], NULL);
        pthread_mutex_destroy(&rd.mu);
        pthread_cond_destroy(&rd.cv);
    }
    vidk_enc_close(&enc);
    if (ctx) {
        for (int k = 0; k < npinned; k++)
            vidk_host_unregister(ctx, pinned[k].ptr);
        for (int k = 0; k < NBUF; k++)
            if (reg[k]) vidk_picture_unregister(ctx, &pics[k]);
        if (reg[NBUF]) vidk_picture_unregister(ctx, &rec);
    }
    vio_writer_abort(&wr);
    vio_out_close(&report_out, 0, NULL, 0);
    vio_out_close(&stream_out, 0, NULL, 0);
    for (int k = 0; k < NBUF; k++)
        vidk_picture_free(&pics[k]);
    vidk_picture_free(&rec);
    if (bq)
        for (int k = 0; k < RQ; k++)
            vidk_picture_free(&bq[k]);
    free(bq);
    free(maps.mv);
    free(maps.energy);
    vidk_close(&ctx);
    cli_source_close(&src);
    free(run->info);
    free(run);
    return ret;
}
