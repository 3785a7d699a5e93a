/* The CABAC engine of src/h264_cabac_core.h (bin by bin, and through a bin list) against a
 * decoding engine written here from the standard (9.3.1.2, 9.3.3.2): random sequences of
 * context-coded bins (biased per context, so that the states reach both ends), bypass bins
 * and terminate bins round-trip, the decoder's contexts ending where the encoder's did; the
 * initialisation against values worked out by hand from 9.3.1.1; the last bit of a flushed
 * engine is 1 (the rbsp_stop_one_bit); every bit equal to the standard's engine written out
 * bit by bit here (Ref). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enc/h264_stream_cabac.h"
#include "h264_cabac_core.h"
#include "test_util.h"

typedef struct Dec {
    const uint8_t *buf;
    size_t pos, len; /* bits */
    uint32_t range, offset;
    uint8_t st[VIDK_H264_CABAC_CTX];
} Dec;

static int rd1(Dec *d) {
    if (d->pos >= d->len) return 0; /* past the end: zeros (the test fails elsewhere) */
    const int b = (d->buf[d->pos >> 3] >> (7 - (d->pos & 7))) & 1;
    d->pos++;
    return b;
}

static void dec_start(Dec *d, const uint8_t *buf, size_t bits) {
    d->buf = buf, d->pos = 0, d->len = bits;
    d->range = 510;
    d->offset = 0;
    for (int i = 0; i < 9; i++)
        d->offset = d->offset << 1 | (uint32_t)rd1(d);
}

static int dec_decision(Dec *d, int ctx) {
    const int p = d->st[ctx] >> 1, mps = d->st[ctx] & 1;
    const uint32_t lps = VIDK_CORE_TAB(vidk_h264_cabac_range_lps)[p][(d->range >> 6) & 3];
    int bin;
    d->range -= lps;
    if (d->offset >= d->range) {
        bin = !mps;
        d->offset -= d->range;
        d->range = lps;
        d->st[ctx] =
            (uint8_t)(VIDK_CORE_TAB(vidk_h264_cabac_trans_lps)[p] << 1 | (p ? mps : !mps));
    } else {
        bin = mps;
        d->st[ctx] = (uint8_t)((p < 62 ? p + 1 : p) << 1 | mps);
    }
    while (d->range < 256) {
        d->range <<= 1;
        d->offset = d->offset << 1 | (uint32_t)rd1(d);
    }
    return bin;
}

static int dec_bypass(Dec *d) {
    d->offset = d->offset << 1 | (uint32_t)rd1(d);
    if (d->offset >= d->range) {
        d->offset -= d->range;
        return 1;
    }
    return 0;
}

static int dec_terminate(Dec *d) {
    d->range -= 2;
    if (d->offset >= d->range) return 1;
    while (d->range < 256) {
        d->range <<= 1;
        d->offset = d->offset << 1 | (uint32_t)rd1(d);
    }
    return 0;
}

/* The standard's encoding engine bit by bit (Figures 9-7 to 9-12: PutBit with firstBitFlag
 * and bitsOutstanding, RenormE one doubling at a time), the reference for the library's
 * byte-wise one. */
typedef struct Ref {
    VidkBits *b;
    uint32_t low, range, outstanding;
    int first;
    uint8_t st[VIDK_H264_CABAC_CTX];
} Ref;

static void ref_put_bit(Ref *r, int bit) {
    if (r->first)
        r->first = 0;
    else
        vidk_put_bits(r->b, 1, (uint32_t)bit);
    for (; r->outstanding; r->outstanding--)
        vidk_put_bits(r->b, 1, (uint32_t)!bit);
}

static void ref_renorm(Ref *r) {
    while (r->range < 256) {
        if (r->low < 256) {
            ref_put_bit(r, 0);
        } else if (r->low >= 512) {
            r->low -= 512;
            ref_put_bit(r, 1);
        } else {
            r->low -= 256;
            r->outstanding++;
        }
        r->range <<= 1;
        r->low <<= 1;
    }
}

