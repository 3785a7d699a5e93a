/* The H.264 8-point butterflies of the inverse (8.5.13.2) and forward transforms, written
 * once for any vector type T with 32-bit lanes: ADD, SUB and SRA (arithmetic shift right
 * by an immediate) are that type's lane operations. Used by the SSE2 and AVX2 files. */
#ifndef VIDK_X86_H264_TX8_H
#define VIDK_X86_H264_TX8_H

/* 1-D inverse 8-point transform (8.5.13.2) across x[0..7]. */
#define H264_ITX8(T, ADD, SUB, SRA, x)                                                         \
    do {                                                                                       \
        const T e0 = ADD(x[0], x[4]);                                                          \
        const T e1 = SUB(SUB(SUB(x[5], x[3]), x[7]), SRA(x[7], 1));                            \
        const T e2 = SUB(x[0], x[4]);                                                          \
        const T e3 = SUB(SUB(ADD(x[1], x[7]), x[3]), SRA(x[3], 1));                            \
        const T e4 = SUB(SRA(x[2], 1), x[6]);                                                  \
        const T e5 = ADD(ADD(SUB(x[7], x[1]), x[5]), SRA(x[5], 1));                            \
        const T e6 = ADD(x[2], SRA(x[6], 1));                                                  \
        const T e7 = ADD(ADD(ADD(x[3], x[5]), x[1]), SRA(x[1], 1));                            \
        const T f0 = ADD(e0, e6), f1 = ADD(e1, SRA(e7, 2));                                    \
        const T f2 = ADD(e2, e4), f3 = ADD(e3, SRA(e5, 2));                                    \
        const T f4 = SUB(e2, e4), f5 = SUB(SRA(e3, 2), e5);                                    \
        const T f6 = SUB(e0, e6), f7 = SUB(e7, SRA(e1, 2));                                    \
        x[0] = ADD(f0, f7);                                                                    \
        x[1] = ADD(f2, f5);                                                                    \
        x[2] = ADD(f4, f3);                                                                    \
        x[3] = ADD(f6, f1);                                                                    \
        x[4] = SUB(f6, f1);                                                                    \
        x[5] = SUB(f4, f3);                                                                    \
        x[6] = SUB(f2, f5);                                                                    \
        x[7] = SUB(f0, f7);                                                                    \
    } while (0)

/* 1-D forward 8-point transform across x[0..7] (the butterflies of src/h264.c). */
#define H264_FTX8(T, ADD, SUB, SRA, x)                                                         \
    do {                                                                                       \
        const T s07 = ADD(x[0], x[7]), d07 = SUB(x[0], x[7]);                                  \
        const T s16 = ADD(x[1], x[6]), d16 = SUB(x[1], x[6]);                                  \
        const T s25 = ADD(x[2], x[5]), d25 = SUB(x[2], x[5]);                                  \
        const T s34 = ADD(x[3], x[4]), d34 = SUB(x[3], x[4]);                                  \
        const T a0 = ADD(s07, s34), a1 = ADD(s16, s25);                                        \
        const T a2 = SUB(s07, s34), a3 = SUB(s16, s25);                                        \
        const T b4 = ADD(ADD(d16, d25), ADD(d07, SRA(d07, 1)));                                \
        const T b5 = SUB(SUB(d07, d34), ADD(d25, SRA(d25, 1)));                                \
        const T b6 = SUB(ADD(d07, d34), ADD(d16, SRA(d16, 1)));                                \
        const T b7 = ADD(SUB(d16, d25), ADD(d34, SRA(d34, 1)));                                \
        x[0] = ADD(a0, a1);                                                                    \
        x[1] = ADD(b4, SRA(b7, 2));                                                            \
        x[2] = ADD(a2, SRA(a3, 1));                                                            \
        x[3] = ADD(b5, SRA(b6, 2));                                                            \
        x[4] = SUB(a0, a1);                                                                    \
        x[5] = SUB(b6, SRA(b5, 2));                                                            \
        x[6] = SUB(SRA(a2, 1), a3);                                                            \
        x[7] = SUB(SRA(b4, 2), b7);                                                            \
    } while (0)

#endif
