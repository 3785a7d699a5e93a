/* The CABAC engine of src/h264_cabac_core.h (bin by bin, and through a bin list) against a
 * decoding engine written here from the standard (9.3.1.2, 9.3.3.2): random sequences of
 * context-coded bins (biased per context, so that the states reach both ends), bypass bins
 * and terminate bins round-trip, the decoder's contexts ending where the encoder's did; the
 * initialisation against values worked out by hand from 9.3.1.1; the last bit of a flushed
 * engine is 1 (the rbsp_stop_one_bit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

enum { KIND_CTX, KIND_BYPASS, KIND_TERM };

static void round_trip(uint32_t *seed, int n) {
    static uint8_t buf[1 << 16];
    static uint8_t kind[1 << 15], bin[1 << 15];
    static uint16_t ctx[1 << 15];
    uint8_t bias[VIDK_H264_CABAC_CTX];
    for (int k = 0; k < VIDK_H264_CABAC_CTX; k++)
        bias[k] = (uint8_t)(test_rand(seed) % 256);
    const int intra = test_rand(seed) & 1, qp = (int)(test_rand(seed) % 52);
    const int span = 1 + (int)(test_rand(seed) % VIDK_H264_CABAC_CTX); /* contexts used */
    VidkBits b;
    vidk_bits_init(&b, buf, sizeof(buf));
    VidkCabac c;
    vidk_cabac_init_contexts(&c, intra, qp);
    Dec d;
    memcpy(d.st, c.st, sizeof(d.st));
    vidk_cabac_start(&c, &b);
    /* half of the runs through a bin list (vidk_cabac_code_bins), the others bin by bin */
    static uint16_t list[(1 << 15) + 1];
    VidkCabacBins o = {list, 0, sizeof(list) / sizeof(list[0])};
    const int via_list = test_rand(seed) & 1;
    for (int i = 0; i < n; i++) {
        const uint32_t r = test_rand(seed) % 100;
        kind[i] = r < 80 ? KIND_CTX : r < 97 ? KIND_BYPASS : KIND_TERM;
        ctx[i] = (uint16_t)(test_rand(seed) % (uint32_t)span);
        bin[i] = kind[i] == KIND_TERM ? 0 : (uint8_t)((test_rand(seed) % 256) < bias[ctx[i]]);
        const int code = kind[i] == KIND_CTX      ? ctx[i]
                         : kind[i] == KIND_BYPASS ? VIDK_CABAC_BYPASS
                                                  : VIDK_CABAC_TERM;
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
    CHECK(!b.overflow);
    CHECK_EQ_U(c.bins, (uint64_t)n + 1);
    CHECK(b.pos > 0 && ((buf[(b.pos - 1) >> 3] >> (7 - ((b.pos - 1) & 7))) & 1) == 1);
    dec_start(&d, buf, b.pos);
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
    CHECK(!memcmp(d.st, c.st, sizeof(d.st)));
    /* the decoder read no further than the stream, which ends 7 bits after its position
     * (9.3.1.2 reads 9 bits ahead; the flush's last two bits are the tail) */
    CHECK(d.pos <= b.pos);
}

/* 9.3.1.1 by hand: ctxIdx 0 (I: m 20, n -15) at QP 26: preCtxState ((20 * 26) >> 4) - 15 =
 * 17, pStateIdx 63 - 17 = 46, valMPS 0; ctxIdx 11 (P, cabac_init_idc 0: m 23, n 33) at QP
 * 51: (23 * 51 >> 4) + 33 = 106, pStateIdx 42, valMPS 1; ctxIdx 6 (I: m -28, n 127) at QP 0:
 * 127 clipped to 126, pStateIdx 62, valMPS 1; ctxIdx 276 (end_of_slice: m 0, n 0): 1
 * (clipped), pStateIdx 62, valMPS 0. */
static void init_by_hand(void) {
    VidkCabac c;
    vidk_cabac_init_contexts(&c, 1, 26);
    CHECK_EQ_U(c.st[0], 46 << 1 | 0);
    vidk_cabac_init_contexts(&c, 0, 51);
    CHECK_EQ_U(c.st[11], 42 << 1 | 1);
    vidk_cabac_init_contexts(&c, 1, 0);
    CHECK_EQ_U(c.st[6], 62 << 1 | 1);
    CHECK_EQ_U(c.st[276], 62 << 1 | 0);
    /* Table 9-44's corners and Table 9-45's ends */
    CHECK_EQ_U(VIDK_CORE_TAB(vidk_h264_cabac_range_lps)[0][0], 128);
    CHECK_EQ_U(VIDK_CORE_TAB(vidk_h264_cabac_range_lps)[0][3], 240);
    CHECK_EQ_U(VIDK_CORE_TAB(vidk_h264_cabac_range_lps)[62][0], 6);
    CHECK_EQ_U(VIDK_CORE_TAB(vidk_h264_cabac_range_lps)[63][3], 2);
    CHECK_EQ_U(VIDK_CORE_TAB(vidk_h264_cabac_trans_lps)[1], 0);
    CHECK_EQ_U(VIDK_CORE_TAB(vidk_h264_cabac_trans_lps)[62], 38);
    CHECK_EQ_U(VIDK_CORE_TAB(vidk_h264_cabac_trans_lps)[63], 63);
}

int main(void) {
    uint32_t seed = test_seed();
    init_by_hand();
    for (int t = 0; t < 400; t++)
        round_trip(&seed, 1 + (int)(test_rand(&seed) % 20000));
    return test_finish("test_h264_cabac_core");
}