static void ref_decision(Ref *r, int ctx, int bin) {
    const int p = r->st[ctx] >> 1, mps = r->st[ctx] & 1;
    const uint32_t lps = VIDK_CORE_TAB(vidk_h264_cabac_range_lps)[p][(r->range >> 6) & 3];
    r->range -= lps;
    if (bin != mps) {
        r->low += r->range;
        r->range = lps;
        if (p == 0) r->st[ctx] ^= 1;
        r->st[ctx] =
            (uint8_t)(VIDK_CORE_TAB(vidk_h264_cabac_trans_lps)[p] << 1 | (r->st[ctx] & 1));
    } else if (p < 62) {
        r->st[ctx] = (uint8_t)((p + 1) << 1 | mps);
    }
    ref_renorm(r);
}

static void ref_bypass(Ref *r, int bin) {
    r->low <<= 1;
    if (bin) r->low += r->range;
    if (r->low >= 1024) {
        ref_put_bit(r, 1);
        r->low -= 1024;
    } else if (r->low < 512) {
        ref_put_bit(r, 0);
    } else {
        r->low -= 512;
        r->outstanding++;
    }
}

static void ref_terminate(Ref *r, int bin) {
    r->range -= 2;
    if (bin) {
        r->low += r->range;
        r->range = 2; /* EncodeFlush */
        ref_renorm(r);
        ref_put_bit(r, (r->low >> 9) & 1);
        vidk_put_bits(r->b, 2, ((r->low >> 7) & 3) | 1);
    } else {
        ref_renorm(r);
    }
}

enum { KIND_CTX, KIND_BYPASS, KIND_TERM };

