// Inverse phase functions of the CUDA HEVC transform family: 4x4, CUDA cores, tensor cores.
// Part of the device code of hevc_kern.cuh (included at its end; not on its own).
#ifndef VIDK_HEVC_KERN_INV_CUH
#define VIDK_HEVC_KERN_INV_CUH

namespace vidk_hevccu {

// ---- inverse, 4x4: one thread per TB ------------------------------------------------

// Reconstruction or residual output of one row of n values (in place).
template <int OUT>
VHD void put_row(void *pix, int16_t *lev, int off, const int *r, int n, int bd) {
    if (OUT == OUT_RES) {
        for (int i = 0; i < n; i += 8) {
            uint32_t w[4];
            VK_UNROLL
            for (int k = 0; k < 4; k++)
                w[k] = pack16(r[i + 2 * k], r[i + 2 * k + 1]);
            st16(lev + off + i, w);
        }
    } else if (OUT == OUT_U8) {
        uint8_t *p = static_cast<uint8_t *>(pix) + off;
        for (int i = 0; i < n; i += 4) {
            const uint32_t v = *reinterpret_cast<const uint32_t *>(p + i);
            uint32_t o = 0;
            VK_UNROLL
            for (int k = 0; k < 4; k++)
                o |= (uint32_t)clampi((int)((v >> (8 * k)) & 255) + r[i + k], 0, 255)
                     << (8 * k);
            *reinterpret_cast<uint32_t *>(p + i) = o;
        }
    } else {
        uint16_t *p = static_cast<uint16_t *>(pix) + off;
        const int mx = (1 << bd) - 1;
        for (int i = 0; i < n; i += 2) {
            const uint32_t v = *reinterpret_cast<const uint32_t *>(p + i);
            const int a = clampi((int)(v & 0xffffu) + r[i], 0, mx),
                      b = clampi((int)(v >> 16) + r[i + 1], 0, mx);
            *reinterpret_cast<uint32_t *>(p + i) = (uint32_t)a | (uint32_t)b << 16;
        }
    }
}

// Flat 4x4 dequantisation, one branch-free formula for both shift directions: the shift
// bd - 3 - qP / 6 is >= -3 for 4x4, so with mul = scale << max(-shift, 0) <= 1152 * 8,
// |level * mul| < 2^29 is exact and clip16((level * mul + rnd) >> max(shift, 0)) equals
// dequant1 (rnd = 2^(shift - 1), or 0 for shift <= 0). vidk_cuda_hevc_self_check() compares
// them for every int16 level, qP and bit depth.
struct Deq4 {
    int mul, rnd, sh;
};
VHD Deq4 deq4_flat(const Dequant &dq) {
    Deq4 q;
    q.sh = dq.shift > 0 ? dq.shift : 0;
    q.mul = dq.scale << (dq.shift < 0 ? -dq.shift : 0);
    q.rnd = (1 << q.sh) >> 1;
    return q;
}
VHD int deq4(int l, const Deq4 &q) {
    return clip16((l * q.mul + q.rnd) >> q.sh);
}

template <bool SL, int OUT>
VHD void inv4_tb(int16_t *lev, void *pix, uint32_t key, int bd, const int16_t *ds_tab) {
    uint32_t w[8];
    ld16(lev, w);
    ld16(lev + 8, w + 4);
    const Dequant dq = make_dequant(key, 2, bd, ds_tab);
    const int kind = kind4(key_flags(key)), sh = 20 - bd, rr = 1 << (sh - 1);
    int d[16], m[16], g[16];
    const Deq4 dq4 = deq4_flat(dq);
    VK_UNROLL
    for (int i = 0; i < 8; i++) {
        if (SL) {
            d[2 * i] = dq_at<SL>(dq, s16lo(w[i]), 2 * i);
            d[2 * i + 1] = dq_at<SL>(dq, s16hi(w[i]), 2 * i + 1);
        } else {
            d[2 * i] = deq4(s16lo(w[i]), dq4);
            d[2 * i + 1] = deq4(s16hi(w[i]), dq4);
        }
    }
    VK_UNROLL
    for (int i = 0; i < 16; i++)
        m[i] = kind == 1   ? mat4(1, i >> 2, i & 3)
               : kind == 2 ? mat4(2, i >> 2, i & 3)
                           : mat4(0, i >> 2, i & 3);
    // columns, then the normative clip (8.6.4.2)
    VK_UNROLL
    for (int x = 0; x < 4; x++)
        VK_UNROLL
    for (int y = 0; y < 4; y++) {
        int e = 0;
        VK_UNROLL
        for (int k = 0; k < 4; k++)
            e += m[4 * k + y] * d[4 * k + x];
        g[4 * y + x] = clip16((e + 64) >> 7);
    }
    int r[16];
    VK_UNROLL
    for (int y = 0; y < 4; y++)
        VK_UNROLL
    for (int x = 0; x < 4; x++) {
        int s = 0;
        VK_UNROLL
        for (int j = 0; j < 4; j++)
            s += m[4 * j + x] * g[4 * y + j];
        r[4 * y + x] = clip16((s + rr) >> sh);
    }
    if (OUT == OUT_RES) {
        put_row<OUT>(pix, lev, 0, r, 8, bd);
        put_row<OUT>(pix, lev, 8, r + 8, 8, bd);
    } else {
        VK_UNROLL
        for (int y = 0; y < 4; y++)
            put_row<OUT>(pix, lev, 4 * y, r + 4 * y, 4, bd);
    }
}

// ---- inverse on the CUDA cores, 8x8 .. 32x32: N lanes per TB ------------------------------
// Phase 1: lane x reads column x (2-byte loads, coalesced over the lanes), dequantises,
// transforms, clips and stores it in shared memory (row y, S = N + 4). Phase 2: lane y
// transforms row y and writes the output row (in place).

template <int N, bool SL>
VHD void invcc_cols(const int16_t *lev, int lane, uint32_t key, int bd, const int16_t *ds_tab,
                    uint8_t *wsm) {
    constexpr int S = N + 4, L = log2_of<N>();
    const int x = lane & (N - 1);
    const Dequant dq = make_dequant(key, L, bd, ds_tab);
    int32_t d[N], e[N];
    VK_UNROLL
    for (int k = 0; k < N; k++)
        d[k] = dq_at<SL>(dq, lev[k * N + x], k * N + x);
    Inv1<N>::run(d, e);
    uint8_t *reg = cc_region<N>(wsm, lane);
    VK_UNROLL
    for (int y = 0; y < N; y++)
        *reinterpret_cast<int16_t *>(reg + (y * S + x) * 2) = (int16_t)clip16((e[y] + 64) >> 7);
}

template <int N, int OUT>
VHD void invcc_rows(int16_t *lev, void *pix, int lane, int bd, const uint8_t *wsm) {
    constexpr int S = N + 4;
    const int y = lane & (N - 1), sh = 20 - bd, rr = 1 << (sh - 1);
    const uint8_t *row = cc_region<N>(const_cast<uint8_t *>(wsm), lane) + y * S * 2;
    int32_t gi[N], o[N];
    int r[N];
    VK_UNROLL
    for (int i = 0; i < N / 4; i++) {
        uint32_t w[2];
        ld8(row + 8 * i, w);
        gi[4 * i] = s16lo(w[0]);
        gi[4 * i + 1] = s16hi(w[0]);
        gi[4 * i + 2] = s16lo(w[1]);
        gi[4 * i + 3] = s16hi(w[1]);
    }
    Inv1<N>::run(gi, o);
    VK_UNROLL
    for (int x = 0; x < N; x++)
        r[x] = clip16((o[x] + rr) >> sh);
    put_row<OUT>(pix, lev, y * N, r, N, bd);
}

// ---- inverse, tensor cores
// ------------------------------------------------------------------- Levels go through shared
// memory (16-byte chunks; 32x32 XOR-swizzled by row / 4, 16x16 padded to 20 int16 per row),
// from which each lane gathers its B fragments: four coefficients of one column.

struct TcI32 {
    uint32_t bh[4][2], bl[4][2];
    int32_t acc[2][4][4];
    uint32_t ah[2][4], al[2][4];
};
struct TcI16 {
    uint32_t bh[2][2], bl[2][2];
    int32_t acc[2][2][4];
    uint32_t ah[2][2], al[2][2];
};

VHD int ilev_off32(int k, int x) {
    return k * 64 + ((((x >> 3) ^ ((k >> 2) & 3))) << 4) + (x & 7) * 2;
}
VHD int ilev_off16(int j, int k, int x) {
    return j * kRegion16 + k * 40 + x * 2;
}

// Coalesced copy of the TB's levels into shared memory.
VHD void tci32_stage(const int16_t *lev, int lane, uint8_t *wsm) {
    VK_UNROLL
    for (int i = 0; i < 4; i++) {
        const int q = i * 32 + lane, r = q >> 2, c = q & 3;
        uint32_t w[4];
        ld16(lev + r * 32 + c * 8, w);
        st16(wsm + r * 64 + ((c ^ ((r >> 2) & 3)) << 4), w);
    }
}
VHD void tci16_stage(const int16_t *lev, int j, int lane, uint8_t *wsm, bool act) {
    const int r = lane >> 1, c = lane & 1;
    uint32_t w[4] = {0, 0, 0, 0};
    if (act) ld16(lev + r * 16 + c * 8, w);
    uint8_t *p = wsm + j * kRegion16 + r * 40 + c * 16;
    st8(p, w);
    st8(p + 8, w + 2);
}

template <bool SL>
VHD void tci32_gather(TcI32 &s, int lane, uint32_t key, int bd, const int16_t *ds_tab,
                      const uint8_t *wsm) {
    const int g = lane >> 2, t = lane & 3;
    const Dequant dq = make_dequant(key, 5, bd, ds_tab);
    VK_UNROLL
    for (int nt = 0; nt < 4; nt++)
        VK_UNROLL
    for (int h = 0; h < 2; h++) {
        int d[4];
        const int x = 8 * nt + g;
        VK_UNROLL
        for (int i = 0; i < 4; i++) {
            const int k = 4 * t + i + 16 * h;
            d[i] = dq_at<SL>(dq, *reinterpret_cast<const int16_t *>(wsm + ilev_off32(k, x)),
                             k * 32 + x);
        }
        split4(d[0], d[1], d[2], d[3], s.bl[nt][h], s.bh[nt][h]);
    }
}

template <bool SL>
VHD void tci16_gather(TcI16 &s, int lane, const uint32_t key[2], int bd, const int16_t *ds_tab,
                      const uint8_t *wsm) {
    const int g = lane >> 2, t = lane & 3;
    VK_UNROLL
    for (int j = 0; j < 2; j++) {
        const Dequant dq = make_dequant(key[j], 4, bd, ds_tab);
        VK_UNROLL
        for (int nt = 0; nt < 2; nt++) {
            int d[4];
            const int x = 8 * nt + g;
            VK_UNROLL
            for (int i = 0; i < 4; i++) {
                const int k = 4 * t + i;
                d[i] =
                    dq_at<SL>(dq, *reinterpret_cast<const int16_t *>(wsm + ilev_off16(j, k, x)),
                              k * 16 + x);
            }
            split4(d[0], d[1], d[2], d[3], s.bl[j][nt], s.bh[j][nt]);
        }
    }
}

// Output pair (row y, columns x, x+1) of a TB of side N.
template <int OUT>
VHD void put_pair(int16_t *lev, void *pix, int N, int y, int x, int a, int b, int bd) {
    const int off = y * N + x;
    if (OUT == OUT_RES) {
        *reinterpret_cast<uint32_t *>(lev + off) = pack16(a, b);
    } else if (OUT == OUT_U8) {
        uint16_t *p = reinterpret_cast<uint16_t *>(static_cast<uint8_t *>(pix) + off);
        const uint32_t v = *p;
        *p = (uint16_t)(clampi((int)(v & 255) + a, 0, 255) | clampi((int)(v >> 8) + b, 0, 255)
                                                                 << 8);
    } else {
        uint32_t *p = reinterpret_cast<uint32_t *>(static_cast<uint16_t *>(pix) + off);
        const uint32_t v = *p;
        const int mx = (1 << bd) - 1;
        *p = (uint32_t)clampi((int)(v & 0xffffu) + a, 0, mx) |
             (uint32_t)clampi((int)(v >> 16) + b, 0, mx) << 16;
    }
}

template <int OUT>
VHD void tci32_out(const TcI32 &s, int lane, int16_t *lev, void *pix, int bd) {
    const int g = lane >> 2, t = lane & 3, sh = 20 - bd, rr = 1 << (sh - 1);
    VK_UNROLL
    for (int mt = 0; mt < 2; mt++)
        VK_UNROLL
    for (int nt = 0; nt < 4; nt++)
        VK_UNROLL
    for (int h = 0; h < 2; h++) {
        const int y = 16 * mt + g + 8 * h, x = 8 * nt + 2 * t;
        put_pair<OUT>(lev, pix, 32, y, x, clip16((s.acc[mt][nt][2 * h] + rr) >> sh),
                      clip16((s.acc[mt][nt][2 * h + 1] + rr) >> sh), bd);
    }
}

template <int OUT>
VHD void tci16_out(const TcI16 &s, int lane, int j, int16_t *lev, void *pix, int bd) {
    const int g = lane >> 2, t = lane & 3, sh = 20 - bd, rr = 1 << (sh - 1);
    VK_UNROLL
    for (int nt = 0; nt < 2; nt++)
        VK_UNROLL
    for (int h = 0; h < 2; h++) {
        const int y = g + 8 * h, x = 8 * nt + 2 * t;
        put_pair<OUT>(lev, pix, 16, y, x, clip16((s.acc[j][nt][2 * h] + rr) >> sh),
                      clip16((s.acc[j][nt][2 * h + 1] + rr) >> sh), bd);
    }
}

// Bytes per output sample of a TB.
template <int OUT> constexpr int pix_bytes() {
    return OUT == OUT_U8 ? 1 : 2;
}

} // namespace vidk_hevccu

#endif