static void round_trip(uint32_t *seed, int n) {
    static uint8_t buf[1 << 16], rbuf[1 << 16];
    static uint8_t kind[1 << 15], bin[1 << 15];
    static uint16_t ctx[1 << 15];
    uint8_t bias[VIDK_H264_CABAC_CTX];
    for (int k = 0; k < VIDK_H264_CABAC_CTX; k++)
        bias[k] = (uint8_t)(test_rand(seed) % 256);
    const int intra = test_rand(seed) & 1, qp = (int)(test_rand(seed) % 52);
    const int span = 1 + (int)(test_rand(seed) % VIDK_H264_CABAC_CTX); /* contexts used */
    /* both engines behind the same whole bytes (a slice header's place: a carry into the
     * byte before the slice data would corrupt it) */
    const int pre = (int)(test_rand(seed) % 4);
    VidkBits b, rb;
    vidk_bits_init(&b, buf, sizeof(buf));
    vidk_bits_init(&rb, rbuf, sizeof(rbuf));
    for (int i = 0; i < pre; i++) {
        const uint32_t v = test_rand(seed) >> 24;
        vidk_put_bits(&b, 8, v);
        vidk_put_bits(&rb, 8, v);
    }
    VidkCabac c;
    uint8_t st[VIDK_H264_CABAC_CTX];
    vidk_cabac_init_contexts(st, intra, qp);
    Dec d;
    memcpy(d.st, st, sizeof(d.st));
    Ref r = {&rb, 0, 510, 0, 1, {0}};
    memcpy(r.st, st, sizeof(r.st));
    vidk_cabac_start(&c, &b, st);
    /* a third of the runs: bypass bins in stretches of 40 (0xff bytes, carries over them) */
    const int stretches = test_rand(seed) % 3 == 0;
    /* half of the runs through a bin list (vidk_cabac_code_bins), the others bin by bin */
    static uint16_t list[(1 << 15) + 1];
    VidkCabacBins o = {list, 0, sizeof(list) / sizeof(list[0])};
    const int via_list = test_rand(seed) & 1;
    for (int i = 0; i < n; i++) {
        const uint32_t u = test_rand(seed) % 100;
        kind[i] = stretches && (i / 40) % 2 ? KIND_BYPASS
                  : u < 80                  ? KIND_CTX
                  : u < 97                  ? KIND_BYPASS
                                            : KIND_TERM;
        ctx[i] = (uint16_t)(test_rand(seed) % (uint32_t)span);
        bin[i] = kind[i] == KIND_TERM ? 0 : (uint8_t)((test_rand(seed) % 256) < bias[ctx[i]]);
        const int code = kind[i] == KIND_CTX      ? ctx[i]
                         : kind[i] == KIND_BYPASS ? VIDK_CABAC_BYPASS
                                                  : VIDK_CABAC_TERM;
        if (kind[i] == KIND_CTX)
            ref_decision(&r, ctx[i], bin[i]);
        else if (kind[i] == KIND_BYPASS)
            ref_bypass(&r, bin[i]);
        else
            ref_terminate(&r, 0);
        if (via_list)
            vidk_cabac_bin(&o, code, bin[i]);
        else if (kind[i] == KIND_CTX)
            vidk_cabac_put(&c, ctx[i], bin[i]);
        else if (kind[i] == KIND_BYPASS)
            vidk_cabac_bypass(&c, bin[i]);
        else
            vidk_cabac_terminate(&c, 0);
    }
    if (via_list) {
        vidk_cabac_bin(&o, VIDK_CABAC_TERM, 1);
        vidk_cabac_code_bins(&c, o.b, o.n);
    } else {
        vidk_cabac_terminate(&c, 1);
    }
    ref_terminate(&r, 1);
    CHECK(!b.overflow && !rb.overflow);
    CHECK_EQ_U(c.bins, (uint64_t)n + 1);
    /* the same bits as the standard's engine, the partial byte's kept ones too */
    CHECK_EQ_U(b.pos, rb.pos);
    CHECK(b.pos == rb.pos && !memcmp(buf, rbuf, (b.pos + 7) / 8) && b.part == rb.part);
    CHECK(b.pos > 0 && ((buf[(b.pos - 1) >> 3] >> (7 - ((b.pos - 1) & 7))) & 1) == 1);
    dec_start(&d, buf + pre, b.pos - 8 * (size_t)pre);
    int bad = -1;
    for (int i = 0; i < n && bad < 0; i++) {
        const int v = kind[i] == KIND_CTX      ? dec_decision(&d, ctx[i])
                      : kind[i] == KIND_BYPASS ? dec_bypass(&d)
                                               : dec_terminate(&d);
        if (v != bin[i]) bad = i;
    }
    if (bad >= 0)
        fprintf(stderr, "round trip: bin %d of %d (kind %d, context %d) decoded wrong\n", bad,
                n, kind[bad], ctx[bad]);
    CHECK(bad < 0);
    CHECK(dec_terminate(&d) == 1);
    CHECK(!memcmp(d.st, st, sizeof(d.st)) && !memcmp(r.st, st, sizeof(r.st)));
    /* the decoder read no further than the stream, which ends 7 bits after its position
     * (9.3.1.2 reads 9 bits ahead; the flush's last two bits are the tail) */
    CHECK(d.pos <= b.pos - 8 * (size_t)pre);
}

/* 9.3.1.1 by hand: ctxIdx 0 (I: m 20, n -15) at QP 26: preCtxState ((20 * 26) >> 4) - 15 =
 * 17, pStateIdx 63 - 17 = 46, valMPS 0; ctxIdx 11 (P, cabac_init_idc 0: m 23, n 33) at QP
 * 51: (23 * 51 >> 4) + 33 = 106, pStateIdx 42, valMPS 1; ctxIdx 6 (I: m -28, n 127) at QP 0:
 * 127 clipped to 126, pStateIdx 62, valMPS 1; ctxIdx 276 (end_of_slice: m 0, n 0): 1
 * (clipped), pStateIdx 62, valMPS 0. */
static void init_by_hand(void) {
    uint8_t st[VIDK_H264_CABAC_CTX];
    vidk_cabac_init_contexts(st, 1, 26);
    CHECK_EQ_U(st[0], 46 << 1 | 0);
    vidk_cabac_init_contexts(st, 0, 51);
    CHECK_EQ_U(st[11], 42 << 1 | 1);
    vidk_cabac_init_contexts(st, 1, 0);
    CHECK_EQ_U(st[6], 62 << 1 | 1);
    CHECK_EQ_U(st[276], 62 << 1 | 0);
    /* Table 9-44's corners and Table 9-45's ends */
    CHECK_EQ_U(VIDK_CORE_TAB(vidk_h264_cabac_range_lps)[0][0], 128);
    CHECK_EQ_U(VIDK_CORE_TAB(vidk_h264_cabac_range_lps)[0][3], 240);
    CHECK_EQ_U(VIDK_CORE_TAB(vidk_h264_cabac_range_lps)[62][0], 6);
    CHECK_EQ_U(VIDK_CORE_TAB(vidk_h264_cabac_range_lps)[63][3], 2);
    CHECK_EQ_U(VIDK_CORE_TAB(vidk_h264_cabac_trans_lps)[1], 0);
    CHECK_EQ_U(VIDK_CORE_TAB(vidk_h264_cabac_trans_lps)[62], 38);
    CHECK_EQ_U(VIDK_CORE_TAB(vidk_h264_cabac_trans_lps)[63], 63);
}

/* vidk_cabac_slice_close: the alignment zeros, then the fewest cabac_zero_words (0x0000)
 * that make a slice of nmb macroblocks and `bins` bins meet 7.4.2.10's bound for its share,
 * 3 bins <= 32 bytes + 3 * 96 nmb (RawMbBits 3072 / 32 for 4:2:0 8-bit), counted here by
 * trying word counts from 0 up. */
static void zero_words(uint32_t *seed) {
    static const struct {
        uint64_t bins, nmb;
        int bits;
    } cases[] = {{0, 1, 8},      {96, 1, 0},      {97, 1, 0},    {1000, 2, 77},
                 {5000, 3, 200}, {100000, 10, 9}, {3000, 0, 13}, {12345, 7, 1024}};
    for (size_t t = 0; t < sizeof(cases) / sizeof(cases[0]) + 40; t++) {
        uint64_t bins, nmb;
        int bits;
        if (t < sizeof(cases) / sizeof(cases[0])) {
            bins = cases[t].bins, nmb = cases[t].nmb, bits = cases[t].bits;
        } else {
            bins = test_rand(seed) % 200000, nmb = test_rand(seed) % 50;
            bits = (int)(test_rand(seed) % 4000);
        }
        static uint8_t buf[1 << 16];
        memset(buf, 0xa5, sizeof(buf));
        VidkBits b;
        vidk_bits_init(&b, buf, sizeof(buf));
        for (int i = 0; i < bits; i++)
            vidk_put_bits(&b, 1, 1);
        VidkCabac e;
        memset(&e, 0, sizeof(e));
        e.bins = bins;
        vidk_cabac_slice_close(&b, &e, nmb);
        const uint64_t bytes = ((uint64_t)bits + 7) / 8;
        uint64_t w = 0;
        while (3 * bins > 32 * (bytes + 2 * w) + 3 * 96 * nmb)
            w++;
        CHECK(!b.overflow);
        CHECK_EQ_U(b.pos, 8 * (bytes + 2 * w));
        int ok = 1; /* the alignment zeros, then the words' zero bytes */
        if (bits % 8) ok &= (buf[bits / 8] & ((1u << (8 - bits % 8)) - 1)) == 0;
        for (uint64_t i = bytes; i < bytes + 2 * w; i++)
            ok &= buf[i] == 0;
        CHECK(ok);
    }
}

int main(void) {
    uint32_t seed = test_seed();
    init_by_hand();
    zero_words(&seed);
    for (int t = 0; t < 400; t++)
        round_trip(&seed, 1 + (int)(test_rand(&seed) % 20000));
    return test_finish("test_h264_cabac_core");
}
